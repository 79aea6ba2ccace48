package plan

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
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

// bruteForceMarginals enumerates every state path and returns p(s_t = j | o,
// a) for every t [T][N] and log Σ_paths p(s, o | a).
func bruteForceMarginals(m *chmm.Model, prior []float64, emit func(t, s int) float64, actions []int) ([][]float64, float64) {
	n, T := m.N(), len(actions)+1
	tr := m.Transitions()
	marg := make([][]float64, T)
	for t := range marg {
		marg[t] = make([]float64, n)
	}
	total := 0.0
	path := make([]int, T)
	var rec func(t int, w float64)
	rec = func(t int, w float64) {
		if t == T {
			for u, s := range path {
				marg[u][s] += w
			}
			total += w
			return
		}
		for s := range n {
			step := prior[s]
			if t > 0 {
				step = tr[(actions[t-1]*n+path[t-1])*n+s]
			}
			if v := w * step * emit(t, s); v > 0 {
				path[t] = s
				rec(t+1, v)
			}
		}
	}
	rec(0, 1)
	for t := range marg {
		for s := range marg[t] {
			marg[t][s] /= total
		}
	}
	return marg, math.Log(total)
}

// randomConfusion is a [k][k] matrix of random probability rows.
func randomConfusion(k int, rng *rand.Rand) [][]float64 {
	c := make([][]float64, k)
	for i := range c {
		c[i] = make([]float64, k)
		z := 0.0
		for o := range c[i] {
			c[i][o] = rng.Float64() + 0.01
			z += c[i][o]
		}
		for o := range c[i] {
			c[i][o] /= z
		}
	}
	return c
}

// The smoothed posteriors behind EstimateConfusion's E-step equal the
// marginals of brute-force path enumeration, and so does the likelihood.
func TestSmoothMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	const A, T = 2, 5
	for trial := range 20 {
		m := randomModel(t, []int{2, 1, 2}, A, 0.3*float64(trial%2), rng)
		mp, err := NewMap(m)
		if err != nil {
			t.Fatal(err)
		}
		conf := randomConfusion(mp.K, rng)
		cfg := FilterConfig{Prior: PriorStationary, Confusion: conf}
		obs := make([]Obs, T)
		actions := make([]int, T-1)
		for i := range obs {
			obs[i] = Obs{Token: rng.IntN(mp.K)}
		}
		for i := range actions {
			actions[i] = rng.IntN(A)
		}
		emit := func(step, s int) float64 {
			if k := m.Token(s); k >= 0 {
				return conf[k][obs[step].Token]
			}
			return 0
		}
		want, wantLL := bruteForceMarginals(m, mp.Stationary, emit, actions)
		got, ll, err := mp.smooth(obs, actions, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for u := range want {
			for s := range want[u] {
				if math.Abs(got[u][s]-want[u][s]) > 1e-12 {
					t.Errorf("trial %d: γ_%d(%d) = %.15f, brute force %.15f", trial, u, s, got[u][s], want[u][s])
				}
			}
		}
		if math.Abs(ll-wantLL) > 1e-9 {
			t.Errorf("trial %d: log-likelihood %.12f, brute force %.12f", trial, ll, wantLL)
		}
	}
}

// TestEstimateConfusion: on the exact model of corridors, a walk read through
// a known confusion matrix — one token often misread as one other, the rest
// rarely — gives that matrix back, and every EM round raises the objective it
// maximises (log-likelihood + the Dirichlet prior's log density).
func TestEstimateConfusion(t *testing.T) {
	mp, env, _ := exactMap(t, "corridors", 1)
	sym := symbols(env)
	k := mp.K
	truth := uniformConfusion(k, 0.02)
	truth[1][1], truth[1][2] = 0.75, 0.25-0.02*float64(k-2)/float64(k-1) // token 1 often reads as 2
	for o := range k {
		if o != 1 && o != 2 {
			truth[1][o] = 0.02 / float64(k-1)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ep := env.Walk(gridworld.NewRand(13), 20000)
	obs := make([]Obs, len(ep.Places))
	for i, g := range ep.Places {
		u, tok := rng.Float64(), 0
		for c := truth[sym[g]]; tok < k-1 && u >= c[tok]; tok++ {
			u -= c[tok]
		}
		obs[i] = Obs{Token: tok}
	}
	const iters = 8
	got, lls, err := mp.EstimateConfusion(obs, ep.Actions, FilterConfig{}, 0.1, iters)
	if err != nil {
		t.Fatal(err)
	}
	if len(lls) != iters+1 {
		t.Fatalf("%d log-likelihoods for %d rounds", len(lls), iters)
	}
	for i := range truth {
		for o := range truth[i] {
			if math.Abs(got[i][o]-truth[i][o]) > 0.02 {
				t.Errorf("C[%d][%d] = %.3f, true %.3f", i, o, got[i][o], truth[i][o])
			}
		}
	}
	// The MAP objective log p(o | C) + (ConfusionPrior) Σ log C is
	// non-decreasing over the rounds (recomputed here from each round's C).
	prev := math.Inf(-1)
	c := uniformConfusion(k, 0.1)
	for r := range iters + 1 {
		if r > 0 {
			c, _, err = mp.EstimateConfusion(obs, ep.Actions, FilterConfig{}, 0.1, r)
			if err != nil {
				t.Fatal(err)
			}
		}
		f, err := mp.FilterHistory(obs, ep.Actions, FilterConfig{Confusion: c})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(f.LogLikelihood()-lls[r]) > 1e-6*math.Abs(lls[r]) {
			t.Errorf("round %d: reported log-likelihood %.3f, filter %.3f", r, lls[r], f.LogLikelihood())
		}
		obj := f.LogLikelihood()
		for _, row := range c {
			for _, v := range row {
				obj += ConfusionPrior * math.Log(v)
			}
		}
		if r > 0 && obj < prev-1e-6 {
			t.Errorf("round %d: objective fell from %.6f to %.6f", r, prev, obj)
		}
		prev = obj
	}
	if !(lls[iters] > lls[0]+100) {
		t.Errorf("log-likelihood %.1f → %.1f: EM learned nothing", lls[0], lls[iters])
	}
}

func TestEstimateConfusionErrors(t *testing.T) {
	mp, _, _ := exactMap(t, "corridors", 1)
	two := []Obs{{Token: 0}, {Token: 1}}
	for _, tc := range []struct {
		name    string
		obs     []Obs
		actions []int
		start   float64
		iters   int
		want    string
	}{
		{"short walk", two[:1], nil, 0.1, 3, "at least 2 observations"},
		{"actions", two, []int{0, 1}, 0.1, 3, "need 1 actions, got 2"},
		{"start rate", two, []int{0}, 0, 3, "starting rate 0"},
		{"rounds", two, []int{0}, 0.1, 0, "0 rounds"},
		{"token", []Obs{{Token: 0}, {Token: mp.K}}, []int{0}, 0.1, 3, "observation 1: token"},
		{"action", two, []int{mp.A}, 0.1, 3, "action 0:"},
	} {
		_, _, err := mp.EstimateConfusion(tc.obs, tc.actions, FilterConfig{}, tc.start, tc.iters)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	bad := uniformConfusion(mp.K, 0.1)
	bad[2][0] += 0.5
	if _, err := mp.NewFilter(FilterConfig{Confusion: bad}); err == nil || !strings.Contains(err.Error(), "row 2 sums") {
		t.Errorf("unnormalised confusion row: error %v", err)
	}
	if _, err := mp.NewFilter(FilterConfig{Confusion: bad[:2]}); err == nil || !strings.Contains(err.Error(), "2-row confusion matrix") {
		t.Errorf("short confusion matrix: error %v", err)
	}
}
