package pipeline

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

func testBackend(t testing.TB) *hmmgraphBackend {
	t.Helper()
	b, _, err := hmmgraph.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	return &hmmgraphBackend{b}
}

// randomChunk returns B chunks of T random images and actions; chunk b has lengths[b]
// real steps (the rest is padding filled with garbage).
func randomChunk(rng *rand.Rand, side int, lengths []int, T, A int) Chunk {
	B := len(lengths)
	ch := Chunk{B: B, T: T, Images: make([]float32, B*T*side*side), Actions: make([]int32, B*(T-1)), Mask: make([]float32, B*T)}
	for i := range ch.Images {
		ch.Images[i] = rng.Float32()
	}
	for b, l := range lengths {
		for t := range T {
			if t < l {
				ch.Mask[b*T+t] = 1
			}
			if t < T-1 {
				ch.Actions[b*(T-1)+t] = int32(rng.IntN(A))
			}
		}
	}
	return ch
}

// TestJointHardConsistency: with a near-zero temperature ρ_t is one-hot on the hard
// token, and the joint graph's ℓ^s of every (padded) chunk equals pkg/chmm's hard
// forward pass on the tokens the same graph emits (paper Sec. 3.5, consistency).
//
// With Joint.Scaled the emissions are ρ_t(k)/ρ̄(k), so ℓ^s_b is the hard ℓ less
// Σ_t log ρ̄(token_t), with ρ̄ the tokens' shares among the minibatch's real frames.
func TestJointHardConsistency(t *testing.T) {
	for _, scaled := range []bool{false, true} {
		t.Run(map[bool]string{false: "posterior", true: "scaled"}[scaled], func(t *testing.T) { testJointHardConsistency(t, scaled) })
	}
}

func testJointHardConsistency(t *testing.T, scaled bool) {
	be := testBackend(t)
	vc := vqvae.DefaultConfig(3)
	vc.Arch, vc.D, vc.Tau, vc.Init = vqvae.ArchMLP, 8, 1e-9, vqvae.InitUniform
	vq, err := vqvae.New(be.Backend, vc, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hmm := chmm.New([]int{2, 3, 2}, 4, rng)
	j, err := NewJoint(vq, hmm, 0.25, 3e-4, 3e-2)
	if err != nil {
		t.Fatal(err)
	}
	j.Scaled = scaled
	lengths := []int{12, 8, 2}
	ch := randomChunk(rng, vc.Side, lengths, 12, 4)
	exec, err := model.NewExec(be.Backend, vq.Store(), func(root *model.Scope, x, a, m *Node) (*Node, *Node, *Node) {
		root.Store().SetTraining(x.Graph(), true)
		tm := j.Terms(root, x, chunkOrder(x), a, m)
		return tm.LL, tm.Out.Tokens, tm.NLL
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Call(tensors.FromFlatDataAndDimensions(ch.Images, ch.B*ch.T, vc.Side, vc.Side, 1),
		tensors.FromFlatDataAndDimensions(ch.Actions, ch.B, ch.T-1), tensors.FromFlatDataAndDimensions(ch.Mask, ch.B, ch.T))
	if err != nil {
		t.Fatal(err)
	}
	ll := tensors.MustCopyFlatData[float32](out[0])
	tok := tensors.MustCopyFlatData[int32](out[1])
	nll := float64(out[2].Value().(float32))
	ref, err := j.HMM()
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int32]bool{}
	share := map[int32]float64{} // ρ̄: each token's share of the real frames
	real := 0
	for b, l := range lengths {
		for s := range l {
			share[tok[b*ch.T+s]]++
		}
		real += l
	}
	wantNLL := 0.0
	for b, l := range lengths {
		seq := chmm.Sequence{}
		for s := range l {
			seq.Obs = append(seq.Obs, int(tok[b*ch.T+s]))
			distinct[tok[b*ch.T+s]] = true
			if s < l-1 {
				seq.Actions = append(seq.Actions, int(ch.Actions[b*(ch.T-1)+s]))
			}
		}
		want, err := chmm.LogLikelihood(ref, []chmm.Sequence{seq})
		if err != nil {
			t.Fatal(err)
		}
		if scaled {
			for _, o := range seq.Obs {
				want -= math.Log(share[int32(o)] / float64(real))
			}
		}
		wantNLL -= want / float64(l) / float64(len(lengths))
		if d := math.Abs(float64(ll[b]) - want); d > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("chunk %d (length %d): soft ℓ = %.6f, hard ℓ = %.6f", b, l, ll[b], want)
		}
	}
	if len(distinct) < 2 {
		t.Errorf("only %d distinct tokens: the test does not exercise the emissions", len(distinct))
	}
	if d := math.Abs(nll - wantNLL); d > 1e-4*math.Max(1, math.Abs(wantNLL)) {
		t.Errorf("length-normalised NLL %.6f, want %.6f", nll, wantNLL)
	}
}

// TestJointGradientFiniteDifferences checks the gradient of the joint loss with respect
// to encoder weights against central differences, in float64, on a tiny conv config.
// The reconstruction term is left out: its encoder gradient is the straight-through
// estimate (the loss value depends on the code, not on z), which finite differences
// cannot see. Every other term — β·commit, λ·NLL (through log ρ and the While-loop
// forward–backward surrogate) and α·div — has a true gradient.
//
// With Joint.Scaled the NLL's gradient also runs through the minibatch's ρ̄.
func TestJointGradientFiniteDifferences(t *testing.T) {
	for _, scaled := range []bool{false, true} {
		t.Run(map[bool]string{false: "posterior", true: "scaled"}[scaled], func(t *testing.T) { testJointGradientFD(t, scaled) })
	}
}

func testJointGradientFD(t *testing.T, scaled bool) {
	be := testBackend(t)
	vc := vqvae.DefaultConfig(3)
	vc.D, vc.F, vc.Tau = 4, 2, 0.5
	store := model.NewStore()
	root := store.RootScope()
	if err := vc.InitVariables(root.At(vqvae.ScopeName), 5, dtypes.Float64); err != nil {
		t.Fatal(err)
	}
	// Codebook rows near the latents' scale so that ρ is neither uniform nor one-hot.
	rng := rand.New(rand.NewPCG(7, 8))
	e, _, _ := vqvae.CodebookVars(root.At(vqvae.ScopeName))
	cb := make([]float64, vc.K*vc.D)
	for i := range cb {
		cb[i] = rng.NormFloat64() * 0.3
	}
	if err := e.SetValue(tensors.FromFlatDataAndDimensions(cb, vc.K, vc.D)); err != nil {
		t.Fatal(err)
	}
	hmm := chmm.New([]int{2, 2, 2}, 4, rng)
	n := hmm.N()
	hs := root.At(HMMScope)
	if _, err := hs.CreateVariable("pi", tensors.FromFlatDataAndDimensions(hmm.PiLogits, n)); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.CreateVariable("theta", tensors.FromFlatDataAndDimensions(hmm.ThetaLogits, 4, n, n)); err != nil {
		t.Fatal(err)
	}
	j := &Joint{Layout: hmmgraph.Layout{Clones: hmm.Clones}, A: 4, vqCfg: vc, Scaled: scaled}
	ch := randomChunk(rng, vc.Side, []int{6, 4}, 6, 4)
	x64 := make([]float64, len(ch.Images))
	for i, v := range ch.Images {
		x64[i] = float64(v)
	}
	m64 := make([]float64, len(ch.Mask))
	for i, v := range ch.Mask {
		m64[i] = float64(v)
	}
	// The first encoder weight variable.
	var w *model.Variable
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/vqvae/encoder") && v.Trainable && strings.HasSuffix(v.Path(), "/w") {
			w = v
			break
		}
	}
	if w == nil {
		t.Fatal("no encoder weight variable")
	}
	const beta, lambda, alpha = 0.25, 1.0, 0.1
	exec, err := model.NewExec(be.Backend, store, func(root *model.Scope, x, a, m *Node) (*Node, *Node) {
		g := x.Graph()
		root.Store().SetTraining(g, true)
		tm := j.Terms(root, x, chunkOrder(x), a, m)
		loss := Add(MulScalar(tm.Out.Commit, beta), Add(MulScalar(tm.NLL, lambda), MulScalar(tm.Div, alpha)))
		return loss, Gradient(loss, w.NodeValue(g))[0]
	})
	if err != nil {
		t.Fatal(err)
	}
	args := []any{tensors.FromFlatDataAndDimensions(x64, ch.B*ch.T, vc.Side, vc.Side, 1),
		tensors.FromFlatDataAndDimensions(ch.Actions, ch.B, ch.T-1), tensors.FromFlatDataAndDimensions(m64, ch.B, ch.T)}
	eval := func() (float64, []float64) {
		out, err := exec.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Value().(float64), tensors.MustCopyFlatData[float64](out[1])
	}
	_, grad := eval()
	w0 := tensors.MustCopyFlatData[float64](w.MustValue())
	dims := slices.Clone(w.Shape().Dimensions)
	set := func(vals []float64) {
		if err := w.SetValue(tensors.FromFlatDataAndDimensions(vals, dims...)); err != nil {
			t.Fatal(err)
		}
	}
	// The entries with the largest gradients, plus a few at random.
	order := make([]int, len(grad))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return -cmpAbs(grad[a], grad[b]) })
	picks := append(order[:4:4], rng.IntN(len(grad)), rng.IntN(len(grad)))
	const h = 1e-5
	for _, i := range picks {
		p := slices.Clone(w0)
		p[i] += h
		set(p)
		lp, _ := eval()
		p[i] -= 2 * h
		set(p)
		lm, _ := eval()
		fd := (lp - lm) / (2 * h)
		if d := math.Abs(fd - grad[i]); d > 1e-5+1e-4*math.Abs(fd) {
			t.Errorf("∂L/∂w[%d]: autodiff %.8g, finite differences %.8g", i, grad[i], fd)
		}
	}
	set(w0)
	if math.Abs(grad[order[0]]) < 1e-8 {
		t.Errorf("largest gradient entry %g: test does not exercise the encoder", grad[order[0]])
	}
}

func cmpAbs(a, b float64) int {
	switch a, b := math.Abs(a), math.Abs(b); {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestCompactRelabels: the compacted model emits, for every image, the position in keep
// of the code the original model emits (argmin over a subset containing the winner).
func TestCompactRelabels(t *testing.T) {
	be := testBackend(t)
	vc := vqvae.DefaultConfig(6)
	vc.Arch, vc.D = vqvae.ArchMLP, 8
	src, err := vqvae.New(be.Backend, vc, 11)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	imgs := make([]float32, 300*vc.Pixels())
	for i := range imgs {
		imgs[i] = rng.Float32() * rng.Float32()
	}
	if err := src.InitFromData(imgs); err != nil {
		t.Fatal(err)
	}
	tok, _, err := src.Encode(imgs)
	if err != nil {
		t.Fatal(err)
	}
	var keep []int
	for k := vc.K - 1; k >= 0; k-- { // reversed: relabelling is not the identity
		if slices.Contains(tok, k) {
			keep = append(keep, k)
		}
	}
	if len(keep) < 2 {
		t.Fatalf("only %d codes used", len(keep))
	}
	dst, err := compact(src, keep, 1)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Config().K != len(keep) {
		t.Fatalf("compacted K = %d, want %d", dst.Config().K, len(keep))
	}
	got, _, err := dst.Encode(imgs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tok {
		if want := slices.Index(keep, tok[i]); got[i] != want {
			t.Fatalf("image %d: compacted token %d, want %d (code %d)", i, got[i], want, tok[i])
		}
	}
}

type hmmgraphBackend struct{ Backend compute.Backend }

// TestJointAblations: with FreezeVQ a joint step leaves every /vqvae variable (encoder,
// decoder, codebook) unchanged and still moves (π, Θ); with NoLengthNorm the HMM term
// is the plain mean of the chunks' ℓ^s, i.e. the normalised term times T for chunks of
// equal length T.
func TestJointAblations(t *testing.T) {
	be := testBackend(t)
	vc := vqvae.DefaultConfig(3)
	vc.Arch, vc.D = vqvae.ArchMLP, 8
	rng := rand.New(rand.NewPCG(3, 4))
	ch := randomChunk(rng, vc.Side, []int{10, 10}, 10, 4)
	step := func(freeze, noNorm bool) (StepMetrics, Snapshot, Snapshot, Snapshot, Snapshot) {
		vq, err := vqvae.New(be.Backend, vc, 5)
		if err != nil {
			t.Fatal(err)
		}
		j, err := NewJoint(vq, chmm.New([]int{2, 2, 2}, 4, rand.New(rand.NewPCG(1, 1))), 0.25, 1e-3, 1e-1)
		if err != nil {
			t.Fatal(err)
		}
		j.FreezeVQ, j.NoLengthNorm = freeze, noNorm
		vq0, _ := snapshot(vq.Store(), "/"+vqvae.ScopeName)
		hmm0, _ := snapshot(vq.Store(), "/"+HMMScope)
		m, err := j.Step(ch, 1, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		vq1, _ := snapshot(vq.Store(), "/"+vqvae.ScopeName)
		hmm1, _ := snapshot(vq.Store(), "/"+HMMScope)
		return m, vq0, vq1, hmm0, hmm1
	}
	changed := func(a, b Snapshot) (n int) {
		for k, v := range a {
			if w, ok := b[k]; ok && !slices.Equal(v, w) {
				n++
			}
		}
		return n
	}
	m, vq0, vq1, hmm0, hmm1 := step(true, false)
	if n := changed(vq0, vq1); n != 0 {
		t.Errorf("FreezeVQ: %d /vqvae variables changed", n)
	}
	if n := changed(hmm0, hmm1); n != 2 {
		t.Errorf("FreezeVQ: %d of the 2 HMM variables changed", n)
	}
	_, vq0, vq1, _, _ = step(false, false)
	if n := changed(vq0, vq1); n == 0 {
		t.Errorf("joint step without FreezeVQ changed no /vqvae variable")
	}
	mNo, _, _, _, _ := step(true, true)
	if d := math.Abs(mNo.NLLPerStep - 10*m.NLLPerStep); d > 1e-4*math.Abs(mNo.NLLPerStep) {
		t.Errorf("NoLengthNorm NLL %.6f, want 10 × %.6f", mNo.NLLPerStep, m.NLLPerStep)
	}
}

// chunkOrder is the identity row order of the frames x [B·T, ...].
func chunkOrder(x *Node) *Node {
	return Iota(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dimensions[0]), 0)
}

// tinyJoint is a small conv joint model (K = 3 codes, 2 clones each, D = 4, F = 2).
func tinyJoint(t *testing.T, gradFrames int) *Joint {
	t.Helper()
	vc := vqvae.DefaultConfig(3)
	vc.D, vc.F, vc.Tau = 4, 2, 0.5
	vq, err := vqvae.New(testBackend(t).Backend, vc, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if err := vq.InitFromData(randomChunk(rng, vc.Side, []int{16}, 16, 4).Images); err != nil {
		t.Fatal(err)
	}
	j, err := NewJoint(vq, chmm.New([]int{2, 2, 2}, 4, rng), 0.25, 1e-3, 1e-1)
	if err != nil {
		t.Fatal(err)
	}
	j.GradFrames = gradFrames
	return j
}

// storeValues returns every variable's value as float64s, by path.
func storeValues(t *testing.T, j *Joint) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for v := range j.VQ.Store().IterVariables() {
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if f, err := tensors.CopyFlatData[float32](val); err == nil {
			out[v.Path()] = toF64(f)
		}
	}
	return out
}

// TestStepSubsetAllFramesEqualsFull: a step whose gradient subset is every frame, in a
// shuffled row order, equals the plain step (metrics and every variable after it), and
// a step with a quarter of the frames as subset has the same HMM and diversity terms
// (they read every frame) and changes the parameters.
func TestStepSubsetAllFramesEqualsFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	ch := randomChunk(rng, 28, []int{8, 8, 6}, 8, 4)
	n := ch.B * ch.T
	shuffled := ch
	shuffled.Order = make([]int32, n)
	for i, p := range rng.Perm(n) {
		shuffled.Order[i] = int32(p)
	}
	full, all, quarter := tinyJoint(t, 0), tinyJoint(t, n), tinyJoint(t, n/4)
	before := storeValues(t, full)
	mFull, err := full.Step(ch, 1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	mAll, err := all.Step(shuffled, 1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	mQuarter, err := quarter.Step(shuffled, 1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if !mFull.Applied || !mAll.Applied || !mQuarter.Applied {
		t.Fatalf("finite steps not applied: %+v %+v %+v", mFull, mAll, mQuarter)
	}
	close := func(what string, a, b float64) {
		if math.Abs(a-b) > 1e-5*math.Max(1, math.Abs(a)) {
			t.Errorf("%s: %.8g vs %.8g", what, a, b)
		}
	}
	for _, c := range []struct {
		name string
		a, b float64
	}{{"loss", mFull.Loss, mAll.Loss}, {"rec", mFull.Rec, mAll.Rec}, {"commit", mFull.Commit, mAll.Commit},
		{"nll", mFull.NLLPerStep, mAll.NLLPerStep}, {"div", mFull.Div, mAll.Div}, {"perplexity", mFull.Perplexity, mAll.Perplexity},
		{"quarter nll", mFull.NLLPerStep, mQuarter.NLLPerStep}, {"quarter div", mFull.Div, mQuarter.Div}} {
		close(c.name, c.a, c.b)
	}
	vFull, vAll, vQuarter := storeValues(t, full), storeValues(t, all), storeValues(t, quarter)
	moved := false
	for path, want := range vFull {
		got := vAll[path]
		if len(got) != len(want) {
			t.Fatalf("%s: %d values vs %d", path, len(got), len(want))
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
				t.Errorf("%s[%d] = %.8g after the all-frames subset step, %.8g after the full step", path, i, got[i], want[i])
				break
			}
		}
		if strings.HasPrefix(path, "/vqvae/encoder") && !slices.Equal(vQuarter[path], before[path]) {
			moved = true
		}
	}
	if !moved {
		t.Error("the quarter-subset step left the encoder unchanged")
	}
}

// TestStepNonFiniteIsNotApplied injects a NaN pixel: the loss is NaN, the step reports
// Applied = false and no variable (parameters, Adam moments, codebook, HMM) changes; the
// next finite step is applied.
func TestStepNonFiniteIsNotApplied(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ch := randomChunk(rng, 28, []int{8, 8}, 8, 4)
	j := tinyJoint(t, 4)
	if m, err := j.Step(ch, 1, 0.5); err != nil || !m.Applied { // creates the Adam state
		t.Fatalf("first step: %+v, %v", m, err)
	}
	before := storeValues(t, j)
	bad := ch
	bad.Images = slices.Clone(ch.Images)
	bad.Images[3*28*28+100] = float32(math.NaN())
	m, err := j.Step(bad, 1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if m.Applied || finite(m.Loss) {
		t.Fatalf("NaN pixel: metrics %+v, want a non-finite loss and Applied = false", m)
	}
	after := storeValues(t, j)
	for path, want := range before {
		if !slices.Equal(after[path], want) {
			t.Errorf("%s changed by a non-finite step", path)
		}
	}
	if m, err := j.Step(ch, 1, 0.5); err != nil || !m.Applied {
		t.Fatalf("finite step after the skipped one: %+v, %v", m, err)
	}
}
