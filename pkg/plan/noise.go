package plan

import (
	"fmt"
	"math"
)

// DefaultNoiseGrid are the misreading rates EstimateNoise compares.
var DefaultNoiseGrid = []float64{0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5}

// EstimateNoise returns the token misreading rate ε of grid (DefaultNoiseGrid
// when empty) under which the filter (hard emissions, cfg's prior) gives an
// unlabelled walk — observations obs [T] and the actions between them [T−1] —
// the highest likelihood, with the log-likelihood of every ε. It needs no
// labels: only what the agent sees and does. A map learned from images has
// deterministic emissions, but the encoder misreads some images; ε is how
// often, as the map explains the walk.
func (mp *Map) EstimateNoise(obs []Obs, actions []int, cfg FilterConfig, grid []float64) (float64, []float64, error) {
	if len(grid) == 0 {
		grid = DefaultNoiseGrid
	}
	best, bestLL := math.NaN(), math.Inf(-1)
	ll := make([]float64, len(grid))
	for i, eps := range grid {
		if !(eps > 0 && eps < 1) {
			return 0, nil, fmt.Errorf("plan: noise grid value %v outside (0, 1)", eps)
		}
		c := cfg
		c.Soft, c.Noise = false, eps
		f, err := mp.FilterHistory(obs, actions, c)
		if err != nil {
			return 0, nil, err
		}
		ll[i] = f.LogLikelihood()
		if ll[i] > bestLL {
			best, bestLL = eps, ll[i]
		}
	}
	if math.IsNaN(best) {
		return 0, nil, fmt.Errorf("plan: no misreading rate of %v explains the walk (log-likelihoods %v)", grid, ll)
	}
	return best, ll, nil
}
