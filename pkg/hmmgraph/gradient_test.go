package hmmgraph

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestGradientFiniteDifferences: ∂(Σ_b w_b ℓ_b)/∂(π, Θ, log ρ) of both variants (float64) equals
// central finite differences of the brute-force enumeration. Weights differ per sequence, so a
// gradient summed over the batch instead of per sequence would fail. Entries of log ρ that are
// -Inf (hard) or at padded steps (NaN) must get a gradient of exactly 0.
func TestGradientFiniteDifferences(t *testing.T) {
	const h = 1e-5
	weights := []float64{1, 0.37}
	for _, tc := range []struct {
		name    string
		lengths []int
		T       int
		hard    bool
	}{
		{"soft", []int{4, 3}, 4, false},
		{"hard", []int{4, 2}, 4, true},
		{"soft length 1", []int{3, 1}, 3, false},
	} {
		rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
		p := randomProblem(rng, tinyLayout, 2, tc.lengths, tc.T, tc.hard)
		obj := func() float64 { return p.bruteObjective(weights) }
		wantPi := make([]float64, len(p.pi))
		for i := range p.pi {
			wantPi[i] = centralDiff(p.pi, i, h, obj)
		}
		wantTheta := make([]float64, len(p.theta))
		for i := range p.theta {
			wantTheta[i] = centralDiff(p.theta, i, h, obj)
		}
		K := p.layout.K()
		for _, v := range []Variant{Unrolled, Loop} {
			r := p.run(t, v, dtypes.Float64, weights)
			if hasNaN(r.gPi, r.gTheta, r.gRho) {
				t.Fatalf("%s %s: NaN/Inf in gradients", tc.name, v)
			}
			if d := maxAbsDiff(t, r.gPi, wantPi); d > 1e-8 {
				t.Errorf("%s %s: ∂/∂π max |diff| = %g\n got %v\nwant %v", tc.name, v, d, r.gPi, wantPi)
			}
			if d := maxAbsDiff(t, r.gTheta, wantTheta); d > 1e-8 {
				t.Errorf("%s %s: ∂/∂Θ max |diff| = %g", tc.name, v, d)
			}
			for b := range p.B() {
				for s := range p.T() {
					for k := range K {
						got := r.gRho[(b*p.T()+s)*K+k]
						x := p.logRho[b][s]
						var want float64
						if s < p.lengths[b] && !math.IsInf(x[k], -1) {
							want = centralDiff(x, k, h, obj)
						}
						if math.Abs(got-want) > 1e-8 {
							t.Errorf("%s %s: ∂/∂logρ[%d,%d,%d] = %g, want %g", tc.name, v, b, s, k, got, want)
						}
					}
				}
			}
		}
	}
}

// TestHardEmissionGradientIsOne: with hard tokens, ∂ℓ_b/∂logρ_t(o_t) = Σ_{j: ω(j)=o_t} γ_t(j) = 1
// at every real step (γ sums to one over the clones of the observed token) and 0 elsewhere.
func TestHardEmissionGradientIsOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	layout := Layout{Clones: []int{3, 2, 4}}
	p := randomProblem(rng, layout, 3, []int{12, 7, 1}, 12, true)
	K := layout.K()
	for _, v := range []Variant{Unrolled, Loop} {
		r := p.run(t, v, dtypes.Float64, []float64{1, 1, 1})
		for b := range p.B() {
			for s := range p.T() {
				for k := range K {
					want := 0.0
					if s < p.lengths[b] && p.logRho[b][s][k] == 0 {
						want = 1
					}
					if got := r.gRho[(b*p.T()+s)*K+k]; math.Abs(got-want) > 1e-12 {
						t.Errorf("%s: ∂ℓ/∂logρ[%d,%d,%d] = %g, want %g", v, b, s, k, got, want)
					}
				}
			}
		}
	}
}

// TestLoopMatchesUnrolled: the loop variant's surrogate gradient equals plain autodiff through
// the unrolled recursion, on a larger random soft problem with padding, in float64 and float32.
func TestLoopMatchesUnrolled(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	layout := Layout{Clones: []int{3, 1, 4, 2}}
	p := randomProblem(rng, layout, 3, []int{30, 17, 30}, 30, false)
	weights := []float64{0.5, 2, -1}
	for _, tc := range []struct {
		dt  dtypes.DType
		tol float64
	}{{dtypes.Float64, 1e-10}, {dtypes.Float32, 2e-4}} {
		u := p.run(t, Unrolled, tc.dt, weights)
		l := p.run(t, Loop, tc.dt, weights)
		for _, c := range []struct {
			name string
			a, b []float64
		}{{"ℓ", u.ll, l.ll}, {"∂/∂π", u.gPi, l.gPi}, {"∂/∂Θ", u.gTheta, l.gTheta}, {"∂/∂logρ", u.gRho, l.gRho}} {
			if hasNaN(c.a, c.b) {
				t.Fatalf("%s %s: NaN/Inf", tc.dt, c.name)
			}
			if d := maxAbsDiff(t, c.a, c.b); d > tc.tol {
				t.Errorf("%s %s: loop vs unrolled max |diff| = %g > %g", tc.dt, c.name, d, tc.tol)
			}
		}
	}
}

// TestNoNaNWithInfiniteLogits: hard emissions (-Inf everywhere but one token) on a 21-state model,
// and Θ logits with -Inf entries (exact zeros, as after Viterbi EM), give finite values and
// gradients equal to the plain-Go recursion; gradients w.r.t. -Inf logits are exactly 0 (loop
// variant) or denormal (unrolled: plain autodiff through softmax).
func TestNoNaNWithInfiniteLogits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	layout := UniformLayout(4, 5) // N = 21
	p := randomProblem(rng, layout, 4, []int{40, 25, 40}, 40, true)
	N := layout.N()
	// Forbid some transitions: Θ[a,i,j] = -Inf where (i+j+a) % 7 == 0 and j is not i's successor
	// block, keeping at least one finite logit per row.
	inf := map[int]bool{}
	for a := range 4 {
		for i := range N {
			for j := range N {
				if (i+j+a)%7 == 0 && j != i {
					idx := (a*N+i)*N + j
					p.theta[idx] = math.Inf(-1)
					inf[idx] = true
				}
			}
		}
	}
	want := make([]float64, p.B())
	for b := range want {
		want[b] = refLogLik(p, b)
	}
	for _, v := range []Variant{Loop, Unrolled} {
		r := p.run(t, v, dtypes.Float64, []float64{1, 1, 1})
		if d := maxAbsDiff(t, r.ll, want); d > 1e-9 {
			t.Errorf("%s: ℓ = %v, reference %v", v, r.ll, want)
		}
		if hasNaN(r.ll) {
			t.Errorf("%s: NaN/Inf in ℓ", v)
		}
		for i, g := range r.gTheta {
			// Exactly 0 for the loop variant; plain autodiff through the softmax leaves denormals.
			if inf[i] && (v == Loop && g != 0 || math.Abs(g) > 1e-300) {
				t.Errorf("%s: ∂/∂Θ[%d] = %g at a -Inf logit, want 0", v, i, g)
			}
			if !inf[i] && (math.IsNaN(g) || math.IsInf(g, 0)) {
				t.Errorf("%s: ∂/∂Θ[%d] = %g", v, i, g)
			}
		}
		if hasNaN(r.gPi, r.gRho) {
			t.Errorf("%s: NaN/Inf in ∂/∂π or ∂/∂logρ", v)
		}
	}
}

// refLogLik is an independent plain-Go float64 forward recursion (probability space, per-step
// normalised) for sequence b of p; -Inf logits and emissions are exact zeros.
func refLogLik(p *problem, b int) float64 {
	N := p.layout.N()
	w := p.layout.StateTokens()
	e := func(t, j int) float64 {
		if w[j] < 0 {
			return 0
		}
		return math.Exp(p.logRho[b][t][w[j]])
	}
	trans := make([]float64, len(p.theta))
	for r := range p.A * N {
		for j, v := range logSoftmax(p.theta[r*N : (r+1)*N]) {
			trans[r*N+j] = math.Exp(v)
		}
	}
	alpha := make([]float64, N)
	for j, v := range logSoftmax(p.pi) {
		alpha[j] = math.Exp(v) * e(0, j)
	}
	ll := 0.0
	norm := func() {
		s := 0.0
		for _, v := range alpha {
			s += v
		}
		for j := range alpha {
			alpha[j] /= s
		}
		ll += math.Log(s)
	}
	norm()
	for t := 1; t < p.lengths[b]; t++ {
		a := p.actions[b][t-1]
		next := make([]float64, N)
		for i, ai := range alpha {
			if ai == 0 {
				continue
			}
			for j := range N {
				next[j] += ai * trans[(a*N+i)*N+j]
			}
		}
		for j := range next {
			next[j] *= e(t, j)
		}
		alpha = next
		norm()
	}
	return ll
}

// TestNoNaNWithInfEmissions: log-emissions fed directly with -Inf (no floor; the hard case of
// Sec. 3.3, sink included) on a 21-state model give finite values and gradients; the gradient
// w.r.t. logEmit is γ: exactly 0 at -Inf entries and padded steps, summing to 1 at each real step.
func TestNoNaNWithInfEmissions(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	layout := UniformLayout(4, 5)
	p := randomProblem(rng, layout, 4, []int{60, 33}, 60, true)
	B, T, N := p.B(), p.T(), layout.N()
	w := layout.StateTokens()
	logE := make([]float64, B*T*N)
	for b := range B {
		for s := range T {
			for j := range N {
				v := math.Inf(-1)
				if s >= p.lengths[b] {
					v = math.NaN() // padding garbage
				} else if w[j] >= 0 {
					v = p.logRho[b][s][w[j]]
				}
				logE[(b*T+s)*N+j] = v
			}
		}
	}
	for _, v := range []Variant{Unrolled, Loop} {
		fn := v.Func()
		exec, err := graph.NewExec(backend(t), func(in []*graph.Node) []*graph.Node {
			ll := fn(in[0], in[1], in[2], in[3], in[4])
			return append([]*graph.Node{ll}, graph.Gradient(graph.ReduceAllSum(ll), in[0], in[1], in[2])...)
		})
		if err != nil {
			t.Fatal(err)
		}
		in := p.inputs(dtypes.Float32)
		in[2] = tensors.FromFlatDataAndDimensions(toFloat32(logE), B, T, N)
		out, err := exec.Call(in...)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([][]float64, len(out))
		for i, o := range out {
			vals[i], _ = toFloat64(o)
		}
		if hasNaN(vals...) {
			t.Fatalf("%s: NaN/Inf in ℓ or gradients", v)
		}
		for b := range B {
			if want := refLogLik(p, b); math.Abs(vals[0][b]-want) > 1e-4*math.Abs(want) {
				t.Errorf("%s: ℓ[%d] = %g, plain-Go recursion %g", v, b, vals[0][b], want)
			}
			for s := range T {
				sum := 0.0
				for j := range N {
					g := vals[3][(b*T+s)*N+j]
					x := logE[(b*T+s)*N+j]
					if (math.IsInf(x, -1) || math.IsNaN(x)) && g != 0 {
						t.Errorf("%s: ∂ℓ/∂logE[%d,%d,%d] = %g at a -Inf/padded entry", v, b, s, j, g)
					}
					sum += g
				}
				want := 0.0
				if s < p.lengths[b] {
					want = 1
				}
				if math.Abs(sum-want) > 1e-5 {
					t.Errorf("%s: Σ_j ∂ℓ/∂logE[%d,%d,j] = %g, want %g", v, b, s, sum, want)
				}
			}
		}
	}
}
