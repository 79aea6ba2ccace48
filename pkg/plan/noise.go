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

// ConfusionPrior is the Dirichlet pseudo-count EstimateConfusion adds to
// every cell of the confusion counts: a token never seen in the walk keeps a
// small probability, so no observation is ever impossible.
const ConfusionPrior = 0.5

// EstimateConfusion fits the token confusion matrix C[k][o] = p(o is seen |
// the agent is at a clone of token k), shape [K][K], to an unlabelled walk —
// observations obs [T] and the actions between them [T−1] — by
// expectation–maximisation with the map's transitions held fixed (Baum–Welch
// on the emissions alone). It starts from the uniform misreading model with
// rate start (FilterConfig.Noise) and runs iters rounds of
//
//	γ_t(j) = p(s_t = j | o_{1:T}, a_{1:T−1})                   (forward–backward)
//	C[k][o] ∝ ConfusionPrior + Σ_{t: o_t = o} Σ_{j: token(j) = k} γ_t(j),
//
// returning C and the walk's log-likelihood before every round and after
// the last ([iters+1], non-decreasing up to the prior's pull). Unlike the
// single rate of EstimateNoise, C learns which tokens an encoder confuses:
// the misreadings of images are concentrated on a few tokens.
func (mp *Map) EstimateConfusion(obs []Obs, actions []int, cfg FilterConfig, start float64, iters int) ([][]float64, []float64, error) {
	if len(obs) < 2 {
		return nil, nil, fmt.Errorf("plan: confusion: need a walk of at least 2 observations, got %d", len(obs))
	}
	if len(actions) != len(obs)-1 {
		return nil, nil, fmt.Errorf("plan: confusion: %d observations need %d actions, got %d", len(obs), len(obs)-1, len(actions))
	}
	if !(start > 0 && start < 1) {
		return nil, nil, fmt.Errorf("plan: confusion: starting rate %v outside (0, 1)", start)
	}
	if iters < 1 {
		return nil, nil, fmt.Errorf("plan: confusion: %d rounds; need at least 1", iters)
	}
	for t, o := range obs {
		if o.Token < 0 || o.Token >= mp.K {
			return nil, nil, fmt.Errorf("plan: confusion: observation %d: token %d outside [0, %d)", t, o.Token, mp.K)
		}
	}
	for t, a := range actions {
		if a < 0 || a >= mp.A {
			return nil, nil, fmt.Errorf("plan: confusion: action %d: %d outside [0, %d)", t, a, mp.A)
		}
	}
	c := cfg
	c.Soft, c.Noise, c.Confusion = false, start, nil
	var lls []float64
	for round := 0; ; round++ {
		gamma, ll, err := mp.smooth(obs, actions, c)
		if err != nil {
			return nil, nil, err
		}
		lls = append(lls, ll)
		if round == iters {
			return c.Confusion, lls, nil
		}
		counts := make([][]float64, mp.K)
		for k := range counts {
			counts[k] = make([]float64, mp.K)
			for o := range counts[k] {
				counts[k][o] = ConfusionPrior
			}
		}
		for t, g := range gamma {
			o := obs[t].Token
			for j, p := range g {
				if k := mp.token[j]; k >= 0 {
					counts[k][o] += p
				}
			}
		}
		for _, row := range counts {
			z := 0.0
			for _, v := range row {
				z += v
			}
			for o := range row {
				row[o] /= z
			}
		}
		c.Confusion = counts
	}
}

// uniformConfusion is the confusion matrix of the uniform misreading rate
// eps: 1−eps on the diagonal, eps/(K−1) elsewhere (eps = 0: the identity, the
// model's own deterministic emissions).
func uniformConfusion(k int, eps float64) [][]float64 {
	c := make([][]float64, k)
	for i := range c {
		c[i] = make([]float64, k)
		for o := range c[i] {
			c[i][o] = eps / float64(max(k-1, 1))
		}
		c[i][i] = 1 - eps
		if k == 1 {
			c[i][i] = 1
		}
	}
	return c
}

// smooth returns the smoothed posteriors γ_t(j) = p(s_t = j | o_{1:T},
// a_{1:T−1}) [T][N] under cfg's prior and emissions, and log p(o_{1:T} |
// a_{1:T−1}): the normalised forward recursion of Filter and the matching
// backward one. It fails when an observation has probability zero.
func (mp *Map) smooth(obs []Obs, actions []int, cfg FilterConfig) ([][]float64, float64, error) {
	f, err := mp.NewFilter(cfg)
	if err != nil {
		return nil, 0, err
	}
	n, T := mp.N, len(obs)
	alpha := make([][]float64, T)
	emit := make([][]float64, T)
	for t := range obs {
		if t == 0 {
			err = f.Observe(obs[0])
		} else {
			err = f.Step(actions[t-1], obs[t])
		}
		if err != nil {
			return nil, 0, fmt.Errorf("plan: smoothing: step %d: %w", t, err)
		}
		if f.Resets() > 0 {
			return nil, 0, fmt.Errorf("plan: smoothing: observation %d has zero probability under the map", t)
		}
		alpha[t] = f.Belief()
		emit[t] = append([]float64(nil), f.emit...)
	}
	// Backward: β_T = 1, β_t(i) ∝ Σ_j T[a_t,i,j] e_{t+1}(j) β_{t+1}(j),
	// normalised; γ_t ∝ α_t β_t.
	beta := make([]float64, n)
	next := make([]float64, n)
	for i := range beta {
		beta[i] = 1
	}
	gamma := make([][]float64, T)
	for t := T - 1; t >= 0; t-- {
		if t < T-1 {
			for j := range next {
				next[j] = emit[t+1][j] * beta[j]
			}
			a := actions[t]
			z := 0.0
			for i := range n {
				row := mp.T[(a*n+i)*n : (a*n+i+1)*n]
				s := 0.0
				for j, v := range row {
					s += v * next[j]
				}
				beta[i] = s
				z += s
			}
			for i := range beta {
				beta[i] /= z
			}
		}
		g := alpha[t]
		z := 0.0
		for j := range g {
			g[j] *= beta[j]
			z += g[j]
		}
		for j := range g {
			g[j] /= z
		}
		gamma[t] = g
	}
	return gamma, f.LogLikelihood(), nil
}
