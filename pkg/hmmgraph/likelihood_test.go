package hmmgraph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// tinyLayout is the brute-force model: K = 2 tokens with clones {2, 1}, N = 4 with the sink.
var tinyLayout = Layout{Clones: []int{2, 1}}

// TestLogLikelihoodBruteForce: both variants equal enumeration over all N^T state paths, for hard
// and soft emissions, float64 and float32, with a padded sequence and a sequence of length 1.
func TestLogLikelihoodBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lengths []int
		T       int
		hard    bool
	}{
		{"hard T=5 one padded", []int{5, 3}, 5, true},
		{"soft T=5 one padded", []int{5, 3}, 5, false},
		{"soft T=4 length 1", []int{4, 1}, 4, false},
		{"hard T=1", []int{1, 1}, 1, true},
		{"soft T=2 empty", []int{2, 0}, 2, false},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
		p := randomProblem(rng, tinyLayout, 2, tc.lengths, tc.T, tc.hard)
		want := make([]float64, p.B())
		for b := range want {
			want[b] = p.bruteLogLik(b)
		}
		for _, v := range []Variant{Unrolled, Loop} {
			for _, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
				got := p.run(t, v, dt, []float64{1, 1}).ll
				tol := 1e-12
				if dt == dtypes.Float32 {
					tol = 2e-5
				}
				for b := range want {
					if math.Abs(got[b]-want[b]) > tol*(1+math.Abs(want[b])) {
						t.Errorf("%s %s %s: ℓ[%d] = %.15g, brute force %.15g", tc.name, v, dt, b, got[b], want[b])
					}
				}
			}
		}
	}
}

// TestOneHotSoftEqualsHard (paper Sec. 3.5, consistency): the soft pass with one-hot ρ — given
// as log ρ = HardLogRho(tokens) or as Log(OneHot(tokens)) — equals the hard pass on
// HardLogEmissions bit for bit, in ℓ and in ∂ℓ/∂(π, Θ), for both variants, and matches the
// independent plain-Go recursion.
func TestOneHotSoftEqualsHard(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	layout := Layout{Clones: []int{3, 2, 4}}
	p := randomProblem(rng, layout, 3, []int{20, 13, 20}, 20, true)
	B, T := p.B(), p.T()
	tokens := make([]int32, B*T)
	for b := range B {
		for s := range T {
			for k, v := range p.logRho[b][s] {
				if v == 0 {
					tokens[b*T+s] = int32(k)
				}
			}
		}
	}
	in := p.inputs(dtypes.Float32)
	in[2] = tensors.FromFlatDataAndDimensions(tokens, B, T)
	for _, v := range []Variant{Unrolled, Loop} {
		fn := v.Func()
		exec, err := graph.NewExec(backend(t), func(in []*graph.Node) []*graph.Node {
			pi, theta, tok, acts, mask := in[0], in[1], in[2], in[3], in[4]
			var out []*graph.Node
			for _, logE := range []*graph.Node{
				layout.HardLogEmissions(tok, dtypes.Float32),
				layout.StateLogEmissions(HardLogRho(tok, layout.K(), dtypes.Float32)),
				layout.StateLogEmissions(graph.Log(graph.OneHot(tok, layout.K(), dtypes.Float32))),
			} {
				ll := fn(pi, theta, logE, acts, mask)
				grads := graph.Gradient(graph.ReduceAllSum(ll), pi, theta)
				out = append(out, ll, grads[0], grads[1])
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Call(in...)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([][]float32, len(out))
		for i, o := range out {
			vals[i] = tensors.MustCopyFlatData[float32](o)
		}
		for route := 1; route < 3; route++ {
			for q, name := range []string{"ℓ", "∂/∂π", "∂/∂Θ"} {
				if !slices.Equal(vals[q], vals[3*route+q]) {
					t.Errorf("%s: %s of soft route %d differs from the hard pass", v, name, route)
				}
			}
		}
		for b := range B {
			if want := refLogLik(p, b); math.Abs(float64(vals[0][b])-want) > 1e-4 {
				t.Errorf("%s: hard ℓ[%d] = %g, plain-Go recursion %g", v, b, vals[0][b], want)
			}
		}
	}
}

// TestMaskedStepsContributeNothing: a sequence padded with garbage (NaN log ρ, out-of-range
// actions) next to a longer one gives the same ℓ and the same gradients as the sequence alone,
// unpadded; the padded steps get exactly zero gradient (checked in TestGradientFiniteDifferences).
func TestMaskedStepsContributeNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	layout := Layout{Clones: []int{2, 3, 1}}
	const L, T = 9, 16
	padded := randomProblem(rng, layout, 3, []int{L, T}, T, false)
	alone := &problem{layout: layout, A: 3, pi: padded.pi, theta: padded.theta, lengths: []int{L},
		logRho: [][][]float64{padded.logRho[0][:L]}, actions: [][]int{padded.actions[0][:L-1]}}
	K := layout.K()
	for _, v := range []Variant{Unrolled, Loop} {
		got := padded.run(t, v, dtypes.Float64, []float64{1, 0})
		want := alone.run(t, v, dtypes.Float64, []float64{1})
		if math.Abs(got.ll[0]-want.ll[0]) > 1e-13 {
			t.Errorf("%s: padded ℓ = %.16g, alone %.16g", v, got.ll[0], want.ll[0])
		}
		for _, c := range []struct {
			name string
			a, b []float64
		}{{"∂/∂π", got.gPi, want.gPi}, {"∂/∂Θ", got.gTheta, want.gTheta}, {"∂/∂logρ", got.gRho[:L*K], want.gRho}} {
			if d := maxAbsDiff(t, c.a, c.b); d > 1e-13 {
				t.Errorf("%s: %s padded vs alone max |diff| = %g", v, c.name, d)
			}
		}
		for i, g := range got.gRho[L*K : T*K] {
			if g != 0 {
				t.Errorf("%s: gradient %g at padded step %d", v, g, L+i/K)
			}
		}
	}
}
