package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// TestForRanges: every unit is handed to exactly one goroutine, in contiguous
// ranges, below and above denseMin.
func TestForRanges(t *testing.T) {
	for _, c := range []struct{ units, size, workers int }{
		{0, 1, 3}, {1, 1, 3}, {7, 1, 3}, {denseMin - 1, 1, 4}, {denseMin, 1, 4}, {3 * denseMin, 1, 3},
		{700, 200, 5}, {3, denseMin, 8}, {1000, 100, 1},
	} {
		seen := make([]int32, c.units)
		var calls atomic.Int32
		forRanges(c.units, c.size, c.workers, func(lo, hi int) {
			calls.Add(1)
			if lo > hi || lo < 0 || hi > c.units {
				t.Errorf("%+v: range [%d, %d)", c, lo, hi)
				return
			}
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&seen[i], 1)
			}
		})
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("%+v: unit %d done %d times", c, i, n)
			}
		}
		wantCalls := int32(min(c.workers, max(c.units, 1)))
		if c.units*c.size < denseMin || c.workers == 1 {
			wantCalls = 1
		}
		if calls.Load() != wantCalls {
			t.Errorf("%+v: %d calls, want %d", c, calls.Load(), wantCalls)
		}
	}
}

// TestDensePassesAnyWorkers: the dense passes on several goroutines give, bit for
// bit, what a plain serial loop of the same arithmetic gives: the softmax of Θ, the
// gradient, the entropy term with its gradient, Adam's step, EM's M-step, and the
// summed counts.
func TestDensePassesAnyWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := New(UniformClones(10, 15), 4, rng) // N = 151: A·N·N = 91,204 ≥ denseMin
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = 3 * rng.NormFloat64()
		if rng.IntN(50) == 0 {
			m.ThetaLogits[i] = math.Inf(-1)
		}
	}
	n := m.N()
	if len(m.ThetaLogits) < denseMin {
		t.Fatalf("%d entries: under denseMin, nothing would run in parallel", len(m.ThetaLogits))
	}
	// The serial reference, written out here.
	wantT := make([]float64, len(m.ThetaLogits))
	for r := 0; r < len(wantT); r += n {
		x, dst := m.ThetaLogits[r:r+n], wantT[r:r+n]
		mx := math.Inf(-1)
		for _, v := range x {
			mx = max(mx, v)
		}
		var z float64
		for j, v := range x {
			dst[j] = math.Exp(v - mx)
			z += dst[j]
		}
		inv := 1 / z
		for j := range dst {
			dst[j] *= inv
		}
	}
	counts := make([]float64, len(wantT))
	for i := range counts {
		if rng.IntN(3) == 0 {
			counts[i] = 100 * rng.Float64()
		}
	}
	for r := 0; r < len(counts); r += 7 * n { // rows never left
		clear(counts[r : r+n])
	}
	const steps, eta = 5000.0, 0.03
	wantG := make([]float64, len(wantT))
	var wantH float64
	for r := 0; r < len(wantT); r += n {
		var tot float64
		for _, v := range counts[r : r+n] {
			tot += v
		}
		if tot == 0 {
			continue
		}
		for j, tr := range wantT[r : r+n] {
			wantG[r+j] = counts[r+j] - tot*tr
		}
		var h float64
		for _, tr := range wantT[r : r+n] {
			if tr > 0 {
				h -= tr * math.Log(tr)
			}
		}
		wantH += tot / steps * h
		for j, tr := range wantT[r : r+n] {
			if tr > 0 {
				wantG[r+j] += eta * tot * tr * (math.Log(tr) + h)
			}
		}
	}
	wantX := slices.Clone(m.ThetaLogits)
	wm, wv := make([]float64, len(wantX)), make([]float64, len(wantX))
	b1, b2 := 0.9, 0.999
	c1, c2 := 1/(1-b1), 1/(1-b2)
	for i := range wantX {
		g := wantG[i] * (-1 / steps)
		wm[i] = b1*0 + (1-b1)*g
		wv[i] = b2*0 + (1-b2)*g*g
		wantX[i] -= 0.1 * (wm[i] * c1) / (math.Sqrt(wv[i]*c2) + 1e-8)
	}

	// EM's M-step with a pseudocount: the sink's column at -Inf, rows never left kept.
	const pc = 2e-3
	real := n - 1
	wantM := slices.Clone(m.ThetaLogits)
	for r := 0; r < len(wantM); r += n {
		tot := pc * float64(real)
		for _, v := range counts[r : r+real] {
			tot += v
		}
		if !(tot > 0) {
			continue
		}
		for j, v := range counts[r : r+real] {
			wantM[r+j] = math.Log((v + pc) / tot)
		}
		wantM[r+real] = math.Inf(-1)
	}

	for _, workers := range []int{1, 2, 3, 8} {
		em := m.Clone()
		mstep(em, &accum{counts: counts}, pc, false, workers)
		if !slices.Equal(em.ThetaLogits, wantM) {
			t.Fatalf("workers %d: the M-step differs from the serial one", workers)
		}
		p := newParamsWorkers(m, workers)
		if !slices.Equal(p.trans, wantT) {
			t.Fatalf("workers %d: T differs from the serial softmax", workers)
		}
		acc := &accum{counts: counts, gamma1: make([]float64, n), seqs: 1}
		g := make([]float64, len(wantT))
		p.gradient(acc, make([]float64, n), g)
		h := entropyGrad(p, counts, steps, eta, g)
		if h != wantH {
			t.Errorf("workers %d: entropy %v, want %v", workers, h, wantH)
		}
		if !slices.Equal(g, wantG) {
			t.Fatalf("workers %d: gradient differs from the serial one", workers)
		}
		x := slices.Clone(m.ThetaLogits)
		a := newAdam(len(x), GradConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Workers: workers})
		a.step(x, g, -1/steps, 0.1)
		for i := range x {
			if x[i] != wantX[i] && !(math.IsInf(x[i], -1) && math.IsInf(wantX[i], -1)) {
				t.Fatalf("workers %d: Adam's step at %d: %v, want %v", workers, i, x[i], wantX[i])
			}
		}

		accs := make([]*accum, workers)
		want := make([]float64, len(counts))
		for w := range accs {
			accs[w] = &accum{counts: make([]float64, len(counts))}
			for i := range counts {
				accs[w].counts[i] = rng.Float64()
			}
		}
		for w := range accs {
			for i, v := range accs[w].counts {
				if w == 0 {
					want[i] = v
				} else {
					want[i] += v
				}
			}
		}
		if sumAccums(accs) != accs[0] || !slices.Equal(accs[0].counts, want) {
			t.Fatalf("workers %d: summed counts differ from the sum in worker order", workers)
		}
		resetAccums(accs)
		for w := range accs {
			if slices.ContainsFunc(accs[w].counts, func(v float64) bool { return v != 0 }) {
				t.Fatalf("workers %d: counts of worker %d not cleared", workers, w)
			}
		}
	}
}

// TestTrainAnyDenseWorkers: on one walk too short to split across goroutines, the
// E-step runs on one goroutine whatever Workers is, so only the dense passes differ
// between Workers 1 and 3, and a gradient or EM training must be the same to the last
// bit: the parameters and every iteration's ℓ/T (and entropy).
func TestTrainAnyDenseWorkers(t *testing.T) {
	_, seqs := walkData(11, twoRooms, 1, minSplitLen-1)
	for _, trainer := range []string{"gradient", "em"} {
		run := func(workers int) (*Model, *History) {
			m := New(UniformClones(10, 15), 4, rand.New(rand.NewPCG(11, 2)))
			var h *History
			var err error
			if trainer == "gradient" {
				h, err = TrainGradient(m, seqs, GradConfig{Iters: 30, EntropyWeight: 0.01, Workers: workers})
			} else {
				h, err = TrainEM(m, seqs, EMConfig{MaxIters: 20, Pseudocount: 2e-3, ViterbiIters: 5, Workers: workers})
			}
			if err != nil {
				t.Fatal(err)
			}
			return m, h
		}
		m1, h1 := run(1)
		m3, h3 := run(3)
		if !slices.Equal(m1.ThetaLogits, m3.ThetaLogits) || !slices.Equal(m1.PiLogits, m3.PiLogits) {
			t.Fatalf("%s: the parameters differ between 1 and 3 workers", trainer)
		}
		if !slices.Equal(h1.LogLik, h3.LogLik) || len(h1.LogLik) < 20 {
			t.Fatalf("%s: the histories differ between 1 and 3 workers, or are short:\n%v\n%v", trainer, h1.LogLik, h3.LogLik)
		}
		if trainer == "gradient" && !slices.Equal(h1.Entropy, h3.Entropy) {
			t.Fatalf("gradient: the entropies differ between 1 and 3 workers")
		}
	}
}
