package chmm

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Test helpers: random models, brute-force references and a small inline
// grid world (independent of pkg/gridworld).

// randomModel returns a model with N(0, scale²) logits everywhere (sink
// column and sink logit of π included); with holes, about 20% of the Θ logits
// and one π logit are -Inf (every row keeps a finite entry).
func randomModel(rng *rand.Rand, clones []int, actions int, scale float64, holes bool) *Model {
	m := New(clones, actions, rng)
	n := m.N()
	for i := range m.PiLogits {
		m.PiLogits[i] = scale * rng.NormFloat64()
	}
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = scale * rng.NormFloat64()
		if holes && rng.Float64() < 0.2 && i%n != 0 {
			m.ThetaLogits[i] = math.Inf(-1)
		}
	}
	if holes {
		m.PiLogits[1] = math.Inf(-1)
	}
	return m
}

// refProbs computes π̄ and T directly from the logits (no package code).
func refProbs(m *Model) (pi []float64, trans [][][]float64) {
	n := m.N()
	norm := func(x []float64) []float64 {
		out := make([]float64, len(x))
		var z float64
		for j, v := range x {
			out[j] = math.Exp(v)
			z += out[j]
		}
		for j := range out {
			out[j] /= z
		}
		return out
	}
	pi = norm(m.PiLogits)
	trans = make([][][]float64, m.NumActions)
	for a := range trans {
		trans[a] = make([][]float64, n)
		for i := range n {
			trans[a][i] = norm(m.ThetaLogits[(a*n+i)*n : (a*n+i+1)*n])
		}
	}
	return pi, trans
}

// emits reports whether state s emits token o (the sink emits nothing), from
// Clones alone.
func emits(m *Model, s, o int) bool {
	lo := 0
	for k, c := range m.Clones {
		if k == o {
			return s >= lo && s < lo+c
		}
		lo += c
	}
	return false
}

// brute enumerates every state path of every length-T path over all N states
// (the sink included) and returns p(o|a), the best path and its probability.
func brute(m *Model, seq Sequence) (total float64, best []int, bestP float64) {
	pi, trans := refProbs(m)
	n, tt := m.N(), len(seq.Obs)
	path := make([]int, tt)
	bestP = -1
	var rec func(t int, p float64)
	rec = func(t int, p float64) {
		if t == tt {
			total += p
			if p > bestP {
				bestP = p
				best = append(best[:0], path...)
			}
			return
		}
		for s := range n {
			q := p
			if t == 0 {
				q = pi[s]
			} else {
				q *= trans[seq.Actions[t-1]][path[t-1]][s]
			}
			if !emits(m, s, seq.Obs[t]) {
				q = 0
			}
			path[t] = s
			rec(t+1, q)
		}
	}
	rec(0, 1)
	return total, best, bestP
}

// randomSeq draws a sequence of length tt with uniform tokens and actions.
func randomSeq(rng *rand.Rand, k, actions, tt int) Sequence {
	s := Sequence{Obs: make([]int, tt), Actions: make([]int, tt-1)}
	for t := range s.Obs {
		s.Obs[t] = rng.IntN(k)
	}
	for t := range s.Actions {
		s.Actions[t] = rng.IntN(actions)
	}
	return s
}

// grid is a tiny grid world: cells hold class ids, -1 is a wall; actions
// up, down, left, right; moves into walls or off the grid are sticky.
type grid struct {
	cells  [][]int
	places [][2]int // place -> (row, col)
	id     map[[2]int]int
}

func parseGrid(s string) *grid {
	g := &grid{id: map[[2]int]int{}}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var row []int
		for _, f := range strings.Fields(line) {
			if f == "#" {
				row = append(row, -1)
				continue
			}
			v, err := strconv.Atoi(f)
			if err != nil {
				panic(err)
			}
			row = append(row, v)
		}
		g.cells = append(g.cells, row)
	}
	for r, row := range g.cells {
		for c, v := range row {
			if v >= 0 {
				g.id[[2]int{r, c}] = len(g.places)
				g.places = append(g.places, [2]int{r, c})
			}
		}
	}
	return g
}

func (g *grid) next(p, a int) int {
	d := [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}[a]
	rc := [2]int{g.places[p][0] + d[0], g.places[p][1] + d[1]}
	if q, ok := g.id[rc]; ok {
		return q
	}
	return p
}

func (g *grid) class(p int) int { return g.cells[g.places[p][0]][g.places[p][1]] }

// walk returns a uniform random walk of tt steps and its places.
func (g *grid) walk(rng *rand.Rand, tt int) (Sequence, []int) {
	s := Sequence{Obs: make([]int, tt), Actions: make([]int, tt-1)}
	places := make([]int, tt)
	p := rng.IntN(len(g.places))
	for t := range tt {
		places[t] = p
		s.Obs[t] = g.class(p)
		if t+1 < tt {
			a := rng.IntN(4)
			s.Actions[t] = a
			p = g.next(p, a)
		}
	}
	return s, places
}

// purity is the visit-weighted state→place purity Σ_s max_g n(s,g) / T
// (package evaluate) and the number of distinct decoded states.
func purity(states, places []int) (float64, int) {
	n := map[[2]int]int{}
	for t := range states {
		n[[2]int{states[t], places[t]}]++
	}
	best := map[int]int{}
	for k, v := range n {
		best[k[0]] = max(best[k[0]], v)
	}
	tot := 0
	for _, v := range best {
		tot += v
	}
	return float64(tot) / float64(len(states)), len(best)
}

const aliased3x3 = `
0 1 0
1 2 1
0 1 0`

const twoRooms = `
8 4 0 1 2 3 # # #
9 4 5 6 0 7 # # #
9 2 8 6 7 4 # # #
4 0 8 9 3 7 # # #
4 6 9 1 2 0 # # #
9 8 7 1 5 6 4 6 0
0 0 9 3 5 6 7 9 2
4 7 3 0 8 7 4 3 1
# # # 9 2 4 7 6 8
# # # 1 0 5 3 9 8
# # # 8 7 3 6 4 2
# # # 5 9 1 0 8 4
# # # 6 2 7 5 3 0`

// cscgRectangular is the original CSCG's 6×8 room (George et al. 2021, Fig. 2a).
const cscgRectangular = `
1 2 3 0 3 1 1 1
1 1 3 2 3 2 3 1
1 1 2 0 1 2 1 0
0 2 1 1 3 0 0 2
3 3 1 0 1 0 3 0
2 1 2 3 3 3 2 0`
