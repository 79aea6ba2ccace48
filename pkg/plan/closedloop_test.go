package plan

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// checkReport checks the invariants of every report and the success and
// path-ratio bounds.
func checkReport(t *testing.T, rep *Report, minSuccess, maxRatio float64) {
	t.Helper()
	for _, m := range rep.Modes {
		t.Logf("%s %s: success %.3f, ratio %.3f ± %.3f, unreachable %d, ambiguous %d",
			rep.Env, m.Mode, m.SuccessRate, m.PathRatioMean, m.PathRatioSD, m.Unreachable, m.Ambiguous)
		if m.SuccessRate < minSuccess {
			t.Errorf("%s %s: success rate %.3f < %.3f", rep.Env, m.Mode, m.SuccessRate, minSuccess)
		}
		if m.PathRatioMean > maxRatio {
			t.Errorf("%s %s: path ratio %.3f > %.3f", rep.Env, m.Mode, m.PathRatioMean, maxRatio)
		}
		if len(m.Trials) != m.Pairs {
			t.Errorf("%s: %d trials for %d pairs", m.Mode, len(m.Trials), m.Pairs)
		}
		for _, tr := range m.Trials {
			if tr.Success && tr.Steps < tr.Shortest {
				t.Errorf("%s pair %d: reached the goal in %d steps, shorter than the true %d", m.Mode, tr.Pair, tr.Steps, tr.Shortest)
			}
			if tr.Steps > tr.Budget || tr.Shortest < 1 || tr.Start == tr.Goal {
				t.Errorf("%s pair %d: steps %d budget %d shortest %d start %d goal %d", m.Mode, tr.Pair, tr.Steps, tr.Budget,
					tr.Shortest, tr.Start, tr.Goal)
			}
			if tr.Success != (tr.End == tr.Goal) {
				t.Errorf("%s pair %d: success %v but end %d, goal %d", m.Mode, tr.Pair, tr.Success, tr.End, tr.Goal)
			}
		}
	}
}

// The exact model of an environment plans perfectly once localised. (MPC
// may take a few extra steps to look where the 20 observations leave two
// places plausible, as in room's uniform interior: the bound 1.1.)
func TestClosedLoopExactModel(t *testing.T) {
	for _, tc := range []struct {
		env string
		dup int
	}{
		{"aliased", 2}, {"room", 1}, {"cscg_cliques", 1},
	} {
		env, err := gridworld.Named(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := envModel(t, env, tc.dup)
		mp, err := NewMap(m)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultEvalConfig()
		cfg.Pairs = 100
		rep, err := Evaluate(mp, env, symbols(env), cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, rep, 0.95, 1.1)
	}
}

// trainAliased learns the aliased map by EM from symbolic walks.
func trainAliased(t testing.TB) (*chmm.Model, *gridworld.Env) {
	t.Helper()
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	sym := symbols(env)
	var seqs []chmm.Sequence
	for _, ep := range env.TrainingEpisodes(rand.New(rand.NewPCG(1, 1)), 2, 3000) {
		obs := make([]int, len(ep.Places))
		for i, g := range ep.Places {
			obs[i] = sym[g]
		}
		seqs = append(seqs, chmm.Sequence{Obs: obs, Actions: ep.Actions})
	}
	m := chmm.New(chmm.UniformClones(4, 5), env.NumActions(), rand.New(rand.NewPCG(1, 2)))
	if _, err := chmm.TrainEM(m, seqs, chmm.DefaultEMConfig()); err != nil {
		t.Fatal(err)
	}
	return m, env
}

// A map learned by EM from symbols reaches demonstrated goals.
func TestClosedLoopLearnedAliased(t *testing.T) {
	m, env := trainAliased(t)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []Method{BFS, MaxProduct} {
		cfg := DefaultEvalConfig()
		cfg.Plan.Method = method
		rep, err := Evaluate(mp, env, symbols(env), cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, rep, 0.95, 1.1)
	}
}

// noisyPool is an image-like observer for the exact aliased model: each
// class has 20 "images"; one in ten is misread as the next token, and every
// image's log ρ is peaked on its token but not one-hot.
func noisyPool(t *testing.T, env *gridworld.Env) *Pool {
	t.Helper()
	sym := symbols(env)
	k := 4
	var classes []int
	var obs []Obs
	for g, c := range env.Class {
		if slicesIndex(classes, c) >= 0 {
			continue
		}
		classes = append(classes, c)
		for i := range 20 {
			tok := sym[g]
			if i%10 == 0 {
				tok = (tok + 1) % k
			}
			rho := make([]float32, k)
			for j := range rho {
				rho[j] = float32(math.Log(0.1 / 3))
			}
			rho[tok] = float32(math.Log(0.9))
			obs = append(obs, Obs{Token: tok, LogRho: rho})
		}
	}
	imageClass := make([]int, 0, len(obs))
	for _, c := range classes {
		for range 20 {
			imageClass = append(imageClass, c)
		}
	}
	p, err := NewPool(env.Class, imageClass, obs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func slicesIndex(x []int, v int) int {
	for i, y := range x {
		if y == v {
			return i
		}
	}
	return -1
}

// With 10% misread observations, soft emissions (or hard ones with a
// misreading rate) keep the agent localised; noiseless hard emissions do worse.
func TestClosedLoopNoisyObservations(t *testing.T) {
	mp, env, _ := exactMap(t, "aliased", 1)
	pool := noisyPool(t, env)
	rate := map[string]float64{}
	for _, tc := range []struct {
		name string
		f    FilterConfig
	}{
		{"hard", FilterConfig{}},
		{"noisy hard", FilterConfig{Noise: 0.1}},
		{"soft", FilterConfig{Soft: true}},
		{"learned confusion", FilterConfig{Confusion: learnedConfusion(t, mp, env, pool)}},
	} {
		cfg := DefaultEvalConfig()
		cfg.Pairs, cfg.Modes, cfg.Filter = 100, []Mode{MPC}, tc.f
		rep, err := Evaluate(mp, env, pool, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rate[tc.name] = rep.Modes[0].SuccessRate
		t.Logf("%s: success %.2f, resets %d", tc.name, rep.Modes[0].SuccessRate, rep.Modes[0].Resets)
	}
	if rate["soft"] < 0.9 || rate["noisy hard"] < 0.9 || rate["learned confusion"] < 0.9 {
		t.Errorf("success with a noise model: soft %.2f, noisy hard %.2f, learned confusion %.2f; want ≥ 0.9",
			rate["soft"], rate["noisy hard"], rate["learned confusion"])
	}
	if rate["hard"] >= rate["soft"] {
		t.Errorf("noiseless hard emissions (%.2f) should do worse than soft ones (%.2f) on misread tokens", rate["hard"], rate["soft"])
	}
}

// learnedConfusion fits the confusion matrix to a 3,000-step walk of pool's
// observations (its own seed) and checks that it learned the pool's
// misreading: one image in ten shows the next token.
func learnedConfusion(t *testing.T, mp *Map, env *gridworld.Env, pool *Pool) [][]float64 {
	t.Helper()
	ep := env.Walk(gridworld.NewRand(77), 3000)
	rng := rand.New(rand.NewPCG(77, 1))
	obs := make([]Obs, len(ep.Places))
	for i, g := range ep.Places {
		obs[i] = pool.Observe(rng, g)
	}
	c, _, err := mp.EstimateConfusion(obs, ep.Actions, FilterConfig{}, 0.05, 10)
	if err != nil {
		t.Fatal(err)
	}
	for k := range c {
		if math.Abs(c[k][k]-0.9) > 0.05 || math.Abs(c[k][(k+1)%mp.K]-0.1) > 0.05 {
			t.Errorf("learned confusion row %d = %.3f; want 0.9 on the diagonal and 0.1 on the next token", k, c[k])
		}
	}
	return c
}

// Looking before stopping (EvalConfig.ArriveMass) turns the exact room
// model's stops on a belief split between two interior places into
// successes; stopping on any majority (arrival mass ≈ 0) loses them.
func TestClosedLoopLooksBeforeStopping(t *testing.T) {
	mp, env, _ := exactMap(t, "room", 1)
	rate := map[float64]float64{}
	looks := map[float64]int{}
	for _, am := range []float64{1e-9, DefaultArriveMass} {
		cfg := DefaultEvalConfig()
		cfg.Pairs, cfg.Modes, cfg.ArriveMass = 200, []Mode{MPC}, am
		rep, err := Evaluate(mp, env, symbols(env), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rate[am] = rep.Modes[0].SuccessRate
		for _, tr := range rep.Modes[0].Trials {
			looks[am] += tr.Looks
		}
		t.Logf("arrival mass %g: success %.3f, ratio %.3f, %d looks", am, rep.Modes[0].SuccessRate, rep.Modes[0].PathRatioMean, looks[am])
	}
	if looks[1e-9] != 0 || looks[DefaultArriveMass] == 0 {
		t.Errorf("looks: %d without an arrival mass, %d with; want 0 and some", looks[1e-9], looks[DefaultArriveMass])
	}
	if !(rate[DefaultArriveMass] > rate[1e-9]) {
		t.Errorf("success %.3f looking first, %.3f without: looking should help", rate[DefaultArriveMass], rate[1e-9])
	}
}

func TestEvaluateDeterministicAndPaired(t *testing.T) {
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := envModel(t, env, 1)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultEvalConfig()
	cfg.Pairs, cfg.Seed = 30, 9
	calls := 0
	cfg.Progress = func(done, total int) { calls++ }
	a, err := Evaluate(mp, env, symbols(env), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 30 {
		t.Errorf("progress called %d times for 30 pairs", calls)
	}
	cfg.Progress = nil
	b, err := Evaluate(mp, env, symbols(env), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Config.Progress = nil
	if !reflect.DeepEqual(a, b) {
		t.Error("two evaluations with the same seed differ")
	}
	open, mpc := a.Modes[0].Trials, a.Modes[1].Trials
	for i := range open {
		if open[i].Start != mpc[i].Start || open[i].Goal != mpc[i].Goal || open[i].GoalMass != mpc[i].GoalMass {
			t.Errorf("pair %d differs between modes: %+v vs %+v", i, open[i], mpc[i])
		}
	}
	cfg.Seed = 10
	c, err := Evaluate(mp, env, symbols(env), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Modes[0].Trials, c.Modes[0].Trials) {
		t.Error("another seed gives the same pairs")
	}
}

func TestDistancesAndDemoWalks(t *testing.T) {
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	d := Distances(env)
	// Places: row 0 = 0..4, rows 1-3 = (5,6,7), (8,9,10), (11,12,13), row 4 = 14..18.
	for _, tc := range []struct{ g, h, want int }{
		{0, 4, 4}, {0, 18, 8}, {2, 16, 4}, {5, 7, 6}, {9, 9, 0}, {14, 0, 4},
	} {
		if d[tc.g][tc.h] != tc.want {
			t.Errorf("d(%d, %d) = %d, want %d", tc.g, tc.h, d[tc.g][tc.h], tc.want)
		}
	}
	for g := range d {
		for h := range d {
			if d[g][h] != d[h][g] {
				t.Errorf("d(%d,%d) = %d but d(%d,%d) = %d", g, h, d[g][h], h, g, d[h][g])
			}
		}
	}
	pred := predecessors(env)
	rng := rand.New(rand.NewPCG(2, 2))
	starts := map[int]bool{}
	for range 200 {
		goal := rng.IntN(env.NumPlaces())
		places, actions := walkTo(rng, pred, goal, 12)
		if len(places) != 12 || len(actions) != 11 || places[11] != goal {
			t.Fatalf("walk %v / %v does not end at %d", places, actions, goal)
		}
		for i, a := range actions {
			if env.Next(places[i], a) != places[i+1] {
				t.Fatalf("move %d: Next(%d, %d) = %d, walk says %d", i, places[i], a, env.Next(places[i], a), places[i+1])
			}
		}
		starts[places[0]] = true
	}
	if len(starts) < env.NumPlaces()/2 {
		t.Errorf("demonstration walks start at only %d places", len(starts))
	}
}

func TestEvaluateBadInput(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := envModel(t, env, 1)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	three, err := NewMap(randomModel(t, []int{1, 1, 1, 1}, 3, 0, rand.New(rand.NewPCG(1, 1))))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mp   *Map
		cfg  EvalConfig
		want string
	}{
		{"bad mode", mp, EvalConfig{Modes: []Mode{"teleport"}}, `unknown mode "teleport"`},
		{"bad budget", mp, EvalConfig{BudgetFactor: 0.5}, "budget"},
		{"bad goal mass", mp, EvalConfig{GoalMass: 2}, "goal mass 2"},
		{"bad filter", mp, EvalConfig{Filter: FilterConfig{Noise: -1}}, "noise -1"},
		{"bad planner", mp, EvalConfig{Plan: PlanConfig{Method: "dijkstra"}}, "unknown method"},
		{"negative pairs", mp, EvalConfig{Pairs: -3}, "pairs -3"},
		{"three actions on a grid", three, EvalConfig{}, "the model has 3 actions, environment aliased 4"},
		{"soft without log ρ", mp, EvalConfig{Pairs: 1, Filter: FilterConfig{Soft: true}}, "soft emissions need log ρ"},
	} {
		_, err := Evaluate(tc.mp, env, symbols(env), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewPool([]int{0, 1}, []int{0, 0}, []Obs{{}, {}}); err == nil || !strings.Contains(err.Error(), "class 1") {
		t.Errorf("pool without class 1: %v", err)
	}
	if _, err := NewMap(nil); err == nil {
		t.Error("NewMap(nil) accepted")
	}
}

// The oracle filter of the true room equals the Filter of the room's exact
// model (one clone per place, uniform prior) with the same emissions: one
// token per place for symbols, the pool's misreading (0.9 own token, 0.1 the
// next) as a confusion matrix for the noisy pool.
func TestOracleFilterMatchesExactModel(t *testing.T) {
	mp, env, truth := exactMap(t, "aliased", 1)
	pool := noisyPool(t, env)
	conf := make([][]float64, mp.K)
	for k := range conf {
		conf[k] = make([]float64, mp.K)
		conf[k][k], conf[k][(k+1)%mp.K] = 0.9, 0.1
	}
	for _, tc := range []struct {
		name string
		obs  Observer
		f    FilterConfig
	}{
		{"symbols", symbols(env), FilterConfig{Prior: PriorUniform}},
		{"noisy pool", pool, FilterConfig{Prior: PriorUniform, Confusion: conf}},
	} {
		freq := tokenFrequencies(tc.obs, env.NumPlaces(), mp.K)
		rng := rand.New(rand.NewPCG(1, 2))
		for trial := range 20 {
			places, actions := randomWalk(env, rng, rng.IntN(env.NumPlaces()), 12)
			obs := observeAll(tc.obs, rng, places)
			got := oracleFilter(env, freq, obs, actions)
			f, err := mp.FilterHistory(obs, actions, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, env.NumPlaces())
			for s, b := range f.Belief() {
				if truth[s] >= 0 {
					want[truth[s]] += b
				}
			}
			for g := range want {
				if math.Abs(got[g]-want[g]) > 1e-9 {
					t.Errorf("%s trial %d: oracle belief[%d] = %.12f, exact model %.12f", tc.name, trial, g, got[g], want[g])
				}
			}
		}
	}
	if tokenFrequencies(observerFunc(nil), 3, 2) != nil {
		t.Error("an observer of unknown frequencies got frequencies")
	}
}

// observerFunc is an Observer of unknown token frequencies.
type observerFunc func(rng *rand.Rand, place int) Obs

func (f observerFunc) Observe(rng *rand.Rand, place int) Obs { return f(rng, place) }

// TestEvaluateTrace checks that tracing records each trial's walk and beliefs and
// changes no result.
func TestEvaluateTrace(t *testing.T) {
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := envModel(t, env, 1)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultEvalConfig()
	cfg.Pairs, cfg.Seed = 12, 4
	plain, err := Evaluate(mp, env, symbols(env), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace = true
	traced, err := Evaluate(mp, env, symbols(env), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, mr := range traced.Modes {
		for j, tr := range mr.Trials {
			p := plain.Modes[i].Trials[j]
			if tr.Success != p.Success || tr.Steps != p.Steps || tr.End != p.End || p.Path != nil {
				t.Fatalf("%s pair %d: tracing changed the trial: %+v vs %+v", mr.Mode, j, tr, p)
			}
			if len(tr.Path) != tr.Steps+1 || tr.Path[0] != tr.Start || tr.Path[len(tr.Path)-1] != tr.End {
				t.Fatalf("%s pair %d: path %v for %d steps from %d to %d", mr.Mode, j, tr.Path, tr.Steps, tr.Start, tr.End)
			}
			for k := 1; k < len(tr.Path); k++ {
				if a, b := tr.Path[k-1], tr.Path[k]; a != b && !slices.Contains(env.Neighbors(a), b) {
					t.Fatalf("%s pair %d: step %d jumps from place %d to %d", mr.Mode, j, k, a, b)
				}
			}
			for _, b := range [][]float64{tr.StartBelief, tr.GoalBelief, tr.EndBelief} {
				if len(b) != mp.N {
					t.Fatalf("%s pair %d: a belief of %d entries, want %d", mr.Mode, j, len(b), mp.N)
				}
			}
		}
	}
}
