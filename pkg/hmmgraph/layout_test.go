package hmmgraph

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		clones  []int
		n, sink int
		tokens  []int32
		first   []int
	}{
		{[]int{2, 1}, 4, 3, []int32{0, 0, 1, -1}, []int{0, 2}},
		{[]int{1, 3, 2}, 7, 6, []int32{0, 1, 1, 1, 2, 2, -1}, []int{0, 1, 4}},
	} {
		l := Layout{Clones: tc.clones}
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		if l.N() != tc.n || l.Sink() != tc.sink || l.K() != len(tc.clones) {
			t.Errorf("%v: N=%d Sink=%d K=%d", tc.clones, l.N(), l.Sink(), l.K())
		}
		if got := l.StateTokens(); !slices.Equal(got, tc.tokens) {
			t.Errorf("%v: StateTokens = %v, want %v", tc.clones, got, tc.tokens)
		}
		for k, f := range tc.first {
			if l.FirstState(k) != f {
				t.Errorf("%v: FirstState(%d) = %d, want %d", tc.clones, k, l.FirstState(k), f)
			}
		}
	}
	if u := UniformLayout(3, 4); u.N() != 13 || !slices.Equal(u.Clones, []int{4, 4, 4}) {
		t.Errorf("UniformLayout(3, 4) = %v", u)
	}
	for _, tc := range []struct {
		clones []int
		want   string
	}{{nil, "no tokens"}, {[]int{2, 0}, "Clones[1] = 0"}} {
		err := Layout{Clones: tc.clones}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want error containing %q", tc.clones, err, tc.want)
		}
	}
}

// TestEmissions: StateLogEmissions copies log ρ_t(ω(j)) with -Inf for the sink (and -Inf of log ρ
// as floorLogProb); HardLogEmissions and HardLogRho give the hand-written one-hot expansion.
func TestEmissions(t *testing.T) {
	l := Layout{Clones: []int{2, 1, 2}} // ω = 0 0 1 2 2 ⊥
	rho := [][][]float32{{{-0.1, -2, -3}, {-4, -0.5, -6}}}
	tokens := [][]int32{{2, 0}}
	exec, err := graph.NewExec(backend(t), func(rho, tok *graph.Node) (*graph.Node, *graph.Node, *graph.Node) {
		return l.StateLogEmissions(rho), l.StateLogEmissions(HardLogRho(tok, l.K(), dtypes.Float32)),
			l.HardLogEmissions(tok, dtypes.Float32)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Call(rho, tokens)
	if err != nil {
		t.Fatal(err)
	}
	inf := float32(math.Inf(-1))
	soft := tensors.MustCopyFlatData[float32](out[0])
	wantSoft := []float32{-0.1, -0.1, -2, -3, -3, inf, -4, -4, -0.5, -6, -6, inf}
	if !slices.Equal(soft, wantSoft) {
		t.Errorf("StateLogEmissions = %v, want %v", soft, wantSoft)
	}
	fl := float32(floorLogProb(dtypes.Float32))
	for i, want := range [][]float32{
		{fl, fl, fl, 0, 0, inf, 0, 0, fl, fl, fl, inf},       // StateLogEmissions(HardLogRho)
		{inf, inf, inf, 0, 0, inf, 0, 0, inf, inf, inf, inf}, // HardLogEmissions
	} {
		if got := tensors.MustCopyFlatData[float32](out[1+i]); !slices.Equal(got, want) {
			t.Errorf("hard emissions #%d = %v, want %v", i, got, want)
		}
	}
}
