package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Method is a planning algorithm.
type Method string

const (
	// BFS is breadth-first search over the transitions with probability
	// above a threshold, from the most probable current clone (the default).
	BFS Method = "bfs"
	// MaxProduct is max-product message passing from the whole belief, the
	// original CSCG's planner (George et al. 2021).
	MaxProduct Method = "maxproduct"
)

// Defaults of PlanConfig.
const (
	DefaultThreshold = 0.3  // BFS: a move needs W(a, i, place) > 0.3
	DefaultMinProb   = 0.05 // MaxProduct: a plan needs probability ≥ 0.05
)

// PlanConfig configures Map.Plan. Zero fields take the defaults.
type PlanConfig struct {
	Method Method // BFS (default) or MaxProduct
	// Threshold: BFS uses the moves whose probability of landing in the
	// next model place, W(a, i, place), exceeds Threshold (0:
	// DefaultThreshold). Lower values admit weak, possibly spurious
	// transitions (shortcuts through clones that absorb misread tokens);
	// higher ones drop real moves of an uncertain model.
	Threshold float64
	// MinProb: MaxProduct returns the shortest plan whose most probable
	// path, start belief included, has probability ≥ MinProb
	// (0: DefaultMinProb).
	MinProb float64
	// MaxSteps bounds the plan's length (0: N, the number of states).
	MaxSteps int
}

func (c PlanConfig) withDefaults(n int) (PlanConfig, error) {
	if c.Method == "" {
		c.Method = BFS
	}
	if c.Method != BFS && c.Method != MaxProduct {
		return c, fmt.Errorf("plan: unknown method %q (bfs or maxproduct)", c.Method)
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.MinProb == 0 {
		c.MinProb = DefaultMinProb
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = n
	}
	switch {
	case !(c.Threshold > 0 && c.Threshold < 1):
		return c, fmt.Errorf("plan: threshold %v outside (0, 1)", c.Threshold)
	case !(c.MinProb > 0 && c.MinProb <= 1):
		return c, fmt.Errorf("plan: minimum probability %v outside (0, 1]", c.MinProb)
	case c.MaxSteps < 0:
		return c, fmt.Errorf("plan: negative step limit %d", c.MaxSteps)
	}
	return c, nil
}

// Plan is an action sequence and the clone path the model expects it to take.
type Plan struct {
	Actions []int   // a_1..a_L
	States  []int   // expected clones s_0..s_L (len L+1); s_0 the start clone
	LogProb float64 // Σ_t log W(a_t, s_{t−1}, place(s_t)): the log probability of landing in each next place
	Start   float64 // belief mass of the start clone's model place
	Method  Method  // the planner that made it
}

// Len returns the number of actions.
func (p Plan) Len() int { return len(p.Actions) }

// ErrUnreachable is wrapped by the error of a plan that found no path.
var ErrUnreachable = errors.New("goal unreachable")

// UnreachableError says that no plan reaches the goal.
type UnreachableError struct {
	Method    Method
	Start     int     // BFS: the start clone; MaxProduct: -1 (the whole belief)
	Goal      []int   // goal clones
	Threshold float64 // BFS edge threshold or MaxProduct minimum probability
	MaxSteps  int
	Reachable int // BFS: clones reachable from Start (Start included)
}

func (e *UnreachableError) Error() string {
	if e.Method == MaxProduct {
		return fmt.Sprintf("plan: goal clones %v unreachable: no path of at most %d steps has probability ≥ %g",
			e.Goal, e.MaxSteps, e.Threshold)
	}
	return fmt.Sprintf("plan: goal clones %v unreachable from clone %d through moves of probability > %g within %d steps (%d clones reachable)",
		e.Goal, e.Start, e.Threshold, e.MaxSteps, e.Reachable)
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Plan plans from a belief [N] (e.g. Filter.Belief) to goal. Plans work on
// model places (see the package documentation): a step is scored by the
// probability of landing in the next place, the expected path follows the
// most likely clone of each place, and the goal is reached at any clone of a
// model place that holds a goal clone. When the most probable clone's place
// is a goal place the plan is empty (the agent is there). Otherwise BFS
// searches from the most probable clone and MaxProduct from the whole belief.
// A goal that cannot be reached gives an *UnreachableError
// (errors.Is(err, ErrUnreachable)).
func (mp *Map) Plan(belief []float64, goal Goal, cfg PlanConfig) (Plan, error) {
	cfg, err := cfg.withDefaults(mp.N)
	if err != nil {
		return Plan{}, err
	}
	if err := mp.checkBelief(belief); err != nil {
		return Plan{}, err
	}
	target, err := mp.goalPlaces(goal)
	if err != nil {
		return Plan{}, err
	}
	start, _ := argmax(belief[:mp.N-1])
	placeMass := mp.placeMass(belief)
	if target[mp.Place[start]] {
		return Plan{States: []int{start}, Start: placeMass[mp.Place[start]], Method: cfg.Method}, nil
	}
	if cfg.Method == MaxProduct {
		return mp.maxProduct(belief, placeMass, goal, target, cfg)
	}
	p, err := mp.bfs(start, goal, target, cfg)
	p.Start = placeMass[mp.Place[start]]
	return p, err
}

// PlanFrom plans from a known clone with breadth-first search (cfg.Method is
// ignored).
func (mp *Map) PlanFrom(start int, goal Goal, cfg PlanConfig) (Plan, error) {
	cfg, err := cfg.withDefaults(mp.N)
	if err != nil {
		return Plan{}, err
	}
	if start < 0 || start >= mp.N-1 {
		return Plan{}, fmt.Errorf("plan: start state %d outside the real states [0, %d)", start, mp.N-1)
	}
	target, err := mp.goalPlaces(goal)
	if err != nil {
		return Plan{}, err
	}
	if target[mp.Place[start]] {
		return Plan{States: []int{start}, Start: 1, Method: BFS}, nil
	}
	p, err := mp.bfs(start, goal, target, cfg)
	p.Start = 1
	return p, err
}

// placeMass returns the belief on every model place, normalised over the
// real states, shape [NumPlaces]. The belief must have passed checkBelief.
func (mp *Map) placeMass(belief []float64) []float64 {
	mass := make([]float64, mp.NumPlaces)
	total := 0.0
	for s, b := range belief[:mp.N-1] {
		mass[mp.Place[s]] += b
		total += b
	}
	for q := range mass {
		mass[q] /= total
	}
	return mass
}

func (mp *Map) checkBelief(belief []float64) error {
	if len(belief) != mp.N {
		return fmt.Errorf("plan: belief has %d entries, the model %d states", len(belief), mp.N)
	}
	total := 0.0
	for s, b := range belief[:mp.N-1] {
		if !(b >= 0) || math.IsInf(b, 1) {
			return fmt.Errorf("plan: belief[%d] = %v", s, b)
		}
		total += b
	}
	if !(total > 0) {
		return fmt.Errorf("plan: belief has no mass on a real state")
	}
	return nil
}

// goalPlaces validates goal and marks the model places holding a goal clone.
func (mp *Map) goalPlaces(g Goal) ([]bool, error) {
	if len(g.States) == 0 {
		return nil, fmt.Errorf("plan: empty goal")
	}
	if !slices.IsSorted(g.States) {
		return nil, fmt.Errorf("plan: goal states not sorted (build goals with TokenGoal, StatesGoal or BeliefGoal)")
	}
	target := make([]bool, mp.NumPlaces)
	for _, s := range g.States {
		if s < 0 || s >= mp.N-1 {
			return nil, fmt.Errorf("plan: goal state %d outside the real states [0, %d)", s, mp.N-1)
		}
		target[mp.Place[s]] = true
	}
	return target, nil
}

// bfs is breadth-first search over the moves i →a j whose place probability
// W(a, i, place(j)) exceeds cfg.Threshold. It finds the fewest actions from
// start to a goal place; among the shortest paths it keeps the most probable
// (largest Σ log W), ties going to the first found (lowest clone, action and
// place indices).
func (mp *Map) bfs(start int, goal Goal, target []bool, cfg PlanConfig) (Plan, error) {
	logTh := math.Log(cfg.Threshold)
	dist := make([]int, mp.N)
	for i := range dist {
		dist[i] = -1
	}
	logp := make([]float64, mp.N)
	parent := make([]int, mp.N)
	via := make([]int, mp.N)
	dist[start], parent[start] = 0, -1
	layer := []int{start}
	reached := 1
	for d := 0; len(layer) > 0 && d < cfg.MaxSteps; d++ {
		var next []int
		for _, i := range layer {
			for _, e := range mp.moves[i] {
				if e.logp <= logTh {
					continue
				}
				lp := logp[i] + e.logp
				switch {
				case dist[e.to] < 0:
					dist[e.to], logp[e.to], parent[e.to], via[e.to] = d+1, lp, i, e.a
					next = append(next, e.to)
					reached++
				case dist[e.to] == d+1 && lp > logp[e.to]:
					logp[e.to], parent[e.to], via[e.to] = lp, i, e.a
				}
			}
		}
		// The goal places first reached in this layer: take the most probable.
		best := -1
		for _, s := range next {
			if target[mp.Place[s]] && (best < 0 || logp[s] > logp[best] || (logp[s] == logp[best] && s < best)) {
				best = s
			}
		}
		if best >= 0 {
			p := Plan{Method: BFS, LogProb: logp[best], Actions: make([]int, d+1), States: make([]int, d+2)}
			for s, t := best, d+1; t >= 0; s, t = parent[s], t-1 {
				p.States[t] = s
				if t > 0 {
					p.Actions[t-1] = via[s]
				}
			}
			return p, nil
		}
		layer = next
	}
	return Plan{}, &UnreachableError{Method: BFS, Start: start, Goal: goal.States, Threshold: cfg.Threshold,
		MaxSteps: cfg.MaxSteps, Reachable: reached}
}

// maxProduct runs max-product messages over the moves, from the belief of
// each clone's place,
//
//	δ_0(i) = log Σ_{i'∈place(i)} b(i'),   δ_L(j) = max_{i,a: i →a j} [δ_{L−1}(i) + log W(a, i, place(j))],
//
// with back-pointers, and returns the path of the first length L ≤ MaxSteps
// at which a clone of a goal place reaches δ_L ≥ log MinProb (the most
// probable such clone; ties to the lowest index).
func (mp *Map) maxProduct(belief, placeMass []float64, goal Goal, target []bool, cfg PlanConfig) (Plan, error) {
	real := mp.N - 1
	delta := make([]float64, real)
	for i := range delta {
		delta[i] = math.Log(placeMass[mp.Place[i]])
	}
	next := make([]float64, real)
	var backState, backAct [][]int32
	logMin := math.Log(cfg.MinProb)
	for L := 1; L <= cfg.MaxSteps; L++ {
		bs, ba := make([]int32, real), make([]int32, real)
		for j := range next {
			next[j], bs[j], ba[j] = math.Inf(-1), -1, -1
		}
		for i, di := range delta {
			if math.IsInf(di, -1) {
				continue
			}
			for _, e := range mp.moves[i] {
				if c := di + e.logp; c > next[e.to] {
					next[e.to], bs[e.to], ba[e.to] = c, int32(i), int32(e.a)
				}
			}
		}
		backState, backAct = append(backState, bs), append(backAct, ba)
		delta, next = next, delta
		best := -1
		for s, ds := range delta {
			if target[mp.Place[s]] && ds >= logMin && (best < 0 || ds > delta[best]) {
				best = s
			}
		}
		if best >= 0 {
			p := Plan{Method: MaxProduct, Actions: make([]int, L), States: make([]int, L+1)}
			s := best
			for t := L; t > 0; t-- {
				p.States[t], p.Actions[t-1] = s, int(backAct[t-1][s])
				s = int(backState[t-1][s])
			}
			p.States[0] = s
			p.Start = placeMass[mp.Place[s]]
			p.LogProb = delta[best] - math.Log(p.Start)
			return p, nil
		}
	}
	return Plan{}, &UnreachableError{Method: MaxProduct, Start: -1, Goal: goal.States, Threshold: cfg.MinProb,
		MaxSteps: cfg.MaxSteps}
}
