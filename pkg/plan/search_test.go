package plan

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// A hand-built map: five places on a line 0-1-2-3-4 with tokens 0 1 0 1 2,
// action 0 = right, 1 = left (sticky at the ends), and a weak (0.05)
// "teleport" from place 0 to place 4 under action 1 that BFS must ignore.
func lineMap(t *testing.T) *Map {
	t.Helper()
	// States grouped by token: token 0 = places 0, 2 (states 0, 1);
	// token 1 = places 1, 3 (states 2, 3); token 2 = place 4 (state 4); sink 5.
	state := []int{0, 2, 1, 3, 4}
	const n = 6
	T := make([][][]float64, 2)
	for a := range T {
		T[a] = make([][]float64, n)
		for i := range T[a] {
			T[a][i] = make([]float64, n)
		}
		T[a][n-1][n-1] = 1
	}
	for g := range 5 {
		right, left := min(g+1, 4), max(g-1, 0)
		T[0][state[g]][state[right]] = 1
		T[1][state[g]][state[left]] = 1
	}
	T[1][state[0]][state[0]] = 0.95
	T[1][state[0]][state[4]] = 0.05
	pi := []float64{0.2, 0.2, 0.2, 0.2, 0.2, 0}
	mp, err := NewMap(denseModel(t, []int{2, 2, 1}, pi, T))
	if err != nil {
		t.Fatal(err)
	}
	return mp
}

func onehot(n, s int) []float64 {
	b := make([]float64, n)
	b[s] = 1
	return b
}

func TestPlanHandBuilt(t *testing.T) {
	mp := lineMap(t)
	goal4, _ := mp.StatesGoal([]int{4}) // place 4
	goal2, _ := mp.StatesGoal([]int{1}) // place 2
	tok1, _ := mp.TokenGoal(1)          // places 1 or 3
	for _, tc := range []struct {
		name    string
		method  Method
		start   int
		goal    Goal
		actions []int
		states  []int
	}{
		{"bfs place 0 to 4", BFS, 0, goal4, []int{0, 0, 0, 0}, []int{0, 2, 1, 3, 4}},
		{"bfs place 4 to 2", BFS, 4, goal2, []int{1, 1}, []int{4, 3, 1}},
		{"bfs already there", BFS, 1, goal2, []int{}, []int{1}},
		{"bfs nearest of a token", BFS, 4, tok1, []int{1}, []int{4, 3}},
		{"maxproduct place 0 to 4", MaxProduct, 0, goal4, []int{0, 0, 0, 0}, []int{0, 2, 1, 3, 4}},
		{"maxproduct place 4 to 2", MaxProduct, 4, goal2, []int{1, 1}, []int{4, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := mp.Plan(onehot(mp.N, tc.start), tc.goal, PlanConfig{Method: tc.method, MinProb: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Actions, tc.actions) && !(len(p.Actions) == 0 && len(tc.actions) == 0) {
				t.Errorf("actions %v, want %v", p.Actions, tc.actions)
			}
			if !slices.Equal(p.States, tc.states) {
				t.Errorf("states %v, want %v", p.States, tc.states)
			}
			if p.LogProb != 0 {
				t.Errorf("log probability %v of a deterministic path", p.LogProb)
			}
		})
	}
	// With a threshold below 0.05 the teleport is the shortest path.
	p, err := mp.Plan(onehot(mp.N, 0), goal4, PlanConfig{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Actions, []int{1}) || math.Abs(p.LogProb-math.Log(0.05)) > 1e-12 {
		t.Errorf("threshold 0.01: plan %v (log p %v), want the teleport [1]", p.Actions, p.LogProb)
	}
}

func TestPlanUnreachable(t *testing.T) {
	// Place 1 (state 1) can reach place 0 (state 0) only through a 0.05 edge.
	T := [][][]float64{
		{{1, 0, 0}, {0.05, 0.95, 0}, {0, 0, 1}},
	}
	mp, err := NewMap(denseModel(t, []int{1, 1}, []float64{0.5, 0.5, 0}, T))
	if err != nil {
		t.Fatal(err)
	}
	goal, _ := mp.StatesGoal([]int{0})
	for _, cfg := range []PlanConfig{{Method: BFS}, {Method: MaxProduct, MinProb: 0.1, MaxSteps: 20}} {
		_, err := mp.Plan(onehot(mp.N, 1), goal, cfg)
		var ue *UnreachableError
		if !errors.Is(err, ErrUnreachable) || !errors.As(err, &ue) {
			t.Errorf("%s: error %v, want an UnreachableError", cfg.Method, err)
			continue
		}
		if !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s: message %q", cfg.Method, err)
		}
	}
	// A max-product plan accepts the weak edge when its probability is enough.
	p, err := mp.Plan(onehot(mp.N, 1), goal, PlanConfig{Method: MaxProduct, MinProb: 0.05})
	if err != nil || !slices.Equal(p.Actions, []int{0}) {
		t.Errorf("max-product with MinProb 0.05: %v, %v", p.Actions, err)
	}
}

// placeStep is the reference rule of a planning move, computed from T
// directly: action a from clone i lands in model place q with probability
// W = Σ_{j∈q} T[a,i,j], at its most likely clone (lowest index on ties).
func placeStep(mp *Map, a, i, q int) (w float64, rep int) {
	rep = -1
	for j := range mp.N - 1 {
		if mp.Place[j] != q {
			continue
		}
		v := mp.trans(a, i, j)
		w += v
		if rep < 0 || v > mp.trans(a, i, rep) {
			rep = j
		}
	}
	return w, rep
}

// inGoal reports whether clone s lies in a model place holding a goal clone.
func inGoal(mp *Map, goal []int, s int) bool {
	for _, g := range goal {
		if mp.Place[g] == mp.Place[s] {
			return true
		}
	}
	return false
}

// bruteShortest enumerates every sequence of (action, place) moves from start
// of length 1, 2, ... using only moves with W > threshold, and returns the
// shortest length reaching a goal place and the best Σ log W among those
// paths (-1 if none within maxLen).
func bruteShortest(mp *Map, start int, goal []int, threshold float64, maxLen int) (int, float64) {
	for L := 1; L <= maxLen; L++ {
		best := math.Inf(-1)
		var rec func(s, depth int, lp float64)
		rec = func(s, depth int, lp float64) {
			if depth == L {
				if inGoal(mp, goal, s) {
					best = max(best, lp)
				}
				return
			}
			for a := range mp.A {
				for q := range mp.NumPlaces {
					if w, j := placeStep(mp, a, s, q); w > threshold {
						rec(j, depth+1, lp+math.Log(w))
					}
				}
			}
		}
		rec(start, 0, 0)
		if !math.IsInf(best, -1) {
			return L, best
		}
	}
	return -1, 0
}

// bruteMaxProduct returns, for the first length L with a move sequence of
// probability ≥ minProb (start place mass included) to a goal place, L and
// that probability.
func bruteMaxProduct(mp *Map, belief []float64, goal []int, minProb float64, maxLen int) (int, float64) {
	mass := make([]float64, mp.NumPlaces)
	for s := range mp.N - 1 {
		mass[mp.Place[s]] += belief[s]
	}
	for L := 1; L <= maxLen; L++ {
		best := 0.0
		var rec func(s, depth int, p float64)
		rec = func(s, depth int, p float64) {
			if depth == L {
				if inGoal(mp, goal, s) {
					best = max(best, p)
				}
				return
			}
			for a := range mp.A {
				for q := range mp.NumPlaces {
					if w, j := placeStep(mp, a, s, q); w > 0 {
						rec(j, depth+1, p*w)
					}
				}
			}
		}
		for s := range mp.N - 1 {
			if mass[mp.Place[s]] > 0 {
				rec(s, 0, mass[mp.Place[s]])
			}
		}
		if best >= minProb {
			return L, best
		}
	}
	return -1, 0
}

// checkPath verifies that a plan is a valid sequence of planning moves.
func checkPath(t *testing.T, mp *Map, p Plan, goal Goal, threshold float64) {
	t.Helper()
	if len(p.States) != len(p.Actions)+1 {
		t.Fatalf("%d states for %d actions", len(p.States), len(p.Actions))
	}
	lp := 0.0
	for i, a := range p.Actions {
		w, rep := placeStep(mp, a, p.States[i], mp.Place[p.States[i+1]])
		if w <= threshold || rep != p.States[i+1] {
			t.Errorf("step %d: %d →%d %d has place probability %v (threshold %v), most likely clone %d",
				i, p.States[i], a, p.States[i+1], w, threshold, rep)
		}
		lp += math.Log(w)
	}
	if math.Abs(lp-p.LogProb) > 1e-9 {
		t.Errorf("LogProb %v, path sums to %v", p.LogProb, lp)
	}
	if !inGoal(mp, goal.States, p.States[len(p.States)-1]) {
		t.Errorf("path ends at %d, not in a goal place %v", p.States[len(p.States)-1], goal.States)
	}
}

func TestPlanMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	found, unreachable := 0, 0
	for trial := range 60 {
		m := randomModel(t, []int{2, 2, 2}, 2, 0.7, rng)
		mp, err := NewMap(m)
		if err != nil {
			t.Fatal(err)
		}
		start := rng.IntN(mp.N - 1)
		g := rng.IntN(mp.N - 1)
		goal, err := mp.StatesGoal([]int{g})
		if err != nil {
			t.Fatal(err)
		}
		if mp.Place[g] == mp.Place[start] { // already there
			if p, err := mp.PlanFrom(start, goal, PlanConfig{}); err != nil || p.Len() != 0 {
				t.Errorf("trial %d: start %d in the goal place: plan %v, %v", trial, start, p.Actions, err)
			}
			continue
		}
		const threshold = 0.2
		wantLen, wantLP := bruteShortest(mp, start, goal.States, threshold, mp.N)
		p, err := mp.PlanFrom(start, goal, PlanConfig{Threshold: threshold})
		switch {
		case wantLen < 0:
			unreachable++
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("trial %d: brute force finds no path, Plan gives %v, %v", trial, p.Actions, err)
			}
		case err != nil:
			t.Errorf("trial %d: %v (brute force: length %d)", trial, err, wantLen)
		default:
			found++
			checkPath(t, mp, p, goal, threshold)
			if p.Len() != wantLen || math.Abs(p.LogProb-wantLP) > 1e-9 {
				t.Errorf("trial %d: plan length %d log p %.6f, brute force %d %.6f", trial, p.Len(), p.LogProb, wantLen, wantLP)
			}
		}

		// Max-product from a random belief.
		belief := make([]float64, mp.N)
		sum := 0.0
		for s := range mp.N - 1 {
			belief[s] = rng.Float64() * rng.Float64()
			sum += belief[s]
		}
		for s := range belief {
			belief[s] /= sum
		}
		if s0, _ := argmax(belief); mp.Place[s0] == mp.Place[g] {
			continue
		}
		const minProb = 0.02
		mLen, mProb := bruteMaxProduct(mp, belief, goal.States, minProb, 4)
		mpPlan, err := mp.Plan(belief, goal, PlanConfig{Method: MaxProduct, MinProb: minProb, MaxSteps: 4})
		switch {
		case mLen < 0:
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("trial %d: max-product brute force finds nothing, Plan gives %v, %v", trial, mpPlan.Actions, err)
			}
		case err != nil:
			t.Errorf("trial %d: max-product: %v (brute force length %d)", trial, err, mLen)
		default:
			checkPath(t, mp, mpPlan, goal, 0)
			got := mpPlan.Start * math.Exp(mpPlan.LogProb)
			if mpPlan.Len() != mLen || math.Abs(got-mProb) > 1e-12 {
				t.Errorf("trial %d: max-product length %d probability %.9f, brute force %d %.9f", trial, mpPlan.Len(), got, mLen, mProb)
			}
		}
	}
	if found < 10 || unreachable < 3 {
		t.Errorf("weak test: %d reachable and %d unreachable cases", found, unreachable)
	}
}

func TestPlanBadInput(t *testing.T) {
	mp := lineMap(t)
	goal, _ := mp.StatesGoal([]int{4})
	b := onehot(mp.N, 0)
	for _, tc := range []struct {
		name   string
		belief []float64
		goal   Goal
		cfg    PlanConfig
		want   string
	}{
		{"short belief", b[:3], goal, PlanConfig{}, "belief has 3 entries"},
		{"NaN belief", []float64{math.NaN(), 0, 0, 0, 0, 0}, goal, PlanConfig{}, "belief[0] = NaN"},
		{"no mass", make([]float64, mp.N), goal, PlanConfig{}, "no mass"},
		{"empty goal", b, Goal{}, PlanConfig{}, "empty goal"},
		{"sink goal", b, Goal{States: []int{5}}, PlanConfig{}, "goal state 5 outside"},
		{"unsorted goal", b, Goal{States: []int{3, 1}}, PlanConfig{}, "not sorted"},
		{"bad method", b, goal, PlanConfig{Method: "astar"}, `unknown method "astar"`},
		{"bad threshold", b, goal, PlanConfig{Threshold: 1.5}, "threshold 1.5 outside"},
		{"bad min prob", b, goal, PlanConfig{MinProb: -1}, "minimum probability -1 outside"},
	} {
		if _, err := mp.Plan(tc.belief, tc.goal, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := mp.PlanFrom(9, goal, PlanConfig{}); err == nil || !strings.Contains(err.Error(), "start state 9") {
		t.Errorf("bad start: %v", err)
	}
}

// A model that splits every move between three duplicate clones of the next
// place still plans the true shortest paths with certainty, by both methods.
func TestPlanWithDuplicates(t *testing.T) {
	env, err := gridworld.Named("corridors")
	if err != nil {
		t.Fatal(err)
	}
	m, truth := envModel(t, env, 3)
	mp, err := NewMap(m)
	if err != nil {
		t.Fatal(err)
	}
	d := Distances(env)
	firstClone := func(g int) int { return slices.Index(truth, g) }
	for g := range env.NumPlaces() {
		for h := range env.NumPlaces() {
			goal, err := mp.StatesGoal([]int{firstClone(h)})
			if err != nil {
				t.Fatal(err)
			}
			// Belief spread over the three duplicates of g.
			belief := make([]float64, mp.N)
			for s, p := range truth {
				if p == g {
					belief[s] = 1.0 / 3
				}
			}
			for _, method := range []Method{BFS, MaxProduct} {
				p, err := mp.Plan(belief, goal, PlanConfig{Method: method, MinProb: 0.99})
				if err != nil {
					t.Fatalf("%s %d→%d: %v", method, g, h, err)
				}
				if p.Len() != d[g][h] || p.LogProb != 0 || math.Abs(p.Start-1) > 1e-12 {
					t.Errorf("%s %d→%d: %d steps, log p %v, start mass %v; want %d, 0, 1", method, g, h, p.Len(), p.LogProb, p.Start, d[g][h])
				}
				place := g
				for i, a := range p.Actions {
					place = env.Next(place, a)
					if truth[p.States[i+1]] != place {
						t.Errorf("%s %d→%d: step %d expects place %d, the action leads to %d", method, g, h, i, truth[p.States[i+1]], place)
					}
				}
				if place != h {
					t.Errorf("%s %d→%d: the plan ends at place %d", method, g, h, place)
				}
			}
		}
	}
}
