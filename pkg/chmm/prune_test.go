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

// TestSplitSome: splitting clones 0 and 4 of tokens with 2, 1 and 3 clones adds one
// clone to tokens 0 and 2, each copy after its token's clones, and (noise 0) leaves
// every sequence's probability as it was; a mask of the wrong length is an error.
func TestSplitSome(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := randomModel(rng, []int{2, 1, 3}, 2, 2, true)
	split := make([]bool, m.N())
	split[0], split[4] = true, true // token 0's first clone, token 2's second
	d, err := SplitSome(m, split, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Clones, []int{3, 1, 4}) {
		t.Fatalf("clones %v, want [3 1 4]", d.Clones)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	// Old state 4 is new state 5, its copy state 7 (after token 2's clones 4–6); both
	// leave as it did (noise 0): their rows' last entry, a state not split, is its.
	tm, td, n, nn := m.Transitions(), d.Transitions(), m.N(), d.N()
	for a := range m.NumActions {
		for _, row := range []int{5, 7} {
			if got, want := td[(a*nn+row)*nn+nn-1], tm[(a*n+4)*n+n-1]; math.Abs(got-want) > 1e-12 {
				t.Errorf("action %d: state %d's last entry %g, old state 4's %g", a, row, got, want)
			}
		}
	}
	for trial := range 20 {
		seq := randomSeq(rng, m.K(), m.NumActions, 2+trial%5)
		p0, _, _ := brute(m, seq)
		if p1, _, _ := brute(d, seq); math.Abs(p0-p1) > 1e-12*max(1, p0) {
			t.Fatalf("sequence %d: p %g after the split, %g before", trial, p1, p0)
		}
	}
	if _, err := SplitSome(m, split[:3], 0, rng); err == nil {
		t.Error("a mask of 3 entries accepted")
	}
}

// TestFoldAlike: the ring of TestSurprisesExact held twice (every place by two clones,
// each row sending a random share to either copy of the next place, the two copies'
// rows alike) folds to one clone per place, with the same likelihood; the true ring,
// whose two clones of token 0 lead to different tokens, folds nothing; and a clone
// whose rows differ by more than tv from its twin's is kept apart.
func TestFoldAlike(t *testing.T) {
	ringTok := []int{0, 1, 2, 3, 0, 4, 5, 6}
	const P = 8
	rng := rand.New(rand.NewPCG(5, 8))
	walk := Sequence{Obs: make([]int, 3000), Actions: make([]int, 2999)}
	at := 0
	for t := range walk.Obs {
		walk.Obs[t] = ringTok[at]
		if t < len(walk.Actions) {
			walk.Actions[t] = rng.IntN(2)
			at = (at + P + 1 - 2*walk.Actions[t]) % P
		}
	}
	truth := ringModel([]int{2, 1, 1, 1, 1, 1, 1}, []int{0, 2, 3, 4, 1, 5, 6, 7})
	twice, copies := ringTwice(ringTok)
	n := twice.N()
	for i := range twice.PiLogits {
		twice.PiLogits[i] = math.Inf(-1)
	}
	for a := range 2 {
		for q := range P {
			next := copies((q + P + 1 - 2*a) % P)
			w := 0.1 + 0.8*rng.Float64()
			for _, s := range copies(q) {
				twice.ThetaLogits[(a*n+s)*n+next[0]] = math.Log(w)
				twice.ThetaLogits[(a*n+s)*n+next[1]] = math.Log(1 - w)
			}
		}
	}
	for q := range P { // π as the true ring's: uniform over the places, split between copies
		for i, s := range copies(q) {
			twice.PiLogits[s] = math.Log(float64(1+i) / 3 / P)
		}
	}
	visits, err := ViterbiVisits(twice, []Sequence{walk}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for s := range visits {
		visits[s]++ // every real clone counts, whichever copy the path prefers
	}
	keep := make([]bool, n)
	for s := range keep {
		keep[s] = true
	}
	before, _ := LogLikelihood(twice, []Sequence{walk})
	folded := twice.Clone()
	if got := FoldAlike(folded, keep, visits, 0.05); got != P {
		t.Errorf("twice: %d clones folded, want %d", got, P)
	}
	// Before pruning, every kept clone moves with probability 1 to the kept copy of
	// the next place: the folded copies' mass is on it, not on a clone folded away.
	tr := folded.Transitions()
	for a := range 2 {
		for q := range P {
			next := copies((q + P + 1 - 2*a) % P)
			for _, s := range copies(q) {
				if !keep[s] {
					continue
				}
				kept := next[0]
				if !keep[kept] {
					kept = next[1]
				}
				if p := tr[(a*n+s)*n+kept]; math.Abs(p-1) > 1e-12 {
					t.Errorf("folded: place %d, action %d: %.6f to the next place's kept clone, want 1", q, a, p)
				}
			}
		}
	}
	pruned, _, err := Prune(folded, keep)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := LogLikelihood(pruned, []Sequence{walk})
	if !slices.Equal(pruned.Clones, []int{2, 1, 1, 1, 1, 1, 1}) || math.Abs(after-before) > 1e-9*math.Abs(before) {
		t.Errorf("twice folded: clones %v, ℓ %.12g (before %.12g)", pruned.Clones, after, before)
	}
	all := []bool{true, true, true, true, true, true, true, true, true}
	if got := FoldAlike(truth.Clone(), all, make([]int, truth.N()), 0.05); got != 0 {
		t.Errorf("true ring: %d clones folded, want 0", got)
	}
	// One copy of place 1 (token 1) moving back to place 0 with 0.5 instead of 1:
	// its twin is no longer alike, and neither are the copies of place 0 that lead to
	// them; the rest fold.
	apart := twice.Clone()
	s := copies(1)[1]
	for j := range n {
		apart.ThetaLogits[(1*n+s)*n+j] = math.Inf(-1)
	}
	apart.ThetaLogits[(1*n+s)*n+copies(0)[0]] = math.Log(0.5)
	apart.ThetaLogits[(1*n+s)*n+copies(2)[0]] = math.Log(0.5)
	keep2 := slices.Clone(all[:0])
	for range n {
		keep2 = append(keep2, true)
	}
	got := FoldAlike(apart, keep2, visits, 0.05)
	if got >= P || keep2[s] != true || keep2[copies(1)[0]] != true {
		t.Errorf("apart: %d folded, kept %v", got, keep2)
	}
}

// TestFoldAlikeMean: two clones of token 0 whose rows differ by 0.02 (within tv) fold
// into the more visited one, whose row becomes the visits-weighted mean, with the
// folded clone's column moved onto it.
func TestFoldAlikeMean(t *testing.T) {
	model := func() *Model {
		m := New([]int{2, 1}, 1, nil) // states 0, 1 (token 0), 2 (token 1), sink 3
		rows := [][]float64{{0.06, 0.04, 0.9, 0}, {0.05, 0.03, 0.92, 0}, {0.5, 0.5, 0, 0}, {0, 0, 0, 1}}
		for i, row := range rows {
			for j, p := range row {
				m.ThetaLogits[i*4+j] = math.Log(p)
			}
		}
		return m
	}
	m := model()
	n := m.N()
	keep := []bool{true, true, true, true}
	if got := FoldAlike(m, keep, []int{1, 3, 4, 0}, 0.05); got != 1 || keep[0] || !keep[1] {
		t.Fatalf("%d folded, keep %v; want clone 0 folded into clone 1", got, keep)
	}
	tr := m.Transitions()
	want := []float64{0, 0.25*(0.06+0.04) + 0.75*(0.05+0.03), 0.25*0.9 + 0.75*0.92, 0}
	for j, w := range want {
		if math.Abs(tr[1*n+j]-w) > 1e-12 {
			t.Errorf("row of clone 1: %v, want %v", tr[n:2*n], want)
			break
		}
	}
	if p := tr[2*n+1]; math.Abs(p-1) > 1e-12 { // token 1's row: both halves onto clone 1
		t.Errorf("token 1 to clone 1: %v, want 1", p)
	}
	if got := FoldAlike(model(), []bool{true, true, true, true}, []int{1, 3, 4, 0}, 0.01); got != 0 {
		t.Errorf("tv 0.01: %d folded, want 0 (the rows are 0.02 apart)", got)
	}
}

// ringTwice is a map of the ring of TestSurprisesExact (place q shows ringTok[q])
// with two clones per place, copies(q): first(token)+2·(q's rank among the token's
// places), and +1. It has no moves yet: every logit is −Inf but the sink's loops.
func ringTwice(ringTok []int) (*Model, func(q int) [2]int) {
	m := New([]int{4, 2, 2, 2, 2, 2, 2}, 2, nil)
	n := m.N()
	copies := func(q int) [2]int {
		s := m.FirstState(ringTok[q])
		if q == 4 {
			s += 2
		}
		return [2]int{s, s + 1}
	}
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = math.Inf(-1)
	}
	for a := range 2 {
		m.ThetaLogits[(a*n+n-1)*n+n-1] = 0
	}
	return m, copies
}

// TestFoldAlikeWithin: the ring of TestFoldAlike held twice as two streams (each copy
// of a place moves to the same copy of the next place), one copy of place 4 moving
// back to places 3 and 5 alike. A place's copies then differ first k+1 moves ahead,
// where k is its distance from place 4 (0 to 4 on the ring of 8): refined d times, the
// places at distance d or more fold, 7, 5, 3, 1, 0; the partition is stable after 6.
func TestFoldAlikeWithin(t *testing.T) {
	const P = 8
	m, copies := ringTwice([]int{0, 1, 2, 3, 0, 4, 5, 6})
	n := m.N()
	for a := range 2 {
		for q := range P {
			next := copies((q + P + 1 - 2*a) % P)
			for i, s := range copies(q) {
				m.ThetaLogits[(a*n+s)*n+next[i]] = 0
			}
		}
	}
	odd := copies(4)[1]
	m.ThetaLogits[(1*n+odd)*n+copies(3)[1]] = math.Log(0.5)
	m.ThetaLogits[(1*n+odd)*n+copies(5)[1]] = math.Log(0.5)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	visits := make([]int, n)
	for s := range visits {
		visits[s] = 1
	}
	for depth, want := range []int{0, 7, 5, 3, 1, 0, 0} {
		keep := make([]bool, n)
		for s := range keep {
			keep[s] = s < n-1
		}
		got, stable := FoldAlikeWithin(m.Clone(), keep, visits, 0.05, depth)
		if got != want || stable != (depth == 0 || depth == 6) {
			t.Errorf("depth %d: %d folded (stable %v), want %d (stable %v)", depth, got, stable, want, depth == 0 || depth == 6)
		}
		if !keep[odd] || !keep[copies(4)[0]] {
			t.Errorf("depth %d: place 4's copies folded", depth)
		}
	}
}

func TestKeepPairs(t *testing.T) {
	m := New([]int{4, 1}, 2, rand.New(rand.NewPCG(3, 5)))
	for i := range m.ThetaLogits { // a generic model, not the near-uniform init
		if !math.IsInf(m.ThetaLogits[i], 0) {
			m.ThetaLogits[i] = 2 * rand.New(rand.NewPCG(uint64(i), 10)).NormFloat64()
		}
	}
	// States: token 0 = {0, 1, 2, 3}, token 1 = {4}, sink 5. Pairs (0, 3) and (1, 2).
	// Clones 1 and 2 hold 0.6% and 0.5% of token 0's visits: each under 1%, 1.1% together.
	pair := []int{3, 2, 1, 0, -1, -1}
	visits := []float64{50, 0.6, 0.5, 48.9, 7, 0}
	orig := m.Clone()
	keep, kept, folded := KeepPairs(m, visits, 0.01, pair)
	if !slices.Equal(keep, []bool{true, true, false, true, true, true}) || kept != 4 || folded != 1 {
		t.Fatalf("keep %v, kept %d, folded %d; want [true true false true true true], 4, 1", keep, kept, folded)
	}
	n := m.N()
	to, tm := orig.Transitions(), m.Transitions()
	po, pm := make([]float64, n), make([]float64, n)
	softmaxInto(po, orig.PiLogits)
	softmaxInto(pm, m.PiLogits)
	for a := range 2 {
		for i := range n {
			src := i
			for j := range n {
				want := to[(a*n+src)*n+j]
				if i == 1 { // clone 1's rows: the pair's visit-weighted mean
					want = (0.6*to[(a*n+1)*n+j] + 0.5*to[(a*n+2)*n+j]) / 1.1
				}
				if j == 1 { // and what went to clone 2 goes to clone 1
					w2 := to[(a*n+src)*n+2]
					if i == 1 {
						w2 = (0.6*to[(a*n+1)*n+2] + 0.5*to[(a*n+2)*n+2]) / 1.1
					}
					want += w2
				}
				if j == 2 {
					want = 0
				}
				if got := tm[(a*n+i)*n+j]; math.Abs(got-want) > 1e-12 {
					t.Errorf("T'[%d,%d,%d] = %v, want %v", a, i, j, got, want)
				}
			}
		}
	}
	if math.Abs(pm[1]-(po[1]+po[2])) > 1e-12 || pm[2] != 0 {
		t.Errorf("π' = %v from %v: want clone 2's probability on clone 1", pm, po)
	}
	// Under the share together: both dropped; no pairs: KeepVisited's.
	m2 := orig.Clone()
	if keep, _, folded := KeepPairs(m2, []float64{50, 0.4, 0.5, 49.1, 7, 0}, 0.01, pair); keep[1] || keep[2] || folded != 0 {
		t.Errorf("0.4%% and 0.5%%: keep %v, folded %d; want both dropped", keep, folded)
	}
	if keep, _, folded := KeepPairs(m2, visits, 0.01, nil); keep[1] || keep[2] || folded != 0 {
		t.Errorf("no pairs: keep %v, folded %d; want KeepVisited's", keep, folded)
	}
	// A pair split without noise folds back exactly: every sequence keeps its probability.
	base := orig.Clone()
	split, err := SplitSome(base, []bool{false, true, false, false, false, false}, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	// split: token 0 = {0, 1, 2, 3, 4} with 4 the copy of 1; token 1 = {5}; sink 6.
	rng := rand.New(rand.NewPCG(7, 8))
	seqs := []Sequence{randomSeq(rng, 2, 2, 7), randomSeq(rng, 2, 2, 9)}
	want, err := LogLikelihood(split, seqs)
	if err != nil {
		t.Fatal(err)
	}
	_, _, folded = KeepPairs(split, []float64{50, 0.6, 0, 48.9, 0.5, 7, 0}, 0.01, []int{-1, 4, -1, -1, 1, -1, -1})
	got, err := LogLikelihood(split, seqs)
	if err != nil {
		t.Fatal(err)
	}
	if folded != 1 || math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("folded %d, ℓ %v after the fold, %v before: want 1 and equal", folded, got, want)
	}
}
