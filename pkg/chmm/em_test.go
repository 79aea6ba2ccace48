package chmm

import (
	"bytes"
	"encoding/gob"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// bruteCounts enumerates all state paths and returns the expected transition
// counts ξ [A][N][N] and first-state posterior γ_1 [N] of one sequence.
func bruteCounts(m *Model, seq Sequence) (xi, gamma1 []float64) {
	_, xi, gamma1, _, _ = bruteEmit(m, seq, func(t, k int) float64 {
		if k == seq.Obs[t] {
			return 1
		}
		return 0
	})
	return xi, gamma1
}

func TestExpectedCountsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	m := randomModel(rng, []int{2, 1, 2}, 2, 1, false)
	seqs := []Sequence{randomSeq(rng, 3, 2, 6), randomSeq(rng, 3, 2, 4), randomSeq(rng, 3, 2, 1)}
	p := newParams(m)
	acc, err := newEstepper(p, 2, len(seqs)).run(p, seqs)
	if err != nil {
		t.Fatal(err)
	}
	wantXi := make([]float64, len(acc.counts))
	wantG := make([]float64, m.N())
	for _, s := range seqs {
		xi, g := bruteCounts(m, s)
		for i := range xi {
			wantXi[i] += xi[i]
		}
		for i := range g {
			wantG[i] += g[i]
		}
	}
	if d := maxAbsDiff(acc.counts, wantXi); d > 1e-12 {
		t.Errorf("ξ differs from brute force by %v", d)
	}
	if d := maxAbsDiff(acc.gamma1, wantG); d > 1e-12 {
		t.Errorf("γ_1 differs from brute force by %v", d)
	}
	if acc.steps != 11 || acc.seqs != 3 {
		t.Errorf("steps %d seqs %d", acc.steps, acc.seqs)
	}

	// One EM iteration = the closed-form M-step on these counts.
	const pc = 0.05
	em := m.Clone()
	h, err := TrainEM(em, seqs, EMConfig{MaxIters: 1, Pseudocount: pc})
	if err != nil || len(h.LogLik) != 2 || h.Stop != "max iterations" {
		t.Fatalf("TrainEM: %v %+v", err, h)
	}
	n := m.N()
	for a := range 2 {
		for i := range n {
			var tot float64
			for j := range n - 1 {
				tot += wantXi[(a*n+i)*n+j] + pc
			}
			for j := range n {
				want := (wantXi[(a*n+i)*n+j] + pc) / tot
				got := math.Exp(em.ThetaLogits[(a*n+i)*n+j])
				if j == n-1 {
					want = 0
				}
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("T[%d,%d,%d] = %v, want %v", a, i, j, got, want)
				}
			}
		}
	}
	var tot float64
	for i := range n - 1 {
		tot += wantG[i] + pc
	}
	pi := em.Pi()
	for i := range n - 1 {
		if want := (wantG[i] + pc) / tot; math.Abs(pi[i]-want) > 1e-12 {
			t.Errorf("π̄[%d] = %v, want %v", i, pi[i], want)
		}
	}
	if pi[n-1] != 0 {
		t.Errorf("π̄[sink] = %v, want 0", pi[n-1])
	}
	// FixedPi leaves π alone.
	fixed := m.Clone()
	if _, err := TrainEM(fixed, seqs, EMConfig{MaxIters: 1, Pseudocount: pc, FixedPi: true}); err != nil {
		t.Fatal(err)
	}
	if !sameBits(fixed.PiLogits, m.PiLogits) {
		t.Error("FixedPi changed π")
	}
}

// penalised is the objective EM with pseudocount p climbs:
// ℓ + p Σ_{a,i,j real} log T[a,i,j] + p Σ_{i real} log π̄_i.
func penalised(t *testing.T, m *Model, seqs []Sequence, pc float64) float64 {
	ll, err := LogLikelihood(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	n := m.N()
	tr, pi := m.Transitions(), m.Pi()
	var prior float64
	for a := range m.NumActions {
		for i := range n {
			for j := range n - 1 {
				prior += math.Log(tr[(a*n+i)*n+j])
			}
		}
	}
	for i := range n - 1 {
		prior += math.Log(pi[i])
	}
	return ll + pc*prior
}

func walkData(seed uint64, layout string, episodes, steps int) (*grid, []Sequence) {
	rng := rand.New(rand.NewPCG(seed, 1))
	g := parseGrid(layout)
	seqs := make([]Sequence, episodes)
	for e := range seqs {
		seqs[e], _ = g.walk(rng, steps)
	}
	return g, seqs
}

func TestEMMonotone(t *testing.T) {
	_, seqs := walkData(11, aliased3x3, 3, 300)
	// Pseudocount 0: ℓ never decreases (tolerance for rounding).
	m := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(11, 2)))
	h, err := TrainEM(m, seqs, EMConfig{MaxIters: 60, Tol: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.LogLik) != 61 {
		t.Fatalf("%d history entries, want 61", len(h.LogLik))
	}
	for i := 1; i < len(h.LogLik); i++ {
		if h.LogLik[i] < h.LogLik[i-1]-1e-12 {
			t.Errorf("iteration %d: ℓ/T decreased from %.15g to %.15g", i, h.LogLik[i-1], h.LogLik[i])
		}
	}
	if !(h.LogLik[60] > h.LogLik[0]+0.1) {
		t.Errorf("EM did not learn: ℓ/T %v -> %v", h.LogLik[0], h.LogLik[60])
	}
	// Pseudocount > 0: the penalised objective never decreases.
	const pc = 0.01
	m = New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(11, 3)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 1, Pseudocount: pc}); err != nil {
		t.Fatal(err)
	}
	prev := penalised(t, m, seqs, pc)
	for it := range 30 {
		if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 1, Pseudocount: pc, Tol: -1}); err != nil {
			t.Fatal(err)
		}
		cur := penalised(t, m, seqs, pc)
		if cur < prev-1e-9*math.Abs(prev) {
			t.Errorf("iteration %d: penalised objective decreased from %.15g to %.15g", it, prev, cur)
		}
		prev = cur
	}
}

func TestEMStopsAtNonIncrease(t *testing.T) {
	_, seqs := walkData(12, aliased3x3, 2, 200)
	m := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(12, 2)))
	h, err := TrainEM(m, seqs, EMConfig{MaxIters: 5000, Pseudocount: 1e-3, Tol: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	k := len(h.LogLik) - 1
	if h.Stop != "converged" || k >= 5000 || h.LogLik[k]-h.LogLik[k-1] > 1e-6 {
		t.Errorf("stop %q after %d iterations, last gain %v", h.Stop, k, h.LogLik[k]-h.LogLik[k-1])
	}
	for i := 1; i < k; i++ {
		if h.LogLik[i]-h.LogLik[i-1] <= 1e-6 {
			t.Errorf("did not stop at iteration %d (gain %v)", i, h.LogLik[i]-h.LogLik[i-1])
		}
	}
	// The kept parameters have the best likelihood of the last two.
	ll, _ := LogLikelihood(m, seqs)
	if math.Abs(ll/400-math.Max(h.LogLik[k], h.LogLik[k-1])) > 1e-12 {
		t.Errorf("kept model ℓ/T %v, want %v", ll/400, math.Max(h.LogLik[k], h.LogLik[k-1]))
	}
}

func TestViterbiEM(t *testing.T) {
	_, seqs := walkData(13, aliased3x3, 3, 400)
	soft := New(UniformClones(3, 6), 4, rand.New(rand.NewPCG(13, 2)))
	if _, err := TrainEM(soft, seqs, EMConfig{MaxIters: 30, Pseudocount: 1e-3}); err != nil {
		t.Fatal(err)
	}
	// One hard iteration by hand: decode, count, normalise.
	paths, _, err := ViterbiAll(soft, seqs, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := soft.N()
	counts := make([]float64, len(soft.ThetaLogits))
	for q, s := range seqs {
		for t, a := range s.Actions {
			counts[(a*n+paths[q][t])*n+paths[q][t+1]]++
		}
	}
	hard := soft.Clone()
	h, err := TrainEM(hard, seqs, EMConfig{MaxIters: -1, ViterbiIters: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Phase) != 2 || h.Phase[0] != "viterbi" || h.LogLik[1] < h.LogLik[0] {
		t.Errorf("history %+v", h)
	}
	zeros := 0
	for r := 0; r < len(counts); r += n {
		var tot float64
		for _, c := range counts[r : r+n] {
			tot += c
		}
		for j := range n {
			got := hard.ThetaLogits[r+j]
			switch {
			case tot == 0:
				if math.Float64bits(got) != math.Float64bits(soft.ThetaLogits[r+j]) {
					t.Fatalf("unvisited row %d changed", r/n)
				}
			case counts[r+j] == 0:
				if !math.IsInf(got, -1) {
					t.Fatalf("row %d col %d: logit %v, want -Inf (exact zero)", r/n, j, got)
				}
				zeros++
			default:
				if want := math.Log(counts[r+j] / tot); got != want {
					t.Fatalf("row %d col %d: logit %v, want log(%v/%v)", r/n, j, got, counts[r+j], tot)
				}
			}
		}
	}
	if zeros == 0 {
		t.Error("hard EM left no exact zeros")
	}
	if !sameBits(hard.PiLogits, soft.PiLogits) {
		t.Error("hard EM changed π")
	}
	// The training data keeps a positive probability; more iterations never
	// lower the Viterbi score.
	if _, err := LogLikelihood(hard, seqs); err != nil {
		t.Errorf("after hard EM: %v", err)
	}
	h, err = TrainEM(hard, seqs, EMConfig{MaxIters: -1, ViterbiIters: 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(h.LogLik); i++ {
		if h.LogLik[i] < h.LogLik[i-1]-1e-12 {
			t.Errorf("Viterbi score decreased at %d: %v", i, h.LogLik)
		}
	}
}

func TestTrainEMRecoversMap(t *testing.T) {
	g, seqs := walkData(14, aliased3x3, 2, 2000)
	test, places := g.walk(rand.New(rand.NewPCG(14, 9)), 2000)
	m := New(UniformClones(3, 8), 4, rand.New(rand.NewPCG(14, 2)))
	cfg := DefaultEMConfig()
	calls := 0
	cfg.Progress = func(p Progress) {
		calls++
		if p.Phase != "em" && p.Phase != "viterbi" || p.Iter < 1 {
			t.Errorf("bad progress %+v", p)
		}
	}
	cfg.ProgressEvery = 50
	h, err := TrainEM(m, seqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("progress never reported")
	}
	states, _, err := Viterbi(m, test)
	if err != nil {
		t.Fatal(err)
	}
	pur, used := purity(states, places)
	t.Logf("EM: %d iterations (%s), ℓ/T %.5f, purity %.4f, %d states for %d places", len(h.Iter), h.Stop, h.LogLik[len(h.LogLik)-1], pur, used, len(g.places))
	if pur < 0.99 {
		t.Errorf("state→place purity %.4f, want >= 0.99", pur)
	}
}

func TestTrainEMErrors(t *testing.T) {
	_, seqs := walkData(15, aliased3x3, 1, 20)
	m := New(UniformClones(3, 2), 4, nil)
	for _, cfg := range []EMConfig{{Pseudocount: -1}, {Pseudocount: math.NaN()}, {Tol: math.NaN()}, {Segments: -1},
		{StopGain: -1e-6}, {StopGain: math.NaN()}, {StopGain: math.Inf(1)}, {StopGain: 1e-6, StopWindow: -1}} {
		if _, err := TrainEM(m, seqs, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := TrainEM(m, nil, DefaultEMConfig()); err == nil {
		t.Error("no sequences accepted")
	}
}

// TestEMSplitFreesDuplicates: on corridors (5 clones per class, one class at 5
// places) seed 1 plain EM settles with two clones on one place and one clone
// on two places (per-step ℓ ≈ −0.044 on the training walks); folding the
// duplicate and splitting the confused clone reaches the exact map (ℓ ≈ 0).
func TestEMSplitFreesDuplicates(t *testing.T) {
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []Sequence
	for _, e := range env.TrainingEpisodes(rand.New(rand.NewPCG(1, 1)), 4, 10000) {
		seqs = append(seqs, Sequence{Obs: e.Obs, Actions: e.Actions})
	}
	run := func(rounds int) (float64, *History) {
		m := New(UniformClones(7, 5), 4, rand.New(rand.NewPCG(1, 2)))
		cfg := DefaultEMConfig()
		cfg.Seed = 1
		cfg.SplitRounds = rounds
		cfg.MaxIters = 300
		h, err := TrainEM(m, seqs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ll, err := LogLikelihood(m, seqs)
		if err != nil {
			t.Fatal(err)
		}
		return ll / 40000, h
	}
	plain, _ := run(0)
	split, h := run(5)
	t.Logf("per-step ℓ: plain EM %.5f, with splitting %.5f, splits %v", plain, split, h.Splits)
	if plain > -0.01 {
		t.Errorf("plain EM reached %.5f: the test no longer exercises a stuck start", plain)
	}
	if split < -0.005 || len(h.Splits) == 0 {
		t.Errorf("with splitting: ℓ/T %.5f after splits %v, want > -0.005", split, h.Splits)
	}
}

// TestTrainEMResume: an EM training saved before an iteration, written out by gob and
// resumed there, ends with the model, confusion matrix and history of the training
// that was not interrupted, bit for bit: with a learned confusion matrix and splitting
// rounds, and on hard tokens with a hard phase after the soft one.
func TestTrainEMResume(t *testing.T) {
	defer func(v int) { minSegment = v }(minSegment)
	minSegment = 100
	_, noisy := walkData(23, aliased3x3, 2, 1500)
	rng := rand.New(rand.NewPCG(23, 3))
	for _, s := range noisy {
		for i, o := range s.Obs {
			if rng.Float64() < 0.1 {
				s.Obs[i] = (o + 1) % 3
			}
		}
	}
	_, clean := walkData(24, aliased3x3, 2, 800)
	conf := [][]float64{{0.9, 0.05, 0.05}, {0.05, 0.9, 0.05}, {0.05, 0.05, 0.9}}
	cases := map[string]struct {
		seqs  []Sequence
		cfg   EMConfig
		split bool // the training splits (the test resumes before and after)
	}{
		"confusion, splits": {noisy, EMConfig{MaxIters: 200, Tol: -1, Confusion: conf, LearnConfusion: true, SplitRounds: 3, Seed: 4, Workers: 2}, true},
		"hard, viterbi":     {clean, EMConfig{MaxIters: 300, Pseudocount: 2e-3, ViterbiIters: 20, SplitRounds: 2, Seed: 5, Workers: 2}, true},
		"confusion, splits, segments, accelerated, stop": {noisy, EMConfig{MaxIters: 200, Tol: -1, Confusion: conf, LearnConfusion: true, SplitRounds: 3,
			Seed: 4, Workers: 2, Segments: 6, Accelerate: true, StopGain: 1e-7}, true},
		"confusion, segments, accelerated, checked": {noisy, EMConfig{MaxIters: 200, Tol: -1, Confusion: conf, LearnConfusion: true,
			Seed: 4, Workers: 2, Segments: 6, Accelerate: true, CheckEvery: 10,
			Check: func(_ *Model, _ [][]float64, it int) (bool, error) { return it >= 90, nil }}, false},
		"hard, viterbi, segments, accelerated": {noisy, EMConfig{MaxIters: 150, Tol: -1, Pseudocount: 2e-3, ViterbiIters: 20, Seed: 5,
			Workers: 2, Segments: 5, Accelerate: true}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(23, 4)))
			var saved []*EMState
			whole := start.Clone()
			c := tc.cfg
			c.Save = func(s *EMState) error { saved = append(saved, s); return nil }
			h0, err := TrainEM(whole, tc.seqs, c)
			if err != nil {
				t.Fatal(err)
			}
			soft := 0
			for _, p := range h0.Phase {
				if p == "em" {
					soft++
				}
			}
			if len(saved) != soft-1 || (len(h0.Splits) == 0) == tc.split {
				t.Fatalf("%d states saved over %d soft iterations, splits %v: the test needs a save before every iteration but the first, and a split where the case says so",
					len(saved), soft, h0.Splits)
			}
			ats := []int{1, len(saved) / 2, len(saved)}
			if tc.cfg.Check != nil && h0.Stop != "stopped by its check" {
				t.Fatalf("stop %q: the case needs its check's", h0.Stop)
			}
			if tc.split {
				ats = append(ats, max(1, h0.Splits[0].Iter), h0.Splits[0].Iter+1)
			}
			for _, at := range ats {
				c := tc.cfg
				c.Resume = throughGob(t, saved[at-1])
				m := start.Clone()
				h, err := TrainEM(m, tc.seqs, c)
				if err != nil {
					t.Fatal(err)
				}
				if !sameBits(m.ThetaLogits, whole.ThetaLogits) || !sameBits(m.PiLogits, whole.PiLogits) {
					t.Errorf("resumed at iteration %d: model differs", at)
				}
				if !sameBits(h.LogLik, h0.LogLik) || !slices.Equal(h.Phase, h0.Phase) || !slices.Equal(h.Splits, h0.Splits) || h.Stop != h0.Stop {
					t.Errorf("resumed at iteration %d: history differs (%d entries, stop %q; want %d, %q)", at, len(h.LogLik), h.Stop, len(h0.LogLik), h0.Stop)
				}
				for k := range h0.Confusion {
					if !sameBits(h.Confusion[k], h0.Confusion[k]) {
						t.Errorf("resumed at iteration %d: C[%d] = %v, want %v", at, k, h.Confusion[k], h0.Confusion[k])
					}
				}
			}
			if tc.cfg.Confusion != nil {
				c := tc.cfg
				c.Confusion, c.LearnConfusion, c.Resume = nil, false, saved[0]
				if _, err := TrainEM(start.Clone(), tc.seqs, c); err == nil || !strings.Contains(err.Error(), "confusion") {
					t.Errorf("a confused training's state resumed on hard tokens: %v", err)
				}
			}
		})
	}
}

// throughGob returns a copy of v written out and read back by encoding/gob, as a
// checkpoint file holds it.
func throughGob[T any](t *testing.T, v *T) *T {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := gob.NewDecoder(&buf).Decode(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGroupedCounts: the E-step's counts grouped by block after the backward pass
// (groupCountsAbove, taken here whatever the size) are those added step by step: the
// brute-force tests pass on that path too, and on a map with many blocks and long
// walks the two paths agree to rounding, hard and through a confusion matrix.
func TestGroupedCounts(t *testing.T) {
	defer func(v int) { groupCountsAbove = v }(groupCountsAbove)
	groupCountsAbove = 0
	t.Run("ExpectedCountsBruteForce", TestExpectedCountsBruteForce)
	t.Run("ConfusedCountsBruteForce", TestConfusedCountsBruteForce)
	t.Run("ConfusedBeamBruteForce", TestConfusedBeamBruteForce)

	rng := rand.New(rand.NewPCG(31, 1))
	m := randomModel(rng, []int{4, 6, 5}, 4, 1, false)
	two := []Sequence{randomSeq(rng, 3, 4, 700), randomSeq(rng, 3, 4, 300)}
	one := []Sequence{randomSeq(rng, 3, 4, 2*minSplitLen)} // expectSplit: one walk, two workers
	for _, c := range []struct {
		seqs []Sequence
		conf [][]float64
	}{{two, nil}, {two, testConfusion}, {one, nil}} {
		seqs, conf := c.seqs, c.conf
		var got [2]*accum
		for i, at := range []int{1 << 62, 0} {
			groupCountsAbove = at
			p := newParams(m)
			p.setConfusion(conf, 0)
			if grouped := p.groupCounts(); grouped != (at == 0) {
				t.Fatalf("groupCounts() = %v at %d", grouped, at)
			}
			acc, err := newEstepper(p, 2, len(seqs)).run(p, seqs)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = acc
		}
		var tot float64
		for _, v := range got[0].counts {
			tot += v
		}
		if want := float64(len(seqs[0].Obs) + len(seqs[len(seqs)-1].Obs) - 2); len(seqs) == 2 && math.Abs(tot-want) > 1e-9*want || len(seqs) == 1 && math.Abs(tot-float64(len(seqs[0].Obs)-1)) > 1e-6 {
			t.Fatalf("counts sum to %v over %d walks", tot, len(seqs))
		}
		if d := maxAbsDiff(got[0].counts, got[1].counts); d > 1e-12*tot {
			t.Errorf("confusion %v: grouped counts differ by %v", conf != nil, d)
		}
		if d := maxAbsDiff(got[0].gamma1, got[1].gamma1); d > 1e-12 {
			t.Errorf("confusion %v: γ_1 differs by %v", conf != nil, d)
		}
		if d := maxAbsDiff(got[0].conf, got[1].conf); d > 1e-9 {
			t.Errorf("confusion %v: the confusion counts differ by %v", conf != nil, d)
		}
		if got[0].ll != got[1].ll {
			t.Errorf("confusion %v: ℓ %v and %v", conf != nil, got[0].ll, got[1].ll)
		}
	}
}
