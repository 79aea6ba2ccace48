package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// ErrIndistinguishable is wrapped by the error of Distinguish when no action
// sequence tells the two most probable places apart.
var ErrIndistinguishable = errors.New("places indistinguishable")

// Distinguish returns the shortest action sequence after which the two model
// places that hold the most belief would show different tokens, so that the
// next observation tells the agent which of them it is in. It is active
// localisation: an agent that believes it has arrived, but not firmly, looks
// before it stops. From the most probable clone of each place, both
// hypotheses follow, for every action, their most likely move (which must
// have probability W > cfg.Threshold, as in BFS planning); breadth-first
// search over the pairs of clones finds the first pair with different tokens.
// Plan.States is the first (most probable) place's path. A belief on a single
// place, or two places no sequence of at most cfg.MaxSteps actions tells
// apart, gives an error wrapping ErrIndistinguishable.
func (mp *Map) Distinguish(belief []float64, cfg PlanConfig) (Plan, error) {
	cfg, err := cfg.withDefaults(mp.N)
	if err != nil {
		return Plan{}, err
	}
	if err := mp.checkBelief(belief); err != nil {
		return Plan{}, err
	}
	p, q, mp1, mp2 := mp.topPlaces(belief)
	if q < 0 {
		return Plan{}, fmt.Errorf("plan: distinguish: the belief is on one model place: %w", ErrIndistinguishable)
	}
	start := [2]int{mp.bestClone(belief, p), mp.bestClone(belief, q)}
	logTh := math.Log(cfg.Threshold)
	type node struct {
		pair   [2]int
		parent int // index into nodes, -1 for the start
		a      int
		logp   float64
	}
	nodes := []node{{pair: start, parent: -1}}
	seen := map[[2]int]bool{start: true}
	for head, depth := 0, 0; head < len(nodes) && depth < cfg.MaxSteps; depth++ {
		end := len(nodes)
		for ; head < end; head++ {
			cur := nodes[head]
			for a := range mp.A {
				i, lpi := mp.topMove(cur.pair[0], a)
				j, lpj := mp.topMove(cur.pair[1], a)
				if i < 0 || j < 0 || lpi <= logTh || lpj <= logTh {
					continue
				}
				next := [2]int{i, j}
				if seen[next] {
					continue
				}
				seen[next] = true
				nodes = append(nodes, node{pair: next, parent: head, a: a, logp: cur.logp + lpi})
				if mp.token[i] != mp.token[j] {
					return backtrack(len(nodes)-1, func(k int) (int, int, int, float64) {
						return nodes[k].parent, nodes[k].a, nodes[k].pair[0], nodes[k].logp
					}, mp1), nil
				}
			}
		}
	}
	return Plan{}, fmt.Errorf("plan: distinguish: model places %d (belief %.3f) and %d (belief %.3f) show the same tokens along every sequence of at most %d moves of probability > %g: %w",
		p, mp1, q, mp2, cfg.MaxSteps, cfg.Threshold, ErrIndistinguishable)
}

// backtrack builds the plan that ends at node k of a search tree, whose
// node u has parent, the action from it, the state reached and the path's
// log probability at(u) (parent −1 at the root).
func backtrack(k int, at func(u int) (parent, a, state int, logp float64), start float64) Plan {
	_, _, _, logp := at(k)
	p := Plan{Method: BFS, LogProb: logp, Start: start}
	for k >= 0 {
		parent, a, s, _ := at(k)
		p.States = append(p.States, s)
		if parent >= 0 {
			p.Actions = append(p.Actions, a)
		}
		k = parent
	}
	slices.Reverse(p.Actions)
	slices.Reverse(p.States)
	return p
}

// topPlaces returns the two model places of most belief mass (q = −1 when
// only one place has any) and their masses, normalised over the real states.
func (mp *Map) topPlaces(belief []float64) (p, q int, mp1, mp2 float64) {
	mass := make([]float64, mp.NumPlaces)
	total := 0.0
	for s, b := range belief[:mp.N-1] {
		mass[mp.Place[s]] += b
		total += b
	}
	order := make([]int, mp.NumPlaces)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return mass[order[i]] > mass[order[j]] })
	p, q = order[0], -1
	if len(order) > 1 && mass[order[1]] > 0 {
		q = order[1]
		mp2 = mass[q] / total
	}
	return p, q, mass[p] / total, mp2
}

// bestClone returns the clone of model place p with the most belief (ties:
// the lowest index).
func (mp *Map) bestClone(belief []float64, p int) int {
	best := -1
	for s, b := range belief[:mp.N-1] {
		if mp.Place[s] == p && (best < 0 || b > belief[best]) {
			best = s
		}
	}
	return best
}

// topMove returns the most likely move of clone i under action a — the clone
// it leads to and log W — or −1 when a has no move from i.
func (mp *Map) topMove(i, a int) (int, float64) {
	to, lp := -1, math.Inf(-1)
	for _, e := range mp.moves[i] {
		if e.a == a && e.logp > lp {
			to, lp = e.to, e.logp
		}
	}
	return to, lp
}
