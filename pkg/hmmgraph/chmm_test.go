package hmmgraph

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// gridWalk returns numSeqs random walks of length steps on a w×h grid whose cells emit
// (x + 2y) mod K (aliased), with actions 0..3 = up, down, left, right (bumping into a wall
// stays in place).
func gridWalk(rng *rand.Rand, w, h, K, numSeqs, steps int) []chmm.Sequence {
	seqs := make([]chmm.Sequence, numSeqs)
	for s := range seqs {
		x, y := rng.IntN(w), rng.IntN(h)
		obs := []int{(x + 2*y) % K}
		var acts []int
		for range steps - 1 {
			a := rng.IntN(4)
			switch a {
			case 0:
				y = max(y-1, 0)
			case 1:
				y = min(y+1, h-1)
			case 2:
				x = max(x-1, 0)
			case 3:
				x = min(x+1, w-1)
			}
			acts = append(acts, a)
			obs = append(obs, (x+2*y)%K)
		}
		seqs[s] = chmm.Sequence{Obs: obs, Actions: acts}
	}
	return seqs
}

// TestMatchesChmmGradient: the graph's value and autodiff gradient of the hard pass equal
// pkg/chmm's plain-Go forward–backward Gradient on grid random walks (N = 21, 3 sequences of
// 200, 150 and 200 steps, so one is padded), for the loop variant in float64 and float32 and the
// unrolled variant in float64.
func TestMatchesChmmGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	layout := UniformLayout(4, 5) // N = 21
	m := chmm.New(layout.Clones, 4, rng)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] += rng.NormFloat64() // away from the near-uniform init
	}
	seqs := gridWalk(rng, 4, 4, 4, 3, 200)
	seqs[1].Obs, seqs[1].Actions = seqs[1].Obs[:150], seqs[1].Actions[:149]
	wantLL, wantPi, wantTheta, err := chmm.Gradient(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([][]int, len(seqs))
	acts := make([][]int, len(seqs))
	for i, s := range seqs {
		obs[i], acts[i] = s.Obs, s.Actions
	}
	for _, tc := range []struct {
		v       Variant
		dt      dtypes.DType
		llTol   float64 // relative
		gradTol float64 // absolute, gradients are O(10)
	}{
		{Loop, dtypes.Float64, 1e-12, 1e-9},
		{Loop, dtypes.Float32, 1e-6, 2e-5},
		{Unrolled, dtypes.Float64, 1e-12, 1e-9},
	} {
		e, err := NewGradExec(backend(t), layout, 4, tc.v, tc.dt)
		if err != nil {
			t.Fatal(err)
		}
		ll, gPi, gTheta, err := e.Sequences(m.PiLogits, m.ThetaLogits, obs, acts, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s: ℓ = %.10g (chmm %.10g), max |Δ∂π| = %.2g, max |Δ∂Θ| = %.2g, max |∂Θ| = %.3g", tc.v, tc.dt,
			ll, wantLL, maxAbsDiff(t, gPi, wantPi), maxAbsDiff(t, gTheta, wantTheta), maxAbs(wantTheta))
		if math.Abs(ll-wantLL) > tc.llTol*math.Abs(wantLL) {
			t.Errorf("%s %s: ℓ = %.12g, chmm %.12g", tc.v, tc.dt, ll, wantLL)
		}
		if d := maxAbsDiff(t, gPi, wantPi); d > tc.gradTol {
			t.Errorf("%s %s: ∂ℓ/∂π max |diff| = %g", tc.v, tc.dt, d)
		}
		if d := maxAbsDiff(t, gTheta, wantTheta); d > tc.gradTol {
			t.Errorf("%s %s: ∂ℓ/∂Θ max |diff| = %g", tc.v, tc.dt, d)
		}
	}
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// TestLongSequencesExact: over 10,000 steps (N = 21, one sequence padded from 6,001) the loop
// variant stays exact against pkg/chmm on the same logits (rounded to float32): float64 to
// rounding, float32 within 1e-4 nats in ℓ (GradExec sums ℓ in float64).
func TestLongSequencesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	layout := UniformLayout(4, 5)
	m := chmm.New(layout.Clones, 4, rng)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = float64(float32(m.ThetaLogits[i] + 2*rng.NormFloat64()))
	}
	for i := range m.PiLogits {
		m.PiLogits[i] = float64(float32(m.PiLogits[i]))
	}
	seqs := gridWalk(rng, 4, 4, 4, 2, 10000)
	seqs[1].Obs, seqs[1].Actions = seqs[1].Obs[:6001], seqs[1].Actions[:6000]
	wantLL, wantPi, wantTheta, err := chmm.Gradient(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	obs := [][]int{seqs[0].Obs, seqs[1].Obs}
	acts := [][]int{seqs[0].Actions, seqs[1].Actions}
	for _, tc := range []struct {
		dt      dtypes.DType
		llTol   float64 // nats
		gradTol float64 // relative to max |∂Θ|
	}{{dtypes.Float64, 1e-8, 1e-11}, {dtypes.Float32, 1e-4, 1e-5}} {
		e, err := NewGradExec(backend(t), layout, 4, Loop, tc.dt)
		if err != nil {
			t.Fatal(err)
		}
		ll, gPi, gTheta, err := e.Sequences(m.PiLogits, m.ThetaLogits, obs, acts, 0)
		if err != nil {
			t.Fatal(err)
		}
		scale := maxAbs(wantTheta)
		t.Logf("%s: ℓ = %.10g (chmm %.10g, diff %.2g nats), max |Δ∂π| = %.2g, max |Δ∂Θ| = %.2g (max |∂Θ| = %.3g)", tc.dt,
			ll, wantLL, ll-wantLL, maxAbsDiff(t, gPi, wantPi), maxAbsDiff(t, gTheta, wantTheta), scale)
		if math.Abs(ll-wantLL) > tc.llTol {
			t.Errorf("%s: ℓ = %.12g, chmm %.12g (diff %.3g nats > %g)", tc.dt, ll, wantLL, ll-wantLL, tc.llTol)
		}
		if d := maxAbsDiff(t, gPi, wantPi); d > tc.gradTol*scale {
			t.Errorf("%s: ∂ℓ/∂π max |diff| = %g", tc.dt, d)
		}
		if d := maxAbsDiff(t, gTheta, wantTheta); d > tc.gradTol*scale {
			t.Errorf("%s: ∂ℓ/∂Θ max |diff| = %g", tc.dt, d)
		}
	}
}
