package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestEstimateNoise: on the exact model of corridors, a walk whose tokens are
// replaced by a uniform other token at a known rate r gives back r (the grid's
// nearest value), and an uncorrupted walk the smallest ε.
func TestEstimateNoise(t *testing.T) {
	mp, env, _ := exactMap(t, "corridors", 1)
	sym := symbols(env)
	for _, r := range []float64{0, 0.05, 0.2} {
		rng := rand.New(rand.NewPCG(7, uint64(r*100)))
		ep := env.Walk(gridworld.NewRand(11), 5000)
		obs := make([]Obs, len(ep.Places))
		for i, g := range ep.Places {
			tok := sym[g]
			if rng.Float64() < r {
				tok = (tok + 1 + rng.IntN(mp.K-1)) % mp.K // a uniform other token
			}
			obs[i] = Obs{Token: tok}
		}
		got, ll, err := mp.EstimateNoise(obs, ep.Actions, FilterConfig{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := r
		if r == 0 {
			want = DefaultNoiseGrid[0]
		}
		if got != want {
			t.Errorf("misreading rate %v: estimated %v (log-likelihoods %v)", r, got, ll)
		}
	}
	if _, _, err := mp.EstimateNoise([]Obs{{Token: 0}}, nil, FilterConfig{}, []float64{0}); err == nil {
		t.Error("ε = 0 in the grid gave no error")
	}
}
