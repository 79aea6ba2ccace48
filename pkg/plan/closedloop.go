package plan

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Mode is how a plan is executed in the closed-loop evaluation.
type Mode string

const (
	// OpenLoop executes the whole first plan without looking.
	OpenLoop Mode = "open"
	// MPC (model-predictive control) takes the plan's first action,
	// filters the new observation, re-plans, and stops when its most
	// probable clone is a goal clone.
	MPC Mode = "mpc"
)

// EvalConfig configures Evaluate. Zero fields take the defaults in
// DefaultEvalConfig.
type EvalConfig struct {
	Pairs int    `json:"pairs"` // (start, goal) pairs
	Seed  uint64 `json:"seed"`
	// LocalizeSteps is the length (observations) of the random walk the
	// agent takes before planning, whose history it filters.
	LocalizeSteps int `json:"localize_steps"`
	// DemoSteps is the length (observations) of the demonstration walk that
	// ends at the goal place and defines the goal.
	DemoSteps int `json:"demo_steps"`
	// GoalMass: a demonstration goal is ambiguous when its model place
	// holds less belief (BeliefGoal).
	GoalMass float64 `json:"goal_mass"`
	// ArriveMass: MPC stops only when the belief holds at least ArriveMass
	// on the goal place; below it the agent first takes the actions of
	// Map.Distinguish, which let it see whether it is there.
	ArriveMass float64 `json:"arrive_mass"`
	// Budget: an episode may take at most BudgetFactor·d + BudgetExtra
	// steps, d the true shortest path length.
	BudgetFactor float64      `json:"budget_factor"`
	BudgetExtra  int          `json:"budget_extra"`
	Modes        []Mode       `json:"modes"`
	Filter       FilterConfig `json:"-"`
	Plan         PlanConfig   `json:"-"`
	// Progress, if set, is called after every pair with the pairs done.
	Progress func(done, total int) `json:"-"`
	// Trace keeps each trial's walk and beliefs (Trial.Path, StartBelief,
	// GoalBelief, EndBelief) for figures; off by default, so reports stay small.
	Trace bool `json:"-"`
}

// DefaultEvalConfig returns 200 pairs, seed 1, localisation and
// demonstration walks of 20 observations, goal mass 0.9, arrival mass 0.9, a budget of
// 3·d + 10 steps, both modes, the stationary prior with hard noiseless
// tokens, and BFS at threshold 0.3.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Pairs: 200, Seed: 1, LocalizeSteps: 20, DemoSteps: 20, GoalMass: DefaultGoalMass,
		ArriveMass: DefaultArriveMass, BudgetFactor: 3, BudgetExtra: 10, Modes: []Mode{OpenLoop, MPC}}
}

func (c EvalConfig) withDefaults() (EvalConfig, error) {
	d := DefaultEvalConfig()
	if c.Pairs == 0 {
		c.Pairs = d.Pairs
	}
	if c.LocalizeSteps == 0 {
		c.LocalizeSteps = d.LocalizeSteps
	}
	if c.DemoSteps == 0 {
		c.DemoSteps = d.DemoSteps
	}
	if c.GoalMass == 0 {
		c.GoalMass = d.GoalMass
	}
	if c.ArriveMass == 0 {
		c.ArriveMass = d.ArriveMass
	}
	if c.BudgetFactor == 0 {
		c.BudgetFactor = d.BudgetFactor
	}
	if c.BudgetExtra == 0 {
		c.BudgetExtra = d.BudgetExtra
	}
	if len(c.Modes) == 0 {
		c.Modes = d.Modes
	}
	switch {
	case c.Pairs < 0:
		return c, fmt.Errorf("plan: evaluate: pairs %d < 0", c.Pairs)
	case c.LocalizeSteps < 0 || c.DemoSteps < 0:
		return c, fmt.Errorf("plan: evaluate: walk lengths must be positive (localize %d, demo %d)", c.LocalizeSteps, c.DemoSteps)
	case !(c.GoalMass > 0 && c.GoalMass <= 1):
		return c, fmt.Errorf("plan: evaluate: goal mass %v outside (0, 1]", c.GoalMass)
	case !(c.ArriveMass > 0 && c.ArriveMass <= 1):
		return c, fmt.Errorf("plan: evaluate: arrival mass %v outside (0, 1]", c.ArriveMass)
	case !(c.BudgetFactor >= 1) || c.BudgetExtra < 0:
		return c, fmt.Errorf("plan: evaluate: budget %v·d + %d: need factor ≥ 1 and extra ≥ 0", c.BudgetFactor, c.BudgetExtra)
	}
	for _, m := range c.Modes {
		if m != OpenLoop && m != MPC {
			return c, fmt.Errorf("plan: evaluate: unknown mode %q (open or mpc)", m)
		}
	}
	if err := c.Filter.Validate(); err != nil {
		return c, err
	}
	if _, err := c.Plan.withDefaults(1); err != nil {
		return c, err
	}
	return c, nil
}

// DefaultArriveMass is the belief on the goal place at which MPC stops
// without looking first (EvalConfig.ArriveMass). Higher values look more often
// before stopping: more successes, longer paths.
const DefaultArriveMass = 0.9

// Trial is one (start, goal) pair executed in one mode.
type Trial struct {
	Pair     int  `json:"pair"`
	Start    int  `json:"start"`    // true place where planning begins (end of the localisation walk)
	Goal     int  `json:"goal"`     // true goal place (end of the demonstration walk)
	Shortest int  `json:"shortest"` // true shortest path length d ≥ 1
	Budget   int  `json:"budget"`
	Steps    int  `json:"steps"` // actions executed
	End      int  `json:"end"`   // true place at the end
	Success  bool `json:"success"`
	// Unreachable: the first plan found no path. Ambiguous: the
	// demonstration goal was ambiguous (BeliefGoal).
	Unreachable bool    `json:"unreachable"`
	Ambiguous   bool    `json:"ambiguous"`
	GoalMass    float64 `json:"goal_mass"`
	// OracleGoal is the true place that a filter knowing the true room and
	// how often each place shows each token (the observer's frequencies)
	// finds most probable at the end of the demonstration, and OracleMass
	// its belief there; −1 and 0 when the observer's frequencies are
	// unknown. When OracleGoal ≠ Goal the demonstration misleads any map.
	OracleGoal int     `json:"oracle_goal"`
	OracleMass float64 `json:"oracle_mass"`
	PlanLen    int     `json:"plan_len"` // length of the first plan
	Replans    int     `json:"replans"`  // MPC: plans made
	Explore    int     `json:"explore"`  // MPC: random actions taken when no plan was found
	Looks      int     `json:"looks"`    // MPC: actions taken to tell the goal place from a rival (Map.Distinguish)
	Resets     int     `json:"resets"`   // filter restarts (impossible observations)

	// With EvalConfig.Trace: the true places of the executed walk (Start, then one
	// per step), and the filter's belief over the model's states after the
	// localisation walk, at the end of the demonstration (which defines the goal)
	// and at the end of the trial (open loop: the first, as it is not updated).
	Path                               []int     `json:"path,omitempty"`
	StartBelief, GoalBelief, EndBelief []float64 `json:"-"`
}

// ModeResult scores one mode over all pairs.
type ModeResult struct {
	Mode        Mode    `json:"mode"`
	Pairs       int     `json:"pairs"`
	Successes   int     `json:"successes"`
	SuccessRate float64 `json:"success_rate"`
	// PathRatioMean and PathRatioSD: steps taken / true shortest path, over
	// the successes (sample standard deviation; 0 with fewer than two).
	PathRatioMean float64 `json:"path_ratio_mean"`
	PathRatioSD   float64 `json:"path_ratio_sd"`
	Unreachable   int     `json:"unreachable"`
	Ambiguous     int     `json:"ambiguous"`
	// AmbiguousSuccesses counts the successes among the ambiguous pairs.
	AmbiguousSuccesses int `json:"ambiguous_successes"`
	// OracleMisses counts the pairs whose demonstration points the oracle
	// filter (Trial.OracleGoal) at a place other than the goal.
	OracleMisses int     `json:"oracle_misses"`
	MeanSteps    float64 `json:"mean_steps"`
	Resets       int     `json:"resets"`
	Trials       []Trial `json:"trials"`
}

// Report is the closed-loop evaluation of one map.
type Report struct {
	Env       string       `json:"env"`
	Places    int          `json:"places"`
	States    int          `json:"num_states"`
	NumPlaces int          `json:"model_places"` // model places (Map.NumPlaces)
	Config    EvalConfig   `json:"config"`
	Filter    string       `json:"filter"` // prior and emissions
	Planner   string       `json:"planner"`
	Modes     []ModeResult `json:"modes"`
}

// Evaluate runs the closed-loop planning evaluation of the package
// documentation on the true environment env: cfg.Pairs pairs, each with a
// localisation walk, a demonstration walk ending at the goal place, a plan
// and its execution in every mode of cfg.Modes. obs gives the agent's
// observations (Symbols or a Pool of encoded held-out images). All pairs,
// walks and observations of the localisation and demonstration are the same
// in every mode; the result depends only on cfg.Seed.
func Evaluate(mp *Map, env *gridworld.Env, obs Observer, cfg EvalConfig) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if env.NumPlaces() < 2 {
		return nil, fmt.Errorf("plan: evaluate: %s has %d place(s); planning needs two", env.Name, env.NumPlaces())
	}
	if env.NumActions() != mp.A {
		return nil, fmt.Errorf("plan: evaluate: the model has %d actions, environment %s %d", mp.A, env.Name, env.NumActions())
	}
	dist := Distances(env)
	pred := predecessors(env)
	freq := tokenFrequencies(obs, env.NumPlaces(), mp.K)
	rep := &Report{Env: env.Name, Places: env.NumPlaces(), States: mp.N, NumPlaces: mp.NumPlaces, Config: cfg,
		Filter:  describeFilter(cfg.Filter),
		Planner: describePlanner(cfg.Plan)}
	for _, m := range cfg.Modes {
		rep.Modes = append(rep.Modes, ModeResult{Mode: m, Pairs: cfg.Pairs})
	}
	for pair := range cfg.Pairs {
		trials, err := runPair(mp, env, obs, freq, cfg, dist, pred, pair)
		if err != nil {
			return nil, fmt.Errorf("plan: evaluate: pair %d: %w", pair, err)
		}
		for i := range rep.Modes {
			rep.Modes[i].Trials = append(rep.Modes[i].Trials, trials[i])
		}
		if cfg.Progress != nil {
			cfg.Progress(pair+1, cfg.Pairs)
		}
	}
	for i := range rep.Modes {
		rep.Modes[i].score()
	}
	return rep, nil
}

func describeFilter(c FilterConfig) string {
	switch {
	case c.Soft:
		return c.Prior.String() + " prior, soft emissions"
	case c.Confusion != nil:
		return c.Prior.String() + " prior, hard tokens read through a confusion matrix"
	case c.Noise > 0:
		return fmt.Sprintf("%s prior, hard tokens with misread rate %g", c.Prior, c.Noise)
	}
	return c.Prior.String() + " prior, hard tokens"
}

func describePlanner(c PlanConfig) string {
	c, _ = c.withDefaults(0)
	if c.Method == MaxProduct {
		return fmt.Sprintf("max-product, min path probability %g", c.MinProb)
	}
	return fmt.Sprintf("bfs, threshold %g", c.Threshold)
}

// score fills the summary fields from the trials.
func (r *ModeResult) score() {
	var ratios []float64
	steps := 0
	for _, t := range r.Trials {
		steps += t.Steps
		r.Resets += t.Resets
		if t.Unreachable {
			r.Unreachable++
		}
		if t.Ambiguous {
			r.Ambiguous++
		}
		if t.OracleGoal >= 0 && t.OracleGoal != t.Goal {
			r.OracleMisses++
		}
		if t.Success {
			r.Successes++
			ratios = append(ratios, float64(t.Steps)/float64(t.Shortest))
			if t.Ambiguous {
				r.AmbiguousSuccesses++
			}
		}
	}
	if r.Pairs > 0 {
		r.SuccessRate = float64(r.Successes) / float64(r.Pairs)
		r.MeanSteps = float64(steps) / float64(r.Pairs)
	}
	st := evaluate.MeanSD(ratios)
	r.PathRatioMean, r.PathRatioSD = st.Mean, st.SD
}

// runPair draws pair number pair and executes it in every mode.
func runPair(mp *Map, env *gridworld.Env, obs Observer, freq [][]float64, cfg EvalConfig, dist [][]int, pred [][]step, pair int) ([]Trial, error) {
	walkRng := rand.New(rand.NewPCG(cfg.Seed, uint64(pair)<<2))
	seeRng := rand.New(rand.NewPCG(cfg.Seed, uint64(pair)<<2|1))

	// Localisation: a uniform random walk from a uniform start place.
	locPlaces, locActions := randomWalk(env, walkRng, walkRng.IntN(env.NumPlaces()), cfg.LocalizeSteps)
	here := locPlaces[len(locPlaces)-1]
	// The goal: a uniform place other than here, shown by a demonstration
	// walk that ends there.
	goalPlace := walkRng.IntN(env.NumPlaces() - 1)
	if goalPlace >= here {
		goalPlace++
	}
	demoPlaces, demoActions := walkTo(walkRng, pred, goalPlace, cfg.DemoSteps)
	if dist[here][goalPlace] < 0 {
		return nil, fmt.Errorf("true goal place %d unreachable from place %d", goalPlace, here)
	}

	locObs := observeAll(obs, seeRng, locPlaces)
	demoObs := observeAll(obs, seeRng, demoPlaces)
	loc, err := mp.FilterHistory(locObs, locActions, cfg.Filter)
	if err != nil {
		return nil, fmt.Errorf("localisation walk: %w", err)
	}
	demo, err := mp.FilterHistory(demoObs, demoActions, cfg.Filter)
	if err != nil {
		return nil, fmt.Errorf("demonstration walk: %w", err)
	}
	goal, err := mp.BeliefGoal(demo.Belief(), cfg.GoalMass)
	if err != nil {
		return nil, err
	}

	d := dist[here][goalPlace]
	base := Trial{Pair: pair, Start: here, Goal: goalPlace, Shortest: d, Ambiguous: goal.Ambiguous, GoalMass: goal.Mass,
		Budget: int(math.Floor(cfg.BudgetFactor*float64(d))) + cfg.BudgetExtra, OracleGoal: -1}
	if cfg.Trace {
		base.StartBelief, base.GoalBelief = loc.Belief(), demo.Belief()
	}
	if freq != nil {
		if g, m := argmax(oracleFilter(env, freq, demoObs, demoActions)); m > 0 {
			base.OracleGoal, base.OracleMass = g, m
		}
	}
	out := make([]Trial, len(cfg.Modes))
	for i, m := range cfg.Modes {
		exec := rand.New(rand.NewPCG(cfg.Seed, uint64(pair)<<2|2))
		if m == MPC {
			exec = rand.New(rand.NewPCG(cfg.Seed, uint64(pair)<<2|3))
		}
		t := base
		if err := execute(mp, env, obs, cfg, m, loc.Clone(), goal, exec, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		out[i] = t
	}
	return out, nil
}

// execute runs one trial from the localised filter f and fills t.
func execute(mp *Map, env *gridworld.Env, obs Observer, cfg EvalConfig, mode Mode, f *Filter, goal Goal, rng *rand.Rand, t *Trial) error {
	place := t.Start
	if cfg.Trace {
		t.Path = []int{place}
		defer func() { t.EndBelief = f.Belief() }()
	}
	first, err := mp.Plan(f.Belief(), goal, cfg.Plan)
	switch {
	case errors.Is(err, ErrUnreachable):
		t.Unreachable = true
	case err != nil:
		return err
	default:
		t.PlanLen = first.Len()
	}
	t.Replans = 1
	if mode == OpenLoop {
		if !t.Unreachable {
			for _, a := range first.Actions[:min(first.Len(), t.Budget)] {
				place = env.Next(place, a)
				t.Steps++
				if cfg.Trace {
					t.Path = append(t.Path, place)
				}
			}
		}
		t.End, t.Success = place, place == t.Goal
		return nil
	}
	p, perr := first, err
	var looking []int // the rest of a look, taken without re-planning
	for t.Steps < t.Budget {
		var a int
		switch {
		case len(looking) > 0:
			a, looking = looking[0], looking[1:]
			t.Looks++
		case errors.Is(perr, ErrUnreachable):
			a = rng.IntN(env.ActionsAt(place)) // lost: explore, then re-localise
			t.Explore++
		case perr != nil:
			return perr
		case p.Len() == 0: // the agent believes it is at the goal
			firm := p.Start >= cfg.ArriveMass
			var look Plan
			var lerr error
			if !firm { // not firmly: look first
				look, lerr = mp.Distinguish(f.Belief(), cfg.Plan)
			}
			if firm || lerr != nil {
				t.End, t.Success, t.Resets = place, place == t.Goal, f.Resets()
				return nil
			}
			// The whole sequence is taken, since only its last observation
			// tells the places apart.
			a, looking = look.Actions[0], look.Actions[1:]
			t.Looks++
		default:
			a = p.Actions[0]
		}
		place = env.Next(place, a)
		t.Steps++
		if cfg.Trace {
			t.Path = append(t.Path, place)
		}
		if err := f.Step(a, obs.Observe(rng, place)); err != nil {
			return err
		}
		if len(looking) > 0 {
			continue
		}
		p, perr = mp.Plan(f.Belief(), goal, cfg.Plan)
		t.Replans++
	}
	// Out of budget: the agent may still have arrived without knowing it.
	t.End, t.Success, t.Resets = place, place == t.Goal, f.Resets()
	return nil
}

// tokenFrequencies returns how often each place shows each token, [P][K], for
// the observers whose distribution is known (a Pool: its encodings' tokens
// per class; Symbols: one token per place), and nil for other observers.
func tokenFrequencies(obs Observer, places, k int) [][]float64 {
	freq := make([][]float64, places)
	for g := range freq {
		freq[g] = make([]float64, k)
		switch o := obs.(type) {
		case Symbols:
			if o[g] >= 0 && o[g] < k {
				freq[g][o[g]] = 1
			}
		case *Pool:
			imgs := o.byClass[o.placeClass[g]]
			for _, im := range imgs {
				if im.Token >= 0 && im.Token < k {
					freq[g][im.Token] += 1 / float64(len(imgs))
				}
			}
		default:
			return nil
		}
	}
	return freq
}

// oracleFilter is the forward filter of the true room: the belief over true
// places [P] after observations obs and actions, from a uniform prior, with
// the true dynamics and the emission freq[g][token]. It is the best any map
// can do with those observations (Trial.OracleGoal). A history the room
// cannot produce gives a zero belief.
func oracleFilter(env *gridworld.Env, freq [][]float64, obs []Obs, actions []int) []float64 {
	b := make([]float64, env.NumPlaces())
	for g := range b {
		b[g] = freq[g][obs[0].Token]
	}
	next := make([]float64, len(b))
	for t, a := range actions {
		clear(next)
		for g, v := range b {
			if v > 0 && a < env.ActionsAt(g) {
				next[env.Next(g, a)] += v
			}
		}
		z := 0.0
		for h := range next {
			next[h] *= freq[h][obs[t+1].Token]
			z += next[h]
		}
		if !(z > 0) {
			clear(b)
			return b
		}
		for h := range next {
			b[h] = next[h] / z
		}
	}
	z := 0.0
	for _, v := range b {
		z += v
	}
	for g := range b {
		if z > 0 {
			b[g] /= z
		}
	}
	return b
}

// observeAll observes every place of a walk.
func observeAll(obs Observer, rng *rand.Rand, places []int) []Obs {
	out := make([]Obs, len(places))
	for i, g := range places {
		out[i] = obs.Observe(rng, g)
	}
	return out
}

// randomWalk is a uniform random walk of steps observations from start:
// actions uniform over env.ActionsAt, sticky dynamics.
func randomWalk(env *gridworld.Env, rng *rand.Rand, start, steps int) (places, actions []int) {
	places = []int{start}
	for len(places) < steps {
		g := places[len(places)-1]
		a := rng.IntN(env.ActionsAt(g))
		actions = append(actions, a)
		places = append(places, env.Next(g, a))
	}
	return places, actions
}

// step is a move: action a taken at place from.
type step struct{ from, a int }

// predecessors lists, for every place q, the moves (p, a) with a <
// ActionsAt(p) and Next(p, a) = q (p = q for sticky moves).
func predecessors(env *gridworld.Env) [][]step {
	pred := make([][]step, env.NumPlaces())
	for p := range env.NumPlaces() {
		for a := range env.ActionsAt(p) {
			q := env.Next(p, a)
			pred[q] = append(pred[q], step{p, a})
		}
	}
	return pred
}

// walkTo draws a walk of steps observations that ends at goal by sampling it
// backwards: from the end, each previous move is uniform over the moves that
// lead to the current place. Every move is a valid forward move.
func walkTo(rng *rand.Rand, pred [][]step, goal, steps int) (places, actions []int) {
	places = make([]int, max(steps, 1))
	actions = make([]int, len(places)-1)
	places[len(places)-1] = goal
	for t := len(places) - 2; t >= 0; t-- {
		ps := pred[places[t+1]]
		m := ps[rng.IntN(len(ps))]
		places[t], actions[t] = m.from, m.a
	}
	return places, actions
}

// Distances returns the true shortest path lengths d[g][h] (in actions) of
// env by breadth-first search over its sticky dynamics; -1 where h is
// unreachable from g.
func Distances(env *gridworld.Env) [][]int {
	n := env.NumPlaces()
	d := make([][]int, n)
	for g := range n {
		row := make([]int, n)
		for h := range row {
			row[h] = -1
		}
		row[g] = 0
		queue := []int{g}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for a := range env.ActionsAt(p) {
				if q := env.Next(p, a); row[q] < 0 {
					row[q] = row[p] + 1
					queue = append(queue, q)
				}
			}
		}
		d[g] = row
	}
	return d
}
