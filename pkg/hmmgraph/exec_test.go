package hmmgraph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// TestGradExecMatchesGraph: GradExec.Sequences returns Σ_b ℓ_b and the gradients that the graph
// functions give for the same (hard) batch, with and without extra padding (padTo).
func TestGradExecMatchesGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	layout := Layout{Clones: []int{2, 2, 3}}
	p := randomProblem(rng, layout, 2, []int{7, 4, 1}, 7, true)
	want := p.run(t, Loop, dtypes.Float64, []float64{1, 1, 1})
	var obs, acts [][]int
	for b, L := range p.lengths {
		var o []int
		for s := range L {
			for k, v := range p.logRho[b][s] {
				if v == 0 {
					o = append(o, k)
				}
			}
		}
		obs = append(obs, o)
		acts = append(acts, p.actions[b][:L-1])
	}
	wantLL := want.ll[0] + want.ll[1] + want.ll[2]
	for _, v := range []Variant{Loop, Unrolled} {
		e, err := NewGradExec(backend(t), layout, 2, v, dtypes.Float64)
		if err != nil {
			t.Fatal(err)
		}
		for _, padTo := range []int{0, 10} {
			ll, gPi, gTheta, err := e.Sequences(p.pi, p.theta, obs, acts, padTo)
			if err != nil {
				t.Fatal(err)
			}
			if d := ll - wantLL; d > 1e-12 || d < -1e-12 {
				t.Errorf("%s padTo=%d: ℓ = %g, graph %g", v, padTo, ll, wantLL)
			}
			if d := maxAbsDiff(t, gPi, want.gPi); d > 1e-12 {
				t.Errorf("%s padTo=%d: ∂/∂π max |diff| = %g", v, padTo, d)
			}
			if d := maxAbsDiff(t, gTheta, want.gTheta); d > 1e-12 {
				t.Errorf("%s padTo=%d: ∂/∂Θ max |diff| = %g", v, padTo, d)
			}
		}
	}
}

// TestGradExecErrors: bad inputs give errors that name the problem (no panics).
func TestGradExecErrors(t *testing.T) {
	layout := Layout{Clones: []int{2, 1}} // N = 4, K = 2
	e, err := NewGradExec(backend(t), layout, 2, Loop, dtypes.Float32)
	if err != nil {
		t.Fatal(err)
	}
	pi, theta := make([]float64, 4), make([]float64, 2*4*4)
	for _, tc := range []struct {
		name      string
		pi, theta []float64
		obs, acts [][]int
		padTo     int
		want      string
	}{
		{"short pi", pi[:3], theta, [][]int{{0}}, [][]int{{}}, 0, "len(piLogits) = 3"},
		{"short theta", pi, theta[:5], [][]int{{0}}, [][]int{{}}, 0, "len(thetaLogits) = 5"},
		{"no sequences", pi, theta, nil, nil, 0, "0 observation and 0 action"},
		{"empty sequence", pi, theta, [][]int{{0}, {}}, [][]int{{}, {}}, 0, "sequence 1: empty"},
		{"action count", pi, theta, [][]int{{0, 1}}, [][]int{{}}, 0, "sequence 0: 0 actions for 2 observations"},
		{"token range", pi, theta, [][]int{{0, 1, 2}}, [][]int{{0, 0}}, 0, "sequence 0, step 2: token 2 out of range"},
		{"action range", pi, theta, [][]int{{0, 1}}, [][]int{{-1}}, 0, "sequence 0, step 0: action -1 out of range"},
		{"padTo", pi, theta, [][]int{{0, 1, 1}}, [][]int{{0, 1}}, 2, "padTo = 2 shorter"},
	} {
		_, _, _, err := e.Sequences(tc.pi, tc.theta, tc.obs, tc.acts, tc.padTo)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name    string
		layout  Layout
		actions int
		dt      dtypes.DType
		v       Variant
		want    string
	}{
		{"layout", Layout{Clones: []int{1, 0}}, 2, dtypes.Float32, Loop, "Clones[1] = 0"},
		{"actions", layout, 0, dtypes.Float32, Loop, "numActions = 0"},
		{"dtype", layout, 2, dtypes.Int32, Loop, "want Float32 or Float64"},
		{"variant", layout, 2, dtypes.Float32, Variant(7), "unknown variant"},
	} {
		_, err := NewGradExec(backend(t), tc.layout, tc.actions, tc.v, tc.dt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewGradExec %s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := ParseVariant("fast"); err == nil {
		t.Errorf("ParseVariant(fast) succeeded")
	}
	for _, v := range []Variant{Loop, Unrolled} {
		if got, err := ParseVariant(v.String()); err != nil || got != v {
			t.Errorf("ParseVariant(%q) = %v, %v", v.String(), got, err)
		}
	}
}

// TestGradExecLengthOne: a batch of single observations has no transitions: ℓ = Σ_b log Σ_{j: ω(j)=o_b} π̄_j,
// ∂ℓ/∂Θ = 0, and ∂ℓ/∂π_j = Σ_b ([ω(j)=o_b] π̄_j / Σ_{j': ω(j')=o_b} π̄_j' − π̄_j).
func TestGradExecLengthOne(t *testing.T) {
	layout := Layout{Clones: []int{2, 1}}
	pi := []float64{0.3, -0.2, 1.1, 0.5}
	theta := make([]float64, 2*4*4)
	obs := [][]int{{0}, {1}, {0}}
	e, err := NewGradExec(backend(t), layout, 2, Loop, dtypes.Float64)
	if err != nil {
		t.Fatal(err)
	}
	ll, gPi, gTheta, err := e.Sequences(pi, theta, obs, [][]int{{}, {}, {}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	lp := logSoftmax(pi)
	bar := make([]float64, len(lp))
	for j, v := range lp {
		bar[j] = math.Exp(v)
	}
	w := layout.StateTokens()
	wantLL := 0.0
	wantPi := make([]float64, len(pi))
	for _, o := range obs {
		z := 0.0
		for j := range bar {
			if int(w[j]) == o[0] {
				z += bar[j]
			}
		}
		wantLL += math.Log(z)
		for j := range bar {
			if int(w[j]) == o[0] {
				wantPi[j] += bar[j] / z
			}
			wantPi[j] -= bar[j]
		}
	}
	if math.Abs(ll-wantLL) > 1e-12 {
		t.Errorf("ℓ = %g, want %g", ll, wantLL)
	}
	if d := maxAbsDiff(t, gPi, wantPi); d > 1e-12 {
		t.Errorf("∂/∂π = %v, want %v", gPi, wantPi)
	}
	if maxAbs(gTheta) != 0 {
		t.Errorf("∂/∂Θ ≠ 0 without transitions: max |.| = %g", maxAbs(gTheta))
	}
}

// TestGradExecConcurrent: concurrent calls on one GradExec give the serial result.
func TestGradExecConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	layout := UniformLayout(3, 4)
	m := struct{ pi, theta []float64 }{make([]float64, layout.N()), make([]float64, 4*layout.N()*layout.N())}
	for i := range m.pi {
		m.pi[i] = rng.NormFloat64()
	}
	for i := range m.theta {
		m.theta[i] = rng.NormFloat64()
	}
	seqs := gridWalk(rng, 3, 3, 3, 4, 50)
	var obs, acts [][]int
	for _, s := range seqs {
		obs, acts = append(obs, s.Obs), append(acts, s.Actions)
	}
	e, err := NewGradExec(backend(t), layout, 4, Loop, dtypes.Float32)
	if err != nil {
		t.Fatal(err)
	}
	wantLL, wantPi, wantTheta, err := e.Sequences(m.pi, m.theta, obs, acts, 0)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 3 {
				ll, gPi, gTheta, err := e.Sequences(m.pi, m.theta, obs, acts, 0)
				if err == nil && (ll != wantLL || !slices.Equal(gPi, wantPi) || !slices.Equal(gTheta, wantTheta)) {
					err = fmt.Errorf("concurrent result differs: ℓ = %g vs %g", ll, wantLL)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
