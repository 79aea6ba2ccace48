package plan

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// bruteForcePosterior enumerates every state path s_1..s_T (sink included)
// and returns p(s_T | o, a) and log Σ_paths p(s, o | a), where a path's weight
// is prior(s_1) e_1(s_1) Π_t T[a_t, s_t, s_{t+1}] e_{t+1}(s_{t+1}).
func bruteForcePosterior(m *chmm.Model, prior []float64, emit func(t, s int) float64, actions []int) ([]float64, float64) {
	marg, ll := bruteForceMarginals(m, prior, emit, actions)
	return marg[len(marg)-1], ll
}

func TestFilterMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	clones := []int{2, 1, 2}
	const A, T = 2, 5
	for _, tc := range []struct {
		name  string
		cfg   FilterConfig
		zeros float64
	}{
		{"hard, pi prior", FilterConfig{Prior: PriorPi}, 0},
		{"hard, pi prior, exact zeros", FilterConfig{Prior: PriorPi}, 0.4},
		{"hard, uniform prior", FilterConfig{Prior: PriorUniform}, 0},
		{"hard, stationary prior", FilterConfig{Prior: PriorStationary}, 0.3},
		{"noisy tokens", FilterConfig{Prior: PriorPi, Noise: 0.2}, 0.3},
		{"soft emissions", FilterConfig{Prior: PriorPi, Soft: true}, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for trial := range 5 {
				m := randomModel(t, clones, A, tc.zeros, rng)
				mp, err := NewMap(m)
				if err != nil {
					t.Fatal(err)
				}
				// A sequence the model can emit: sample a state path.
				obs := make([]Obs, T)
				actions := make([]int, T-1)
				tr := m.Transitions()
				n := m.N()
				s := rng.IntN(n - 1)
				for step := range T {
					if step > 0 {
						a := rng.IntN(A)
						actions[step-1] = a
						// Next state ∝ T[a,s,·] over real states.
						u, acc := rng.Float64(), 0.0
						row := tr[(a*n+s)*n : (a*n+s)*n+n-1]
						sum := 0.0
						for _, v := range row {
							sum += v
						}
						for j, v := range row {
							acc += v / sum
							if u < acc || j == n-2 {
								s = j
								break
							}
						}
					}
					obs[step] = Obs{Token: m.Token(s), LogRho: make([]float32, m.K())}
					for k := range obs[step].LogRho {
						obs[step].LogRho[k] = float32(rng.NormFloat64())
					}
				}
				prior := make([]float64, n)
				switch tc.cfg.Prior {
				case PriorPi:
					copy(prior, m.Pi())
					prior[n-1] = 0
				case PriorUniform:
					for i := range n - 1 {
						prior[i] = 1
					}
				case PriorStationary:
					copy(prior, mp.Stationary)
				}
				emit := func(step, s int) float64 {
					k := m.Token(s)
					switch {
					case k < 0:
						return 0
					case tc.cfg.Soft:
						return math.Exp(float64(obs[step].LogRho[k]))
					case k == obs[step].Token:
						return 1 - tc.cfg.Noise
					default:
						return tc.cfg.Noise / float64(m.K()-1)
					}
				}
				want, wantLL := bruteForcePosterior(m, prior, emit, actions)
				if math.IsNaN(wantLL) || math.IsInf(wantLL, -1) {
					continue // a zero-probability draw: covered by TestFilterReset
				}
				f, err := mp.FilterHistory(obs, actions, tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				got := f.Belief()
				for s := range want {
					if math.Abs(got[s]-want[s]) > 1e-12 {
						t.Errorf("trial %d: belief[%d] = %.15f, brute force %.15f", trial, s, got[s], want[s])
					}
				}
				if f.Resets() != 0 {
					t.Errorf("trial %d: %d resets", trial, f.Resets())
				}
				// The log-likelihood is the paper's ℓ up to the emission scale:
				// hard noiseless emissions with π̄ are exactly chmm.LogLikelihood.
				if !tc.cfg.Soft && tc.cfg.Noise == 0 && tc.cfg.Prior == PriorPi {
					seq := chmm.Sequence{Obs: make([]int, T), Actions: actions}
					for i, o := range obs {
						seq.Obs[i] = o.Token
					}
					ll, err := chmm.LogLikelihood(m, []chmm.Sequence{seq})
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(f.LogLikelihood()-ll) > 1e-9 {
						t.Errorf("trial %d: filter log-likelihood %.12f, chmm %.12f", trial, f.LogLikelihood(), ll)
					}
				}
				if !tc.cfg.Soft && tc.cfg.Prior != PriorUniform && math.Abs(f.LogLikelihood()-wantLL) > 1e-9 {
					t.Errorf("trial %d: filter log-likelihood %.12f, brute force %.12f", trial, f.LogLikelihood(), wantLL)
				}
			}
		})
	}
}

// With one-hot ρ the soft filter is the hard filter (paper Sec. 3.5,
// consistency).
func TestFilterSoftOneHotIsHard(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := randomModel(t, []int{3, 2, 2}, 3, 0, rng)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	var obs []Obs
	var actions []int
	for step := range 30 {
		k := rng.IntN(m.K())
		rho := make([]float32, m.K())
		for j := range rho {
			rho[j] = float32(math.Inf(-1))
		}
		rho[k] = 0
		obs = append(obs, Obs{Token: k, LogRho: rho})
		if step > 0 {
			actions = append(actions, rng.IntN(3))
		}
	}
	hard, err := mp.FilterHistory(obs, actions, FilterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	soft, err := mp.FilterHistory(obs, actions, FilterConfig{Soft: true})
	if err != nil {
		t.Fatal(err)
	}
	h, s := hard.Belief(), soft.Belief()
	for i := range h {
		if h[i] != s[i] {
			t.Errorf("belief[%d]: hard %v, soft one-hot %v", i, h[i], s[i])
		}
	}
}

// An observation the model says is impossible restarts the filter.
func TestFilterReset(t *testing.T) {
	// Two tokens, one clone each; action 0 keeps the token, so seeing the
	// other token after it has probability 0.
	T := [][][]float64{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}
	m := denseModel(t, []int{1, 1}, []float64{0.5, 0.5, 0}, T)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mp.FilterHistory([]Obs{{Token: 0}, {Token: 0}, {Token: 1}}, []int{0, 0}, FilterConfig{Prior: PriorUniform})
	if err != nil {
		t.Fatal(err)
	}
	if f.Resets() != 1 || !math.IsInf(f.LogLikelihood(), -1) {
		t.Errorf("resets %d, log-likelihood %v; want 1 and -Inf", f.Resets(), f.LogLikelihood())
	}
	if b := f.Belief(); b[1] != 1 {
		t.Errorf("belief after reset %v, want all on state 1", b)
	}
	// With a misreading rate the same history is possible, and no reset happens.
	f, err = mp.FilterHistory([]Obs{{Token: 0}, {Token: 0}, {Token: 1}}, []int{0, 0}, FilterConfig{Prior: PriorUniform, Noise: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if f.Resets() != 0 {
		t.Errorf("noisy filter: %d resets", f.Resets())
	}
	// 2 steps: p(o) = ½·1·(0.9·0.9·0.1) + ½·(0.1·0.1·0.9) = 0.045.
	if want := math.Log(0.5*0.9*0.9*0.1 + 0.5*0.1*0.1*0.9); math.Abs(f.LogLikelihood()-want) > 1e-12 {
		t.Errorf("noisy log-likelihood %v, want %v", f.LogLikelihood(), want)
	}
}

func TestFilterErrors(t *testing.T) {
	m := randomModel(t, []int{2, 1}, 2, 0, rand.New(rand.NewPCG(1, 1)))
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mp.NewFilter(FilterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Step(0, Obs{Token: 0}); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Step before Observe: %v", err)
	}
	for _, tc := range []struct {
		name string
		cfg  FilterConfig
		obs  []Obs
		acts []int
		want string
	}{
		{"token out of range", FilterConfig{}, []Obs{{Token: 2}}, nil, "token 2 outside"},
		{"negative token", FilterConfig{}, []Obs{{Token: -1}}, nil, "token -1 outside"},
		{"action out of range", FilterConfig{}, []Obs{{Token: 0}, {Token: 1}}, []int{5}, "action 5 outside"},
		{"missing actions", FilterConfig{}, []Obs{{Token: 0}, {Token: 1}}, nil, "need 1 actions"},
		{"empty history", FilterConfig{}, nil, nil, "empty history"},
		{"soft without log ρ", FilterConfig{Soft: true}, []Obs{{Token: 0}}, nil, "soft emissions need log ρ over 2 tokens"},
		{"NaN log ρ", FilterConfig{Soft: true}, []Obs{{LogRho: []float32{0, float32(math.NaN())}}}, nil, "log ρ[1]"},
		{"bad noise", FilterConfig{Noise: 1}, []Obs{{Token: 0}}, nil, "noise 1 outside"},
		{"bad prior", FilterConfig{Prior: 9}, []Obs{{Token: 0}}, nil, "unknown prior"},
	} {
		_, err := mp.FilterHistory(tc.obs, tc.acts, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The stationary distribution is a fixed point of the random-policy chain
// M[i,j] ∝ Σ_a T[a,i,j] over real j.
func TestStationary(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomModel(t, []int{3, 2, 4}, 3, 0.5, rng)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	n := mp.N
	p := mp.Stationary
	if p[n-1] != 0 {
		t.Errorf("sink has stationary mass %v", p[n-1])
	}
	sum := 0.0
	for _, v := range p {
		sum += v
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("stationary sums to %v", sum)
	}
	for j := range n - 1 {
		pm := 0.0
		for i := range n - 1 {
			row, rowSum := 0.0, 0.0
			for a := range mp.A {
				row += mp.trans(a, i, j)
				for k := range n - 1 {
					rowSum += mp.trans(a, i, k)
				}
			}
			pm += p[i] * row / rowSum
		}
		if math.Abs(pm-p[j]) > 1e-9 {
			t.Errorf("(pM)[%d] = %v, p[%d] = %v", j, pm, j, p[j])
		}
	}
}
