package plan

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// On the exact model of an environment with duplicate clones, the model
// places are the true places: duplicates merge, aliased places stay apart.
func TestModelPlacesAreTruePlaces(t *testing.T) {
	for _, tc := range []struct {
		env string
		dup int
	}{
		{"aliased", 1}, {"aliased", 3}, {"corridors", 2}, {"room", 2}, {"cscg_cliques", 2},
	} {
		env, err := gridworld.Named(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		m, truth := envModel(t, env, tc.dup)
		mp, err := NewMap(m)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBlocks(mp.Place, truth) {
			t.Errorf("%s ×%d: model places %v, true places %v", tc.env, tc.dup, mp.Place, truth)
		}
		if mp.NumPlaces != env.NumPlaces() {
			t.Errorf("%s ×%d: %d model places, %d true places", tc.env, tc.dup, mp.NumPlaces, env.NumPlaces())
		}
	}
}

func TestGoals(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	m, truth := envModel(t, env, 2)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	statesOf := func(g int) []int {
		var out []int
		for s, p := range truth {
			if p == g {
				out = append(out, s)
			}
		}
		return out
	}

	// Token goal: token 0 is shown at 4 places.
	tg, err := mp.TokenGoal(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.States) != 8 || len(tg.Places) != 4 || !tg.Ambiguous {
		t.Errorf("token goal %v: want 8 clones in 4 places, ambiguous", tg)
	}
	if _, err := mp.TokenGoal(4); err == nil {
		t.Error("token 4 of 4 accepted")
	}

	// A belief on one clone of place 5 → all clones of place 5.
	s5 := statesOf(5)
	b := make([]float64, mp.N)
	b[s5[1]] = 0.95
	b[statesOf(6)[0]] = 0.05
	g, err := mp.BeliefGoal(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.States, s5) || g.Ambiguous || math.Abs(g.Mass-0.95) > 1e-12 {
		t.Errorf("belief goal %v: want clones %v, mass 0.95, unambiguous", g, s5)
	}
	if len(g.Alternatives) != 1 || math.Abs(g.Alternatives[0].Mass-0.05) > 1e-12 {
		t.Errorf("alternatives %v, want one place with 0.05", g.Alternatives)
	}

	// Split between two places: ambiguous, the larger wins.
	clear(b)
	b[statesOf(2)[0]], b[statesOf(2)[1]], b[statesOf(10)[0]] = 0.3, 0.3, 0.4
	g, err = mp.BeliefGoal(b, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.States, statesOf(2)) || !g.Ambiguous || math.Abs(g.Mass-0.6) > 1e-12 {
		t.Errorf("split belief goal %v: want place 2 (mass 0.6), ambiguous", g)
	}
	if !strings.Contains(g.String(), "AMBIGUOUS") {
		t.Errorf("String() does not flag the ambiguity: %s", g)
	}

	for _, tc := range []struct {
		name   string
		belief []float64
		mass   float64
		want   string
	}{
		{"short belief", b[:2], 0.9, "belief has 2 entries"},
		{"negative", append([]float64{-1}, b[1:]...), 0.9, "belief[0] = -1"},
		{"zero", make([]float64, mp.N), 0.9, "no mass"},
		{"bad mass", b, 1.5, "goal mass 1.5"},
	} {
		if _, err := mp.BeliefGoal(tc.belief, tc.mass); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := mp.StatesGoal([]int{mp.N - 1}); err == nil {
		t.Error("the sink accepted as a goal")
	}
}
