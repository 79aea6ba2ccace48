package pipeline

import (
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// MemoryParts is EstimateBytes by phase (bytes). The phases run one after another, so
// the peak is Data plus the largest of the others.
type MemoryParts struct {
	Data   float64 // the training walks: a place, class, action, frame index and token per step
	Warmup float64 // the VQ-VAE trained on Warmup.Batch frames, encoding in blocks, the k-means++ sample
	Joint  float64 // the VQ-VAE on a Joint.Batch × Joint.ChunkLen batch and the joint phase's HMM on it
	Final  float64 // the finalisation's HMM on every training step, at its starting budget
	Eval   float64 // the held-out episode's images, posteriors and Viterbi table
}

// Peak is the program's base, Data, and the largest phase.
func (p MemoryParts) Peak() float64 {
	return baseBytes + p.Data + max(p.Warmup, p.Joint, p.Final, p.Eval)
}

// EstimateBytes estimates the peak memory of a run of cfg (MemoryParts.Peak of
// EstimateParts): every allocation that grows with the configuration, on top of a
// fixed base for the program, its libraries and the data set's images.
func EstimateBytes(cfg Config) float64 { return EstimateParts(cfg).Peak() }

// Sizes of the estimate.
const (
	// baseBytes is the program, its libraries and the data set's images.
	baseBytes = 200e6
	// gcFactor: the Go collector lets the heap grow to twice the live data before it
	// collects, so a tensor program's resident memory is about twice what it holds.
	gcFactor = 2
	// bytesPerStep is what the walks hold per training step: place, class, action,
	// frame index and token (int each), and the episode's copy of the frame indices.
	bytesPerStep = 48
	// encodeBlock is the number of frames the run hands the encoder at once
	// (data.encodeFrames), and evalChunk the number it runs through its graph at once.
	encodeBlock = 4096
	evalChunk   = 256
)

// EstimateParts is EstimateBytes by phase. K is taken before compaction (vqvae.k, the
// most tokens a run can have); the joint HMM has 1 + K·Clones states and the
// finalisation's 1 + K·max(Joint.Clones, Final.Clones) (a budget that Final.BudgetDoublings doubles, or
// FinalEM's splits, may grow past it: the estimate is of the run's start).
func EstimateParts(cfg Config) MemoryParts {
	actions := 4
	if env, err := cfg.Environment(); err == nil {
		actions = env.NumActions()
	}
	v := cfg.VQVAE
	k := float64(v.K)
	steps := float64(cfg.Data.Episodes) * float64(cfg.Data.Steps)
	var p MemoryParts
	p.Data = bytesPerStep * steps

	recenter := 0.0
	if cfg.Warmup.Recenter {
		recenter = min(steps, float64(max(cfg.Warmup.RecenterFrames, v.K)))
	}
	p.Warmup = max(VQVAETrainBytes(v, float64(cfg.Warmup.Batch)), VQVAEEncodeBytes(v, min(steps, encodeBlock)),
		VQVAEEncodeBytes(v, max(recenter, min(steps, 1024)))) + 8*steps // and a token per step

	side2 := float64(v.Side) * float64(v.Side)
	frames := float64(cfg.Joint.Batch) * float64(min(cfg.Joint.ChunkLen, cfg.Data.Steps))
	grad := frames
	if cfg.Joint.GradFrames > 0 {
		grad = min(frames, float64(cfg.Joint.GradFrames))
	}
	nJoint := 1 + k*float64(cfg.Joint.Clones)
	// The HMM term's gradient reaches the encoder through every frame's posterior; the
	// decoder sees the grad frames only.
	vqJoint := VQVAETrainBytes(v, grad) + gcFactor*4*(frames-grad)*(side2+2*vqEncoderActivations(v))
	if cfg.Joint.FreezeVQVAE {
		vqJoint = VQVAEEncodeBytes(v, frames)
	}
	p.Joint = vqJoint + jointHMMBytes(nJoint, actions, frames)

	nFinal := 1 + k*float64(max(cfg.Joint.Clones, cfg.Final.Clones))
	p.Final = chmm.TrainBytes(int(min(nFinal, 1<<40)), actions, int(min(steps, 1<<40))) + 8*steps

	// The held-out episode: its images and posteriors at once, and Viterbi's table
	// (an int32 per state and step).
	eval := float64(cfg.Eval.Steps)
	p.Eval = VQVAEEncodeBytes(v, eval) + eval*(8+4*nFinal)
	return p
}

// jointHMMBytes is the joint phase's HMM on a batch of frames: the forward messages,
// emissions and their gradients (float32, n per frame), and the transition logits,
// probabilities, gradient and two Adam moments (float32, actions × n × n).
func jointHMMBytes(n float64, actions int, frames float64) float64 {
	return gcFactor * 4 * (4*frames*n + 5*float64(actions)*n*n)
}

// VQVAETrainBytes estimates the memory of a training step of the VQ-VAE c on a batch
// of frames: the parameters with their gradient and two Adam moments, the codebook
// with its EMA statistics, and per frame the input and the activations of the forward
// pass with their gradients (float32; gcFactor for the collector).
func VQVAETrainBytes(c vqvae.Config, frames float64) float64 {
	side2 := float64(c.Side) * float64(c.Side)
	return gcFactor * 4 * (4*vqParams(c) + 3*float64(c.K)*float64(c.D) + frames*(side2+2*vqActivations(c)))
}

// VQVAEEncodeBytes estimates the memory of encoding (or decoding) frames with the
// VQ-VAE c: the parameters and codebook, the forward pass's activations of the
// evalChunk frames the graph runs at once, and per frame its pixels and posterior
// (float32; gcFactor for the collector).
func VQVAEEncodeBytes(c vqvae.Config, frames float64) float64 {
	side2 := float64(c.Side) * float64(c.Side)
	return gcFactor * 4 * (vqParams(c) + float64(c.K)*float64(c.D) + min(frames, evalChunk)*vqActivations(c) + frames*(side2+float64(c.K)))
}

// vqParams is the number of the VQ-VAE's trainable scalars.
func vqParams(c vqvae.Config) float64 {
	e, d, o := c.NumParameters()
	return float64(e) + float64(d) + float64(o)
}

// vqEncoderActivations is vqActivations of the encoder alone: for conv about
// 1.5·F·s² + 2·s², for the MLP 2·(256 + 128 + D).
func vqEncoderActivations(c vqvae.Config) float64 {
	s2 := float64(c.Side) * float64(c.Side)
	if c.Arch == vqvae.ArchMLP {
		return 2 * (256 + 128 + float64(c.D))
	}
	return 1.5*float64(c.F)*s2 + 2*s2
}

// vqActivations is the number of floats the forward pass of one frame holds (the
// outputs of every layer before and after its nonlinearity, and the reshaped copies of
// the stride-2 and sub-pixel convolutions): for conv with side s and width F about
// 2.5·F·s² + 4·s², for the MLP 4·s² + 1600 + 4·D.
func vqActivations(c vqvae.Config) float64 {
	s2 := float64(c.Side) * float64(c.Side)
	if c.Arch == vqvae.ArchMLP {
		return 4*s2 + 2*2*(256+128) + 4*float64(c.D)
	}
	return 2.5*float64(c.F)*s2 + 4*s2
}
