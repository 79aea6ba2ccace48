package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
					// Walk the tree back from the new node.
					out := Plan{Method: BFS, LogProb: cur.logp + lpi, Start: mp1}
					for k := len(nodes) - 1; k >= 0; k = nodes[k].parent {
						out.States = append(out.States, nodes[k].pair[0])
						if nodes[k].parent >= 0 {
							out.Actions = append(out.Actions, nodes[k].a)
						}
					}
					slices.Reverse(out.Actions)
					slices.Reverse(out.States)
					return out, nil
				}
			}
		}
	}
	return Plan{}, fmt.Errorf("plan: distinguish: model places %d (belief %.3f) and %d (belief %.3f) show the same tokens along every sequence of at most %d moves of probability > %g: %w",
		p, mp1, q, mp2, cfg.MaxSteps, cfg.Threshold, ErrIndistinguishable)
}

// topPlaces returns the two model places of most belief (q = −1 when only
// one place has any; ties: the lowest index) and their normalised masses.
func (mp *Map) topPlaces(belief []float64) (p, q int, mp1, mp2 float64) {
	mass := mp.placeMass(belief)
	p, q = -1, -1
	for r, m := range mass {
		if p < 0 || m > mass[p] {
			p = r
		}
	}
	for r, m := range mass {
		if r != p && m > 0 && (q < 0 || m > mass[q]) {
			q = r
		}
	}
	if q >= 0 {
		mp2 = mass[q]
	}
	return p, q, mass[p], mp2
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
