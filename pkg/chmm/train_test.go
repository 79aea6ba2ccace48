package chmm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestAdamStep(t *testing.T) {
	// First step: m̂ = g, v̂ = g², so x moves by lr·g/(|g|+ε) ≈ lr·sign(g).
	// Second step with g' = −g: m = 0.9·0.1g − 0.1g... computed by hand.
	a := newAdam(3, GradConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	x := []float64{1, 2, math.Inf(-1)}
	a.step(x, []float64{0.5, -2, 0}, 1, 0.1)
	want := []float64{1 - 0.1*0.5/(0.5+1e-8), 2 + 0.1*2/(2+1e-8), math.Inf(-1)}
	for i := range x {
		if x[i] != want[i] && math.Abs(x[i]-want[i]) > 1e-15 {
			t.Errorf("step 1: x[%d] = %v, want %v", i, x[i], want[i])
		}
	}
	x0 := x[0]
	a.step(x, []float64{-0.5, 0, 0}, 1, 0.1)
	m := 0.9*0.05 + 0.1*(-0.5)      // 0.9·(0.1·0.5) + 0.1·(−0.5)
	v := 0.999*0.00025 + 0.001*0.25 // 0.999·(0.001·0.25) + 0.001·0.25
	mh, vh := m/(1-0.81), v/(1-0.999*0.999)
	if w := x0 - 0.1*mh/(math.Sqrt(vh)+1e-8); math.Abs(x[0]-w) > 1e-15 {
		t.Errorf("step 2: x[0] = %v, want %v", x[0], w)
	}
	if !math.IsInf(x[2], -1) {
		t.Errorf("-Inf logit moved to %v", x[2])
	}
}

func TestTrainGradientRecoversMap(t *testing.T) {
	g, seqs := walkData(21, aliased3x3, 2, 2000)
	test, places := g.walk(rand.New(rand.NewPCG(21, 9)), 2000)
	for _, tc := range []struct {
		name string
		cfg  GradConfig
	}{
		{"full batch", DefaultGradConfig()},
		{"chunks", GradConfig{Iters: 600, ChunkLen: 256, Batch: 8, Seed: 3}},
	} {
		m := New(UniformClones(3, 8), 4, rand.New(rand.NewPCG(21, 2)))
		calls := 0
		tc.cfg.Progress = func(p Progress) {
			calls++
			if p.Phase != "gradient" || p.Iter < 1 || p.Iters != tc.cfg.Iters || p.LogLik > 0 || p.Best < p.LogLik {
				t.Errorf("%s: bad progress %+v", tc.name, p)
			}
		}
		h, err := TrainGradient(m, seqs, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 {
			t.Errorf("%s: progress never reported", tc.name)
		}
		states, _, err := Viterbi(m, test)
		if err != nil {
			t.Fatal(err)
		}
		pur, used := purity(states, places)
		ll, _ := LogLikelihood(m, []Sequence{test})
		t.Logf("%s: %d iterations (%s), train ℓ/T %.5f, held-out ℓ/T %.5f, purity %.4f, %d states for %d places",
			tc.name, len(h.Iter), h.Stop, h.LogLik[len(h.LogLik)-1], ll/2000, pur, used, len(g.places))
		if pur < 0.99 {
			t.Errorf("%s: state→place purity %.4f, want >= 0.99", tc.name, pur)
		}
	}
}

func TestTrainGradientKeepsBest(t *testing.T) {
	_, seqs := walkData(22, aliased3x3, 2, 300)
	m := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(22, 2)))
	// A large rate makes the likelihood oscillate; the best iterate is kept.
	h, err := TrainGradient(m, seqs, GradConfig{Iters: 80, LR: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.LogLik) != 81 || h.Stop != "max iterations" {
		t.Fatalf("%d entries, stop %q", len(h.LogLik), h.Stop)
	}
	best := slices.Max(h.LogLik)
	if h.LogLik[h.BestIter] != best {
		t.Errorf("BestIter %d has ℓ/T %v, max is %v", h.BestIter, h.LogLik[h.BestIter], best)
	}
	ll, _ := LogLikelihood(m, seqs)
	if math.Abs(ll/600-best) > 1e-12 {
		t.Errorf("kept model ℓ/T %v, want best %v", ll/600, best)
	}
	// The history's ℓ is that of the parameters before each step.
	m2 := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(22, 2)))
	ll0, _ := LogLikelihood(m2, seqs)
	if math.Abs(ll0/600-h.LogLik[0]) > 1e-12 {
		t.Errorf("History.LogLik[0] = %v, want ℓ/T of the initial model %v", h.LogLik[0], ll0/600)
	}
}

func TestTrainGradientDeterministic(t *testing.T) {
	_, seqs := walkData(23, aliased3x3, 3, 500)
	run := func(seed uint64) (*Model, *History) {
		m := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(23, 2)))
		h, err := TrainGradient(m, seqs, GradConfig{Iters: 40, ChunkLen: 64, Batch: 5, Seed: seed, Workers: 2, EntropyWeight: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		return m, h
	}
	m1, h1 := run(7)
	m2, h2 := run(7)
	m3, _ := run(8)
	if !sameBits(m1.ThetaLogits, m2.ThetaLogits) || !sameBits(m1.PiLogits, m2.PiLogits) || !slices.Equal(h1.LogLik, h2.LogLik) {
		t.Error("same seed gave different results")
	}
	if sameBits(m1.ThetaLogits, m3.ThetaLogits) {
		t.Error("different seeds gave identical results")
	}
	for i, e := range h1.Entropy {
		if !(e > 0) {
			t.Errorf("entropy[%d] = %v", i, e)
		}
	}
}

func TestTrainGradientPatience(t *testing.T) {
	_, seqs := walkData(24, aliased3x3, 1, 200)
	m := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(24, 2)))
	h, err := TrainGradient(m, seqs, GradConfig{Iters: 100000, Patience: 20, Tol: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	k := len(h.LogLik) - 1
	if h.Stop != "patience" || k < 20 {
		t.Fatalf("stop %q after %d iterations", h.Stop, k)
	}
	// No gain > Tol over the reference in the last Patience iterations.
	ref := slices.Max(h.LogLik[:k-19])
	if slices.Max(h.LogLik[k-19:]) > ref+1e-3 {
		t.Errorf("stopped while still improving")
	}
}

// StopTol replaces Tol only once the splits are spent: the same descent runs on past
// Tol's stop until no gain above StopTol, and splits come where they came.
func TestTrainGradientStopTol(t *testing.T) {
	_, seqs := walkData(24, aliased3x3, 1, 200)
	m := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(24, 2)))
	h0, err := TrainGradient(m.Clone(), seqs, GradConfig{Iters: 100000, Patience: 20, Tol: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	h, err := TrainGradient(m.Clone(), seqs, GradConfig{Iters: 100000, Patience: 20, Tol: 1e-3, StopTol: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	k0, k := len(h0.LogLik)-1, len(h.LogLik)-1
	if h.Stop != "patience" || k <= k0 {
		t.Fatalf("StopTol 1e-6: stop %q after %d iterations, Tol 1e-3 alone after %d", h.Stop, k, k0)
	}
	if !slices.Equal(h.LogLik[:k0+1], h0.LogLik) {
		t.Error("StopTol changed the descent before Tol's stop")
	}
	if ref := slices.Max(h.LogLik[:k-19]); slices.Max(h.LogLik[k-19:]) > ref+1e-6 {
		t.Error("stopped while still gaining more than StopTol")
	}
	if gain := h.LogLik[k] - h0.LogLik[k0]; !(gain > 1e-3) {
		t.Errorf("ℓ/T gained %v after Tol's stop, want > Tol (the test no longer exercises StopTol)", gain)
	}
	t.Logf("Tol 1e-3: %d iterations, ℓ/T %.5f; StopTol 1e-6: %d iterations, ℓ/T %.5f", k0, h0.LogLik[k0], k, h.LogLik[k])

	// With splitting rounds, Tol still sets the plateaus that split.
	_, walks := walkData(29, "0 1 0\n2 1 2", 2, 400)
	m = New(UniformClones(3, 1), 4, rand.New(rand.NewPCG(29, 2))) // one clone for two places: it must split
	cfg := GradConfig{Iters: 3000, Patience: 30, Tol: 1e-4, SplitRounds: 2, GrowClones: true}
	h0, err = TrainGradient(m.Clone(), walks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StopTol = 1e-7
	h, err = TrainGradient(m.Clone(), walks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(h0.Splits) == 0 || h0.Splits[0].States == 0 || !slices.Equal(h.Splits, h0.Splits) {
		t.Errorf("splits %v with StopTol, %v without (want equal, the first splitting a state)", h.Splits, h0.Splits)
	}
	t.Logf("splits %v; %d iterations without StopTol, %d with", h.Splits, len(h0.LogLik), len(h.LogLik))
	if !(len(h.LogLik) > len(h0.LogLik)) {
		t.Errorf("with StopTol %d iterations, without %d", len(h.LogLik), len(h0.LogLik))
	}
}

func TestTrainGradientNegInf(t *testing.T) {
	// Hard EM leaves exact zeros; gradient training keeps them and stays finite.
	_, seqs := walkData(25, aliased3x3, 2, 300)
	m := New(UniformClones(3, 5), 4, rand.New(rand.NewPCG(25, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 20, Pseudocount: 1e-3, ViterbiIters: 5}); err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(m.ThetaLogits)
	if _, err := TrainGradient(m, seqs, GradConfig{Iters: 20, EntropyWeight: 0.01}); err != nil {
		t.Fatal(err)
	}
	for i, v := range m.ThetaLogits {
		if math.IsNaN(v) || math.IsInf(before[i], -1) != math.IsInf(v, -1) {
			t.Fatalf("Θ[%d]: %v -> %v", i, before[i], v)
		}
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

func TestTrainGradientConfigErrors(t *testing.T) {
	_, seqs := walkData(26, aliased3x3, 1, 20)
	m := New(UniformClones(3, 2), 4, nil)
	for _, cfg := range []GradConfig{
		{Iters: -1}, {LR: -0.1}, {LR: math.Inf(1)}, {ChunkLen: -5}, {ChunkLen: 1}, {Batch: -1},
		{EntropyWeight: -1}, {Patience: -1}, {Tol: math.NaN()}, {StopTol: math.NaN()}, {Beta1: 1}, {Beta2: -0.5}, {FinalLR: -1},
	} {
		if _, err := TrainGradient(m.Clone(), seqs, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := TrainGradient(m, nil, DefaultGradConfig()); err == nil {
		t.Error("no sequences accepted")
	}
}

func TestSplitStatePreservesLikelihood(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	m := randomModel(rng, []int{3, 2}, 2, 1, true)
	// Clone 2 is unused: nothing enters it.
	m.PiLogits[2] = math.Inf(-1)
	for r := 0; r < len(m.ThetaLogits); r += m.N() {
		m.ThetaLogits[r+2] = math.Inf(-1)
		m.ThetaLogits[r] = 0 // keep a finite entry in every row
	}
	var seqs []Sequence
	for len(seqs) < 4 {
		s := randomSeq(rng, 2, 2, 30)
		if _, err := LogLikelihood(m, []Sequence{s}); err == nil {
			seqs = append(seqs, s)
		}
	}
	before, _ := LogLikelihood(m, seqs)
	c := m.Clone()
	splitState(c, 1, 2, 0, rng) // no noise: an exactly equivalent model
	after, err := LogLikelihood(c, seqs)
	if err != nil || math.Abs(after-before) > 1e-10*math.Abs(before) {
		t.Errorf("ℓ %v before the split, %v after (%v)", before, after, err)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	n := c.N()
	for a := range 2 {
		for j := range n {
			x, y := c.ThetaLogits[(a*n+1)*n+j], c.ThetaLogits[(a*n+2)*n+j]
			if x != y && !(math.IsInf(x, -1) && math.IsInf(y, -1)) {
				t.Fatalf("row of the copy differs at a=%d j=%d", a, j)
			}
		}
	}
}

func TestSplitUndoesMerge(t *testing.T) {
	// A 1×3 corridor "0 1 0": the two end places share token 0. A model with
	// one clone for token 0 must merge them; add a spare, unused clone and
	// let gradient training with splitting separate the ends.
	g := parseGrid("0 1 0")
	rng := rand.New(rand.NewPCG(28, 1))
	var seqs []Sequence
	for range 2 {
		s, _ := g.walk(rng, 500)
		seqs = append(seqs, s)
	}
	merged := New([]int{1, 1}, 4, rand.New(rand.NewPCG(28, 2)))
	if _, err := TrainEM(merged, seqs, EMConfig{MaxIters: 100, Pseudocount: 1e-3}); err != nil {
		t.Fatal(err)
	}
	// Expand to clones {2, 1}: old states 0 (token 0), 1 (token 1), 2 (sink)
	// become 0, 2, 3; the new clone 1 gets logit -30 from everywhere.
	m := New([]int{2, 1}, 4, nil)
	old := []int{0, -1, 1, 2}
	for s, o := range old {
		m.PiLogits[s] = -30
		if o >= 0 {
			m.PiLogits[s] = merged.PiLogits[o]
		}
	}
	for a := range 4 {
		for i, oi := range old {
			if oi < 0 {
				oi = 0 // the spare clone's rows copy clone 0's
			}
			for j, oj := range old {
				v := -30.0
				if oj >= 0 {
					v = merged.ThetaLogits[(a*3+oi)*3+oj]
				}
				m.ThetaLogits[(a*4+i)*4+j] = v
			}
		}
	}
	llMerged, _ := LogLikelihood(merged, seqs)
	llExpanded, _ := LogLikelihood(m, seqs)
	if math.Abs(llMerged-llExpanded) > 1e-6*math.Abs(llMerged) {
		t.Fatalf("expanded model ℓ %v, merged %v", llExpanded, llMerged)
	}
	noSplit := m.Clone()
	h0, err := TrainGradient(noSplit, seqs, GradConfig{Iters: 400, Patience: 30, Tol: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	h, err := TrainGradient(m, seqs, GradConfig{Iters: 400, Patience: 30, Tol: 1e-4, SplitRounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	last := func(h *History) float64 { return slices.Max(h.LogLik) }
	t.Logf("merged ℓ/T %.4f; without splitting %.4f; with splitting %.4f, splits %v", llMerged/1000, last(h0), last(h), h.Splits)
	if len(h.Splits) == 0 || h.Splits[0].States != 1 {
		t.Errorf("splits %v, want one state split first", h.Splits)
	}
	if last(h0) < -0.1 && !(last(h) > -0.01) {
		t.Errorf("splitting did not separate the merged places: ℓ/T %v", last(h))
	}
	if !(last(h0) < -0.1) {
		t.Errorf("without splitting ℓ/T reached %v: the test no longer exercises a merge", last(h0))
	}
	test, places := g.walk(rand.New(rand.NewPCG(28, 9)), 500)
	states, _, err := Viterbi(m, test)
	if err != nil {
		t.Fatal(err)
	}
	if pur, _ := purity(states, places); pur < 0.99 {
		t.Errorf("purity %v after splitting, want >= 0.99", pur)
	}
}

func TestTrainGradientStop(t *testing.T) {
	_, seqs := walkData(24, aliased3x3, 1, 200)
	m := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(24, 2)))
	errStop := errors.New("interrupted")
	calls := 0
	h, err := TrainGradient(m, seqs, GradConfig{Iters: 1000, Stop: func() error {
		if calls++; calls > 5 {
			return errStop
		}
		return nil
	}})
	if !errors.Is(err, errStop) {
		t.Fatalf("err %v, want the Stop error", err)
	}
	if len(h.LogLik) != 5 {
		t.Errorf("%d iterations recorded, want 5 before the stop", len(h.LogLik))
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

// TestChunkIfCostly: chunks (ChunkLen, ChunkBatch, a tenth of the rate at the end)
// exactly when the pass costs more than the bound and the walks hold at least
// ChunkMinSteps steps; every other field as given.
func TestChunkIfCostly(t *testing.T) {
	m := New([]int{3, 2}, 2, rand.New(rand.NewPCG(1, 1)))
	rng := rand.New(rand.NewPCG(2, 1))
	long := []Sequence{randomSeq(rng, 2, 2, ChunkMinSteps/2), randomSeq(rng, 2, 2, ChunkMinSteps/2)}
	short := []Sequence{long[0], randomSeq(rng, 2, 2, ChunkMinSteps/2-1)}
	cost := PassCost(m, long)
	base := GradConfig{Iters: 7, Patience: 3, Tol: 1e-4, Seed: 5}
	for _, c := range []struct {
		name  string
		seqs  []Sequence
		lr    float64
		above float64
		want  bool
	}{
		{"costly", long, 0, cost - 1, true},
		{"costly, LR 0.3", long, 0.3, cost - 1, true},
		{"cheap", long, 0, cost, false},
		{"off", long, 0, 0, false},
		{"short walks", short, 0, 1, false},
	} {
		in := base
		in.LR = c.lr
		got := in.ChunkIfCostly(m, c.seqs, c.above)
		want := in
		if c.want {
			lr := c.lr
			if lr == 0 {
				lr = 0.1
			}
			want.ChunkLen, want.Batch, want.FinalLR = ChunkLen, ChunkBatch, lr/10
		}
		if got.ChunkLen != want.ChunkLen || got.Batch != want.Batch || got.FinalLR != want.FinalLR ||
			got.Iters != 7 || got.Patience != 3 || got.Tol != 1e-4 || got.Seed != 5 || got.LR != c.lr {
			t.Errorf("%s: %+v, want %+v", c.name, got, want)
		}
	}
}

// TestChunksKeepBest: a training on chunks keeps the parameters that score best on all
// sequences (checked every chunkKeepEvery iterations and at the end), so a rate far too
// high for its noisy chunks cannot leave the map worse than it started.
func TestChunksKeepBest(t *testing.T) {
	_, seqs := walkData(21, aliased3x3, 2, 2000)
	m := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(21, 2)))
	if _, err := TrainGradient(m, seqs, DefaultGradConfig()); err != nil {
		t.Fatal(err)
	}
	before, _ := LogLikelihood(m, seqs)
	wild := m.Clone()
	h, err := TrainGradient(wild, seqs, GradConfig{Iters: 2*chunkKeepEvery + 10, LR: 5, ChunkLen: 20, Batch: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := LogLikelihood(wild, seqs)
	t.Logf("ℓ/T %.5f before, %.5f after (kept iteration %d of %d)", before/4000, after/4000, h.BestIter, len(h.LogLik))
	if after < before-1e-9 || h.BestIter%chunkKeepEvery != 0 && h.BestIter != len(h.LogLik)-1 {
		t.Errorf("ℓ %.6f before, %.6f after; kept iteration %d", before, after, h.BestIter)
	}
}

// TestTrainGradientResume: a training saved before any iteration, written out by gob
// and resumed from there, ends with the model and history of the training that was
// not interrupted, bit for bit: with chunks, the entropy term, the cosine rate, and
// splitting rounds that grow the model (one clone for two places).
func TestTrainGradientResume(t *testing.T) {
	_, walks := walkData(29, "0 1 0\n2 1 2", 2, 400)
	cfgs := map[string]GradConfig{
		"full batch, growing": {Iters: 3000, Patience: 30, Tol: 1e-4, SplitRounds: 2, GrowClones: true, Workers: 2},
		"chunks, entropy":     {Iters: 300, ChunkLen: 64, Batch: 4, FinalLR: 0.01, EntropyWeight: 0.01, Patience: 40, Tol: 1e-4, SplitRounds: 1, GrowClones: true, Seed: 6, Workers: 2},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			start := New(UniformClones(3, 1), 4, rand.New(rand.NewPCG(29, 2)))
			var saved []*GradState
			whole := start.Clone()
			c := cfg
			c.Save = func(s *GradState) error { saved = append(saved, s); return nil }
			h0, err := TrainGradient(whole, walks, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(saved) != len(h0.LogLik)-1 || len(h0.Splits) == 0 || h0.ClonesAdded() == 0 {
				t.Fatalf("%d states saved over %d iterations, splits %v: the test needs a save before every iteration but the first, and a grown model",
					len(saved), len(h0.LogLik), h0.Splits)
			}
			for _, at := range []int{1, h0.Splits[0].Iter, h0.Splits[0].Iter + 1, len(saved)} {
				s := throughGob(t, saved[at-1])
				if s.Iter != at {
					t.Fatalf("state %d is at iteration %d", at-1, s.Iter)
				}
				c := cfg
				c.Resume = s
				m := start.Clone()
				h, err := TrainGradient(m, walks, c)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(m.Clones, whole.Clones) || !sameBits(m.ThetaLogits, whole.ThetaLogits) || !sameBits(m.PiLogits, whole.PiLogits) {
					t.Errorf("resumed at iteration %d: model differs (clones %v, want %v)", at, m.Clones, whole.Clones)
				}
				if !sameBits(h.LogLik, h0.LogLik) || !sameBits(h.Entropy, h0.Entropy) || !slices.Equal(h.Splits, h0.Splits) ||
					h.Stop != h0.Stop || h.BestIter != h0.BestIter || len(h.Seconds) != len(h0.Seconds) {
					t.Errorf("resumed at iteration %d: history differs (%d iterations, stop %q, best %d; want %d, %q, %d)",
						at, len(h.LogLik), h.Stop, h.BestIter, len(h0.LogLik), h0.Stop, h0.BestIter)
				}
			}
		})
	}
}

// TestTrainGradientResumeErrors: a state that does not fit the training is one error
// naming what differs, and the model is left as it was.
func TestTrainGradientResumeErrors(t *testing.T) {
	_, walks := walkData(29, "0 1 0\n2 1 2", 1, 200)
	var s *GradState
	cfg := GradConfig{Iters: 20, Seed: 1, ChunkLen: 32, Batch: 2}
	c := cfg
	c.Save = func(g *GradState) error { s = g; return errors.New("stop") }
	if _, err := TrainGradient(New(UniformClones(3, 2), 4, rand.New(rand.NewPCG(1, 2))), walks, c); err == nil || s == nil {
		t.Fatalf("save did not stop training: %v", err)
	}
	for name, tc := range map[string]struct {
		m    *Model
		cfg  GradConfig
		want string
	}{
		"tokens":     {New(UniformClones(4, 2), 4, rand.New(rand.NewPCG(1, 2))), cfg, "tokens"},
		"full batch": {New(UniformClones(3, 2), 4, rand.New(rand.NewPCG(1, 2))), GradConfig{Iters: 20}, "chunks"},
	} {
		c := tc.cfg
		c.Resume = s
		before := tc.m.Clone()
		_, err := TrainGradient(tc.m, walks, c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
		if !slices.Equal(tc.m.Clones, before.Clones) || !sameBits(tc.m.ThetaLogits, before.ThetaLogits) {
			t.Errorf("%s: the model changed", name)
		}
	}
}
