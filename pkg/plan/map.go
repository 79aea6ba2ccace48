package plan

import (
	"fmt"
	"math"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// Map is a learned cloned HMM prepared for planning: its transition
// probabilities, its model places and the stationary distribution of the
// random policy. A Map is read-only after NewMap and safe for concurrent use.
type Map struct {
	Model   *chmm.Model
	N, A, K int

	// T holds the transition probabilities of paper Sec. 3.3,
	// T[(a*N+i)*N+j] = softmax(Θ[a,i,·])_j, shape [A][N][N].
	T []float64

	// Place is the model place of every state (-1 for the sink); NumPlaces
	// counts them. See the package documentation ("Model places").
	Place     []int
	NumPlaces int

	// Stationary is the stationary distribution of the uniform random policy
	// over the real states (the sink gets 0), shape [N].
	Stationary []float64
	// Used marks the states the model actually uses: Stationary[s] ≥
	// 0.01/(N−1).
	Used []bool

	token []int // Token(s), -1 for the sink

	moves [][]edge // planning graph, see buildMoves
}

// edge is one move of the planning graph: action a leads to the place of
// state to (and most likely to state to) with log probability logp.
type edge struct {
	a, to int
	logp  float64
}

// NewMap validates m and prepares it for filtering and planning.
func NewMap(m *chmm.Model) (*Map, error) {
	if m == nil {
		return nil, fmt.Errorf("plan: nil model")
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	mp := &Map{Model: m, N: m.N(), A: m.NumActions, K: m.K(), T: m.Transitions(), token: m.StateTokens()}
	mp.Stationary = stationary(mp.T, mp.N, mp.A)
	mp.Used = make([]bool, mp.N)
	for s := range mp.N - 1 {
		mp.Used[s] = mp.Stationary[s] >= 0.01/float64(mp.N-1)
	}
	mp.Place, mp.NumPlaces = refinePlaces(mp.T, mp.token, mp.N, mp.A, mp.K)
	mp.buildMoves()
	return mp, nil
}

// Token returns the token emitted by state s (-1 for the sink).
func (mp *Map) Token(s int) int { return mp.token[s] }

// Sink returns the index of the sink state, N−1.
func (mp *Map) Sink() int { return mp.N - 1 }

// trans returns T[a,i,j].
func (mp *Map) trans(a, i, j int) float64 { return mp.T[(a*mp.N+i)*mp.N+j] }

// stationary returns the stationary distribution of the chain that, from
// state i, moves to real state j with probability
//
//	M[i,j] = Σ_a T[a,i,j] / Σ_a Σ_{j' real} T[a,i,j']
//
// (the uniform random policy; mass toward the sink, and actions whose rows
// lead only there, are ignored). It iterates the lazy chain p ← (p + pM)/2,
// which converges for every chain, from the uniform distribution until the L1
// change is below 1e-12 or 10,000 iterations. Shape [N], sink 0.
func stationary(T []float64, n, a int) []float64 {
	real := n - 1
	M := make([]float64, real*real)
	for i := range real {
		row := M[i*real : (i+1)*real]
		sum := 0.0
		for act := range a {
			src := T[(act*n+i)*n : (act*n+i)*n+real]
			for j, v := range src {
				row[j] += v
				sum += v
			}
		}
		if sum > 0 {
			for j := range row {
				row[j] /= sum
			}
		} else {
			row[i] = 1 // a state that only leads to the sink: stays put
		}
	}
	p := make([]float64, real)
	for i := range p {
		p[i] = 1 / float64(real)
	}
	q := make([]float64, real)
	for range 10000 {
		clear(q)
		for i, pi := range p {
			if pi == 0 {
				continue
			}
			for j, v := range M[i*real : (i+1)*real] {
				q[j] += pi * v
			}
		}
		diff := 0.0
		for j := range q {
			nv := 0.5 * (p[j] + q[j])
			diff += math.Abs(nv - p[j])
			p[j] = nv
		}
		if diff < 1e-12 {
			break
		}
	}
	out := make([]float64, n)
	copy(out, p)
	return out
}

// refinePlaces partitions the states into model places by partition
// refinement (Moore's algorithm on the most likely successors): start from the
// blocks of equal tokens (the sink alone), then repeatedly split every block by
// the signature
//
//	σ(i) = (block(i), argmax_B Σ_{j∈B} T[0,i,j], …, argmax_B Σ_{j∈B} T[A−1,i,j])
//
// until no block splits. Two states end in one place when, for every action,
// their most likely successor places agree, recursively: the model predicts
// the same futures from them. Places are numbered by their first state; the
// sink gets -1.
func refinePlaces(T []float64, token []int, n, a, k int) (place []int, count int) {
	block := make([]int, n)
	for s := range n {
		if token[s] < 0 {
			block[s] = k // the sink: a block of its own
		} else {
			block[s] = token[s]
		}
	}
	nb := k + 1
	mass := make([]float64, nb)
	sig := make([]int, a+1)
	for {
		ids := map[string]int{}
		next := make([]int, n)
		for s := range n {
			sig[0] = block[s]
			for act := range a {
				if token[s] < 0 {
					sig[1+act] = -1 // the sink is absorbing
					continue
				}
				mass = mass[:nb]
				clear(mass)
				row := T[(act*n+s)*n : (act*n+s+1)*n]
				for j, v := range row {
					mass[block[j]] += v
				}
				best := 0
				for b := 1; b < nb; b++ {
					if mass[b] > mass[best] {
						best = b
					}
				}
				sig[1+act] = best
			}
			key := fmt.Sprint(sig)
			id, ok := ids[key]
			if !ok {
				id = len(ids)
				ids[key] = id
			}
			next[s] = id
		}
		stable := len(ids) == nb
		block, nb = next, len(ids)
		if len(mass) < nb {
			mass = make([]float64, nb)
		}
		if stable {
			break
		}
	}
	// Renumber: places 0.. in order of their first state; the sink -1.
	place = make([]int, n)
	ids := map[int]int{}
	for s := range n {
		if token[s] < 0 {
			place[s] = -1
			continue
		}
		id, ok := ids[block[s]]
		if !ok {
			id = len(ids)
			ids[block[s]] = id
		}
		place[s] = id
	}
	return place, len(ids)
}

// PlaceStates returns the states of model place p, increasing.
func (mp *Map) PlaceStates(p int) []int {
	var out []int
	for s, q := range mp.Place {
		if q == p {
			out = append(out, s)
		}
	}
	return out
}

// moves builds the planning graph: for every real state i, action a and
// model place Q that a reaches with probability
//
//	W(a, i, Q) = Σ_{j∈Q} T[a,i,j] > 0,
//
// one move to the most likely clone of Q, argmax_{j∈Q} T[a,i,j] (ties: the
// lowest index), scored log W(a, i, Q). Moves are ordered by action, then
// place. Scoring by place rather than by clone keeps a transition that the
// model splits between duplicate clones of one place as certain as it is.
func (mp *Map) buildMoves() {
	mp.moves = make([][]edge, mp.N)
	w := make([]float64, mp.NumPlaces)
	rep := make([]int, mp.NumPlaces)
	for i := range mp.N - 1 {
		for a := range mp.A {
			clear(w)
			for q := range rep {
				rep[q] = -1
			}
			for j := range mp.N - 1 {
				v := mp.trans(a, i, j)
				if v <= 0 {
					continue
				}
				q := mp.Place[j]
				w[q] += v
				if rep[q] < 0 || v > mp.trans(a, i, rep[q]) {
					rep[q] = j
				}
			}
			for q, wq := range w {
				if wq > 0 {
					mp.moves[i] = append(mp.moves[i], edge{a: a, to: rep[q], logp: math.Log(min(wq, 1))})
				}
			}
		}
	}
}
