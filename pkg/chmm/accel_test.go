package chmm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// GainWatch by hand: window 4, gain 0.1 per E-step.
func TestGainWatch(t *testing.T) {
	w := newGainWatch(10)
	steps := []struct {
		obj    float64
		it     int
		gained int
		stop   bool
	}{
		{0, 10, 10, false},    // the first check sets the objective
		{1, 11, 11, false},    // +1 per E-step
		{1.05, 12, 11, false}, // +0.05
		{1.3, 15, 11, true},   // +0.25 over 3 E-steps (0.083 each); 15 − 11 ≥ 4
		{1.7, 17, 17, false},  // +0.2 per E-step
		{1.8, 20, 17, false},  // 0.033 per E-step; 20 − 17 < 4
		{1.8, 21, 17, true},
	}
	for _, c := range steps {
		stop := w.check(c.obj, c.it, 4, 0.1)
		if stop != c.stop || w.Gained != c.gained {
			t.Errorf("iteration %d: gained at %d, stop %v; want %d, %v", c.it, w.Gained, stop, c.gained, c.stop)
		}
	}
	w.reset(30)
	if w.From != 30 || w.Gained != 30 || !math.IsNaN(w.Obj) || w.check(5, 33, 4, 0.1) || !w.check(5, 34, 4, 0.1) {
		t.Errorf("after a reset at 30: %+v", *w)
	}
}

// SQUAREM's cycles: EM's penalised objective (computed here from LogLikelihood, an
// independent pass) never falls from one cycle's start to the next, some jumps beyond
// plain EM's step are kept, and the schedule ends where plain EM does.
func TestAccelMonotone(t *testing.T) {
	_, seqs := walkData(41, twoRooms, 2, 3000)
	const pc = 2e-3
	start := New(UniformClones(10, 3), 4, rand.New(rand.NewPCG(41, 2)))
	var starts []float64
	jumps := 0
	m := start.Clone()
	h, err := TrainEM(m, seqs, EMConfig{MaxIters: 2000, Pseudocount: pc, FixedPi: true, Workers: 1, Accelerate: true,
		Save: func(s *EMState) error {
			if s.Accel.Phase == 0 { // the next E-step starts a cycle
				starts = append(starts, penalised(t, s.Model, seqs, pc))
			}
			if s.Accel.Phase == 2 && s.Accel.A > 1 {
				jumps++
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(starts); i++ {
		if starts[i] < starts[i-1]-1e-9*math.Abs(starts[i-1]) {
			t.Errorf("cycle %d: penalised objective fell from %.12g to %.12g", i, starts[i-1], starts[i])
		}
	}
	plain := start.Clone()
	hp, err := TrainEM(plain, seqs, EMConfig{MaxIters: 2000, Pseudocount: pc, FixedPi: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	llA, _ := LogLikelihood(m, seqs)
	llP, _ := LogLikelihood(plain, seqs)
	steps := float64(2 * 3000)
	t.Logf("SQUAREM: %d E-steps (%d jumps), ℓ/T %.8f; plain EM: %d E-steps, ℓ/T %.8f", len(h.LogLik), jumps, llA/steps, len(hp.LogLik), llP/steps)
	if jumps < 5 || h.Stop != "converged" || hp.Stop != "converged" || math.Abs(llA-llP)/steps > 1e-6 || len(h.LogLik) >= len(hp.LogLik) {
		t.Errorf("SQUAREM: %d jumps, stop %q, ℓ/T %.8f after %d E-steps; plain EM: stop %q, ℓ/T %.8f after %d",
			jumps, h.Stop, llA/steps, len(h.LogLik), hp.Stop, llP/steps, len(hp.LogLik))
	}
}

// placeLabels maps every step's decoded state to the place it is decoded at most
// often (the decoded map read against the walk's places).
func placeLabels(states, places []int) []int {
	n := map[[2]int]int{}
	for t, s := range states {
		n[[2]int{s, places[t]}]++
	}
	best := map[int][2]int{} // state -> (place, count)
	for k, c := range n {
		if b, ok := best[k[0]]; !ok || c > b[1] || c == b[1] && k[1] < b[0] {
			best[k[0]] = [2]int{k[1], c}
		}
	}
	out := make([]int, len(states))
	for t, s := range states {
		out[t] = best[s][0]
	}
	return out
}

// The new schedule for one long walk (Segments, Accelerate, StopGain, the
// finalisation's Tol of −1) against plain EM run until ℓ/T stops rising (Tol 0), from
// the same start on two_rooms walks of 20,000 steps, on hard tokens and on tokens
// misread 4 % of the time through a learned confusion matrix: the converged ℓ/T agree
// within 2e-6 and the decoded maps (each state read as the place it is decoded at most)
// agree on at least 99.9 % of the steps, in a fraction of plain EM's E-steps.
func TestFastEMLikeEM(t *testing.T) {
	g := parseGrid(twoRooms)
	for _, c := range []struct {
		seed    uint64
		confuse bool
	}{{5, false}, {6, false}, {7, false}, {8, true}, {9, true}} {
		rng := rand.New(rand.NewPCG(c.seed, 1))
		seq, places := g.walk(rng, 20000)
		var conf [][]float64
		if c.confuse {
			conf = make([][]float64, 10)
			for k := range conf {
				conf[k] = make([]float64, 10)
				conf[k][k], conf[k][(k+1)%10], conf[k][(k+4)%10] = 0.96, 0.02, 0.02
			}
			for i, o := range seq.Obs {
				if r := rng.Float64(); r < 0.02 {
					seq.Obs[i] = (o + 1) % 10
				} else if r < 0.04 {
					seq.Obs[i] = (o + 4) % 10
				}
			}
		}
		seqs := []Sequence{seq}
		base := EMConfig{MaxIters: 5000, Pseudocount: 2e-3, FixedPi: true, Workers: 2, Confusion: conf,
			LearnConfusion: conf != nil, ConfusionBeam: 1e-4}
		fast := base
		fast.Tol, fast.Segments, fast.Accelerate, fast.StopGain = -1, 4, true, DefaultStopGain
		var lls [2]float64
		var labels [2][]int
		var steps [2]int
		for i, cfg := range []EMConfig{base, fast} {
			m := New(UniformClones(10, 3), 4, rand.New(rand.NewPCG(c.seed, 2)))
			h, err := TrainEM(m, seqs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if h.Stop != "converged" {
				t.Fatalf("seed %d, config %d: stop %q", c.seed, i, h.Stop)
			}
			steps[i] = len(h.LogLik)
			var states []int
			if conf == nil {
				lls[i], err = LogLikelihood(m, seqs)
				if err == nil {
					states, _, err = Viterbi(m, seq)
				}
				// The last E-step's ℓ, from the carried messages, is the exact pass's.
				if d := math.Abs(h.LogLik[len(h.LogLik)-1] - lls[i]/float64(len(seq.Obs))); i == 1 && d > 1e-9 {
					t.Errorf("seed %d: the segments' ℓ/T %.12f, the exact pass's %.12f", c.seed, h.LogLik[len(h.LogLik)-1], lls[i]/float64(len(seq.Obs)))
				}
			} else {
				var l []float64
				if l, err = ConfusedLogLikelihoods(m, seqs, h.Confusion, 1); err == nil {
					lls[i] = l[0]
					states, _, err = Decode(m, Confused{Tokens: seq.Obs, C: h.Confusion}, seq.Actions)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			lls[i] /= float64(len(seq.Obs))
			labels[i] = placeLabels(states, places)
		}
		same := 0
		for t := range labels[0] {
			if labels[0][t] == labels[1][t] {
				same++
			}
		}
		agree := float64(same) / float64(len(labels[0]))
		t.Logf("seed %d, confusion %v: plain EM ℓ/T %.8f in %d E-steps, new %.8f in %d; maps agree on %.4f of the steps",
			c.seed, c.confuse, lls[0], steps[0], lls[1], steps[1], agree)
		if math.Abs(lls[0]-lls[1]) > 2e-6 || agree < 0.999 || steps[1] >= steps[0] {
			t.Errorf("seed %d, confusion %v: ℓ/T %.8f vs plain EM's %.8f, maps agree on %.4f, %d E-steps vs %d",
				c.seed, c.confuse, lls[1], lls[0], agree, steps[1], steps[0])
		}
	}
}
