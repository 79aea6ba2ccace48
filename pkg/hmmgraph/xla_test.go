package hmmgraph

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"

	"github.com/gradcscg/gradcscg/pkg/internal/xlabuild"
)

// xlaBuilder is go-xla's own StableHLO builder without a PJRT plugin, set up as for
// GOMLX_BACKEND=xla:cuda with NewBackend's options (tf32=false); it skips the test in a
// binary built without cgo (no go-xla).
func xlaBuilder(t *testing.T) compute.Backend {
	t.Helper()
	if !xlabuild.Available {
		t.Skip("go-xla is compiled in only with cgo")
	}
	be, err := xlabuild.New("cuda", false)
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// buildsOnXLA compiles exec for the shapes on go-xla's builder and returns the StableHLO text,
// failing the test with go-xla's own error.
func buildsOnXLA(t *testing.T, what string, exec *graph.Exec, in ...shapes.Shape) string {
	t.Helper()
	_, err := exec.Compile(in...)
	prog, err := xlabuild.ProgramOf(err)
	if err != nil {
		t.Errorf("%s: go-xla refuses the graph: %v", what, err)
	}
	return prog
}

// TestXLABuildsEveryGraph: go-xla v0.4.13 (the version this module pins) converts every graph of
// this package to StableHLO: the hard-token GradExec, the soft pass with its gradient w.r.t. π,
// Θ and log ρ, and ForwardBackward's outputs, for both variants, float32 and float64, with T = 1
// (no actions), 2 and 7. go-xla builds one reduction per (dtype, kind) for the whole program, so
// a reduction inside a While body or condition is refused ("reductionFn is not a StableHLO
// closure of closureN"); a 0-sized axis is refused too.
func TestXLABuildsEveryGraph(t *testing.T) {
	be := xlaBuilder(t)
	layout := Layout{Clones: []int{2, 3, 1}}
	N, K, A, B := layout.N(), layout.K(), 3, 2
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		for _, T := range []int{1, 2, 7} {
			for _, v := range []Variant{Loop, Unrolled} {
				e, err := NewGradExec(be, layout, A, v, dt)
				if err != nil {
					t.Fatal(err)
				}
				prog := buildsOnXLA(t, "GradExec "+v.String(), e.exec, shapes.Make(dt, N), shapes.Make(dt, A, N, N),
					shapes.Make(dtypes.Int32, B, T), shapes.Make(dtypes.Int32, B, T-1), shapes.Make(dtypes.Bool, B, T))
				if want := map[bool]int{true: 2, false: 0}[v == Loop && T > 1]; strings.Count(prog, `"stablehlo.while"`) != want {
					t.Errorf("GradExec %s %s T=%d: %d While loops in the program, want %d", v, dt, T,
						strings.Count(prog, `"stablehlo.while"`), want)
				}
				soft, err := graph.NewExec(be, softObjective(layout, v.Func()))
				if err != nil {
					t.Fatal(err)
				}
				buildsOnXLA(t, "soft pass "+v.String(), soft, shapes.Make(dt, N), shapes.Make(dt, A, N, N),
					shapes.Make(dt, B, T, K), shapes.Make(dtypes.Int32, B, T-1), shapes.Make(dt, B, T), shapes.Make(dt, B))
			}
			fb, err := graph.NewExec(be, func(pi, theta, logE, acts, mask *graph.Node) []*graph.Node {
				p := ForwardBackward(pi, theta, logE, acts, mask)
				return []*graph.Node{p.LogLik, p.Gamma, p.DPi, p.DTheta}
			})
			if err != nil {
				t.Fatal(err)
			}
			buildsOnXLA(t, "ForwardBackward", fb, shapes.Make(dt, N), shapes.Make(dt, A, N, N),
				shapes.Make(dt, B, T, N), shapes.Make(dtypes.Int64, B, T-1), shapes.Make(dtypes.Bool, B, T))
		}
	}
}

// TestPaddedStepsWithXLANaN: with Sign, Max and Min returning NaN for a NaN operand, as XLA's
// do (the go backend returns a number), NaN log ρ and out-of-range actions at padded steps still
// give exactly zero gradients there, and ℓ and every gradient equal the backend's own (to rounding:
// bit for bit on the go backend), for both variants, float32 and float64.
func TestPaddedStepsWithXLANaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	layout := Layout{Clones: []int{2, 3, 1}}
	K := layout.K()
	const T = 12
	lengths := []int{5, T, 1}
	p := randomProblem(rng, layout, 3, lengths, T, false)
	weights := []float64{1, 0.5, -2}
	xla := xlabuild.WithXLANaN(backend(t))
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		tol := map[dtypes.DType]float64{dtypes.Float32: 1e-6, dtypes.Float64: 1e-12}[dt] // the differences are 0 on the go backend
		for _, v := range []Variant{Loop, Unrolled} {
			got := p.runOn(t, xla, v, dt, weights)
			want := p.runOn(t, backend(t), v, dt, weights)
			if hasNaN(got.ll, got.gPi, got.gTheta, got.gRho) {
				t.Errorf("%s %s: NaN/Inf in ℓ or a gradient with XLA's NaN semantics", v, dt)
			}
			for b, L := range lengths {
				for i := L * K; i < T*K; i++ {
					if g := got.gRho[b*T*K+i]; g != 0 {
						t.Errorf("%s %s: ∂/∂logρ = %g at padded step %d of sequence %d", v, dt, g, i/K, b)
						break
					}
				}
			}
			for _, c := range []struct {
				name string
				a, b []float64
			}{{"ℓ", got.ll, want.ll}, {"∂/∂π", got.gPi, want.gPi}, {"∂/∂Θ", got.gTheta, want.gTheta}, {"∂/∂logρ", got.gRho, want.gRho}} {
				for i := range c.a {
					if math.Abs(c.a[i]-c.b[i]) > tol*max(1, math.Abs(c.b[i])) || math.IsNaN(c.a[i]) {
						t.Errorf("%s %s %s[%d]: %g with XLA's NaN semantics, %g without", v, dt, c.name, i, c.a[i], c.b[i])
						break
					}
				}
			}
		}
	}
}
