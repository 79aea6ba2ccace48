package chmm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// stateToken is ω(s) from Clones alone (-1 for the sink).
func stateToken(m *Model, s int) int {
	for k := range m.Clones {
		if emits(m, s, k) {
			return k
		}
	}
	return -1
}

// bruteConf enumerates every state path with emissions C[ω(s)][o] and returns
// p(o|a), ξ, γ_1, γ_T and the true-token posterior counts conf[k][o_t] (flat K×K).
func bruteConf(m *Model, seq Sequence, c [][]float64) (z float64, xi, gamma1, last, conf []float64) {
	return bruteEmit(m, seq, func(t, k int) float64 { return c[k][seq.Obs[t]] })
}

// bruteEmit is bruteConf with the emission e(t, ω(s)) of step t.
func bruteEmit(m *Model, seq Sequence, emit func(t, k int) float64) (z float64, xi, gamma1, last, conf []float64) {
	pi, trans := refProbs(m)
	n, tt, kk := m.N(), len(seq.Obs), m.K()
	xi, gamma1, last, conf = make([]float64, m.NumActions*n*n), make([]float64, n), make([]float64, n), make([]float64, kk*kk)
	path := make([]int, tt)
	var rec func(t int, p float64)
	rec = func(t int, p float64) {
		if p == 0 {
			return
		}
		if t == tt {
			z += p
			gamma1[path[0]] += p
			last[path[tt-1]] += p
			for s := range tt {
				conf[stateToken(m, path[s])*kk+seq.Obs[s]] += p
				if s+1 < tt {
					xi[(seq.Actions[s]*n+path[s])*n+path[s+1]] += p
				}
			}
			return
		}
		for s := range n {
			k := stateToken(m, s)
			if k < 0 {
				continue
			}
			e := emit(t, k)
			path[t] = s
			if t == 0 {
				rec(1, pi[s]*e)
			} else {
				rec(t+1, p*trans[seq.Actions[t-1]][path[t-1]][s]*e)
			}
		}
	}
	rec(0, 1)
	for _, x := range [][]float64{xi, gamma1, last, conf} {
		for i := range x {
			x[i] /= z
		}
	}
	return z, xi, gamma1, last, conf
}

// testConfusion is a 3-token confusion matrix with a zero (token 2 is never read as 0).
var testConfusion = [][]float64{{0.8, 0.15, 0.05}, {0.1, 0.7, 0.2}, {0, 0.3, 0.7}}

func TestConfusedCountsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	m := randomModel(rng, []int{2, 1, 2}, 2, 1, false)
	seqs := []Sequence{randomSeq(rng, 3, 2, 5), randomSeq(rng, 3, 2, 4), randomSeq(rng, 3, 2, 1)}
	p := newParams(m)
	p.setConfusion(testConfusion, 0)
	acc, err := newEstepper(p, 2, len(seqs)).run(p, seqs)
	if err != nil {
		t.Fatal(err)
	}
	n, kk := m.N(), m.K()
	want := &accum{counts: make([]float64, len(acc.counts)), gamma1: make([]float64, n), last: make([]float64, n), conf: make([]float64, kk*kk)}
	lls, err := ConfusedLogLikelihoods(m, seqs, testConfusion, 0)
	if err != nil {
		t.Fatal(err)
	}
	for q, s := range seqs {
		z, xi, g1, last, conf := bruteConf(m, s, testConfusion)
		want.ll += math.Log(z)
		if math.Abs(lls[q]-math.Log(z)) > 1e-12 {
			t.Errorf("sequence %d: ℓ %.15g, brute force %.15g", q, lls[q], math.Log(z))
		}
		for i, v := range xi {
			want.counts[i] += v
		}
		for i := range n {
			want.gamma1[i] += g1[i]
			want.last[i] += last[i]
		}
		for i, v := range conf {
			want.conf[i] += v
		}
	}
	if math.Abs(acc.ll-want.ll) > 1e-12 {
		t.Errorf("ℓ %.15g, brute force %.15g", acc.ll, want.ll)
	}
	for _, c := range []struct {
		name      string
		got, want []float64
	}{{"ξ", acc.counts, want.counts}, {"γ_1", acc.gamma1, want.gamma1}, {"γ_T", acc.last, want.last}, {"conf", acc.conf, want.conf}} {
		for i := range c.got {
			if math.Abs(c.got[i]-c.want[i]) > 1e-12 {
				t.Errorf("%s[%d] = %.15g, brute force %.15g", c.name, i, c.got[i], c.want[i])
			}
		}
	}
	if acc.conf[2*kk+0] != 0 {
		t.Errorf("conf[2][0] = %v: token 2 is never read as 0", acc.conf[2*kk])
	}
}

// With a beam, the pass is exact for the model whose emission is 0 at the
// (step, token) pairs it dropped.
func TestConfusedBeamBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	m := randomModel(rng, []int{2, 1, 2}, 2, 2, false)
	p := newParams(m)
	p.setConfusion(testConfusion, 0.2)
	dropped := 0
	for range 20 {
		seq := randomSeq(rng, 3, 2, 6)
		var w fbWork
		acc := newAccum(p)
		if _, ok := p.expectConf(seq, &w, acc); !ok {
			t.Fatal("zero probability")
		}
		kept := map[[2]int]bool{}
		for s, o := range seq.Obs {
			for ci, c := range p.cands[o] {
				if w.live[w.coff[s]+ci] {
					kept[[2]int{s, c.k}] = true
				} else {
					dropped++
				}
			}
		}
		z, xi, _, last, conf := bruteEmit(m, seq, func(s, k int) float64 {
			if !kept[[2]int{s, k}] {
				return 0
			}
			return testConfusion[k][seq.Obs[s]]
		})
		if math.Abs(acc.ll-math.Log(z)) > 1e-12 {
			t.Errorf("ℓ %.15g, brute force %.15g", acc.ll, math.Log(z))
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"ξ", acc.counts, xi}, {"γ_T", acc.last, last}, {"conf", acc.conf, conf}} {
			for i := range c.got {
				if math.Abs(c.got[i]-c.want[i]) > 1e-12 {
					t.Fatalf("%s[%d] = %.15g, brute force %.15g", c.name, i, c.got[i], c.want[i])
				}
			}
		}
	}
	if dropped == 0 {
		t.Fatal("the beam dropped nothing: the test tests nothing")
	}
}

// With C = I the confused pass is the hard-token pass.
func TestConfusedIdentityIsHard(t *testing.T) {
	_, seqs := walkData(22, aliased3x3, 2, 400)
	m := randomModel(rand.New(rand.NewPCG(22, 2)), UniformClones(3, 4), 4, 1, false)
	id := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	hard := newParams(m)
	conf := newParams(m)
	conf.setConfusion(id, 0)
	a, err := newEstepper(hard, 1, len(seqs)).run(hard, seqs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newEstepper(conf, 1, len(seqs)).run(conf, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(a.ll - b.ll); d > 1e-9 {
		t.Errorf("ℓ %v hard, %v under I", a.ll, b.ll)
	}
	for i := range a.counts {
		if d := math.Abs(a.counts[i] - b.counts[i]); d > 1e-9 {
			t.Fatalf("ξ[%d] %v hard, %v under I", i, a.counts[i], b.counts[i])
		}
	}
	v, err := ExpectedVisits(m, seqs, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	var tot float64
	for _, x := range v {
		tot += x
	}
	if math.Abs(tot-800) > 1e-9 {
		t.Errorf("expected visits sum to %v, want 800 steps", tot)
	}
}

// EM through a confusion matrix climbs the likelihood (pseudocount 0) while it
// learns C, and learns the rate at which a walk's tokens were misread.
func TestTrainEMConfusion(t *testing.T) {
	g, seqs := walkData(23, aliased3x3, 4, 3000)
	const flip = 0.1 // each token read as the next one with probability 0.1
	misreadNext(seqs, flip, rand.New(rand.NewPCG(23, 3)))
	start := [][]float64{{0.9, 0.05, 0.05}, {0.05, 0.9, 0.05}, {0.05, 0.05, 0.9}}
	m := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(23, 4)))
	h, err := TrainEM(m, seqs, EMConfig{MaxIters: 300, Confusion: start, LearnConfusion: true, SplitRounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if start[0][0] != 0.9 {
		t.Errorf("TrainEM modified cfg.Confusion: C[0][0] = %v", start[0][0])
	}
	for i := 1; i < len(h.LogLik); i++ {
		split := false
		for _, s := range h.Splits {
			split = split || s.Iter == i-1
		}
		if !split && h.LogLik[i] < h.LogLik[i-1]-1e-12 {
			t.Errorf("iteration %d: ℓ/T decreased from %.15g to %.15g", i, h.LogLik[i-1], h.LogLik[i])
		}
	}
	c := h.Confusion
	for k := range 3 {
		if math.Abs(c[k][k]-(1-flip)) > 0.03 || math.Abs(c[k][(k+1)%3]-flip) > 0.03 || c[k][(k+2)%3] > 0.03 {
			t.Errorf("learned C[%d] = %.3f, want about [%v at %d, %v at %d, 0]", k, c[k], 1-flip, k, flip, (k+1)%3)
		}
	}
	// The map decodes the clean walk's places: one clone per place.
	clean, places := g.walk(rand.New(rand.NewPCG(23, 5)), 2000)
	states, _, err := Viterbi(m, clean)
	if err != nil {
		t.Fatal(err)
	}
	if pur, _ := purity(states, places); pur < 0.99 {
		t.Errorf("state→place purity %.3f on a clean walk, want ≥ 0.99", pur)
	}
}

func TestTrainEMConfusionErrors(t *testing.T) {
	_, seqs := walkData(24, aliased3x3, 1, 50)
	m := New(UniformClones(3, 2), 4, rand.New(rand.NewPCG(24, 1)))
	for _, c := range []struct {
		cfg  EMConfig
		want string
	}{
		{EMConfig{Confusion: [][]float64{{1, 0}, {0, 1}}}, "2-row confusion matrix for K=3"},
		{EMConfig{Confusion: [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0.5, 0.4}}}, "row 2 sums to 0.9"},
		{EMConfig{Confusion: [][]float64{{1, 0, 0}, {0, 1, 0}, {0, math.NaN(), 1}}}, "C[2][1] = NaN"},
		{EMConfig{Confusion: [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 1, 0}}}, "column 2 is zero"},
		{EMConfig{Confusion: testConfusion, ViterbiIters: 5}, "ViterbiIters 5 with a confusion matrix"},
		{EMConfig{LearnConfusion: true}, "LearnConfusion needs a Confusion"},
		{EMConfig{Confusion: testConfusion, ConfusionBeam: 0.5}, "ConfusionBeam 0.5"},
		{EMConfig{Stop: func() error { return errors.New("stopped by the test") }}, "stopped by the test"},
		{EMConfig{MaxIters: -1, ViterbiIters: 3, Stop: func() error { return errors.New("hard phase stopped") }}, "hard phase stopped"},
	} {
		_, err := TrainEM(m, seqs, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// ValidateConfusionRows accepts a matrix with a zero column (a token never seen), which
// ValidateConfusion refuses, and refuses what ValidateConfusion refuses of its rows.
func TestValidateConfusionRows(t *testing.T) {
	zeroCol := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 1, 0}}
	if err := ValidateConfusionRows(zeroCol, 3); err != nil {
		t.Errorf("zero column: %v, want no error", err)
	}
	if err := ValidateConfusion(zeroCol, 3); err == nil || !strings.Contains(err.Error(), "column 2 is zero") {
		t.Errorf("zero column: %v, want one naming column 2", err)
	}
	for _, c := range []struct {
		c    [][]float64
		want string
	}{
		{[][]float64{{1, 0}, {0, 1}}, "2-row confusion matrix for K=3"},
		{[][]float64{{1, 0, 0}, {0, 1}, {0, 0, 1}}, "row 1 has 2 entries"},
		{[][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0.5, 0.4}}, "row 2 sums to 0.9"},
		{[][]float64{{1, 0, 0}, {0, 1, 0}, {0, math.Inf(1), 1}}, "C[2][1] = +Inf"},
	} {
		if err := ValidateConfusionRows(c.c, 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// TrimConfusion drops the off-diagonal entries below min, never the diagonal, and
// renormalises: by hand.
func TestTrimConfusion(t *testing.T) {
	c := [][]float64{{0.9995, 0.0005}, {0.0004, 0.9996}}
	TrimConfusion(c, 1e-3)
	if c[0][0] != 1 || c[0][1] != 0 || c[1][0] != 0 || c[1][1] != 1 {
		t.Errorf("trimmed %v, want the identity", c)
	}
	c = [][]float64{{0.8, 0.2}, {0.0005, 0.9995}}
	TrimConfusion(c, 1e-3)
	if c[0][0] != 0.8 || c[0][1] != 0.2 || c[1][0] != 0 || c[1][1] != 1 {
		t.Errorf("trimmed %v, want [[0.8 0.2] [0 1]]", c)
	}
}

// TestConfusedLogLikelihoodsFrom: the log-likelihood of a sequence's steps from a cut
// on, given those before, is ℓ of the whole sequence less ℓ of its steps before the cut
// (each from ConfusedLogLikelihoods), bit for bit, at cuts from the first step to past
// the last.
func TestConfusedLogLikelihoodsFrom(t *testing.T) {
	_, seqs := walkData(25, aliased3x3, 2, 300)
	m := New(UniformClones(3, 2), 4, rand.New(rand.NewPCG(25, 1)))
	c := [][]float64{{0.8, 0.1, 0.1}, {0.1, 0.8, 0.1}, {0.05, 0.05, 0.9}}
	whole, err := ConfusedLogLikelihoods(m, seqs, c, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 1, 150, 299, 300} {
		got, err := ConfusedLogLikelihoodsFrom(m, seqs, []int{cut, 300 - cut}, c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range []int{cut, 300 - cut} {
			before := 0.0
			if f > 0 {
				s := Sequence{Obs: seqs[i].Obs[:f], Actions: seqs[i].Actions[:f-1]}
				l, err := ConfusedLogLikelihoods(m, []Sequence{s}, c, 1)
				if err != nil {
					t.Fatal(err)
				}
				before = l[0]
			}
			if want := whole[i] - before; got[i] != want {
				t.Errorf("sequence %d from step %d: %.12f, want %.12f", i, f, got[i], want)
			}
		}
	}
	if _, err := ConfusedLogLikelihoodsFrom(m, seqs, []int{0, 301}, c, 2); err == nil {
		t.Error("a start past the sequence's end: no error")
	}
}

// One E-step and M-step of FitConfusion is the true-token posterior of every state
// path, enumerated, normalised over the nonzero entries of the start.
func TestFitConfusionBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	m := randomModel(rng, []int{2, 1, 2}, 2, 1, false)
	seqs := []Sequence{randomSeq(rng, 3, 2, 5), randomSeq(rng, 3, 2, 4)}
	before := append([]float64(nil), m.ThetaLogits...)
	c, lls, err := FitConfusion(m, seqs, testConfusion, FitConfusionConfig{MaxIters: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	kk := m.K()
	counts := make([]float64, kk*kk)
	var ll float64
	for _, s := range seqs {
		z, _, _, _, conf := bruteConf(m, s, testConfusion)
		ll += math.Log(z)
		for i, v := range conf {
			counts[i] += v
		}
	}
	if len(lls) != 2 || math.Abs(lls[0]-ll/9) > 1e-12 {
		t.Errorf("ℓ/T %v, want 2 values, the first %.15g", lls, ll/9)
	}
	for k := range kk {
		var tot float64
		for o := range kk {
			if testConfusion[k][o] > 0 {
				tot += counts[k*kk+o]
			}
		}
		for o := range kk {
			want := 0.0
			if testConfusion[k][o] > 0 {
				want = counts[k*kk+o] / tot
			}
			if math.Abs(c[k][o]-want) > 1e-12 {
				t.Errorf("C[%d][%d] = %.15g, brute force %.15g", k, o, c[k][o], want)
			}
		}
	}
	if c[2][0] != 0 || testConfusion[0][0] != 0.8 {
		t.Errorf("C[2][0] = %v (a zero of the start stays zero); start C[0][0] = %v (not modified)", c[2][0], testConfusion[0][0])
	}
	if z, _ := ConfusedLogLikelihoods(m, seqs, c, 0); math.Abs(z[0]+z[1]-9*lls[1]) > 1e-9 {
		t.Errorf("ℓ/T after the M-step %.15g, ConfusedLogLikelihoods %.15g", lls[1], (z[0]+z[1])/9)
	}
	for i, v := range m.ThetaLogits {
		if v != before[i] {
			t.Fatalf("FitConfusion changed logit %d: %v to %v", i, before[i], v)
		}
	}
}

// A hard-token map of a clean walk, fitted to the same walk with tokens misread at a
// known rate, learns that rate and keeps its transitions.
func TestFitConfusionLearnsMisreads(t *testing.T) {
	_, seqs := walkData(29, aliased3x3, 4, 3000)
	m := New(UniformClones(3, 4), 4, rand.New(rand.NewPCG(29, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 300, SplitRounds: 3}); err != nil {
		t.Fatal(err)
	}
	before := append([]float64(nil), m.ThetaLogits...)
	const flip = 0.1 // each token read as the next one with probability 0.1
	misreadNext(seqs, flip, rand.New(rand.NewPCG(29, 3)))
	start := [][]float64{{0.9, 0.05, 0.05}, {0.05, 0.9, 0.05}, {0.05, 0.05, 0.9}}
	c, lls, err := FitConfusion(m, seqs, start, FitConfusionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(lls); i++ {
		if lls[i] < lls[i-1]-1e-12 {
			t.Errorf("E-step %d: ℓ/T decreased from %.15g to %.15g", i, lls[i-1], lls[i])
		}
	}
	if len(lls) < 3 || len(lls) > 101 {
		t.Errorf("%d E-steps, want 3 to 101", len(lls))
	}
	for k := range 3 {
		if math.Abs(c[k][k]-(1-flip)) > 0.02 || math.Abs(c[k][(k+1)%3]-flip) > 0.02 || c[k][(k+2)%3] > 0.01 {
			t.Errorf("fitted C[%d] = %.3f, want about [%v at %d, %v at %d, 0]", k, c[k], 1-flip, k, flip, (k+1)%3)
		}
	}
	for i, v := range m.ThetaLogits {
		if v != before[i] {
			t.Fatalf("FitConfusion changed logit %d", i)
		}
	}
	if _, _, err := FitConfusion(m, seqs, start, FitConfusionConfig{Beam: 0.5}); err == nil || !strings.Contains(err.Error(), "Beam") {
		t.Errorf("Beam 0.5: error %v, want one naming Beam", err)
	}
}

// misreadNext reads each token o of seqs (of 3 tokens) as (o+1) mod 3 with probability
// flip, in place.
func misreadNext(seqs []Sequence, flip float64, rng *rand.Rand) {
	for _, s := range seqs {
		for i, o := range s.Obs {
			if rng.Float64() < flip {
				s.Obs[i] = (o + 1) % 3
			}
		}
	}
}
