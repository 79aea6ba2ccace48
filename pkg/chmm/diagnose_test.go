package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// alternator is a model of two tokens with one clone each that alternate under
// action 0 (exactly) and, under action 1, go from token 0 to either token with
// probability 1/2 and from token 1 back to token 0 (exactly); π is uniform over the
// two clones.
func alternator() *Model {
	m := New([]int{1, 1}, 2, nil)
	n := m.N() // 3: clone 0, clone 1, sink
	inf := math.Inf(-1)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = inf
	}
	set := func(a, i, j int, logit float64) { m.ThetaLogits[(a*n+i)*n+j] = logit }
	set(0, 0, 1, 0)
	set(0, 1, 0, 0)
	set(1, 0, 0, 0)
	set(1, 0, 1, 0)
	set(1, 1, 0, 0)
	set(0, 2, 2, 0) // the sink's rows
	set(1, 2, 2, 0)
	m.PiLogits = []float64{0, 0, inf}
	return m
}

// TestDiagnose checks the diagnosis against hand computations.
func TestDiagnose(t *testing.T) {
	m := alternator()
	// 0 -a0-> 1 -a0-> 0 -a1-> 1 -a1-> 0: p = ½ (π) · 1 · 1 · ½ · 1 = ¼ over 5 steps.
	train := []Sequence{{Obs: []int{0, 1, 0, 1, 0}, Actions: []int{0, 0, 1, 1}}}
	// 1 -a0-> 0 -a1-> 0: p = ½ · 1 · ½ = ¼ over 3 steps.
	held := []Sequence{{Obs: []int{1, 0, 0}, Actions: []int{0, 1}}}
	d, err := Diagnose(m, train, held, 1)
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12
	if math.Abs(d.TrainBits-2.0/5) > tol || math.Abs(d.HeldOutBits-2.0/3) > tol || d.HeldOutSteps != 3 || d.HeldOutZero || d.Steps != 5 {
		t.Errorf("bits: train %.15g (want 0.4), held-out %.15g (want 2/3) over %d steps", d.TrainBits, d.HeldOutBits, d.HeldOutSteps)
	}
	// Moves: a0 from 0, a0 from 1, a1 from 0 (split ½–½: not deterministic), a1 from 1.
	if math.Abs(d.Determinism-3.0/4) > tol {
		t.Errorf("determinism %g, want 3/4", d.Determinism)
	}
	if !slices.Equal(d.FullTokens, []int{0, 1}) || d.UsedClones != 2 || d.Clones != 2 {
		t.Errorf("full tokens %v, used %d of %d; want [0 1], 2 of 2", d.FullTokens, d.UsedClones, d.Clones)
	}
	// The path 0 1 0 1 0 (the sink last): 3 steps in state 0, 2 in state 1.
	if !slices.Equal(d.Visits, []int{3, 2, 0}) {
		t.Errorf("visits %v, want [3 2 0]", d.Visits)
	}
	// A held-out step the map forbids: 1 -a1-> 1.
	d, err = Diagnose(m, train, []Sequence{{Obs: []int{1, 1}, Actions: []int{1}}}, 1)
	if err != nil || !d.HeldOutZero {
		t.Errorf("impossible held-out walk: %v, zero %v", err, d != nil && d.HeldOutZero)
	}
	if v := d.Judge(ExactTokens); v.Resolved || !slices.Contains(v.Problems, ProblemData) || !strings.Contains(v.Text, "impossible") {
		t.Errorf("verdict on an impossible held-out walk: %+v", v)
	}
	// No held-out walk; an impossible training walk is an error.
	if d, err = Diagnose(m, train, nil, 1); err != nil || d.HeldOutSteps != 0 {
		t.Errorf("no held-out walk: %v, %+v", err, d)
	}
	if _, err := Diagnose(m, []Sequence{{Obs: []int{1, 1}, Actions: []int{1}}}, nil, 1); err == nil {
		t.Error("impossible training walk: no error")
	}
}

// TestJudge checks the verdict's rules on diagnoses measured in the verdict study
// (README, "Is the map resolved?").
func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     Diagnosis
		noisy bool
		want  []string // problems; nil: resolved
	}{
		{"recovered", Diagnosis{TrainBits: 0.0005, HeldOutBits: 0.0103, HeldOutSteps: 1000, Determinism: 1}, ExactTokens, nil},
		{"one clone per class", Diagnosis{TrainBits: 0.50, HeldOutBits: 0.49, HeldOutSteps: 1000, FullTokens: []int{0, 1, 2, 3}}, ExactTokens, []string{ProblemClones}},
		{"gradient plateau", Diagnosis{TrainBits: 0.0375, HeldOutBits: 0.0389, HeldOutSteps: 1000, FullTokens: []int{}}, ExactTokens, []string{ProblemFit}},
		{"600 steps", Diagnosis{TrainBits: 0.0067, HeldOutBits: 1.69, HeldOutSteps: 1000}, ExactTokens, []string{ProblemData}},
		{"600 steps, full", Diagnosis{TrainBits: 0.079, HeldOutBits: 1.51, HeldOutSteps: 1000, FullTokens: []int{0}}, ExactTokens, []string{ProblemClones, ProblemData}},
		{"no held-out walk", Diagnosis{TrainBits: 0.001}, ExactTokens, nil},
		{"localising (two_rooms, 10 walks)", Diagnosis{TrainBits: 0.0002, HeldOutBits: 0.0004, HeldOutSteps: 10000, Steps: 100000, Walks: 10, Surprises: 0.00003}, ExactTokens, nil},
		{"localising, short walks", Diagnosis{TrainBits: 0.002, HeldOutBits: 0.002, HeldOutSteps: 3000, Steps: 6000, Walks: 2, Surprises: 0.0015}, ExactTokens, nil},
		{"merged, cheap (tiled, gradient, F1 0.969)", Diagnosis{TrainBits: 0.0038, HeldOutBits: 0.0167, HeldOutSteps: 150000, Steps: 150000, Walks: 1, Surprises: 0.00125}, ExactTokens, []string{ProblemMerged}},
		{"pixels, recovered", Diagnosis{TrainBits: 0.39, HeldOutBits: 0.63, HeldOutSteps: 1000, Determinism: 0.788}, NoisyTokens, nil},
		{"pixels, frozen VQ-VAE", Diagnosis{TrainBits: 1.23, HeldOutBits: 1.28, HeldOutSteps: 1000, Determinism: 0.103}, NoisyTokens, []string{ProblemPredict}},
		{"pixels, recovered room", Diagnosis{TrainBits: 0.245, HeldOutBits: 0.418, HeldOutSteps: 10000, Determinism: 0.944, Steps: 40000, UsedClones: 53, Clones: 61}, NoisyTokens, nil},
		{"pixels, tiled by rote", Diagnosis{TrainBits: 0.151, HeldOutBits: 1.912, HeldOutSteps: 5000, Determinism: 0.926, Steps: 5000, UsedClones: 111, Clones: 170}, NoisyTokens, []string{ProblemData}},
		{"through C, merged (noisy room proxy, F1 0.845)", Diagnosis{TrainBits: 0.35, HeldOutBits: 0.34, HeldOutSteps: 4000, Determinism: 1, Steps: 36000, Walks: 4, UsedClones: 60, Clones: 139,
			Confused: true, Surprises: 0.0795, Misses: 0.0402, SurprisesAfterMiss: []int{1440, 86, 60, 43, 40, 52, 42, 1100}}, NoisyTokens, []string{ProblemMerged}},
		{"through C, resolved (noisy room proxy)", Diagnosis{TrainBits: 0.26, HeldOutBits: 0.26, HeldOutSteps: 4000, Determinism: 1, Steps: 36000, Walks: 4, UsedClones: 60, Clones: 161,
			Confused: true, Surprises: 0.0403, Misses: 0.0402, SurprisesAfterMiss: []int{1446, 1, 1, 0, 0, 0, 0, 2}}, NoisyTokens, nil},
		// big_room from MNIST, seed 1 (F1 1.000): misread on 7.55% of its steps, surprised on
		// 0.38 points more, nearly all within two steps of a miss.
		{"through C, resolved, misread often (big_room from MNIST)", Diagnosis{TrainBits: 0.402, HeldOutBits: 0.524, HeldOutSteps: 100000, Determinism: 0.997, Steps: 100000, Walks: 1,
			UsedClones: 120, Clones: 266, Confused: true, Surprises: 0.0793, Misses: 0.0755, SurprisesAfterMiss: []int{7547, 163, 50, 27, 17, 10, 10, 110}}, NoisyTokens, nil},
		{"hard tokens: surprises not read", Diagnosis{TrainBits: 0.24, HeldOutBits: 0.39, HeldOutSteps: 4000, Determinism: 0.9, Steps: 36000, UsedClones: 60, Clones: 317,
			Surprises: 0.0827, Misses: 0.0449}, NoisyTokens, nil},
		// Hard-token maps from MNIST (gradient finalisation), read through a fitted C.
		{"hard tokens, reread merged (three52, F1 0.889)", Diagnosis{TrainBits: 0.1266, HeldOutBits: 0.2191, HeldOutSteps: 10000, Determinism: 0.978, Steps: 40000, Walks: 4, UsedClones: 49, Clones: 52,
			Reread: &Diagnosis{Confused: true, Steps: 40000, Walks: 4, Surprises: 0.0358, Misses: 0.0133, SurprisesAfterMiss: []int{525, 45, 25, 25, 25, 26, 16, 744}}}, NoisyTokens, []string{ProblemMerged}},
		{"hard tokens, reread resolved (two_rooms, F1 1.000)", Diagnosis{TrainBits: 0.3416, HeldOutBits: 0.7129, HeldOutSteps: 10000, Determinism: 0.967, Steps: 100000, Walks: 10, UsedClones: 121, Clones: 148,
			Reread: &Diagnosis{Confused: true, Steps: 100000, Walks: 10, Surprises: 0.0500, Misses: 0.0328, SurprisesAfterMiss: []int{3252, 1223, 348, 91, 30, 11, 4, 37}}}, NoisyTokens, nil},
		{"pixels, rote and unpredictive", Diagnosis{TrainBits: 1.2, HeldOutBits: 2.5, HeldOutSteps: 5000, Determinism: 0.5, Steps: 5000, UsedClones: 111, Clones: 170}, NoisyTokens, []string{ProblemPredict, ProblemData}},
	} {
		v := tc.d.Judge(tc.noisy)
		if v.Resolved != (tc.want == nil) || !slices.Equal(v.Problems, tc.want) {
			t.Errorf("%s: resolved %v, problems %v; want %v", tc.name, v.Resolved, v.Problems, tc.want)
		}
		if v.Resolved != strings.HasPrefix(v.Text, "resolved") || (!v.Resolved && !strings.Contains(v.Text, "try ")) {
			t.Errorf("%s: text %q", tc.name, v.Text)
		}
	}
	// Learned by rote (tiled, gradient seed 3, 150,000 steps): twice the steps, a number.
	rote := Diagnosis{TrainBits: 0.0007, HeldOutBits: 0.0335, HeldOutSteps: 150000, Determinism: 1, Steps: 150000, Walks: 1, UsedClones: 283, Clones: 550}
	if v := rote.Judge(ExactTokens); !slices.Equal(v.Problems, []string{ProblemData}) || !strings.Contains(v.Text, "twice its 150000 training steps") {
		t.Errorf("learned by rote: problems %v, text %q; want data, twice its 150000 training steps", v.Problems, v.Text)
	}
	// A merged map whose trainer split past it (tiled from MNIST, seed 2: two rounds,
	// each costing more held out) is not told to split more.
	merged := Diagnosis{TrainBits: 0.297, HeldOutBits: 0.426, HeldOutSteps: 150000, Determinism: 0.998, Steps: 150000, Walks: 1, UsedClones: 116, Clones: 142,
		Confused: true, Surprises: 0.0423, Misses: 0.0299, SurprisesAfterMiss: []int{4477, 188, 50, 53, 41, 57, 53, 1421}}
	if v := merged.Judge(NoisyTokens); !strings.Contains(v.Text, "more clones (splits)") {
		t.Errorf("merged, no split past it: %q, want more clones advised", v.Text)
	}
	if v := merged.Judge(NoisyTokens); !strings.Contains(v.Text, "over 0.15% of the steps surprise the map more than 6 steps after") {
		t.Errorf("merged: %q, want the bar and the window named", v.Text)
	}
	merged.SplitsPast = 2
	if v := merged.Judge(NoisyTokens); !slices.Equal(v.Problems, []string{ProblemMerged}) || strings.Contains(v.Text, "more clones (splits)") ||
		!strings.Contains(v.Text, "another seed") || !strings.Contains(v.Text, "2 split round(s) past this map") {
		t.Errorf("merged, 2 split rounds past it: problems %v, text %q; want another seed advised and not more clones", v.Problems, v.Text)
	}
}

// DiagnoseConfused with C = I is Diagnose; through a noisy C a step the map forbids
// is a misread, with finite bits and a path that reads it as the other token.
func TestDiagnoseConfused(t *testing.T) {
	m := alternator()
	train := []Sequence{{Obs: []int{0, 1, 0, 1, 0}, Actions: []int{0, 0, 1, 1}}}
	held := []Sequence{{Obs: []int{1, 0, 0}, Actions: []int{0, 1}}}
	want, err := Diagnose(m, train, held, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DiagnoseConfused(m, train, held, [][]float64{{1, 0}, {0, 1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.TrainBits-want.TrainBits) > 1e-12 || math.Abs(got.HeldOutBits-want.HeldOutBits) > 1e-12 ||
		got.Determinism != want.Determinism || !slices.Equal(got.Visits, want.Visits) || got.UsedClones != want.UsedClones {
		t.Errorf("under I: %+v, want %+v", got, want)
	}
	noisy := [][]float64{{0.9, 0.1}, {0.1, 0.9}}
	forbid := []Sequence{{Obs: []int{1, 1}, Actions: []int{1}}}
	d, err := DiagnoseConfused(m, forbid, forbid, noisy, 1)
	if err != nil {
		t.Fatal(err)
	}
	lls, _ := ConfusedLogLikelihoods(m, forbid, noisy, 1)
	if d.HeldOutZero || !(d.TrainBits > 0) || math.Abs(d.TrainBits-(-lls[0]/2/math.Ln2)) > 1e-12 {
		t.Errorf("through C: train bits %v (ℓ %v), held-out zero %v", d.TrainBits, lls[0], d.HeldOutZero)
	}
	if d.Visits[0]+d.Visits[1] != 2 || d.Visits[0] == 0 {
		t.Errorf("visits %v: the path should read one of the two 1s as a 0", d.Visits)
	}
}

// TestMisses checks misses against hand counts, and Surprises against the forward
// pass worked by hand.
func TestMisses(t *testing.T) {
	// Two states of tokens 0 and 1, one action: state 0 predicts token 1, state 1
	// token 0. The path follows the tokens.
	trans := []float64{0, 1, 1, 0}
	walk := Sequence{Obs: []int{0, 1, 1, 0, 1, 0, 0}, Actions: []int{0, 0, 0, 0, 0, 0}}
	path := [][]int{{0, 1, 1, 0, 1, 0, 0}}
	misses := func(c [][]float64) float64 {
		det, pred := rowPredictions(trans, []int{0, 1}, 2, c)
		_, moves, _, missed := walkPaths(det, pred, 2, []Sequence{walk}, path)
		return float64(missed) / float64(moves)
	}
	// Moves 0→1 hit, 1→1 miss, 1→0 hit, 0→1 hit, 1→0 hit, 0→0 miss.
	if got := misses(nil); math.Abs(got-2.0/6) > 1e-12 {
		t.Errorf("hard: misses %g, want 1/3", got)
	}
	// Through C = [[.1 .9] [.9 .1]] each state's prediction reads as the other token:
	// miss, hit, miss, miss, miss, hit.
	if got := misses([][]float64{{0.1, 0.9}, {0.9, 0.1}}); math.Abs(got-4.0/6) > 1e-12 {
		t.Errorf("through C: misses %g, want 2/3", got)
	}
	// The alternator (½–½ after token 0 under action 1): 0 -a1-> 0 -a1-> 1 -a0-> 0.
	// p(o_2 | o_1) = ½ (not below ½: no surprise), p(o_3 | o_1..2) = ½, p(o_4) = 1.
	// Through C = [[.8 .2] [.2 .8]], with π uniform: p(o_1 = 0) = ½; the belief
	// after o_1 is (.8, .2), so p(o_2 = 1 | o_1 = 0) under action 0 (0→1, 1→0) is
	// .8·.8 + .2·.2 = .68 and p(o_2 = 0) = .32 < ½: one surprise of one step.
	m := alternator()
	_, got, err := forwardStats(m, []Sequence{{Obs: []int{0, 0, 1, 0}, Actions: []int{1, 1, 0}}}, nil, 1, nil)
	if err != nil || got != 0 {
		t.Errorf("hard: %d surprises (%v), want 0", got, err)
	}
	_, got, err = forwardStats(m, []Sequence{{Obs: []int{0, 0}, Actions: []int{0}}}, [][]float64{{0.8, 0.2}, {0.2, 0.8}}, 1, nil)
	if err != nil || got != 1 {
		t.Errorf("through C: %d surprises (%v), want 1", got, err)
	}
}

// TestSurprisesAfterMiss checks the histogram of surprised steps by steps since the
// path's last miss, and Unexplained, against hand counts.
func TestSurprisesAfterMiss(t *testing.T) {
	// TestMisses's two states: state 0 predicts token 1, state 1 token 0. The path
	// follows the tokens, so steps 2 (1→1) and 6 (0→0) are missed.
	_, pred := rowPredictions([]float64{0, 1, 1, 0}, []int{0, 1}, 2, nil)
	walk := Sequence{Obs: []int{0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}, Actions: make([]int, 11)}
	path := slices.Clone(walk.Obs)
	// Step 1 comes before any miss (the last bin); 2 and 6 are missed (0); 3 is 1
	// after 2, 5 is 3 after it; 9 and 11 are 3 and 5 after 6.
	got := afterMiss(pred, 2, []Sequence{walk}, [][]int{path}, [][]int{{1, 2, 3, 5, 6, 9, 11}})
	if want := []int{2, 1, 0, 2, 0, 1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("surprises after a miss %v, want %v", got, want)
	}
	// Unexplained: bins past NoisyAftermath, less LocaliseSurprises per walk, per step.
	// NoisyAftermath is the last bin but one: only the last bin counts.
	hist := make([]int, AfterMissBins)
	hist[0], hist[NoisyAftermath], hist[AfterMissBins-1] = 500, 40, 55
	d := Diagnosis{Steps: 10000, Walks: 2, SurprisesAfterMiss: hist}
	if got, want := d.Unexplained(), (55-2*LocaliseSurprises)/10000.0; NoisyAftermath != AfterMissBins-2 || math.Abs(got-want) > 1e-15 {
		t.Errorf("Unexplained %g, want %g", got, want)
	}
	d.Walks = 6
	if got := d.Unexplained(); got != 0 {
		t.Errorf("Unexplained with 6 walks %g, want 0 (localising explains them)", got)
	}
}

// ringModel is the deterministic map of the ring 0 1 2 3 0 4 5 6 (8 places, action 0
// forward, 1 back) with clones[k] clones per token, place q being state stateOf[q].
func ringModel(clones []int, stateOf []int) *Model {
	const P = 8
	m := New(clones, 2, nil)
	n := m.N()
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = math.Inf(-1)
	}
	for a := range 2 {
		m.ThetaLogits[(a*n+n-1)*n+n-1] = 0 // the sink
		for q := range P {
			next := (q + P + 1 - 2*a) % P
			m.ThetaLogits[(a*n+stateOf[q])*n+stateOf[next]] = 0
		}
	}
	return m
}

// TestSurprisesExact: exact tokens on the ring of TestSurprises (token 0 at places 0
// and 4). The true map is surprised by no step after the first; a map that merges
// places 0 and 4 into one clone, whose forward move leads to token 1 with 0.7 and
// token 4 with 0.3, is surprised by exactly the forward moves from place 4, and the
// verdict calls it merged.
func TestSurprisesExact(t *testing.T) {
	ringTok := []int{0, 1, 2, 3, 0, 4, 5, 6}
	const K, P = 7, 8
	rng := rand.New(rand.NewPCG(4, 8))
	walk := Sequence{Obs: make([]int, 20000), Actions: make([]int, 19999)}
	at, fromFour := 0, 0
	for t := range walk.Obs {
		walk.Obs[t] = ringTok[at]
		if t < len(walk.Actions) {
			a := rng.IntN(2) // 0: forward, 1: back
			walk.Actions[t] = a
			if at == 4 && a == 0 && t > 0 {
				fromFour++
			}
			at = (at + P + 1 - 2*a) % P
		}
	}
	truth := ringModel([]int{2, 1, 1, 1, 1, 1, 1}, []int{0, 2, 3, 4, 1, 5, 6, 7})
	merged := ringModel(UniformClones(K, 1), []int{0, 1, 2, 3, 0, 4, 5, 6})
	n := merged.N() // its clone 0 forward: token 1 with 0.7, token 4 with 0.3
	merged.ThetaLogits[(0*n+0)*n+1], merged.ThetaLogits[(0*n+0)*n+4] = math.Log(0.7), math.Log(0.3)
	dt, err := Diagnose(truth, []Sequence{walk}, []Sequence{walk}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := Diagnose(merged, []Sequence{walk}, []Sequence{walk}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(fromFour) / float64(len(walk.Obs)-1)
	t.Logf("true map: surprises %.5f; merged map: surprises %.5f (forward moves from place 4: %.5f)", dt.Surprises, dm.Surprises, want)
	if dt.Surprises > 1.0/float64(len(walk.Obs)) {
		t.Errorf("true map: surprises %.5f, want at most one step", dt.Surprises)
	}
	if math.Abs(dm.Surprises-want) > 1e-9 {
		t.Errorf("merged map: surprises %.5f, want %.5f (every forward move from place 4)", dm.Surprises, want)
	}
	if v := dt.Judge(ExactTokens); !v.Resolved {
		t.Errorf("true map: %+v", v)
	}
	if v := dm.Judge(ExactTokens); !slices.Contains(v.Problems, ProblemMerged) {
		t.Errorf("merged map: %+v, want merged", v)
	}
	// Every surprise follows a step in the merged clone, and no other state.
	mask, nm, err := SurprisedStates(merged, []Sequence{walk}, 1)
	if err != nil || nm != 1 || !mask[0] {
		t.Errorf("merged map: surprised states %v (%d, %v), want state 0 alone", mask, nm, err)
	}
	if _, nt, err := SurprisedStates(truth, []Sequence{walk}, 1); err != nil || nt > 1 {
		t.Errorf("true map: %d surprised states (%v), want at most one", nt, err)
	}
}

// noisyRingWalk is a walk of steps steps on the ring of 8 places of TestSurprises
// (tokens 0, 1, 2, 3, 0, 4, 5, 6; action 0 forward, 1 back, at random), each token
// misread with probability p as one of the 6 others at random (rand.NewPCG(seed, 8)).
func noisyRingWalk(seed uint64, steps int, p float64) Sequence {
	ringTok := []int{0, 1, 2, 3, 0, 4, 5, 6}
	const K, P = 7, 8
	rng := rand.New(rand.NewPCG(seed, 8))
	walk := Sequence{Obs: make([]int, steps), Actions: make([]int, steps-1)}
	at := 0
	for t := range walk.Obs {
		o := ringTok[at]
		if rng.Float64() < p {
			o = (o + 1 + rng.IntN(K-1)) % K
		}
		walk.Obs[t] = o
		if t < len(walk.Actions) {
			a := rng.IntN(2)
			walk.Actions[t] = a
			at = (at + P + 1 - 2*a) % P
		}
	}
	return walk
}

// uniformMisreads is the k×k confusion matrix of tokens misread with probability p,
// as any other token alike.
func uniformMisreads(k int, p float64) [][]float64 {
	c := make([][]float64, k)
	for i := range c {
		c[i] = make([]float64, k)
		for o := range c[i] {
			c[i][o] = p / float64(k-1)
		}
		c[i][i] = 1 - p
	}
	return c
}

// TestSurprises: on a ring of 8 places where token 0 is at places 0 and 4, with 5%
// of tokens misread at random, the true map's Viterbi path misses the misreads and
// its forward pass is surprised by them alone; the map that merges the two places
// into one clone is surprised by far more steps than its path misses.
func TestSurprises(t *testing.T) {
	const K, p = 7, 0.05
	walk := noisyRingWalk(3, 50000, p)
	c := uniformMisreads(K, p)
	truth := ringModel([]int{2, 1, 1, 1, 1, 1, 1}, []int{0, 2, 3, 4, 1, 5, 6, 7})
	merged := ringModel(UniformClones(K, 1), []int{0, 1, 2, 3, 0, 4, 5, 6})
	dt, err := DiagnoseConfused(truth, []Sequence{walk}, nil, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := DiagnoseConfused(merged, []Sequence{walk}, nil, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("true map: surprises %.4f, misses %.4f; merged map: surprises %.4f, misses %.4f", dt.Surprises, dt.Misses, dm.Surprises, dm.Misses)
	if math.Abs(dt.Misses-p) > 0.005 || math.Abs(dt.Surprises-dt.Misses) > 0.001 {
		t.Errorf("true map: surprises %.4f, misses %.4f; want both the misread rate %.2f", dt.Surprises, dt.Misses, p)
	}
	if dm.Surprises-dm.Misses < 0.05 {
		t.Errorf("merged map: surprises %.4f, misses %.4f; want far more surprises", dm.Surprises, dm.Misses)
	}
	t.Logf("surprises by steps after the last miss: true map %v (unexplained %.4f), merged map %v (%.4f)",
		dt.SurprisesAfterMiss, dt.Unexplained(), dm.SurprisesAfterMiss, dm.Unexplained())
	if !dt.Judge(NoisyTokens).Resolved || dm.Judge(NoisyTokens).Resolved || !slices.Contains(dm.Judge(NoisyTokens).Problems, ProblemMerged) {
		t.Errorf("verdicts: true map %+v, merged map %+v", dt.Judge(NoisyTokens), dm.Judge(NoisyTokens))
	}
}

// TestLateSurprises: the surprised steps beyond LocaliseSurprises per walk, as a share
// of the training steps, by hand.
func TestLateSurprises(t *testing.T) {
	for _, c := range []struct {
		d    Diagnosis
		want float64
	}{
		{Diagnosis{Steps: 10000, Walks: 2, Surprises: 50.0 / 9998}, (50 - 2*LocaliseSurprises) / 10000.0},
		{Diagnosis{Steps: 10000, Walks: 2, Surprises: 15.0 / 9998}, 0},
		{Diagnosis{Steps: 150000, Walks: 1, Surprises: 188.0 / 149999}, (188 - LocaliseSurprises) / 150000.0},
		{Diagnosis{}, 0},
	} {
		if got := c.d.LateSurprises(); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%+v: LateSurprises %g, want %g", c.d, got, c.want)
		}
	}
}

// softRing is ringModel as a map of hard tokens that absorbed misreads into its
// transitions: each move keeps 1−spill on its place's next state and spreads spill
// evenly over every other state but the sink.
func softRing(clones []int, stateOf []int, spill float64) *Model {
	m := ringModel(clones, stateOf)
	n := m.N()
	for r := range 2 * n {
		if r%n == n-1 {
			continue
		}
		row := m.ThetaLogits[r*n : (r+1)*n]
		for j := range n - 1 {
			if row[j] == 0 {
				row[j] = math.Log(1 - spill)
			} else {
				row[j] = math.Log(spill / float64(n-2))
			}
		}
	}
	return m
}

// TestRereadHardTokens: on the ring of TestSurprises (token 0 at places 0 and 4, 5% of
// tokens misread at random), maps of hard tokens that put the misreads into their
// transitions are judged through a confusion matrix fitted to them (Reread). The true
// map's fitted C reads about the misread rate and leaves no surprise unexplained; the
// map that merges places 0 and 4 is called merged, and without Reread neither is.
func TestRereadHardTokens(t *testing.T) {
	const K, p = 7, 0.05
	walk := noisyRingWalk(5, 50000, p)
	start := uniformMisreads(K, 0.1)
	for _, tc := range []struct {
		name   string
		m      *Model
		merged bool
	}{
		{"true map", softRing([]int{2, 1, 1, 1, 1, 1, 1}, []int{0, 2, 3, 4, 1, 5, 6, 7}, p), false},
		{"merged map", softRing(UniformClones(K, 1), []int{0, 1, 2, 3, 0, 4, 5, 6}, p), true},
	} {
		d, err := Diagnose(tc.m, []Sequence{walk}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v := d.Judge(NoisyTokens); !v.Resolved {
			t.Errorf("%s without Reread: %+v, want resolved (hard tokens have no merged test)", tc.name, v)
		}
		c, _, err := FitConfusion(tc.m, []Sequence{walk}, start, FitConfusionConfig{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Reread, err = DiagnoseConfused(tc.m, []Sequence{walk}, nil, c, 1); err != nil {
			t.Fatal(err)
		}
		r := d.Reread
		t.Logf("%s: fitted C[1][1] %.4f; reread surprises %.4f, misses %.4f, by steps after a miss %v, unexplained %.5f",
			tc.name, c[1][1], r.Surprises, r.Misses, r.SurprisesAfterMiss, r.Unexplained())
		if !tc.merged && math.Abs(c[1][1]-(1-p)) > 0.01 {
			t.Errorf("%s: fitted C[1][1] = %.4f, want about %.2f", tc.name, c[1][1], 1-p)
		}
		v := d.Judge(NoisyTokens)
		if got := slices.Contains(v.Problems, ProblemMerged); got != tc.merged || v.Resolved == tc.merged {
			t.Errorf("%s: %+v, want merged %v", tc.name, v, tc.merged)
		}
		if tc.merged && !strings.Contains(v.Text, "the EM finalisation through a learned confusion matrix") {
			t.Errorf("%s: %q, want the EM finalisation advised", tc.name, v.Text)
		}
		if !strings.Contains(v.Text, "read through a fitted confusion matrix") {
			t.Errorf("%s: %q, want the reread's numbers", tc.name, v.Text)
		}
	}
}
