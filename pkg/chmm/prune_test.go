package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPrune(t *testing.T) {
	m := New([]int{2, 3}, 2, rand.New(rand.NewPCG(3, 4)))
	for i := range m.ThetaLogits { // a generic model, not the near-uniform init
		if !math.IsInf(m.ThetaLogits[i], 0) {
			m.ThetaLogits[i] = 2 * rand.New(rand.NewPCG(uint64(i), 9)).NormFloat64()
		}
	}
	// States: token 0 = {0, 1}, token 1 = {2, 3, 4}, sink 5. Drop 1 and 3.
	keep := []bool{true, false, true, false, true, false}
	p, old, err := Prune(m, keep)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Clones, []int{1, 2}) || !slices.Equal(old, []int{0, 2, 4, 5}) {
		t.Fatalf("clones %v, old %v; want [1 2], [0 2 4 5]", p.Clones, old)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	n, nn := m.N(), p.N()
	tm, tp := m.Transitions(), p.Transitions()
	for a := range 2 {
		for i, si := range old {
			var z float64
			for _, sj := range old {
				z += tm[(a*n+si)*n+sj]
			}
			for j, sj := range old {
				want := tm[(a*n+si)*n+sj] / z // renormalised over the kept states
				if got := tp[(a*nn+i)*nn+j]; math.Abs(got-want) > 1e-12 {
					t.Errorf("T'[%d,%d,%d] = %v, want %v", a, i, j, got, want)
				}
			}
		}
	}
	if _, _, err := Prune(m, []bool{false, false, true, true, true, true}); err == nil {
		t.Error("pruning every clone of token 0 gave no error")
	}
	if _, _, err := Prune(m, keep[:3]); err == nil {
		t.Error("a short keep gave no error")
	}
}

func TestViterbiVisits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomModel(rng, []int{2, 2}, 2, 1.5, false)
	seqs := []Sequence{randomSeq(rng, 2, 2, 6), randomSeq(rng, 2, 2, 5)}
	want := make([]int, m.N())
	for _, s := range seqs {
		_, best, _ := brute(m, s) // the most probable path by enumeration
		for _, st := range best {
			want[st]++
		}
	}
	visits, err := ViterbiVisits(m, seqs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(visits, want) {
		t.Errorf("visits %v, want %v (brute-force paths)", visits, want)
	}
}

// TestAddClone: a clone added to a token changes no sequence's likelihood (no state
// enters it, π never starts there), and the states after it move up by one.
func TestAddClone(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := New([]int{2, 3, 2}, 3, rng)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] += rng.NormFloat64()
	}
	var seqs []Sequence
	for range 3 {
		var q Sequence
		for i := range 50 {
			q.Obs = append(q.Obs, rng.IntN(3))
			if i > 0 {
				q.Actions = append(q.Actions, rng.IntN(3))
			}
		}
		seqs = append(seqs, q)
	}
	before, err := LogLikelihood(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	orig := m.Clone()
	shared := m.Clones
	u := addClone(m, 1)
	if u != 5 || !slices.Equal(m.Clones, []int{2, 4, 2}) || m.N() != 9 || !slices.Equal(shared, []int{2, 3, 2}) {
		t.Fatalf("new state %d, clones %v (the caller's slice %v), N %d", u, m.Clones, shared, m.N())
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	after, err := LogLikelihood(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(after-before) > 1e-9*math.Abs(before) {
		t.Errorf("log-likelihood %.12g, was %.12g", after, before)
	}
	tr, old := m.Transitions(), orig.Transitions()
	if m.Pi()[u] != 0 {
		t.Errorf("π of the new state %g", m.Pi()[u])
	}
	n, on := m.N(), orig.N()
	for a := range 3 {
		for i := range n {
			if i != u && tr[(a*n+i)*n+u] != 0 {
				t.Errorf("T[%d,%d,new] = %g", a, i, tr[(a*n+i)*n+u])
			}
		}
		// State 6 (token 2's first clone) was state 5; its row to the old 5 (now 6).
		if got, want := tr[(a*n+6)*n+6], old[(a*on+5)*on+5]; math.Abs(got-want) > 1e-12 {
			t.Errorf("T[%d,6,6] = %g, was T[%d,5,5] = %g", a, got, a, want)
		}
	}
}

// TestSplitAll: every clone is doubled; without noise the copy gives every sequence
// the probability it had (brute-force sums over paths agree), and the two halves of
// every split transition add up to the original; with noise they no longer do.
func TestSplitAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomModel(rng, []int{2, 1, 3}, 2, 2, true)
	d, err := SplitAll(m, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Clones, []int{4, 2, 6}) {
		t.Fatalf("clones %v, want [4 2 6]", d.Clones)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	// Old state s (token k, clone c) is new state first'(k)+c, its copy C_k later.
	orig := func(m, d *Model, s int) (int, int) {
		k := m.Token(s)
		c := s - m.FirstState(k)
		return d.FirstState(k) + c, d.FirstState(k) + c + m.Clones[k]
	}
	tm, td := m.Transitions(), d.Transitions()
	n, nn := m.N(), d.N()
	for a := range m.NumActions {
		for i := range n - 1 {
			i1, i2 := orig(m, d, i)
			for j := range n - 1 {
				j1, j2 := orig(m, d, j)
				want := tm[(a*n+i)*n+j]
				for _, row := range []int{i1, i2} {
					if got := td[(a*nn+row)*nn+j1] + td[(a*nn+row)*nn+j2]; math.Abs(got-want) > 1e-12 {
						t.Fatalf("T[%d,%d->%d] split into %g, want %g", a, i, j, got, want)
					}
				}
			}
		}
	}
	for trial := range 20 {
		seq := randomSeq(rng, m.K(), m.NumActions, 2+trial%5)
		p0, _, _ := brute(m, seq)
		p1, _, _ := brute(d, seq)
		if math.Abs(p0-p1) > 1e-12*max(1, p0) {
			t.Fatalf("sequence %d: p %g after the split, %g before", trial, p1, p0)
		}
	}
	noisy, err := SplitAll(m, 0.5, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	seq := randomSeq(rng, m.K(), m.NumActions, 6)
	p0, _, _ := brute(m, seq)
	if p1, _, _ := brute(noisy, seq); math.Abs(p0-p1) < 1e-9 {
		t.Fatalf("noise 0.5 left p = %g unchanged", p0)
	}
}
