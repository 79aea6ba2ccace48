package chmm

import (
	"math"
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
		{"pixels, recovered", Diagnosis{TrainBits: 0.39, HeldOutBits: 0.63, HeldOutSteps: 1000, Determinism: 0.788}, NoisyTokens, nil},
		{"pixels, frozen VQ-VAE", Diagnosis{TrainBits: 1.23, HeldOutBits: 1.28, HeldOutSteps: 1000, Determinism: 0.103}, NoisyTokens, []string{ProblemPredict}},
		{"pixels, recovered room", Diagnosis{TrainBits: 0.245, HeldOutBits: 0.418, HeldOutSteps: 10000, Determinism: 0.944, Steps: 40000, UsedClones: 53, Clones: 61}, NoisyTokens, nil},
		{"pixels, tiled by rote", Diagnosis{TrainBits: 0.151, HeldOutBits: 1.912, HeldOutSteps: 5000, Determinism: 0.926, Steps: 5000, UsedClones: 111, Clones: 170}, NoisyTokens, []string{ProblemData}},
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
