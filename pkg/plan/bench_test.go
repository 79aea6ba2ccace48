package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// exactMap is the Map of the exact model of a built-in environment with dup
// clones per place, and the true place of every state.
func exactMap(tb testing.TB, name string, dup int) (*Map, *gridworld.Env, []int) {
	tb.Helper()
	env, err := gridworld.Named(name)
	if err != nil {
		tb.Fatal(err)
	}
	m, truth := envModel(tb, env, dup)
	mp, err := NewMap(m)
	if err != nil {
		tb.Fatal(err)
	}
	return mp, env, truth
}

// BenchmarkFilterStep: one forward step on two_rooms with two clones per
// place (N = 175; O(N²) per step).
func BenchmarkFilterStep(b *testing.B) {
	mp, env, _ := exactMap(b, "two_rooms", 2)
	sym := symbols(env)
	places, actions := randomWalk(env, rand.New(rand.NewPCG(1, 1)), 0, 1000)
	f, err := mp.NewFilter(FilterConfig{})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Observe(Obs{Token: sym[places[0]]}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		t := i % len(actions)
		if err := f.Step(actions[t], Obs{Token: sym[places[t+1]]}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEstimateConfusion: the EM of "gradcscg plan --noise learn" —
// ten rounds of forward–backward over a 2,000-step walk — on two_rooms with
// two clones per place (N = 175).
func BenchmarkEstimateConfusion(b *testing.B) {
	mp, env, _ := exactMap(b, "two_rooms", 2)
	sym := symbols(env)
	places, actions := randomWalk(env, rand.New(rand.NewPCG(1, 1)), 0, 2000)
	obs := make([]Obs, len(places))
	for i, g := range places {
		obs[i] = Obs{Token: sym[g]}
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := mp.EstimateConfusion(obs, actions, FilterConfig{}, 0.05, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPlan plans between the two places of two_rooms farthest apart
// (N = 175).
func benchPlan(b *testing.B, method Method) {
	mp, env, truth := exactMap(b, "two_rooms", 2)
	d := Distances(env)
	g0, g1 := 0, 0
	for g := range d {
		for h := range d {
			if d[g][h] > d[g0][g1] {
				g0, g1 = g, h
			}
		}
	}
	first := func(g int) int {
		for s, p := range truth {
			if p == g {
				return s
			}
		}
		return -1
	}
	belief := make([]float64, mp.N)
	belief[first(g0)] = 1
	goal, err := mp.StatesGoal(mp.PlaceStates(mp.Place[first(g1)]))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		p, err := mp.Plan(belief, goal, PlanConfig{Method: method})
		if err != nil {
			b.Fatal(err)
		}
		if p.Len() != d[g0][g1] {
			b.Fatalf("plan of %d steps, shortest path %d", p.Len(), d[g0][g1])
		}
	}
}

// BenchmarkPlanBFS: a plan across two_rooms by breadth-first search.
func BenchmarkPlanBFS(b *testing.B) { benchPlan(b, BFS) }

// BenchmarkPlanMaxProduct: the same plan by max-product messages.
func BenchmarkPlanMaxProduct(b *testing.B) { benchPlan(b, MaxProduct) }

// BenchmarkEvaluate: 200 pairs in both modes on the exact aliased model
// (two clones per place).
func BenchmarkEvaluate(b *testing.B) {
	mp, env, _ := exactMap(b, "aliased", 2)
	for range b.N {
		if _, err := Evaluate(mp, env, symbols(env), DefaultEvalConfig()); err != nil {
			b.Fatal(err)
		}
	}
}
