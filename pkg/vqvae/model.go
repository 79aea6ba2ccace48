package vqvae

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// ScopeName is the scope (under the store's root) that holds the Model's VQ-VAE
// variables: /vqvae/encoder, /vqvae/decoder, /vqvae/codebook, ...
const ScopeName = "vqvae"

// DefaultLearningRate is the reference's Adam learning rate for the VQ-VAE (Table 1).
const DefaultLearningRate = 3e-4

// evalBatch is the fixed batch size of the inference graphs (inputs are padded to it,
// so one compiled graph serves every call).
const evalBatch = 256

// Batch is one training minibatch.
type Batch struct {
	// Images holds B images of Side×Side pixels, row-major, values in [0,1].
	Images []float32
	// Labels holds B class labels; used only when Config.Classify is set.
	Labels []int
}

// Metrics are the statistics of one training step (on the step's batch, before the
// parameter update).
type Metrics struct {
	Loss       float64   // rec + β·commit (+ ClassWeight·CE with Classify)
	Rec        float64   // per-pixel mean squared reconstruction error
	Commit     float64   // mean (sg(q) − z)²
	Perplexity float64   // exp H(token usage) in the batch, in [1, K]
	Active     int       // codes used at least once in the batch
	Usage      []float64 // [K] assignment counts in the batch
	Revived    int       // dead codes re-seeded after this step
	CE         float64   // classification cross-entropy (Classify only)
	Accuracy   float64   // classification accuracy (Classify only)
}

// StepRecord is one entry of the loss history.
type StepRecord struct {
	Step       int // 1-based count of training steps of the model
	Loss       float64
	Rec        float64
	Commit     float64
	Perplexity float64
	Active     int
	Revived    int
	CE         float64
}

// Model is a VQ-VAE with its variables, optimizer state, random state and history:
// everything a resumed run needs to continue identically.
type Model struct {
	cfg     Config
	backend compute.Backend
	store   *model.Store
	seed    uint64
	pcg     *rand.PCG // Go-side randomness (k-means++ seeding)
	rng     *rand.Rand
	lr      float64
	ready   bool // data-driven initialisation done (InitFromData)
	history []StepRecord
	cursor  WarmupCursor
	tokens  []int // read-out: the token of each code (SetTokens); nil: token k is code k
	// teachEMA makes TeachStep update the codebook by EMA (SetTeachEMA).
	teachEMA bool

	trainExec, teachExec, encodeExec, reconExec, latentExec *model.Exec
}

// New creates a model with fresh, seed-determined parameters on backend. The first
// training step (or an explicit InitFromData call) completes the initialisation from
// data.
func New(backend compute.Backend, cfg Config, seed uint64) (*Model, error) {
	if backend == nil {
		return nil, errors.New("vqvae.New: nil backend")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := newShell(backend, cfg, seed)
	if err := cfg.InitVariables(m.Scope(), seed, dtypes.Float32); err != nil {
		return nil, err
	}
	if err := m.store.SetRNGStateFromSeed(int64(seed ^ 0x9e3779b97f4a7c15)); err != nil {
		return nil, fmt.Errorf("vqvae.New: graph RNG: %w", err)
	}
	return m, nil
}

// newShell builds a Model without variables.
func newShell(backend compute.Backend, cfg Config, seed uint64) *Model {
	pcg := rand.NewPCG(seed, 0x6b6d65616e73) // "kmeans"
	return &Model{
		cfg:     cfg,
		backend: backend,
		store:   model.NewStore(),
		seed:    seed,
		pcg:     pcg,
		rng:     rand.New(pcg),
		lr:      DefaultLearningRate,
	}
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Backend returns the GoMLX backend the model runs on.
func (m *Model) Backend() compute.Backend { return m.backend }

// Store returns the model's variable store (for building joint graphs with Encode,
// Decode, ... under Scope()).
func (m *Model) Store() *model.Store { return m.store }

// Scope returns the VQ-VAE's scope in Store().
func (m *Model) Scope() *model.Scope { return m.store.RootScope().At(ScopeName) }

// Steps returns the number of training steps taken.
func (m *Model) Steps() int { return len(m.history) }

// History returns a copy of the per-step loss history.
func (m *Model) History() []StepRecord { return append([]StepRecord(nil), m.history...) }

// Initialised reports whether the data-driven initialisation (InitFromData) is done.
func (m *Model) Initialised() bool { return m.ready }

// LearningRate returns Adam's learning rate.
func (m *Model) LearningRate() float64 { return m.lr }

// SetLearningRate sets Adam's learning rate for the following steps.
func (m *Model) SetLearningRate(lr float64) error {
	if !(lr > 0) {
		return fmt.Errorf("vqvae: learning rate must be > 0, got %g", lr)
	}
	m.lr = lr
	if v := m.lrVar(); v != nil {
		return v.SetValue(tensors.FromValue(float32(lr)))
	}
	return nil
}

func (m *Model) lrVar() *model.Variable {
	return m.Scope().At(optimizer.Scope).GetVariable(optimizer.ParamLearningRate)
}

// catch runs fn, turning a graph-building panic into an error.
func catch(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("%s: %w", what, e)
			} else {
				err = fmt.Errorf("%s: %v", what, r)
			}
		}
	}()
	return fn()
}

// imagesTensor checks images (n·Side² values) and returns n and the [n,S,S,1] tensor.
func (m *Model) imagesTensor(images []float32, what string) (int, *tensors.Tensor, error) {
	p := m.cfg.Pixels()
	if len(images) == 0 || len(images)%p != 0 {
		return 0, nil, fmt.Errorf("vqvae: %s: %d values is not a positive multiple of %d pixels (%dx%d images)",
			what, len(images), p, m.cfg.Side, m.cfg.Side)
	}
	n := len(images) / p
	s := m.cfg.Side
	return n, tensors.FromFlatDataAndDimensions(images, n, s, s, 1), nil
}

// trainGraph builds one training step (paper Sec. 3.2, Algorithm 1 steps 1–4 and the
// Adam update): Forward, losses, Adam on the encoder and decoder (and classifier),
// then the EMA codebook update and dead-code revival.
func (m *Model) trainGraph(root *model.Scope, inputs []*Node) []*Node {
	c := m.cfg
	scope := root.At(ScopeName)
	x := inputs[0]
	g := x.Graph()
	root.Store().SetTraining(g, true) // variables stay graph parameters (see varNode)
	out := c.Forward(scope, x, nil)
	loss := Add(out.Rec, MulScalar(out.Commit, c.Beta))
	ce, acc := ScalarZero(g, x.DType()), ScalarZero(g, x.DType())
	if c.Classify {
		labels := inputs[1]
		logits := c.ClassLogits(scope, out.Z)
		logp := LogSoftmax(logits, -1)
		oh := OneHot(labels, c.NumClasses, logp.DType())
		ce = Neg(ReduceAllMean(ReduceSum(Mul(oh, logp), 1)))
		hit := Equal(ArgMax(logits, 1, dtypes.Int32), labels)
		acc = ReduceAllMean(ConvertDType(hit, x.DType()))
		loss = Add(loss, MulScalar(ce, c.ClassWeight))
	}
	optimizer.Adam().LearningRate(m.lr).Done().UpdateGraph(scope, g, loss)
	counts := Usage(out.Tokens, c.K, nil, x.DType())
	revived := c.UpdateCodebook(scope, out.Z, out.Tokens, nil)
	return []*Node{loss, out.Rec, out.Commit, Perplexity(counts), ActiveCodes(counts), counts, revived, ce, acc}
}

// encodeGraph maps images x [n, side, side, 1] to the hard code and the soft posterior log ρ
// [n, K] (Encode).
func (m *Model) encodeGraph(root *model.Scope, x *Node) (*Node, *Node) {
	scope := root.At(ScopeName)
	z := m.cfg.Encode(scope, x)
	tok, _, dist2 := Quantize(z, CodebookState(scope, x.Graph()).Codebook)
	return tok, SoftPosterior(dist2, m.cfg.Tau)
}

// latentGraph maps images to the encoder outputs z [n, D] (Latents).
func (m *Model) latentGraph(root *model.Scope, x *Node) *Node {
	return m.cfg.Encode(root.At(ScopeName), x)
}

// reconGraph maps images to the reconstruction through their hard codes and the codes
// (Reconstruct).
func (m *Model) reconGraph(root *model.Scope, x *Node) (*Node, *Node) {
	scope := root.At(ScopeName)
	z := m.cfg.Encode(scope, x)
	tok, q, _ := Quantize(z, CodebookState(scope, x.Graph()).Codebook)
	return m.cfg.Decode(scope, q), tok
}

// TrainStep runs one training step on the batch and appends it to the history. The
// first call of a new model runs InitFromData on the batch.
func (m *Model) TrainStep(batch Batch) (Metrics, error) {
	n, x, err := m.imagesTensor(batch.Images, "TrainStep")
	if err != nil {
		return Metrics{}, err
	}
	args := []any{x}
	if m.cfg.Classify {
		if len(batch.Labels) != n {
			return Metrics{}, fmt.Errorf("vqvae: TrainStep: Classify needs %d labels, got %d", n, len(batch.Labels))
		}
		lab := make([]int32, n)
		for i, l := range batch.Labels {
			if l < 0 || l >= m.cfg.NumClasses {
				return Metrics{}, fmt.Errorf("vqvae: TrainStep: label %d of image %d outside [0,%d)", l, i, m.cfg.NumClasses)
			}
			lab[i] = int32(l)
		}
		args = append(args, tensors.FromFlatDataAndDimensions(lab, n))
	}
	if !m.ready {
		if err := m.InitFromData(batch.Images); err != nil {
			return Metrics{}, err
		}
	}
	if m.trainExec == nil {
		m.trainExec, err = model.NewExec(m.backend, m.store, m.trainGraph)
		if err != nil {
			return Metrics{}, err
		}
	}
	var out []*tensors.Tensor
	if err := catch("vqvae: TrainStep", func() (err error) {
		out, err = m.trainExec.Call(args...)
		return err
	}); err != nil {
		return Metrics{}, err
	}
	return m.recordStep(out), nil
}

// recordStep reads a training step's outputs (loss, rec, commit, perplexity, active,
// usage, revived, ce, accuracy), frees them and appends the step to the history.
func (m *Model) recordStep(out []*tensors.Tensor) Metrics {
	defer finalize(out)
	met := Metrics{
		Loss:       scalar(out[0]),
		Rec:        scalar(out[1]),
		Commit:     scalar(out[2]),
		Perplexity: scalar(out[3]),
		Active:     int(scalar(out[4])),
		Usage:      floats(out[5]),
		Revived:    int(scalar(out[6])),
		CE:         scalar(out[7]),
		Accuracy:   scalar(out[8]),
	}
	m.history = append(m.history, StepRecord{
		Step: len(m.history) + 1, Loss: met.Loss, Rec: met.Rec, Commit: met.Commit,
		Perplexity: met.Perplexity, Active: met.Active, Revived: met.Revived, CE: met.CE,
	})
	return met
}

func finalize(ts []*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}

// scalar reads a float32 or float64 scalar tensor.
func scalar(t *tensors.Tensor) float64 {
	switch v := t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

// floats reads a float32 tensor into float64s.
func floats(t *tensors.Tensor) []float64 {
	f, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// runChunks evaluates exec on images in chunks of evalBatch (the last one padded) and
// calls collect(chunk outputs, first image index, number of real images).
func (m *Model) runChunks(exec *model.Exec, images []float32, what string,
	collect func(out []*tensors.Tensor, start, n int) error) error {
	p := m.cfg.Pixels()
	if len(images) == 0 || len(images)%p != 0 {
		return fmt.Errorf("vqvae: %s: %d values is not a positive multiple of %d pixels (%dx%d images)",
			what, len(images), p, m.cfg.Side, m.cfg.Side)
	}
	n := len(images) / p
	s := m.cfg.Side
	buf := make([]float32, evalBatch*p)
	for start := 0; start < n; start += evalBatch {
		cnt := min(evalBatch, n-start)
		clear(buf)
		copy(buf, images[start*p:(start+cnt)*p])
		var out []*tensors.Tensor
		err := catch("vqvae: "+what, func() (err error) {
			out, err = exec.Call(tensors.FromFlatDataAndDimensions(buf, evalBatch, s, s, 1))
			return err
		})
		if err != nil {
			return err
		}
		err = collect(out, start, cnt)
		finalize(out)
		if err != nil {
			return err
		}
	}
	return nil
}

// Encode returns the hard token (argmin code) of every image and its soft posterior
// log ρ [n][K] at the configured temperature (Sec. 3.2). images holds n images. With
// a token map (SetTokens) the token is its code's, and ρ of a token is the sum of its
// codes' ρ ([n][NumTokens()]).
func (m *Model) Encode(images []float32) (tokens []int, logRho [][]float32, err error) {
	if m.encodeExec == nil {
		m.encodeExec, err = model.NewExec(m.backend, m.store, m.encodeGraph)
		if err != nil {
			return nil, nil, err
		}
	}
	k := m.cfg.K
	err = m.runChunks(m.encodeExec, images, "Encode", func(out []*tensors.Tensor, start, n int) error {
		tok, err := tensors.CopyFlatData[int32](out[0])
		if err != nil {
			return err
		}
		lr, err := tensors.CopyFlatData[float32](out[1])
		if err != nil {
			return err
		}
		for i := range n {
			tokens = append(tokens, m.tokenOf(int(tok[i])))
			logRho = append(logRho, m.mergeRho(lr[i*k:(i+1)*k:(i+1)*k]))
		}
		return nil
	})
	return tokens, logRho, err
}

// SetTokens sets the read-out's token of each code: Encode and Reconstruct then give
// token tokens[k] for code k, and ρ of a token is the sum of its codes'. tokens has K
// entries covering 0..n−1 (every token has a code); nil removes the map. Training is
// unchanged: the codebook and the graphs work on codes. Save keeps the map.
func (m *Model) SetTokens(tokens []int) error {
	if tokens == nil {
		m.tokens = nil
		return nil
	}
	if len(tokens) != m.cfg.K {
		return fmt.Errorf("vqvae: SetTokens: %d entries for K=%d codes", len(tokens), m.cfg.K)
	}
	for k, g := range tokens {
		if g < 0 || g >= len(tokens) {
			return fmt.Errorf("vqvae: SetTokens: code %d has token %d (need 0..%d)", k, g, len(tokens)-1)
		}
	}
	n := slices.Max(tokens) + 1
	seen := make([]bool, n)
	for _, g := range tokens {
		seen[g] = true
	}
	if i := slices.Index(seen, false); i >= 0 {
		return fmt.Errorf("vqvae: SetTokens: token %d of 0..%d has no code", i, n-1)
	}
	m.tokens = slices.Clone(tokens)
	return nil
}

// Tokens returns a copy of the token map (SetTokens), nil when there is none.
func (m *Model) Tokens() []int { return slices.Clone(m.tokens) }

// NumTokens is the number of tokens Encode gives: K, or the token map's.
func (m *Model) NumTokens() int {
	if m.tokens == nil {
		return m.cfg.K
	}
	return slices.Max(m.tokens) + 1
}

// tokenOf is code k's token.
func (m *Model) tokenOf(k int) int {
	if m.tokens == nil {
		return k
	}
	return m.tokens[k]
}

// mergeRho returns log ρ of the tokens from log ρ of the codes (lr itself without a
// token map): log Σ_{k∈g} ρ(k), summed in float64 from the largest term.
func (m *Model) mergeRho(lr []float32) []float32 {
	if m.tokens == nil {
		return lr
	}
	top := make([]float64, m.NumTokens())
	for g := range top {
		top[g] = math.Inf(-1)
	}
	for k, v := range lr {
		top[m.tokens[k]] = max(top[m.tokens[k]], float64(v))
	}
	sum := make([]float64, len(top))
	for k, v := range lr {
		sum[m.tokens[k]] += math.Exp(float64(v) - top[m.tokens[k]])
	}
	out := make([]float32, len(top))
	for g := range out {
		out[g] = float32(top[g] + math.Log(sum[g]))
	}
	return out
}

// Latents returns the encoder outputs z [n][D] of the images.
func (m *Model) Latents(images []float32) ([][]float32, error) {
	var err error
	if m.latentExec == nil {
		m.latentExec, err = model.NewExec(m.backend, m.store, m.latentGraph)
		if err != nil {
			return nil, err
		}
	}
	var zs [][]float32
	d := m.cfg.D
	err = m.runChunks(m.latentExec, images, "Latents", func(out []*tensors.Tensor, start, n int) error {
		z, err := tensors.CopyFlatData[float32](out[0])
		if err != nil {
			return err
		}
		for i := range n {
			zs = append(zs, z[i*d:(i+1)*d:(i+1)*d])
		}
		return nil
	})
	return zs, err
}

// Reconstruct returns the decoder's reconstruction of every image through its hard
// code (n·Side² values) and the tokens (the token map's, SetTokens).
func (m *Model) Reconstruct(images []float32) (recon []float32, tokens []int, err error) {
	if m.reconExec == nil {
		m.reconExec, err = model.NewExec(m.backend, m.store, m.reconGraph)
		if err != nil {
			return nil, nil, err
		}
	}
	p := m.cfg.Pixels()
	err = m.runChunks(m.reconExec, images, "Reconstruct", func(out []*tensors.Tensor, start, n int) error {
		r, err := tensors.CopyFlatData[float32](out[0])
		if err != nil {
			return err
		}
		tok, err := tensors.CopyFlatData[int32](out[1])
		if err != nil {
			return err
		}
		recon = append(recon, r[:n*p]...)
		for i := range n {
			tokens = append(tokens, m.tokenOf(int(tok[i])))
		}
		return nil
	})
	return recon, tokens, err
}

// Codebook returns a copy of the code vectors [K][D].
func (m *Model) Codebook() [][]float32 {
	e, _, _ := CodebookVars(m.Scope())
	vals := tensors.MustCopyFlatData[float32](e.MustValue())
	out := make([][]float32, m.cfg.K)
	for k := range out {
		out[k] = vals[k*m.cfg.D : (k+1)*m.cfg.D : (k+1)*m.cfg.D]
	}
	return out
}

// SetCodebook sets the codebook to the rows e (K × D) with EMA sizes sizes (each > 0)
// and sums size × row, so the next EMA step continues from them.
func (m *Model) SetCodebook(e [][]float32, sizes []float64) error {
	k, d := m.cfg.K, m.cfg.D
	if len(e) != k || len(sizes) != k {
		return fmt.Errorf("vqvae: SetCodebook: %d rows and %d sizes for K=%d", len(e), len(sizes), k)
	}
	flat, n, sum := make([]float32, k*d), make([]float32, k), make([]float32, k*d)
	for i, row := range e {
		if len(row) != d || !(sizes[i] > 0) {
			return fmt.Errorf("vqvae: SetCodebook: row %d has %d values (D=%d), size %g (need > 0)", i, len(row), d, sizes[i])
		}
		n[i] = float32(sizes[i])
		for j, v := range row {
			flat[i*d+j], sum[i*d+j] = v, v*n[i]
		}
	}
	return m.setCodebook("SetCodebook", flat, n, sum)
}

// InitFromData completes the initialisation from a batch of images:
//
//   - the decoder's output bias is set to logit(mean pixel value), so the first
//     updates do not drive the sigmoid output into saturation (with a zero bias the
//     convolutional autoencoder collapses to a black image within a few dozen steps,
//     at learning rates 1e-3 and 3e-4 alike, and never recovers);
//   - with Config.Init == InitKMeans, the codebook is initialised by InitCodebook.
func (m *Model) InitFromData(images []float32) error {
	p := m.cfg.Pixels()
	if len(images) == 0 || len(images)%p != 0 {
		return fmt.Errorf("vqvae: InitFromData: %d values is not a positive multiple of %d pixels", len(images), p)
	}
	mean := 0.0
	for _, v := range images {
		mean += float64(v)
	}
	mean = min(max(mean/float64(len(images)), 0.01), 0.99)
	bv := subScope(m.Scope(), m.cfg.outputBiasPath()).GetVariable("b")
	bias := make([]float32, bv.Shape().Size())
	for i := range bias {
		bias[i] = float32(math.Log(mean / (1 - mean)))
	}
	if err := bv.SetValue(tensors.FromFlatDataAndDimensions(bias, len(bias))); err != nil {
		return fmt.Errorf("vqvae: InitFromData: output bias: %w", err)
	}
	if m.cfg.Init == InitKMeans {
		if err := m.InitCodebook(images); err != nil {
			return err
		}
	}
	m.ready = true
	return nil
}

// InitCodebook initialises the codebook from data: k-means++ seeding and Lloyd
// iterations on the encoder outputs of images; the EMA sizes start at the cluster
// sizes and the sums at size × centre, so the next EMA step continues from the centres.
func (m *Model) InitCodebook(images []float32) error {
	zs, err := m.Latents(images)
	if err != nil {
		return err
	}
	if len(zs) < m.cfg.K {
		return fmt.Errorf("vqvae: InitCodebook: need at least K=%d images, got %d", m.cfg.K, len(zs))
	}
	centers, counts := KMeans(zs, m.cfg.K, 20, m.rng)
	k, d := m.cfg.K, m.cfg.D
	e := make([]float32, k*d)
	n := make([]float32, k)
	s := make([]float32, k*d)
	for i := range k {
		n[i] = float32(max(counts[i], 1))
		for j := range d {
			e[i*d+j] = centers[i][j]
			s[i*d+j] = centers[i][j] * n[i]
		}
	}
	return m.setCodebook("InitCodebook", e, n, s)
}

// ReviveCodes re-seeds the codes that the encoder leaves (nearly) unused on images: a
// code whose share of the images' hard tokens is below minShare × 1/K gets the latent of
// an image drawn with probability proportional to its squared distance to the nearest
// used code (k-means++ seeding), and EMA statistics of the mean size of the used codes,
// so the next EMA steps neither divide by zero nor pull it back at once. It returns the
// number of codes re-seeded. The anti-collapse response of the joint phase calls it after
// a rollback.
func (m *Model) ReviveCodes(images []float32, minShare float64, rng *rand.Rand) (int, error) {
	zs, err := m.Latents(images)
	if err != nil {
		return 0, err
	}
	k, d := m.cfg.K, m.cfg.D
	ev, nv, sv := CodebookVars(m.Scope())
	e := tensors.MustCopyFlatData[float32](ev.MustValue())
	size := tensors.MustCopyFlatData[float32](nv.MustValue())
	sum := tensors.MustCopyFlatData[float32](sv.MustValue())
	nearest := func(z []float32, live []bool) (int, float64) {
		best, bestD := -1, math.Inf(1)
		for c := range k {
			if live != nil && !live[c] {
				continue
			}
			s := 0.0
			for j := range d {
				x := float64(z[j] - e[c*d+j])
				s += x * x
			}
			if s < bestD {
				best, bestD = c, s
			}
		}
		return best, bestD
	}
	counts := make([]int, k)
	for _, z := range zs {
		c, _ := nearest(z, nil)
		counts[c]++
	}
	live := make([]bool, k)
	nLive, sizeLive := 0, 0.0
	for c := range k {
		live[c] = float64(counts[c]) >= minShare*float64(len(zs))/float64(k)
		if live[c] {
			nLive++
			sizeLive += float64(size[c])
		}
	}
	if nLive == 0 || nLive == k {
		return 0, nil
	}
	newSize := float32(sizeLive / float64(nLive))
	revived := 0
	for c := range k {
		if live[c] {
			continue
		}
		w := make([]float64, len(zs))
		total := 0.0
		for i, z := range zs {
			_, dist := nearest(z, live)
			w[i] = dist
			total += dist
		}
		if total <= 0 {
			break
		}
		u, pick := rng.Float64()*total, len(zs)-1
		for i, x := range w {
			if u < x {
				pick = i
				break
			}
			u -= x
		}
		for j := range d {
			e[c*d+j] = zs[pick][j]
			sum[c*d+j] = zs[pick][j] * newSize
		}
		size[c] = newSize
		live[c] = true
		revived++
	}
	return revived, m.setCodebook("ReviveCodes", e, size, sum)
}

// setCodebook writes the codebook state: embeddings e [K·D], EMA sizes n [K], sums s [K·D].
func (m *Model) setCodebook(caller string, e, n, s []float32) error {
	k, d := m.cfg.K, m.cfg.D
	ev, nv, sv := CodebookVars(m.Scope())
	for _, x := range []struct {
		v    *model.Variable
		t    *tensors.Tensor
		name string
	}{
		{ev, tensors.FromFlatDataAndDimensions(e, k, d), "embeddings"},
		{nv, tensors.FromFlatDataAndDimensions(n, k), "size"},
		{sv, tensors.FromFlatDataAndDimensions(s, k, d), "sum"},
	} {
		if err := x.v.SetValue(x.t); err != nil {
			return fmt.Errorf("vqvae: %s: %s: %w", caller, x.name, err)
		}
	}
	return nil
}
