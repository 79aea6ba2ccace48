package plan

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

var inf = math.Inf(1)

// denseModel builds a model from probabilities: pi [N] and T [A][N][N]
// (zeros become -Inf logits). The sink is the last state.
func denseModel(t testing.TB, clones []int, pi []float64, T [][][]float64) *chmm.Model {
	t.Helper()
	n := len(pi)
	m := &chmm.Model{Clones: clones, NumActions: len(T), PiLogits: make([]float64, n), ThetaLogits: make([]float64, len(T)*n*n)}
	for i, p := range pi {
		m.PiLogits[i] = math.Log(p)
	}
	for a := range T {
		for i := range n {
			for j := range n {
				m.ThetaLogits[(a*n+i)*n+j] = math.Log(T[a][i][j])
			}
		}
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// randomModel returns a model with random logits; a fraction zero of the
// transition logits (never a whole row) are -Inf.
func randomModel(t testing.TB, clones []int, actions int, zero float64, rng *rand.Rand) *chmm.Model {
	t.Helper()
	m := chmm.New(clones, actions, rng)
	n := m.N()
	for a := range actions {
		for i := range n {
			row := m.ThetaLogits[(a*n+i)*n : (a*n+i+1)*n]
			keep := rng.IntN(n)
			for j := range row {
				row[j] = 2 * rng.NormFloat64()
				if j != keep && rng.Float64() < zero {
					row[j] = math.Inf(-1)
				}
			}
		}
	}
	for i := range m.PiLogits {
		m.PiLogits[i] = rng.NormFloat64()
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// envModel is the exact cloned HMM of a symbolic environment: every place has
// dup clones of its class's token (tokens = class ranks), and action a moves
// from any clone of g to the clones of Next(g, a), splitting the probability
// equally between them. The sink is unreachable. Returns the model and the
// true place of every state (-1 for the sink).
func envModel(t testing.TB, env *gridworld.Env, dup int) (*chmm.Model, []int) {
	t.Helper()
	classes := env.ClassesUsed()
	rank := map[int]int{}
	for k, c := range classes {
		rank[c] = k
	}
	// Places of each token, in place order.
	byToken := make([][]int, len(classes))
	for g, c := range env.Class {
		byToken[rank[c]] = append(byToken[rank[c]], g)
	}
	clones := make([]int, len(classes))
	var placeOf []int
	statesOf := make([][]int, env.NumPlaces())
	for k, gs := range byToken {
		clones[k] = dup * len(gs)
		for _, g := range gs {
			for range dup {
				statesOf[g] = append(statesOf[g], len(placeOf))
				placeOf = append(placeOf, g)
			}
		}
	}
	n := len(placeOf) + 1
	placeOf = append(placeOf, -1)
	A := env.NumActions()
	pi := make([]float64, n)
	T := make([][][]float64, A)
	for a := range A {
		T[a] = make([][]float64, n)
		for i := range n {
			T[a][i] = make([]float64, n)
			if i == n-1 {
				T[a][i][i] = 1
				continue
			}
			dst := statesOf[env.Next(placeOf[i], a)]
			for _, j := range dst {
				T[a][i][j] = 1 / float64(len(dst))
			}
		}
	}
	for i := range n - 1 {
		pi[i] = 1 / float64(n-1)
	}
	return denseModel(t, clones, pi, T), placeOf
}

// symbols returns the symbolic observer of env (tokens = class ranks).
func symbols(env *gridworld.Env) Symbols {
	classes := env.ClassesUsed()
	rank := map[int]int{}
	for k, c := range classes {
		rank[c] = k
	}
	s := make(Symbols, env.NumPlaces())
	for g, c := range env.Class {
		s[g] = rank[c]
	}
	return s
}

// sameBlocks reports whether two labellings define the same partition.
func sameBlocks(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	ab, ba := map[int]int{}, map[int]int{}
	for i := range a {
		if x, ok := ab[a[i]]; ok && x != b[i] {
			return false
		}
		if y, ok := ba[b[i]]; ok && y != a[i] {
			return false
		}
		ab[a[i]], ba[b[i]] = b[i], a[i]
	}
	return true
}

func sortedCopy(x []int) []int {
	y := append([]int(nil), x...)
	sort.Ints(y)
	return y
}
