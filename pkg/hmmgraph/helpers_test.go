package hmmgraph

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// testBackend is NewBackend's backend (GOMLX_BACKEND, else the go backend with
// GoBackendConfig), shared by the tests.
var testBackend = sync.OnceValues(func() (compute.Backend, error) {
	b, _, err := NewBackend()
	return b, err
})

func backend(tb testing.TB) compute.Backend {
	tb.Helper()
	b, err := testBackend()
	if err != nil {
		tb.Fatalf("backend: %v", err)
	}
	return b
}

// problem is a small batch for reference checks. Everything is float64 and plain Go.
type problem struct {
	layout  Layout
	A       int
	pi      []float64     // [N]
	theta   []float64     // [A*N*N]
	logRho  [][][]float64 // [B][T][K]; padded steps hold garbage
	actions [][]int       // [B][T-1]; padded steps hold garbage
	lengths []int         // real length per sequence (prefix mask)
}

func (p *problem) B() int { return len(p.logRho) }
func (p *problem) T() int { return len(p.logRho[0]) }

// randomProblem draws logits ~ N(0, scale²) (Θ with a sink column like the reference init), soft
// log ρ (hard = one-hot log ρ from random tokens when hard), random actions, and garbage (NaN
// emissions, out-of-range actions) at padded steps.
func randomProblem(rng *rand.Rand, layout Layout, A int, lengths []int, T int, hard bool) *problem {
	N, K := layout.N(), layout.K()
	p := &problem{layout: layout, A: A, lengths: lengths}
	p.pi = make([]float64, N)
	for i := range p.pi {
		p.pi[i] = rng.NormFloat64()
	}
	p.theta = make([]float64, A*N*N)
	for i := range p.theta {
		p.theta[i] = rng.NormFloat64()
	}
	for b, L := range lengths {
		rho := make([][]float64, T)
		for t := range T {
			rho[t] = make([]float64, K)
			if t >= L {
				for k := range rho[t] {
					rho[t][k] = math.NaN()
				}
				continue
			}
			if hard {
				o := rng.IntN(K)
				for k := range rho[t] {
					rho[t][k] = math.Inf(-1)
				}
				rho[t][o] = 0
				continue
			}
			// log_softmax of random logits.
			m := math.Inf(-1)
			for k := range rho[t] {
				rho[t][k] = 1.5 * rng.NormFloat64()
				m = max(m, rho[t][k])
			}
			s := 0.0
			for k := range rho[t] {
				s += math.Exp(rho[t][k] - m)
			}
			for k := range rho[t] {
				rho[t][k] -= m + math.Log(s)
			}
		}
		p.logRho = append(p.logRho, rho)
		acts := make([]int, T-1)
		for t := range acts {
			if t+1 < L {
				acts[t] = rng.IntN(A)
			} else {
				acts[t] = 7 + b // out of range: must be ignored
			}
		}
		p.actions = append(p.actions, acts)
	}
	return p
}

func logSoftmax(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - m - math.Log(s)
	}
	return out
}

// bruteLogLik enumerates all N^L state paths of sequence b and returns log Σ_paths p(path, o | a)
// (paper Sec. 3.3/3.5 by definition, not by recursion).
func (p *problem) bruteLogLik(b int) float64 {
	N, A := p.layout.N(), p.A
	L := p.lengths[b]
	if L == 0 {
		return 0
	}
	w := p.layout.StateTokens()
	logE := func(t, j int) float64 {
		if w[j] < 0 {
			return math.Inf(-1)
		}
		return p.logRho[b][t][w[j]]
	}
	logPi := logSoftmax(p.pi)
	logT := make([]float64, A*N*N)
	for r := range A * N {
		copy(logT[r*N:(r+1)*N], logSoftmax(p.theta[r*N:(r+1)*N]))
	}
	path := make([]int, L)
	var terms []float64
	for {
		lp := logPi[path[0]] + logE(0, path[0])
		for t := 0; t+1 < L; t++ {
			a := p.actions[b][t]
			lp += logT[(a*N+path[t])*N+path[t+1]] + logE(t+1, path[t+1])
		}
		terms = append(terms, lp)
		// Next path (odometer).
		i := L - 1
		for i >= 0 {
			path[i]++
			if path[i] < N {
				break
			}
			path[i] = 0
			i--
		}
		if i < 0 {
			break
		}
	}
	m := math.Inf(-1)
	for _, v := range terms {
		m = max(m, v)
	}
	s := 0.0
	for _, v := range terms {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// bruteObjective is Σ_b w_b ℓ_b by enumeration.
func (p *problem) bruteObjective(weights []float64) float64 {
	s := 0.0
	for b := range p.B() {
		s += weights[b] * p.bruteLogLik(b)
	}
	return s
}

// result of a graph pass: ℓ per sequence and the gradients of Σ_b w_b ℓ_b.
type result struct {
	ll                []float64
	gPi, gTheta, gRho []float64 // gRho flat [B][T][K]
}

// inputs returns the problem as tensors of dtype dt: π, Θ, log ρ, actions, mask (float 0/1), weights.
func (p *problem) inputs(dt dtypes.DType) []any {
	B, T, K, N := p.B(), p.T(), p.layout.K(), p.layout.N()
	var rho []float64
	for b := range B {
		for t := range T {
			rho = append(rho, p.logRho[b][t]...)
		}
	}
	acts := make([]int32, 0, B*(T-1))
	mask := make([]float64, 0, B*T)
	for b := range B {
		for _, a := range p.actions[b] {
			acts = append(acts, int32(a))
		}
		for t := range T {
			mask = append(mask, float64(boolInt(t < p.lengths[b])))
		}
	}
	w := make([]float64, B)
	for b := range w {
		w[b] = 1
	}
	conv := func(x []float64, dims ...int) *tensors.Tensor {
		if dt == dtypes.Float32 {
			return tensors.FromFlatDataAndDimensions(toFloat32(x), dims...)
		}
		return tensors.FromFlatDataAndDimensions(append([]float64(nil), x...), dims...)
	}
	return []any{conv(p.pi, N), conv(p.theta, p.A, N, N), conv(rho, B, T, K),
		tensors.FromFlatDataAndDimensions(acts, B, T-1), conv(mask, B, T)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run evaluates variant v on p in dtype dt and returns ℓ and the gradients of Σ_b w_b ℓ_b
// w.r.t. π, Θ and log ρ (through Layout.StateLogEmissions).
func (p *problem) run(tb testing.TB, v Variant, dt dtypes.DType, weights []float64) result {
	tb.Helper()
	return p.runOn(tb, backend(tb), v, dt, weights)
}

// softObjective is the graph of problem.run: inputs π, Θ, log ρ, actions, mask, weights; outputs
// ℓ [B] of fn and the gradients of Σ_b w_b ℓ_b w.r.t. π, Θ and log ρ.
func softObjective(layout Layout, fn func(pi, theta, logEmit, actions, mask *graph.Node) *graph.Node) func(in []*graph.Node) []*graph.Node {
	return func(in []*graph.Node) []*graph.Node {
		pi, theta, rho, acts, mask, w := in[0], in[1], in[2], in[3], in[4], in[5]
		ll := fn(pi, theta, layout.StateLogEmissions(rho), acts, mask)
		obj := graph.ReduceAllSum(graph.Mul(ll, w))
		grads := graph.Gradient(obj, pi, theta, rho)
		return []*graph.Node{ll, grads[0], grads[1], grads[2]}
	}
}

// runOn is run on the backend be.
func (p *problem) runOn(tb testing.TB, be compute.Backend, v Variant, dt dtypes.DType, weights []float64) result {
	tb.Helper()
	exec, err := graph.NewExec(be, softObjective(p.layout, v.Func()))
	if err != nil {
		tb.Fatal(err)
	}
	defer exec.Finalize()
	in := p.inputs(dt)
	wt := tensors.FromFlatDataAndDimensions(append([]float64(nil), weights...), len(weights))
	if dt == dtypes.Float32 {
		wt = tensors.FromFlatDataAndDimensions(toFloat32(weights), len(weights))
	}
	out, err := exec.Call(append(in, wt)...)
	if err != nil {
		tb.Fatalf("%s pass: %v", v, err)
	}
	vals := make([][]float64, len(out))
	for i, o := range out {
		if vals[i], err = toFloat64(o); err != nil {
			tb.Fatal(err)
		}
	}
	return result{ll: vals[0], gPi: vals[1], gTheta: vals[2], gRho: vals[3]}
}

// centralDiff returns (f(x+h) − f(x−h)) / 2h for coordinate i of x (restored afterwards).
func centralDiff(x []float64, i int, h float64, f func() float64) float64 {
	old := x[i]
	x[i] = old + h
	fp := f()
	x[i] = old - h
	fm := f()
	x[i] = old
	return (fp - fm) / (2 * h)
}

func hasNaN(xs ...[]float64) bool {
	for _, x := range xs {
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return true
			}
		}
	}
	return false
}

// maxAbsDiff returns max_i |a_i − b_i| (a and b of equal length).
func maxAbsDiff(tb testing.TB, a, b []float64) float64 {
	tb.Helper()
	if len(a) != len(b) {
		tb.Fatalf("length mismatch %d vs %d", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}
