package chmm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tinyCases are the brute-force test models: clone layouts and whether some
// logits are -Inf.
var tinyCases = []struct {
	clones []int
	holes  bool
}{
	{[]int{2, 1}, false},
	{[]int{2, 1}, true},
	{[]int{1, 1, 2}, false},
	{[]int{1, 2, 1}, true},
}

func TestLogLikelihoodBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for ci, tc := range tinyCases {
		for trial := range 4 {
			m := randomModel(rng, tc.clones, 2, 1.5, tc.holes)
			for tt := 1; tt <= 6; tt++ {
				seq := randomSeq(rng, m.K(), 2, tt)
				want, _, _ := brute(m, seq)
				got, err := LogLikelihood(m, []Sequence{seq})
				if want == 0 {
					if !errors.Is(err, ErrZeroProbability) || !math.IsInf(got, -1) {
						t.Errorf("case %d trial %d T=%d: zero-probability sequence gave %v, %v", ci, trial, tt, got, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("case %d trial %d T=%d: %v", ci, trial, tt, err)
				}
				if math.Abs(got-math.Log(want)) > 1e-12*math.Max(1, math.Abs(got)) {
					t.Errorf("case %d trial %d T=%d: ℓ = %.15g, brute force %.15g", ci, trial, tt, got, math.Log(want))
				}
			}
		}
	}
}

func TestLogLikelihoodSumsSequences(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	m := randomModel(rng, []int{2, 1, 2}, 3, 1, false)
	var seqs []Sequence
	var want float64
	for tt := 1; tt <= 5; tt++ {
		s := randomSeq(rng, 3, 3, tt)
		seqs = append(seqs, s)
		p, _, _ := brute(m, s)
		want += math.Log(p)
	}
	got, err := LogLikelihood(m, seqs)
	if err != nil || math.Abs(got-want) > 1e-11 {
		t.Errorf("ℓ = %v (%v), want %v", got, err, want)
	}
	lls, err := SequenceLogLikelihoods(m, seqs, 2)
	if err != nil || len(lls) != len(seqs) {
		t.Fatal(err)
	}
	for i, s := range seqs {
		p, _, _ := brute(m, s)
		if math.Abs(lls[i]-math.Log(p)) > 1e-12 {
			t.Errorf("sequence %d: %v, want %v", i, lls[i], math.Log(p))
		}
	}
}

func TestZeroProbability(t *testing.T) {
	// Token 1 can never follow token 0 under action 1.
	m := New([]int{2, 1}, 2, nil)
	n := m.N()
	for i := range 2 {
		m.ThetaLogits[(1*n+i)*n+2] = math.Inf(-1)
	}
	bad := Sequence{Obs: []int{0, 0, 1, 0, 0, 1}, Actions: []int{0, 0, 1, 0, 1}}
	ok := Sequence{Obs: []int{0, 1}, Actions: []int{0}}
	ll, err := LogLikelihood(m, []Sequence{ok, bad})
	if !errors.Is(err, ErrZeroProbability) || !math.IsInf(ll, -1) || !strings.Contains(err.Error(), "sequence 1, step 5") {
		t.Errorf("LogLikelihood: %v, %v; want -Inf and a zero-probability error at sequence 1, step 5", ll, err)
	}
	_, lp, err := Viterbi(m, bad)
	if !errors.Is(err, ErrZeroProbability) || !strings.Contains(err.Error(), "step 5") || !math.IsInf(lp, -1) {
		t.Errorf("Viterbi: %v, %v", lp, err)
	}
	if _, _, _, err := Gradient(m, []Sequence{ok, bad}); !errors.Is(err, ErrZeroProbability) || !strings.Contains(err.Error(), "sequence 1, step 5") {
		t.Errorf("Gradient: %v", err)
	}
	if _, err := TrainGradient(m.Clone(), []Sequence{bad}, GradConfig{Iters: 2}); !errors.Is(err, ErrZeroProbability) {
		t.Errorf("TrainGradient: %v", err)
	}
	// A π that excludes the first token's clones: step 0.
	m2 := New([]int{2, 1}, 2, nil)
	m2.PiLogits[0], m2.PiLogits[1] = math.Inf(-1), math.Inf(-1)
	if _, _, err := Viterbi(m2, ok); !errors.Is(err, ErrZeroProbability) || !strings.Contains(err.Error(), "step 0") {
		t.Errorf("Viterbi at step 0: %v", err)
	}
	if _, err := LogLikelihood(m2, []Sequence{ok}); !errors.Is(err, ErrZeroProbability) || !strings.Contains(err.Error(), "step 0") {
		t.Errorf("LogLikelihood at step 0: %v", err)
	}
}

// refLogForward is an independent log-space forward pass over all N states
// (lse recursion of paper Section 3.3) for long-sequence checks.
func refLogForward(m *Model, seq Sequence) float64 {
	pi, trans := refProbs(m)
	n := m.N()
	la := make([]float64, n)
	for j := range n {
		la[j] = math.Inf(-1)
		if emits(m, j, seq.Obs[0]) {
			la[j] = math.Log(pi[j])
		}
	}
	next := make([]float64, n)
	terms := make([]float64, n)
	for t := 1; t < len(seq.Obs); t++ {
		a := seq.Actions[t-1]
		for j := range n {
			next[j] = math.Inf(-1)
			if !emits(m, j, seq.Obs[t]) {
				continue
			}
			for i := range n {
				terms[i] = la[i] + math.Log(trans[a][i][j])
			}
			next[j] = logSumExp(terms)
		}
		la, next = next, la
	}
	return logSumExp(la)
}

func TestLongSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	g := parseGrid(aliased3x3)
	seq, _ := g.walk(rng, 20000)
	m := New(UniformClones(3, 4), 4, rng)
	got, err := LogLikelihood(m, []Sequence{seq})
	if err != nil || math.IsInf(got, 0) || math.IsNaN(got) {
		t.Fatalf("ℓ = %v, %v", got, err)
	}
	want := refLogForward(m, seq)
	if math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("20,000 steps: ℓ = %.12g, log-space reference %.12g", got, want)
	}
	// Chunk consistency: ℓ(o_1:T) = ℓ(o_1:t) + ℓ(o_t+1:T | filtered state at t).
	p := newParams(m)
	var w fbWork
	cut := 12345
	head := Sequence{Obs: seq.Obs[:cut], Actions: seq.Actions[:cut-1]}
	tail := Sequence{Obs: seq.Obs[cut:], Actions: seq.Actions[cut:]}
	llHead, _, ok := p.forward(head, p.pi, &w)
	if !ok {
		t.Fatal("head has zero probability")
	}
	prior := make([]float64, p.n)
	last := w.alpha[w.off[cut-1]:w.off[cut]]
	f := p.first[head.Obs[cut-1]]
	a := seq.Actions[cut-1]
	for i, ai := range last {
		for j := range p.n {
			prior[j] += ai * p.trans[(a*p.n+f+i)*p.n+j]
		}
	}
	llTail, _, ok := p.forward(tail, prior, &w)
	if !ok {
		t.Fatal("tail has zero probability")
	}
	if math.Abs(llHead+llTail-got) > 1e-9*math.Abs(got) {
		t.Errorf("chunked ℓ %.12g + %.12g = %.12g, want %.12g", llHead, llTail, llHead+llTail, got)
	}
}

func TestViterbiBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	for ci, tc := range tinyCases {
		for trial := range 4 {
			m := randomModel(rng, tc.clones, 2, 1.5, tc.holes)
			for tt := 1; tt <= 6; tt++ {
				seq := randomSeq(rng, m.K(), 2, tt)
				_, best, bestP := brute(m, seq)
				states, lp, err := Viterbi(m, seq)
				if bestP == 0 {
					if !errors.Is(err, ErrZeroProbability) {
						t.Errorf("case %d T=%d: zero-probability sequence gave %v", ci, tt, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("case %d T=%d: %v", ci, tt, err)
				}
				if !slices.Equal(states, best) || math.Abs(lp-math.Log(bestP)) > 1e-12*math.Max(1, math.Abs(lp)) {
					t.Errorf("case %d trial %d T=%d: path %v log p %v, brute force %v %v", ci, trial, tt, states, lp, best, math.Log(bestP))
				}
			}
		}
	}
}

func TestViterbiTies(t *testing.T) {
	// All logits equal: every path over real states ties; the lowest index
	// wins at every step: the first clone of each observed token.
	m := New([]int{3, 2, 2}, 2, nil)
	clear(m.PiLogits)
	clear(m.ThetaLogits)
	seq := Sequence{Obs: []int{1, 2, 0, 0, 1}, Actions: []int{0, 1, 1, 0}}
	states, _, err := Viterbi(m, seq)
	want := []int{3, 5, 0, 0, 3}
	if err != nil || !slices.Equal(states, want) {
		t.Errorf("ties: %v (%v), want %v", states, err, want)
	}
	all, lps, err := ViterbiAll(m, []Sequence{seq, seq}, 2)
	if err != nil || !slices.Equal(all[1], want) || lps[0] != lps[1] {
		t.Errorf("ViterbiAll: %v %v %v", all, lps, err)
	}
}

func TestViterbiAllMatchesViterbi(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	m := randomModel(rng, []int{3, 2, 4}, 3, 1, false)
	var seqs []Sequence
	for range 5 {
		seqs = append(seqs, randomSeq(rng, 3, 3, 50+rng.IntN(50)))
	}
	all, lps, err := ViterbiAll(m, seqs, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		st, lp, err := Viterbi(m, s)
		if err != nil || !slices.Equal(st, all[i]) || lp != lps[i] {
			t.Errorf("sequence %d differs", i)
		}
	}
}

func TestLogLikelihoodUnderflowFallback(t *testing.T) {
	// Token 0 has clones A (state 0) and B (state 1). π̄_B = e^-1000 relative
	// to A: zero in float64 probability space. Only B can be followed by
	// token 1, so the sequence 0,1 has ℓ ≈ -1000: exact in log space.
	m := New([]int{2, 1}, 1, nil)
	m.PiLogits = []float64{0, -1000, math.Inf(-1), math.Inf(-1)}
	n := m.N()
	clear(m.ThetaLogits)
	m.ThetaLogits[0*n+2] = math.Inf(-1) // A never reaches token 1
	seq := Sequence{Obs: []int{0, 1}, Actions: []int{0}}
	// log π̄_B = -1000 - log(1 + e^-1000) and B's row is uniform over the
	// 4 states: log T[B, C] = -log 4.
	want := -1000 - math.Log(4)
	got, err := LogLikelihood(m, []Sequence{seq})
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("ℓ = %v (%v), want %v", got, err, want)
	}
	_, lp, err := Viterbi(m, seq)
	if err != nil || math.Abs(lp-want) > 1e-9 {
		t.Errorf("Viterbi log p = %v (%v), want %v", lp, err, want)
	}
	// The diagnosis reads the same walk in log space too: ℓ as above, and its one
	// step after the first is a surprise (p(o_1 | o_0) ≈ e^-1000 / 4).
	d, err := Diagnose(m, []Sequence{seq}, nil, 1)
	if err != nil {
		t.Fatalf("Diagnose: %v", err)
	}
	if wantBits := -want / 2 / math.Ln2; math.Abs(d.TrainBits-wantBits) > 1e-9 || d.Surprises != 1 {
		t.Errorf("Diagnose: %v bits/step, surprises %v; want %v and 1", d.TrainBits, d.Surprises, wantBits)
	}
	// The log-space pass agrees with the normal one where both work, ℓ and every
	// step's normaliser c_t.
	rng := rand.New(rand.NewPCG(17, 1))
	m2 := randomModel(rng, []int{3, 2, 2}, 2, 2, true)
	lp2 := newLogParams(m2)
	p2 := newParams(m2)
	var w fbWork
	for range 20 {
		s := randomSeq(rng, 3, 2, 1+rng.IntN(40))
		ll1, err := LogLikelihood(m2, []Sequence{s})
		ll2, _, ok := lp2.logForward(s)
		if (err == nil) != ok || (ok && math.Abs(ll1-ll2) > 1e-10*math.Max(1, math.Abs(ll1))) {
			t.Errorf("probability-space %v (%v), log-space %v (%v)", ll1, err, ll2, ok)
		}
		if _, _, ok := p2.forward(s, p2.pi, &w); !ok {
			continue
		}
		steps := 0
		lp2.logForwardSteps(s, func(t1 int, logC float64) {
			steps++
			if want := math.Log(w.scale[t1]); math.Abs(logC-want) > 1e-10*math.Max(1, math.Abs(want)) {
				t.Errorf("step %d: log c_t %v, probability space %v", t1, logC, want)
			}
		})
		if steps != s.Len()-1 {
			t.Errorf("%d steps reported for a sequence of %d", steps, s.Len())
		}
	}
}
