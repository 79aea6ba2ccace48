package plan

import (
	"math"
	"testing"
	"unsafe"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestEvalCost compares the estimate with the sums by hand for a map of the corridors
// room (corridorMap), and checks that the count grows with each of pairs and
// walk lengths as the formula says.
func TestEvalCost(t *testing.T) {
	mp, env := corridorMap(t)
	n, places := float64(mp.N), float64(env.NumPlaces())
	moves := 0.0
	for _, m := range mp.moves {
		moves += float64(len(m))
	}
	diameter := 0
	for _, row := range Distances(env) {
		for _, d := range row {
			diameter = max(diameter, d)
		}
	}
	cfg := DefaultEvalConfig() // 200 pairs, walks of 20 + 20, budget 3·d + 10, both modes
	got, err := EvalCost(mp, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan := n * moves // MaxSteps defaults to N
	budget := float64(3*diameter + 10)
	perPair := 40*n*n + 20*places + plan + plan + budget*(n*n+plan)
	if want := 200 * perPair; math.Abs(got.Ops-want) > 1e-6*want {
		t.Errorf("ops %.6g, want %.6g", got.Ops, want)
	}
	if want := 40*(float64(unsafe.Sizeof(Obs{}))+16) + 200*2*float64(unsafe.Sizeof(Trial{})); got.Bytes != want {
		t.Errorf("bytes %.6g, want %.6g", got.Bytes, want)
	}
	big := cfg
	big.Pairs, big.LocalizeSteps, big.DemoSteps = 1_000_000, 1_000_000, 1_000_000
	huge, err := EvalCost(mp, env, big)
	if err != nil {
		t.Fatal(err)
	}
	perPair = 2e6*n*n + 1e6*places + 2*plan + budget*(n*n+plan)
	if want := 1e6 * perPair; math.Abs(huge.Ops-want) > 1e-6*want {
		t.Errorf("a million pairs of million-step walks: %.6g ops, want %.6g", huge.Ops, want)
	}
}

// corridorMap is the exact map of the built-in corridors room, one clone per place.
func corridorMap(t *testing.T) (*Map, *gridworld.Env) {
	t.Helper()
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := envModel(t, env, 1)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return mp, env
}
