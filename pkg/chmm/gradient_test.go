package chmm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fdCheck compares analytic derivatives with central finite differences of
// LogLikelihood, entry by entry (skipping -Inf logits, whose derivative must
// be exactly 0).
func fdCheck(t *testing.T, name string, m *Model, seqs []Sequence, x, grad []float64) {
	t.Helper()
	const h = 1e-5
	for i := range x {
		if math.IsInf(x[i], -1) {
			if grad[i] != 0 {
				t.Errorf("%s[%d]: -Inf logit has gradient %v, want 0", name, i, grad[i])
			}
			continue
		}
		x0 := x[i]
		x[i] = x0 + h
		lp, err1 := LogLikelihood(m, seqs)
		x[i] = x0 - h
		lm, err2 := LogLikelihood(m, seqs)
		x[i] = x0
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		fd := (lp - lm) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s[%d]: gradient %.10g, finite difference %.10g", name, i, grad[i], fd)
		}
	}
}

func TestGradientFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	for ci, tc := range []struct {
		clones  []int
		actions int
		holes   bool
	}{
		{[]int{2, 1}, 2, false},
		{[]int{2, 1}, 2, true},
		{[]int{1, 3, 2}, 3, false},
	} {
		m := randomModel(rng, tc.clones, tc.actions, 1, tc.holes)
		var seqs []Sequence
		for _, tt := range []int{1, 4, 7, 12} {
			for { // a sequence of positive probability
				s := randomSeq(rng, m.K(), tc.actions, tt)
				if _, err := LogLikelihood(m, []Sequence{s}); err == nil {
					seqs = append(seqs, s)
					break
				}
			}
		}
		ll, gPi, gTheta, err := Gradient(m, seqs)
		if err != nil {
			t.Fatalf("case %d: %v", ci, err)
		}
		want, _ := LogLikelihood(m, seqs)
		if math.Abs(ll-want) > 1e-12*math.Abs(want) {
			t.Errorf("case %d: Gradient's ℓ %v, LogLikelihood %v", ci, ll, want)
		}
		fdCheck(t, "π", m, seqs, m.PiLogits, gPi)
		fdCheck(t, "Θ", m, seqs, m.ThetaLogits, gTheta)
		// The sink column's gradient is −n_a(i)·T[a,i,⊥]: non-zero for used rows.
		n := m.N()
		nonzero := false
		for r := 0; r < len(gTheta); r += n {
			nonzero = nonzero || gTheta[r+n-1] != 0
		}
		if !nonzero {
			t.Errorf("case %d: sink column gradient is all zero", ci)
		}
	}
}

func TestGradientWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	g := parseGrid(aliased3x3)
	var seqs []Sequence
	for range 5 {
		s, _ := g.walk(rng, 300)
		seqs = append(seqs, s)
	}
	m := New(UniformClones(3, 3), 4, rng)
	ll1, p1, t1, err := GradientWorkers(m, seqs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 8} {
		ll, p, th, err := GradientWorkers(m, seqs, w)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ll-ll1) > 1e-9 || maxAbsDiff(p, p1) > 1e-9 || maxAbsDiff(th, t1) > 1e-9 {
			t.Errorf("workers %d: results differ from 1 worker", w)
		}
		ll2, p2, th2, _ := GradientWorkers(m, seqs, w)
		if ll2 != ll || maxAbsDiff(p, p2) != 0 || maxAbsDiff(th, th2) != 0 {
			t.Errorf("workers %d: not deterministic", w)
		}
	}
	// The gradient over a set is the sum of the per-sequence gradients.
	var sum []float64
	for _, s := range seqs {
		_, _, th, _ := Gradient(m, []Sequence{s})
		if sum == nil {
			sum = make([]float64, len(th))
		}
		for i, v := range th {
			sum[i] += v
		}
	}
	if d := maxAbsDiff(sum, t1); d > 1e-9 {
		t.Errorf("sum of per-sequence gradients differs by %v", d)
	}
}

func maxAbsDiff(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

func TestEntropyGradient(t *testing.T) {
	// entropyGrad's contribution equals −T·η·∂(Σ w H)/∂Θ with w fixed:
	// compare with finite differences of the weighted entropy.
	rng := rand.New(rand.NewPCG(8, 1))
	m := randomModel(rng, []int{2, 2}, 2, 1, true)
	n := m.N()
	counts := make([]float64, len(m.ThetaLogits))
	for i := range counts {
		if rng.Float64() < 0.5 {
			counts[i] = rng.Float64()
		}
	}
	const steps, eta = 7.0, 0.3
	weighted := func() float64 {
		p := newParams(m)
		return entropyGrad(p, counts, steps, 0, make([]float64, len(counts)))
	}
	// Reference value of Σ w H computed directly.
	_, trans := refProbs(m)
	var want float64
	for a := range 2 {
		for i := range n {
			var nai, h float64
			for j := range n {
				nai += counts[(a*n+i)*n+j]
				if p := trans[a][i][j]; p > 0 {
					h -= p * math.Log(p)
				}
			}
			want += nai / steps * h
		}
	}
	if got := weighted(); math.Abs(got-want) > 1e-12 {
		t.Fatalf("weighted entropy %v, want %v", got, want)
	}
	g := make([]float64, len(counts))
	entropyGrad(newParams(m), counts, steps, eta, g)
	const h = 1e-6
	for i := range m.ThetaLogits {
		x0 := m.ThetaLogits[i]
		if math.IsInf(x0, -1) {
			if g[i] != 0 {
				t.Errorf("Θ[%d] = -Inf has entropy gradient %v", i, g[i])
			}
			continue
		}
		m.ThetaLogits[i] = x0 + h
		hp := weighted()
		m.ThetaLogits[i] = x0 - h
		hm := weighted()
		m.ThetaLogits[i] = x0
		want := -steps * eta * (hp - hm) / (2 * h)
		if math.Abs(g[i]-want) > 1e-6 {
			t.Errorf("Θ[%d]: entropy gradient %v, finite difference %v", i, g[i], want)
		}
	}
}

func TestGradientSplitSequence(t *testing.T) {
	// One long sequence on several goroutines (expectSplit) = one goroutine.
	_, seqs := walkData(16, aliased3x3, 1, 5000)
	m := New(UniformClones(3, 5), 4, rand.New(rand.NewPCG(16, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 5, Pseudocount: 1e-3}); err != nil {
		t.Fatal(err)
	}
	ll1, p1, t1, err := GradientWorkers(m, seqs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 16} {
		ll, p, th, err := GradientWorkers(m, seqs, w)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ll-ll1) > 1e-9*math.Abs(ll1) || maxAbsDiff(p, p1) > 1e-9 || maxAbsDiff(th, t1) > 1e-8 {
			t.Errorf("workers %d: ℓ %v vs %v, max |Δ∂π| %v, max |Δ∂Θ| %v", w, ll, ll1, maxAbsDiff(p, p1), maxAbsDiff(th, t1))
		}
	}
	// A zero-probability step is reported the same way.
	bad := New(UniformClones(3, 5), 4, nil)
	n := bad.N()
	for a := range 4 {
		for i := 0; i < 5; i++ { // token 0 can never be followed by token 1
			for j := 5; j < 10; j++ {
				bad.ThetaLogits[(a*n+i)*n+j] = math.Inf(-1)
			}
		}
	}
	_, _, _, e1 := GradientWorkers(bad, seqs, 1)
	_, _, _, e2 := GradientWorkers(bad, seqs, 2)
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Errorf("zero-probability errors differ: %v / %v", e1, e2)
	}
}
