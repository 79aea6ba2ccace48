package chmm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// GainWatch's average by hand: window 4 (d = 3/4), objectives 0, 1, 1.5 (one E-step
// apart), then 1.6 three E-steps later.
func TestGainWatch(t *testing.T) {
	w := newGainWatch(10)
	for _, c := range []struct {
		obj  float64
		it   int
		avg  float64 // NaN: none yet
		stop bool    // with gain 0.2
	}{
		{0, 10, math.NaN(), false},
		{1, 11, 1, false},                                   // the first gain
		{1.5, 12, 0.75*1 + 0.25*0.5, false},                 // 0.875
		{1.6, 15, 0.421875*0.875 + 0.578125*(0.1/3), false}, // d³ = 0.421875: 0.388...
	} {
		stop := w.check(c.obj, c.it, 4, 0.2)
		if stop != c.stop || !(math.Abs(w.Avg-c.avg) < 1e-15 || math.IsNaN(w.Avg) && math.IsNaN(c.avg)) {
			t.Errorf("iteration %d: average %v, stop %v; want %v, %v", c.it, w.Avg, stop, c.avg, c.stop)
		}
	}
	// Below the gain, but only a window after From.
	w = newGainWatch(0)
	for it, want := range []bool{false, false, false, false, true} {
		if got := w.check(1e-3*float64(it), it, 4, 0.01); got != want {
			t.Errorf("flat run, iteration %d: stop %v, want %v", it, got, want)
		}
	}
	w.reset(4)
	if w.From != 4 || !math.IsNaN(w.Avg) || !math.IsNaN(w.Obj) {
		t.Errorf("reset: %+v", *w)
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
