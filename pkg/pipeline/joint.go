package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// HMMScope is the scope (under the store's root, beside /vqvae) of the cloned HMM's
// logits during the joint phase: /hmm/pi [N] and /hmm/theta [A,N,N].
const HMMScope = "hmm"

// Joint is the joint VQ-VAE + cloned-HMM model of phase 2 (paper Sec. 3.6): a VQ-VAE
// whose store also holds the HMM logits, and the compiled joint training step.
type Joint struct {
	VQ     *vqvae.Model
	Layout hmmgraph.Layout
	A      int // number of actions

	// Ablations (set before the first Step): FreezeVQ keeps the VQ-VAE fixed during the
	// joint phase (no Adam step, no EMA codebook update: only (π, Θ) learn);
	// NoLengthNorm drops the 1/T_b of the HMM term (Sec. 3.6 length normalisation).
	FreezeVQ, NoLengthNorm bool
	// Scaled emits ρ_t(k)/ρ̄(k), the soft posterior over its minibatch mean
	// (Config.Joint.ScaledEmissions), instead of ρ_t(k) (Sec. 3.5).
	Scaled bool

	// GradFrames, if in (0, B·T), is the number of a step's frames (the first rows of
	// Chunk.Images, see Chunk.Order) whose reconstruction and commitment are computed and
	// through which gradients reach the encoder and decoder; the other frames are encoded
	// forward-only and enter the HMM and diversity terms without gradient. The gradient
	// that the HMM and diversity terms send through the subset's log ρ is scaled by
	// B·T/GradFrames, so the encoder's gradient is an unbiased estimate of the full one.
	// 0 (or B·T): every frame. Set before the first Step.
	GradFrames int

	// Share, if set, is the token usage the diversity term keeps (KL(ρ̄ ‖ Share),
	// Config.Warmup.MergeCodes); nil: uniform usage (log K − H(ρ̄), the paper). Set before the
	// first Step.
	Share []float64

	vqCfg           vqvae.Config
	beta, lr, hmmLR float64
	exec            *model.Exec
}

// StepMetrics are the terms of one joint step, on the step's chunks before the update.
type StepMetrics struct {
	Loss       float64 // L_joint
	Rec        float64 // L_rec (per-pixel MSE over valid frames)
	Commit     float64 // L_commit (unweighted)
	NLLPerStep float64 // −(1/|B|) Σ_b ℓ^s_b / T_b
	Div        float64 // log K − H(ρ̄), or KL(ρ̄ ‖ Joint.Share)
	Perplexity float64 // exp H of the hard-token usage over the valid frames
	Active     int     // codes used in the batch
	Revived    int     // dead codes re-seeded after the step
	// Applied is false when the step would have written a non-finite value (loss,
	// parameter, optimizer or codebook state): then no variable changed.
	Applied bool
}

// NewJoint adds the HMM logits of hmm (float32) to vq's store under HMMScope and
// prepares the joint step with commitment weight beta, Adam rate lr for the VQ-VAE
// variables and hmmLR for (π, Θ); λ and α_div are inputs of each Step. hmm's alphabet
// must be vq's codebook.
func NewJoint(vq *vqvae.Model, hmm *chmm.Model, beta, lr, hmmLR float64) (*Joint, error) {
	if err := hmm.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline.NewJoint: %w", err)
	}
	if hmm.K() != vq.Config().K {
		return nil, fmt.Errorf("pipeline.NewJoint: HMM has %d tokens, codebook has %d codes", hmm.K(), vq.Config().K)
	}
	j := &Joint{VQ: vq, Layout: hmmgraph.Layout{Clones: slices.Clone(hmm.Clones)}, A: hmm.NumActions,
		vqCfg: vq.Config(), beta: beta, lr: lr, hmmLR: hmmLR}
	hs := vq.Store().RootScope().At(HMMScope)
	n := hmm.N()
	for _, x := range []struct {
		name string
		vals []float64
		dims []int
	}{{"pi", hmm.PiLogits, []int{n}}, {"theta", hmm.ThetaLogits, []int{hmm.NumActions, n, n}}} {
		t := tensors.FromFlatDataAndDimensions(toF32(x.vals), x.dims...)
		if v := hs.GetVariable(x.name); v != nil {
			if err := v.SetValue(t); err != nil {
				return nil, fmt.Errorf("pipeline.NewJoint: %s: %w", x.name, err)
			}
			continue
		}
		v, err := hs.CreateVariable(x.name, t)
		if err != nil {
			return nil, fmt.Errorf("pipeline.NewJoint: %s: %w", x.name, err)
		}
		v.SetTrainable(true)
	}
	return j, nil
}

// AttachJoint wraps a VQ-VAE loaded from a joint checkpoint (its store already holds
// the HMM logits) with the clone layout clones.
func AttachJoint(vq *vqvae.Model, clones []int, numActions int, beta, lr, hmmLR float64) (*Joint, error) {
	j := &Joint{VQ: vq, Layout: hmmgraph.Layout{Clones: slices.Clone(clones)}, A: numActions,
		vqCfg: vq.Config(), beta: beta, lr: lr, hmmLR: hmmLR}
	n := j.Layout.N()
	hs := vq.Store().RootScope().At(HMMScope)
	pi, theta := hs.GetVariable("pi"), hs.GetVariable("theta")
	switch {
	case pi == nil || theta == nil:
		return nil, fmt.Errorf("pipeline: checkpoint has no HMM variables under /%s", HMMScope)
	case !slices.Equal(pi.Shape().Dimensions, []int{n}) || !slices.Equal(theta.Shape().Dimensions, []int{numActions, n, n}):
		return nil, fmt.Errorf("pipeline: checkpoint HMM shapes %v, %v do not match N=%d, A=%d",
			pi.Shape().Dimensions, theta.Shape().Dimensions, n, numActions)
	}
	return j, nil
}

// HMM returns the current HMM logits as a chmm.Model.
func (j *Joint) HMM() (*chmm.Model, error) {
	hs := j.VQ.Store().RootScope().At(HMMScope)
	pi, err := tensors.CopyFlatData[float32](hs.GetVariable("pi").MustValue())
	if err != nil {
		return nil, err
	}
	theta, err := tensors.CopyFlatData[float32](hs.GetVariable("theta").MustValue())
	if err != nil {
		return nil, err
	}
	m := &chmm.Model{Clones: slices.Clone(j.Layout.Clones), NumActions: j.A,
		PiLogits: toF64(pi), ThetaLogits: toF64(theta)}
	return m, m.Validate()
}

// graph builds one joint step (Algorithm 1). Inputs:
//
//	x       [B·T, S, S, 1] float32  the chunks' frames in row order (Chunk.Order; padding: anything)
//	order   [B·T] int32             row of x holding chunk frame i (chunk-major)
//	actions [B, T−1] int32          a_t of each chunk
//	mask    [B, T] float32          1 for real steps, 0 for padding (a prefix mask)
//	lambda  scalar float32          λ_t (annealed and throttled by the caller)
//	alpha   scalar float32          α_div of this step
//
// and the loss (Sec. 3.6)
//
//	L = L_rec + β·L_commit + λ_t·(−(1/|B|) Σ_b ℓ^s_b / T_b) + α_div·(log K − H(ρ̄))
//
// with every term over the valid frames only (L_rec and L_commit over the GradFrames
// rows). The VQ-VAE variables take an Adam step at rate lr, (π, Θ) one at rate hmmLR
// (two optimizers on disjoint scopes, one gradient pass), then the codebook takes its
// EMA update (and dead-code revival). If the loss or any new variable value is not
// finite, every variable keeps its old value (the step is not applied).
func (j *Joint) graph(root *model.Scope, in []*Node) []*Node {
	x, order, actions, mask, lambda, alpha := in[0], in[1], in[2], in[3], in[4], in[5]
	g := x.Graph()
	root.Store().SetTraining(g, true)
	vs, hs := root.At(vqvae.ScopeName), root.At(HMMScope)
	c := j.vqCfg
	dt := x.DType()
	t := j.Terms(root, x, order, actions, mask)
	loss := t.Loss(lambda, alpha, j.beta)

	// Step 8: one gradient pass, two Adam optimizers on disjoint scopes.
	var nodes []*Node
	var counts []int
	scopes := []*model.Scope{vs, hs}
	if j.FreezeVQ {
		scopes = []*model.Scope{hs}
		counts = append(counts, 0)
	}
	for _, s := range scopes {
		n := 0
		for v := range s.IterVariables() {
			if v.Trainable && v.InUseByGraph(g) {
				nodes = append(nodes, v.NodeValue(g))
				n++
			}
		}
		counts = append(counts, n)
	}
	grads := Gradient(loss, nodes...)
	if !j.FreezeVQ {
		adam(j.lr).UpdateGraphWithGradients(vs, grads[:counts[0]], dt)
	}
	adam(j.hmmLR).UpdateGraphWithGradients(hs, grads[counts[0]:], dt)

	usage := vqvae.Usage(t.Out.Tokens, c.K, t.RowMask, dt)
	var revived *Node
	if j.FreezeVQ {
		revived = ScalarZero(g, dt)
	} else {
		revived = c.UpdateCodebook(vs, t.Out.Z, t.Out.Tokens, t.RowMask) // step 2 (EMA), after the losses read the codebook
	}
	applied := guardFinite(root.Store(), g, loss)
	return []*Node{loss, t.Out.Rec, t.Out.Commit, t.NLL, t.Div, vqvae.Perplexity(usage), vqvae.ActiveCodes(usage), revived,
		ConvertDType(applied, dt)}
}

// guardFinite makes the step all-or-nothing: unless loss and the new value of every
// variable the graph changes are finite, each such variable keeps its value at the
// start of the step. It returns whether the step is applied (scalar Bool).
func guardFinite(st *model.Store, g *Graph, loss *Node) *Node {
	ok := LogicalAll(IsFinite(loss))
	var changed []*model.Variable
	for v := range st.IterVariables() {
		if !v.ChangedInGraph(g) {
			continue
		}
		changed = append(changed, v)
		if nv := v.NodeValue(g); nv.DType().IsFloat() {
			ok = LogicalAnd(ok, LogicalAll(IsFinite(nv)))
		}
	}
	for _, v := range changed {
		old := g.GetParameterByName(v.Path())
		if old == nil {
			exceptions.Panicf("pipeline: joint step: variable %s has no parameter node", v.Path())
		}
		v.SetNodeValue(Where(ok, v.NodeValue(g), old))
	}
	return ok
}

// Terms are the nodes of the joint objective's terms (Sec. 3.6) for one minibatch.
type Terms struct {
	// Out is the VQ-VAE pass: Z, Tokens, Q and Dist2 over the B·T frames in row order,
	// LogRho [B·T,K] in chunk order, XHat, Rec and Commit over the GradFrames rows.
	Out      vqvae.Outputs
	FlatMask *Node // [B·T] frame validity, chunk order
	RowMask  *Node // [B·T] frame validity, row order (for Out.Z and Out.Tokens)
	LL       *Node // [B] soft log-likelihood ℓ^s_b of each chunk (Sec. 3.5)
	NLL      *Node // −(1/|B|) Σ_b ℓ^s_b / T_b (length-normalised, Sec. 3.6)
	Div      *Node // log K − H(ρ̄) over the valid frames
}

// Loss is L_rec + β·L_commit + λ·NLL + α_div·L_div (lambda and alpha are scalar nodes:
// both follow schedules over the joint phase).
func (t Terms) Loss(lambda, alpha *Node, beta float64) *Node {
	return Add(Add(t.Out.Rec, MulScalar(t.Out.Commit, beta)), Add(Mul(lambda, t.NLL), Mul(alpha, t.Div)))
}

// Terms builds Algorithm 1 steps 1 and 3–6 on the variables under root (/vqvae and
// /hmm): x [B·T,S,S,1] in row order, order [B·T] int32 (row of chunk frame i), actions
// [B,T−1] int32, mask [B,T] (1 = real step, a prefix, chunk order). The first
// GradFrames rows of x carry gradients (Joint.GradFrames). Padded frames count in no
// term. It changes no variable.
func (j *Joint) Terms(root *model.Scope, x, order, actions, mask *Node) Terms {
	g := x.Graph()
	vs, hs := root.At(vqvae.ScopeName), root.At(HMMScope)
	c := j.vqCfg
	dt := x.DType()
	B, T := mask.Shape().Dimensions[0], mask.Shape().Dimensions[1]
	n := B * T
	r := j.gradFrames(n)
	var t Terms
	t.FlatMask = Reshape(mask, n)                                                                                // [B·T] chunk order
	perm := Scatter(ExpandAxes(order, -1), Iota(g, order.Shape(), 0), shapes.Make(dtypes.Int32, n), false, true) // [B·T] chunk frame of row i
	t.RowMask = Gather(t.FlatMask, ExpandAxes(perm, -1), false)                                                  // [B·T] row order

	// Steps 1, 3, 4: encoder on every row, gradients through the first r only.
	var z *Node // [B·T, D] row order
	if r == n {
		z = c.Encode(vs, x)
	} else {
		xg := Slice(x, AxisRange(0, r))
		xf := Slice(x, AxisRange(r, n))
		z = Concatenate([]*Node{c.Encode(vs, xg), StopGradient(c.Encode(vs, xf))}, 0)
	}
	o := vqvae.Outputs{Z: z, Codebook: vqvae.CodebookState(vs, g)}
	o.Tokens, o.Q, o.Dist2 = vqvae.Quantize(z, o.Codebook.Codebook)
	logRhoRows := vqvae.SoftPosterior(o.Dist2, c.Tau) // [B·T, K] row order
	if r < n {
		// The HMM and diversity terms read log ρ of all frames; only the subset rows
		// carry gradient, scaled by n/r for an unbiased estimate of the full gradient.
		sub := Slice(logRhoRows, AxisRange(0, r))
		sub = Add(StopGradient(sub), MulScalar(Sub(sub, StopGradient(sub)), float64(n)/float64(r)))
		logRhoRows = Concatenate([]*Node{sub, Slice(logRhoRows, AxisRange(r, n))}, 0)
	}
	o.LogRho = Gather(logRhoRows, ExpandAxes(order, -1), false) // [B·T, K] chunk order
	zg, qg := z, o.Q
	maskG := t.RowMask
	xr := x
	if r < n {
		zg, qg = Slice(z, AxisRange(0, r)), Slice(o.Q, AxisRange(0, r))
		maskG = Slice(t.RowMask, AxisRange(0, r))
		xr = Slice(x, AxisRange(0, r))
	}
	o.XHat = c.Decode(vs, vqvae.StraightThrough(zg, qg))
	o.Rec, o.Commit = vqvae.Losses(xr, o.XHat, zg, qg, maskG)
	t.Out = o

	logRho := Reshape(o.LogRho, B, T, c.K) // [B, T, K]
	if j.Scaled {
		// Scaled likelihoods: log ρ_t(k) − log ρ̄(k). Tokens the map cannot tell apart
		// then predict no better merged than apart, and a collapsed code predicts nothing.
		logBar := vqvae.LogMeanPosterior(o.LogRho, t.FlatMask)                       // [K]
		logRho = Sub(logRho, BroadcastToDims(Reshape(logBar, 1, 1, c.K), B, T, c.K)) // [B, T, K]
	}
	logEmit := j.Layout.StateLogEmissions(logRho)                                      // [B, T, N]: log ρ_t(ω(j)), sink −Inf (Sec. 3.5)
	pi := hs.GetVariable("pi").NodeValue(g)                                            // [N]
	theta := hs.GetVariable("theta").NodeValue(g)                                      // [A, N, N]
	t.LL = ConvertDType(hmmgraph.LogLikelihood(pi, theta, logEmit, actions, mask), dt) // [B] (step 5)
	if j.NoLengthNorm {
		t.NLL = Neg(ReduceAllMean(t.LL)) // ablation: −(1/|B|) Σ_b ℓ^s_b
	} else {
		lengths := MaxScalar(ReduceSum(mask, 1), 1)    // [B] T_b
		t.NLL = Neg(ReduceAllMean(Div(t.LL, lengths))) // step 6
	}
	if j.Share != nil {
		t.Div = vqvae.DiversityPenaltyTo(o.LogRho, t.FlatMask, j.Share)
	} else {
		t.Div = vqvae.DiversityPenalty(o.LogRho, t.FlatMask)
	}
	return t
}

// gradFrames is the number of gradient rows of a step of n frames.
func (j *Joint) gradFrames(n int) int {
	if j.GradFrames <= 0 || j.GradFrames >= n {
		return n
	}
	return j.GradFrames
}

// Chunk is one minibatch of the joint phase: B chunks of T steps.
type Chunk struct {
	Images  []float32 // B·T·S² pixels in [0,1], chunk-major; padded frames may hold anything
	Actions []int32   // B·(T−1)
	Mask    []float32 // B·T, a prefix of ones per chunk
	B, T    int
	// Order, if set, is a permutation of the B·T frames: Order[r] is the chunk frame
	// that Step places at row r, so with Joint.GradFrames = R the frames Order[:R]
	// carry gradients. nil: chunk order (the first R frames).
	Order []int32
}

// Step runs one joint step with weights lambda (λ_t) and alpha (α_div of this step).
func (j *Joint) Step(ch Chunk, lambda, alpha float64) (StepMetrics, error) {
	s := j.VQ.Config().Side
	n := ch.B * ch.T
	p := s * s
	if len(ch.Images) != n*p || len(ch.Actions) != ch.B*(ch.T-1) || len(ch.Mask) != n {
		return StepMetrics{}, fmt.Errorf("pipeline: Step: chunk sizes %d/%d/%d do not match B=%d, T=%d, side %d",
			len(ch.Images), len(ch.Actions), len(ch.Mask), ch.B, ch.T, s)
	}
	for i, a := range ch.Actions {
		if a < 0 || int(a) >= j.A {
			return StepMetrics{}, fmt.Errorf("pipeline: Step: chunk %d step %d: action %d outside [0,%d)", i/(ch.T-1), i%(ch.T-1), a, j.A)
		}
	}
	images := ch.Images
	order := make([]int32, n) // row of chunk frame i
	if ch.Order == nil {
		for i := range order {
			order[i] = int32(i)
		}
	} else {
		if len(ch.Order) != n {
			return StepMetrics{}, fmt.Errorf("pipeline: Step: Order has %d entries, want B·T = %d", len(ch.Order), n)
		}
		seen := make([]bool, n)
		images = make([]float32, n*p)
		for r, f := range ch.Order {
			if f < 0 || int(f) >= n || seen[f] {
				return StepMetrics{}, fmt.Errorf("pipeline: Step: Order is not a permutation of 0..%d (entry %d = %d)", n-1, r, f)
			}
			seen[f] = true
			order[f] = int32(r)
			copy(images[r*p:(r+1)*p], ch.Images[int(f)*p:(int(f)+1)*p])
		}
	}
	if j.exec == nil {
		var err error
		if j.exec, err = model.NewExec(j.VQ.Backend(), j.VQ.Store(), j.graph); err != nil {
			return StepMetrics{}, err
		}
	}
	var out []*tensors.Tensor
	err := catch("pipeline: joint step", func() (err error) {
		out, err = j.exec.Call(
			tensors.FromFlatDataAndDimensions(images, n, s, s, 1),
			tensors.FromFlatDataAndDimensions(order, n),
			tensors.FromFlatDataAndDimensions(ch.Actions, ch.B, ch.T-1),
			tensors.FromFlatDataAndDimensions(ch.Mask, ch.B, ch.T),
			tensors.FromValue(float32(lambda)),
			tensors.FromValue(float32(alpha)))
		return err
	})
	if err != nil {
		return StepMetrics{}, err
	}
	v := make([]float64, len(out))
	for i, t := range out {
		v[i] = float64(t.Value().(float32))
		_ = t.FinalizeAll()
	}
	return StepMetrics{Loss: v[0], Rec: v[1], Commit: v[2], NLLPerStep: v[3], Div: v[4],
		Perplexity: v[5], Active: int(v[6]), Revived: int(v[7]), Applied: v[8] != 0}, nil
}

// Snapshot is a copy of variable values by path.
type Snapshot map[string][]byte

// snapshot copies every variable whose path starts with prefix.
func snapshot(st *model.Store, prefix string) (Snapshot, error) {
	s := Snapshot{}
	for v := range st.IterVariables() {
		if !strings.HasPrefix(v.Path(), prefix) {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, err
		}
		if err := t.ConstBytes(func(b []byte) { s[v.Path()] = slices.Clone(b) }); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// restoreSnapshot writes the snapshot's values back (variables created since are kept).
func restoreSnapshot(st *model.Store, s Snapshot) error {
	for path, b := range s {
		v := st.GetVariable(path)
		if v == nil {
			return fmt.Errorf("pipeline: snapshot variable %s missing", path)
		}
		sh := v.Shape()
		if int(sh.ByteSize()) != len(b) {
			return fmt.Errorf("pipeline: snapshot variable %s: %d bytes for %s", path, len(b), sh)
		}
		t := tensors.FromShape(sh)
		if err := t.MutableBytes(func(dst []byte) { copy(dst, b) }); err != nil {
			return err
		}
		if err := v.SetValue(t); err != nil {
			return fmt.Errorf("pipeline: snapshot variable %s: %w", path, err)
		}
	}
	return nil
}

// compact builds a VQ-VAE with the codes keep of src (in that order: token i is code
// keep[i]): every network parameter is copied, the codebook and its EMA statistics are
// restricted to the kept rows; optimizer state is not copied (phase 2 starts its own).
func compact(src *vqvae.Model, keep []int, seed uint64) (*vqvae.Model, error) {
	cfg := src.Config()
	cfg.K = len(keep)
	dst, err := vqvae.New(src.Backend(), cfg, seed)
	if err != nil {
		return nil, err
	}
	prefix := "/" + vqvae.ScopeName + "/"
	for v := range dst.Store().IterVariables() {
		p := v.Path()
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		old := src.Store().GetVariable(p)
		if old == nil {
			return nil, fmt.Errorf("pipeline: compact: variable %s missing in the warm-up model", p)
		}
		t, err := old.Value()
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(p, prefix+"codebook/") {
			t, err = selectRows(t, keep)
			if err != nil {
				return nil, fmt.Errorf("pipeline: compact: %s: %w", p, err)
			}
		}
		if err := v.SetValue(t); err != nil {
			return nil, fmt.Errorf("pipeline: compact: %s: %w", p, err)
		}
	}
	return dst, nil
}

// selectRows returns rows keep of a float32 tensor [K, ...].
func selectRows(t *tensors.Tensor, keep []int) (*tensors.Tensor, error) {
	if t.Shape().DType != dtypes.Float32 {
		return nil, fmt.Errorf("dtype %s, want float32", t.Shape().DType)
	}
	dims := slices.Clone(t.Shape().Dimensions)
	row := 1
	for _, d := range dims[1:] {
		row *= d
	}
	vals, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, 0, len(keep)*row)
	for _, k := range keep {
		out = append(out, vals[k*row:(k+1)*row]...)
	}
	dims[0] = len(keep)
	return tensors.FromFlatDataAndDimensions(out, dims...), nil
}

// gradOptimizer is the part of GoMLX's Adam that takes precomputed gradients.
type gradOptimizer interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*Node, lossDType dtypes.DType)
}

// adam returns an Adam optimizer with learning rate lr (variables of the scope it is
// applied to; its state lives under that scope's /AdamOptimizer).
func adam(lr float64) gradOptimizer {
	return optimizer.Adam().LearningRate(lr).Done().(gradOptimizer)
}

// catch runs fn, turning a panic into an error.
func catch(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", what, r)
		}
	}()
	return fn()
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		if math.IsInf(v, -1) {
			out[i] = float32(math.Inf(-1))
			continue
		}
		out[i] = float32(v)
	}
	return out
}

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
