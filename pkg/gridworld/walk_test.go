package gridworld

import (
	"math"
	"slices"
	"testing"
)

// checkDynamics verifies every step of ep against the sticky dynamics
// (restricted to in, when not nil) and the symbolic observations.
func checkDynamics(t *testing.T, e *Env, ep Episode, in map[int]bool) {
	t.Helper()
	if len(ep.Actions) != len(ep.Places)-1 || len(ep.Obs) != len(ep.Places) {
		t.Fatalf("lengths places %d obs %d actions %d", len(ep.Places), len(ep.Obs), len(ep.Actions))
	}
	for i, g := range ep.Places {
		if ep.Obs[i] != e.Class[g] {
			t.Fatalf("t=%d: obs %d, class of place %d is %d", i, ep.Obs[i], g, e.Class[g])
		}
		if in != nil && !in[g] {
			t.Fatalf("t=%d: place %d outside the region", i, g)
		}
		if i+1 == len(ep.Places) {
			break
		}
		want := e.Next(g, ep.Actions[i])
		if in != nil && !in[want] {
			t.Fatalf("t=%d: action %d at place %d leaves the region", i, ep.Actions[i], g)
		}
		if ep.Places[i+1] != want {
			t.Fatalf("t=%d: %d -a=%d-> %d, want %d", i, g, ep.Actions[i], ep.Places[i+1], want)
		}
	}
}

func TestWalkStatistics(t *testing.T) {
	const T = 200000
	for _, name := range []string{"aliased", "corridors", "three_rooms"} {
		e := mustNamed(t, name)
		ep := e.Walk(NewRand(7), T)
		checkDynamics(t, e, ep, nil)
		// Actions are uniform over the 4 actions (binomial s.d. ~0.001).
		acts := make([]float64, e.NumActions())
		for _, a := range ep.Actions {
			acts[a]++
		}
		for a, n := range acts {
			if f := n / float64(T-1); math.Abs(f-0.25) > 0.01 {
				t.Errorf("%s: action %d frequency %.4f, want 0.25", name, a, f)
			}
		}
		// Sticky walls make the transition matrix symmetric (grids) or the
		// graph is 4-regular (three_rooms): the stationary distribution is
		// uniform over places.
		visits := make([]float64, e.NumPlaces())
		for _, g := range ep.Places {
			visits[g]++
		}
		P := float64(e.NumPlaces())
		for g, n := range visits {
			if f := n / T; math.Abs(f-1/P) > 0.2/P {
				t.Errorf("%s: place %d visit frequency %.4f, want %.4f", name, g, f, 1/P)
			}
		}
	}
	// Sticky moves happen: a corridors walk bumps into walls and borders.
	e := mustNamed(t, "corridors")
	ep := e.Walk(NewRand(1), 1000)
	stays := 0
	for i := range ep.Actions {
		if ep.Places[i] == ep.Places[i+1] {
			stays++
		}
	}
	if stays == 0 {
		t.Error("no sticky step in 1000 corridors steps")
	}
}

func TestWalkStartUniform(t *testing.T) {
	e := mustNamed(t, "room")
	rng := NewRand(11)
	const n = 72000
	counts := make([]float64, e.NumPlaces())
	for range n {
		ep := e.Walk(rng, 1)
		if len(ep.Places) != 1 || len(ep.Actions) != 0 {
			t.Fatalf("1-step episode %+v", ep)
		}
		counts[ep.Places[0]]++
	}
	// Expected 2000 per place, s.d. ~44.
	for g, c := range counts {
		if math.Abs(c-2000) > 250 {
			t.Errorf("start place %d drawn %v times, want ~2000", g, c)
		}
	}
	if ep := e.Walk(rng, 0); len(ep.Places) != 0 || len(ep.Actions) != 0 {
		t.Errorf("Walk(0) = %+v", ep)
	}
}

func TestWalkReproducible(t *testing.T) {
	e := mustNamed(t, "two_rooms")
	a := e.Walk(NewRand(42), 500)
	b := e.Walk(NewRand(42), 500)
	c := e.Walk(NewRand(43), 500)
	if !slices.Equal(a.Places, b.Places) || !slices.Equal(a.Actions, b.Actions) {
		t.Error("same seed, different walks")
	}
	if slices.Equal(a.Actions, c.Actions) {
		t.Error("different seeds, same walk")
	}
}

func TestWalkRegion(t *testing.T) {
	e := mustNamed(t, "cscg_stitched")
	eps := e.TrainingEpisodes(NewRand(5), 4, 20000)
	for i, ep := range eps {
		r := i % 2
		in := map[int]bool{}
		for _, g := range e.Regions[r] {
			in[g] = true
		}
		checkDynamics(t, e, ep, in)
		// The whole region gets visited (the walk is long enough).
		seen := map[int]bool{}
		for _, g := range ep.Places {
			seen[g] = true
		}
		if len(seen) != 48 {
			t.Errorf("episode %d visits %d places of region %d, want 48", i, len(seen), r)
		}
		// Each action is uniform over those that stay in the region: at a
		// place with k of them, each is drawn about 1/k of the time, and
		// the others never.
		drawn := map[int]*[4]int{}
		for t2, a := range ep.Actions {
			g := ep.Places[t2]
			if drawn[g] == nil {
				drawn[g] = new([4]int)
			}
			drawn[g][a]++
		}
		for g, n := range drawn {
			var k, total int
			for a := range 4 {
				if in[e.Next(g, a)] {
					k++
				}
				total += n[a]
			}
			for a := range 4 {
				want := 0.0
				if in[e.Next(g, a)] {
					want = 1 / float64(k)
				}
				if got := float64(n[a]) / float64(total); math.Abs(got-want) > 6*math.Sqrt(0.25/float64(total))+1e-12 {
					t.Errorf("episode %d, place %d: action %d drawn %.3f of %d times, want %.3f", i, g, a, got, total, want)
				}
			}
		}
	}
	// The overlap moves alike in both rooms: every (place, action) step seen
	// in both regions' episodes leads to the same place (it is Next's).
	union := map[[2]int]int{}
	for _, ep := range eps {
		for t2, a := range ep.Actions {
			key := [2]int{ep.Places[t2], a}
			if h, ok := union[key]; ok && h != ep.Places[t2+1] {
				t.Fatalf("place %d, action %d leads to %d and to %d", key[0], a, h, ep.Places[t2+1])
			}
			union[key] = ep.Places[t2+1]
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("WalkRegion(bad region) did not panic")
		}
	}()
	e.WalkRegion(NewRand(1), 10, 2)
}

func TestTrainingEpisodesNoRegions(t *testing.T) {
	e := mustNamed(t, "aliased")
	eps := e.TrainingEpisodes(NewRand(9), 3, 100)
	if len(eps) != 3 {
		t.Fatalf("%d episodes", len(eps))
	}
	for _, ep := range eps {
		if ep.Len() != 100 {
			t.Errorf("episode length %d", ep.Len())
		}
		checkDynamics(t, e, ep, nil)
	}
}

func BenchmarkWalk(b *testing.B) {
	e := mustNamed(b, "two_rooms")
	rng := NewRand(1)
	b.ReportAllocs()
	for b.Loop() {
		e.Walk(rng, 10000)
	}
}

func BenchmarkNamed(b *testing.B) {
	for b.Loop() {
		if _, err := Named("cscg_stitched"); err != nil {
			b.Fatal(err)
		}
	}
}
