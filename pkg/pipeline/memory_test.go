package pipeline

import (
	"math"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestEstimateParts compares the estimate with the sums written out by hand for a small
// MLP run on aliased (4 actions).
func TestEstimateParts(t *testing.T) {
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg.VQVAE.Arch, cfg.VQVAE.D, cfg.VQVAE.K, cfg.VQVAE.Side = vqvae.ArchMLP, 16, 4, 28
	cfg.Data.Episodes, cfg.Data.Steps, cfg.Eval.Steps = 2, 600, 1000
	cfg.Warmup.Batch, cfg.Warmup.Recenter, cfg.Warmup.RecenterFrames = 64, true, 1000
	cfg.Joint.Batch, cfg.Joint.ChunkLen, cfg.Joint.GradFrames, cfg.Joint.FreezeVQVAE = 2, 64, 0, false
	cfg.Joint.Clones, cfg.Final.Clones = 5, 10
	// MLP parameters, side 28 (784 pixels), D = 16: 256×784+256, 128×256+128, 16×128+16
	// (encoder), 128×16+128, 256×128+256, 784×256+784 (decoder).
	const params = 200960 + 32896 + 2064 + 2176 + 33024 + 201488 // 472608
	const act = 4*784 + 1536 + 4*16                              // 4736 floats per frame
	if got := vqParams(cfg.VQVAE); got != params {
		t.Fatalf("parameters %v, want %d", got, params)
	}
	// 1200 training steps of 48 bytes.
	want := MemoryParts{Data: 57600}
	// Warm-up: the largest of a training step on 64 frames (8·(4·P + 3·K·D + 64·(784 +
	// 2·act))), encoding the 1200 frames (8·(P + K·D + 256·act + 1200·(784 + K))) and
	// the k-means++ sample of 1024 frames; and 8 bytes of token per step.
	train64 := 8.0 * (4*params + 3*4*16 + 64*(784+2*act))                // 20376064
	enc1200 := 8.0 * (params + 4*16 + 256*act + 1200*788)                // 21045504
	enc1024 := 8.0 * (params + 4*16 + 256*act + 1024*788)                // 19936000
	want.Warmup = math.Max(math.Max(train64, enc1200), enc1024) + 8*1200 // 21055104
	// Joint: 2 chunks of 64 frames, all with gradients; the HMM of 1 + 4·5 = 21 states
	// on them: 8·(4·128·21 + 5·4·21²).
	want.Joint = 8.0*(4*params+3*4*16+128*(784+2*act)) + 8*(4*128*21+5*4*21*21) // 25783712
	// Final: 1 + 4·10 = 41 states on 1200 steps, chmm.TrainBytes: 8·(2·1200·41 +
	// 6·4·41²), and a token per step.
	want.Final = 8*(2*1200*41+6*4*41*41) + 8*1200 // 1119552
	// Eval: encoding the 1000 held-out frames, a token and 41 Viterbi entries per step.
	want.Eval = 8.0*(params+4*16+256*act+1000*788) + 1000*(8+4*41) // 19956704
	got := EstimateParts(cfg)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"data", got.Data, want.Data}, {"warm-up", got.Warmup, want.Warmup}, {"joint", got.Joint, want.Joint},
		{"final", got.Final, want.Final}, {"eval", got.Eval, want.Eval}} {
		if math.Abs(c.got-c.want) > 0.5 {
			t.Errorf("%s: %.0f bytes, want %.0f", c.name, c.got, c.want)
		}
	}
	if peak := EstimateBytes(cfg); math.Abs(peak-(200e6+57600+25783712)) > 0.5 {
		t.Errorf("peak %.0f, want the base, the data and the joint phase: %.0f", peak, 200e6+57600+25783712.0)
	}
}

// TestEstimateConv: the conv VQ-VAE's share, by hand for one frame, and the estimate
// of a configuration with vqvae.side 4096 (which tried to allocate 34 GB when the
// estimate was blind to the VQ-VAE) is above that.
func TestEstimateConv(t *testing.T) {
	c := vqvae.DefaultConfig(10) // conv, side 28, F 32, D 32
	// Parameters: conv1 32·4·2·2+32, conv2 64·128·2·2+64, conv3 64·64·3·3+64, dense
	// 32·64+32 (encoder); dense 3136·32+3136, conv1 64·64·3·3+64, up1 128·64·2·2+128,
	// up2 4·32·2·2+4 (decoder).
	const params = 544 + 32832 + 36928 + 2080 + 103488 + 36928 + 32896 + 516 // 246212
	const act = 2.5*32*784 + 4*784                                           // 65856
	if got := vqParams(c); got != params {
		t.Fatalf("conv parameters %v, want %d", got, params)
	}
	if got, want := VQVAETrainBytes(c, 1), 8.0*(4*params+3*10*32+784+2*act); got != want {
		t.Errorf("one conv frame: %.0f bytes, want %.0f", got, want)
	}
	cfg, err := DefaultConfig("aliased") // conv, K 4, 4 chunks of 256 frames, 256 with gradients
	if err != nil {
		t.Fatal(err)
	}
	// The joint phase: a training step of the VQ-VAE (K = 4) on 256 frames; the other
	// 768 through the encoder, forward and backward: 8·768·(784 + 2·(1.5·32·784 +
	// 2·784)); the HMM of 1 + 4·5 = 21 states on 1024 frames: 8·(4·1024·21 + 5·4·21²).
	const encAct = 1.5*32*784 + 2*784 // 39200
	want := 8.0*(4*params+3*4*32+256*(784+2*act)) + 8*768*(784+2*encAct) + 8*(4*1024*21+5*4*21*21)
	if got := EstimateParts(cfg).Joint; math.Abs(got-want) > 0.5 {
		t.Errorf("conv joint phase: %.0f bytes, want %.0f", got, want)
	}
	cfg.VQVAE.Side = 4096
	if got := EstimateBytes(cfg); !(got > 34e9) {
		t.Errorf("side 4096: %.3g bytes estimated, want more than the 34 GB it allocates", got)
	}
}
