package gridworld

import (
	"fmt"
	"math/rand/v2"
)

// Episode is one random walk: Places[t] = g_t, Obs[t] = class of g_t
// (symbolic observation), Actions[t] = a_t moving from t to t+1.
// len(Actions) == len(Places)-1 (all empty for a zero-length episode).
type Episode struct {
	Places, Obs, Actions []int
}

// Len returns the number of steps T.
func (ep Episode) Len() int { return len(ep.Places) }

// NewRand returns a PCG generator for seed; walks drawn from it are
// reproducible.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Walk draws an episode of `steps` observations (T = steps; none when
// steps <= 0): a uniform start place, then uniform random actions among the
// ActionsAt(g) actions of the current place, with sticky dynamics (Next).
func (e *Env) Walk(rng *rand.Rand, steps int) Episode {
	return e.walk(rng, steps, nil, nil)
}

// WalkRegion is Walk restricted to e.Regions[region]: the start is uniform
// over the region's places, and each action is uniform over the actions of
// the current place that do not lead out of the region (as the original
// CSCG's no_left/no_right/no_up/no_down lists do): a move out of the region
// is never taken, so a place walked in two regions moves alike in both. It
// panics when region is not a valid index.
func (e *Env) WalkRegion(rng *rand.Rand, steps, region int) Episode {
	if region < 0 || region >= len(e.Regions) {
		panic(fmt.Sprintf("gridworld: %s has %d regions, no region %d", e.Name, len(e.Regions), region))
	}
	reg := e.Regions[region]
	in := make([]bool, e.NumPlaces())
	for _, g := range reg {
		in[g] = true
	}
	return e.walk(rng, steps, reg, in)
}

// TrainingEpisodes draws n episodes of `steps` observations; with Regions,
// episode i walks region i mod len(Regions) (round-robin).
func (e *Env) TrainingEpisodes(rng *rand.Rand, n, steps int) []Episode {
	eps := make([]Episode, n)
	for i := range eps {
		if len(e.Regions) > 0 {
			eps[i] = e.WalkRegion(rng, steps, i%len(e.Regions))
		} else {
			eps[i] = e.Walk(rng, steps)
		}
	}
	return eps
}

// walk draws a walk starting uniformly in starts (all places when nil) and
// staying inside in (everywhere when nil).
func (e *Env) walk(rng *rand.Rand, steps int, starts []int, in []bool) Episode {
	if steps <= 0 {
		return Episode{Places: []int{}, Obs: []int{}, Actions: []int{}}
	}
	ep := Episode{
		Places:  make([]int, steps),
		Obs:     make([]int, steps),
		Actions: make([]int, steps-1),
	}
	var g int
	if starts != nil {
		g = starts[rng.IntN(len(starts))]
	} else {
		g = rng.IntN(e.NumPlaces())
	}
	A := e.numActions
	var ok []int // actions available in the region
	for t := range steps {
		ep.Places[t] = g
		ep.Obs[t] = e.Class[g]
		if t == steps-1 {
			break
		}
		var a int
		if in == nil {
			a = rng.IntN(e.avail[g])
		} else { // uniform over the actions that stay in the region
			ok = e.actionsIn(g, in, ok)
			a = ok[rng.IntN(len(ok))]
		}
		ep.Actions[t] = a
		g = e.succ[g*A+a]
	}
	return ep
}
