package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

const tol = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

// grid2x2 is "0 1 / 2 3": places 0 (0,0), 1 (0,1), 2 (1,0), 3 (1,1); true
// edges (0,1), (0,2), (1,3), (2,3).
func grid2x2(t testing.TB) *gridworld.Env {
	t.Helper()
	e, err := gridworld.ParseLayout("2x2", strings.NewReader("0 1\n2 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// handInput is a T = 10 episode on the 2x2 grid with hand-computed metrics.
//
//	t       0 1 2 3 4 5 6 7 8 9
//	place   0 1 3 3 2 0 1 1 3 2
//	state   0 1 3 3 2 0 1 0 3 3   (errors at t=7 and t=9)
//	token   0 1 3 3 2 0 1 1 3 1   (error at t=9)
//
// n(s,g): s0 {g0:2, g1:1}, s1 {g1:2}, s2 {g2:1}, s3 {g3:3, g2:1}; χ = identity.
// N = 5 (state 4 = sink, never visited), K = 4.
//
// Transitions: T[a,i,Next(i,a)] = 0.9, T[a,i,4] = 0.1 for i < 4, except
//
//	T[Up,0,·]:   s0 0.85, s3 0.05, sink 0.1   (weak false edge 0-3, W(0,3) = 0.05)
//	T[Up,2,·]:   s0 0.6,  s1 0.3,  sink 0.1   (false edge 1-2 from W(2,1) = 0.3 only)
//	T[Left,1,·]: s0 0.45, s3 0.45, sink 0.1   (tie: the lowest place, 0 = Next(1,Left), wins)
//	T[Left,3,·]: s3 0.5,  s2 0.4,  sink 0.1   (argmax s3, but Next(3,Left) = 2)
func handInput(t testing.TB) Input {
	env := grid2x2(t)
	const N, A = 5, 4
	tr := make([]float64, A*N*N)
	set := func(a, i int, row map[int]float64) {
		for j := range N {
			tr[(a*N+i)*N+j] = row[j]
		}
	}
	for a := range A {
		for i := range 4 {
			set(a, i, map[int]float64{env.Next(i, a): 0.9, 4: 0.1})
		}
		set(a, 4, map[int]float64{4: 1})
	}
	set(gridworld.Up, 0, map[int]float64{0: 0.85, 3: 0.05, 4: 0.1})
	set(gridworld.Up, 2, map[int]float64{0: 0.6, 1: 0.3, 4: 0.1})
	set(gridworld.Left, 1, map[int]float64{0: 0.45, 3: 0.45, 4: 0.1})
	set(gridworld.Left, 3, map[int]float64{3: 0.5, 2: 0.4, 4: 0.1})
	return Input{
		Env:       env,
		Places:    []int{0, 1, 3, 3, 2, 0, 1, 1, 3, 2},
		States:    []int{0, 1, 3, 3, 2, 0, 1, 0, 3, 3},
		Tokens:    []int{0, 1, 3, 3, 2, 0, 1, 1, 3, 1},
		Trans:     tr,
		NumStates: N,
		NumTokens: 4,
	}
}

func mustEval(t testing.TB, in Input, opt Options) *Report {
	t.Helper()
	r, err := Evaluate(in, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHandCase(t *testing.T) {
	in := handInput(t)
	opt := DefaultOptions()
	opt.Cutoff = 0.15 // count > 1.5
	opt.CutoffSweep = []float64{0.05, 0.1, 0.15}
	opt.Thresholds = []float64{0.01, 0.05, 0.1, 0.2, 0.3, 0.95}
	r := mustEval(t, in, opt)

	for _, c := range []struct {
		name      string
		got, want float64
	}{
		// (2/3 + 2/2 + 1/1 + 3/4) / 4
		{"clone purity", r.ClonePurity, (2.0/3 + 1 + 1 + 0.75) / 4},
		// (2 + 2 + 1 + 3) / 10
		{"state->place purity", r.StatePlacePurity, 0.8},
		{"represented fraction", r.RepresentedPlaceFraction, 1},
		{"states per place", r.StatesPerPlace, 1},
		// 15 of 16 (place, action) pairs: only (3, Left) predicts 3 instead of 2.
		{"action accuracy", r.ActionAccuracy, 15.0 / 16},
		{"action coverage", r.ActionCoverage, 1},
		// Only place 2 is ambiguous: tokens 2 and 1, once each: -2·0.1·ln(1/2).
		{"H(token|place)", r.HTokenGivenPlace, 0.2 * math.Ln2},
		// Token 1 is seen 3 times at place 1 and once at place 2.
		{"H(place|token)", r.HPlaceGivenToken, -(0.3*math.Log(0.75) + 0.1*math.Log(0.25))},
		// Usage 0.2, 0.4, 0.1, 0.3.
		{"perplexity", r.Perplexity, math.Exp(-(0.2*math.Log(0.2) + 0.4*math.Log(0.4) + 0.1*math.Log(0.1) + 0.3*math.Log(0.3)))},
		{"tokens per place mean", r.TokensPerPlaceMean, 1.25},
		{"places per token mean", r.PlacesPerTokenMean, 1.25},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	if r.ActiveCodes != 4 || r.TokensPerPlaceMax != 2 || r.PlacesPerTokenMax != 2 {
		t.Errorf("active %d, tokens/place max %d, places/token max %d", r.ActiveCodes, r.TokensPerPlaceMax, r.PlacesPerTokenMax)
	}
	if got := []int{r.VisitedStates, r.VisitedPlaces, r.RepresentedPlaces, r.Steps, r.NumPlaces, r.TrueEdges}; !slices.Equal(got, []int{4, 4, 4, 10, 4, 4}) {
		t.Errorf("visited states/places, represented, steps, places, true edges = %v", got)
	}
	if !slices.Equal(r.StatePlace, []int{0, 1, 2, 3, -1}) {
		t.Errorf("StatePlace = %v", r.StatePlace)
	}

	// Viterbi-path traversals: (0,1)x3, (0,2), (0,3), (1,3), (2,3) once each.
	wantTrans := []PlaceEdge{{0, 1, 3}, {0, 2, 1}, {0, 3, 1}, {1, 3, 1}, {2, 3, 1}}
	if !slices.Equal(r.ViterbiTransitions, wantTrans) {
		t.Errorf("ViterbiTransitions = %v, want %v", r.ViterbiTransitions, wantTrans)
	}
	// f = 0.15: only (0,1) (3 > 1.5): P 1, R 1/4, F1 0.4.
	checkScore(t, "viterbi f=0.15", r.ViterbiMap.EdgeScore, 1, 0.25, 0.4, 1)
	if r.ViterbiMap.CutoffFraction != 0.15 || !slices.Equal(r.ViterbiEdges, [][2]int{{0, 1}}) {
		t.Errorf("viterbi map %+v, edges %v", r.ViterbiMap, r.ViterbiEdges)
	}
	// f = 0.05: all five (> 0.5): tp 4, fp 1. f = 0.1: count must be > 1 (strict).
	checkScore(t, "viterbi f=0.05", r.ViterbiMapSweep[0].EdgeScore, 0.8, 1, 2*0.8/1.8, 5)
	checkScore(t, "viterbi f=0.1", r.ViterbiMapSweep[1].EdgeScore, 1, 0.25, 0.4, 1)
	checkScore(t, "viterbi f=0.15", r.ViterbiMapSweep[2].EdgeScore, 1, 0.25, 0.4, 1)
	// The walk's own places cross (0,1), (1,3) and (2,3) twice and (0,2) once: at
	// f = 0.15 three true edges pass, P 1, R 3/4.
	if r.WalkMap == nil || r.WalkMap.CutoffFraction != 0.15 {
		t.Fatalf("walk map %+v", r.WalkMap)
	}
	checkScore(t, "walk f=0.15", r.WalkMap.EdgeScore, 1, 0.75, 6.0/7, 3)

	// Projected map: the 4 true edges have W >= 0.45; 1-2 has 0.3, 0-3 has 0.05.
	wantProj := []struct {
		p, r, f1 float64
		n        int
	}{
		{4.0 / 6, 1, 0.8, 6},       // η = 0.01
		{0.8, 1, 2 * 0.8 / 1.8, 5}, // η = 0.05: W = 0.05 is not > η
		{0.8, 1, 2 * 0.8 / 1.8, 5}, // η = 0.1
		{0.8, 1, 2 * 0.8 / 1.8, 5}, // η = 0.2
		{1, 1, 1, 4},               // η = 0.3: W = 0.3 is not > η
		{0, 0, 0, 0},               // η = 0.95: nothing learned, 0/0 := 0
	}
	for i, w := range wantProj {
		s := r.ProjectedMap[i]
		if s.Threshold != opt.Thresholds[i] {
			t.Errorf("projected[%d] threshold %v", i, s.Threshold)
		}
		checkScore(t, "projected", s.EdgeScore, w.p, w.r, w.f1, w.n)
	}
	if r.Env != "2x2" || r.NumStates != 5 || r.NumTokens != 4 || r.Seconds["total"] <= 0 {
		t.Errorf("env %q N %d K %d seconds %v", r.Env, r.NumStates, r.NumTokens, r.Seconds)
	}

	// The share is inclusive: at 0.5, place 2's two tokens (50% each) count.
	opt.MinTokenShare = 0.5
	r = mustEval(t, in, opt)
	if !near(r.TokensPerPlaceMean, 1.25) || r.TokensPerPlaceMax != 2 {
		t.Errorf("share 0.5: tokens/place %v/%d", r.TokensPerPlaceMean, r.TokensPerPlaceMax)
	}
	// A stricter token share: place 2's two tokens no longer count.
	opt.MinTokenShare = 0.6
	r = mustEval(t, in, opt)
	// tokens per place [1 1 0 1]; places per token [1 1 0 1] over 3 tokens.
	if !near(r.TokensPerPlaceMean, 0.75) || r.TokensPerPlaceMax != 1 || !near(r.PlacesPerTokenMean, 1) || r.PlacesPerTokenMax != 1 {
		t.Errorf("share 0.6: tokens/place %v/%d places/token %v/%d", r.TokensPerPlaceMean, r.TokensPerPlaceMax, r.PlacesPerTokenMean, r.PlacesPerTokenMax)
	}
}

func checkScore(t *testing.T, what string, s EdgeScore, p, r, f1 float64, n int) {
	t.Helper()
	if !near(s.Precision, p) || !near(s.Recall, r) || !near(s.F1, f1) || s.Edges != n {
		t.Errorf("%s: P %.6g R %.6g F1 %.6g edges %d, want %.6g %.6g %.6g %d", what, s.Precision, s.Recall, s.F1, s.Edges, p, r, f1, n)
	}
}

func TestTiesAndUnrepresented(t *testing.T) {
	// 2x2 grid, T = 4: state 0 sees places 2 and 1 once each (tie -> place 1);
	// state 1 sees place 3 twice. Place 0 is never visited.
	env := grid2x2(t)
	const N, A = 3, 4
	tr := make([]float64, A*N*N) // all zero: no predictions
	in := Input{Env: env, Places: []int{2, 1, 3, 3}, States: []int{0, 0, 1, 1}, Tokens: []int{0, 0, 0, 0},
		Trans: tr, NumStates: N, NumTokens: 2}
	r := mustEval(t, in, DefaultOptions())
	if !slices.Equal(r.StatePlace, []int{1, 3, -1}) {
		t.Errorf("StatePlace = %v, want [1 3 -1]", r.StatePlace)
	}
	// purity: (1/2 + 1)/2 clone; (1 + 2)/4 visit-weighted.
	if !near(r.ClonePurity, 0.75) || !near(r.StatePlacePurity, 0.75) {
		t.Errorf("purity %v %v", r.ClonePurity, r.StatePlacePurity)
	}
	// Represented {1,3} of visited {1,2,3}.
	if !near(r.RepresentedPlaceFraction, 2.0/3) || !near(r.StatesPerPlace, 1) {
		t.Errorf("represented %v states/place %v", r.RepresentedPlaceFraction, r.StatesPerPlace)
	}
	// All-zero W: no prediction, every pair wrong; coverage 8 of 16 pairs.
	if r.ActionAccuracy != 0 || !near(r.ActionCoverage, 0.5) {
		t.Errorf("action accuracy %v coverage %v", r.ActionAccuracy, r.ActionCoverage)
	}
	// One token, one code used: perplexity 1, H(token|place) 0; token 0 spans
	// places 1, 2, 3 (1/4, 1/4, 2/4).
	if r.Perplexity != 1 || r.ActiveCodes != 1 || r.HTokenGivenPlace != 0 ||
		!near(r.HPlaceGivenToken, -(0.5*math.Log(0.25)+0.5*math.Log(0.5))) {
		t.Errorf("perplexity %v active %d H(t|p) %v H(p|t) %v", r.Perplexity, r.ActiveCodes, r.HTokenGivenPlace, r.HPlaceGivenToken)
	}
	// χ path 1 1 3 3: one traversal of the pair (1,3).
	if !slices.Equal(r.ViterbiTransitions, []PlaceEdge{{1, 3, 1}}) {
		t.Errorf("transitions %v", r.ViterbiTransitions)
	}
}

// perfectInput decodes a real walk perfectly: state = place, token = class,
// transitions = the true dynamics.
func perfectInput(t testing.TB, env *gridworld.Env, T int, seed uint64) Input {
	ep := env.Walk(gridworld.NewRand(seed), T)
	P, A := env.NumPlaces(), env.NumActions()
	N := P + 1
	tr := make([]float64, A*N*N)
	for a := range A {
		for i := range P {
			tr[(a*N+i)*N+env.Next(i, a)] = 1
		}
		tr[(a*N+P)*N+P] = 1
	}
	return Input{Env: env, Places: ep.Places, States: slices.Clone(ep.Places), Tokens: ep.Obs,
		Trans: tr, NumStates: N, NumTokens: env.NumClasses()}
}

func TestPerfectDecoding(t *testing.T) {
	for _, name := range []string{"aliased", "corridors", "two_rooms", "three_rooms", "cscg_empty"} {
		env, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		r := mustEval(t, perfectInput(t, env, 10000, 1), DefaultOptions())
		ones := map[string]float64{
			"clone purity": r.ClonePurity, "state->place purity": r.StatePlacePurity,
			"represented fraction": r.RepresentedPlaceFraction, "states per place": r.StatesPerPlace,
			"viterbi P": r.ViterbiMap.Precision, "viterbi R": r.ViterbiMap.Recall, "viterbi F1": r.ViterbiMap.F1,
			"action accuracy": r.ActionAccuracy, "action coverage": r.ActionCoverage,
			"tokens per place": r.TokensPerPlaceMean,
		}
		for _, s := range r.ProjectedMap {
			ones[fmt.Sprintf("projected P@%g", s.Threshold)] = s.Precision
			ones[fmt.Sprintf("projected R@%g", s.Threshold)] = s.Recall
		}
		for k, v := range ones {
			if v != 1 {
				t.Errorf("%s: %s = %v, want 1", name, k, v)
			}
		}
		if r.HTokenGivenPlace != 0 || r.ActiveCodes != len(env.ClassesUsed()) || r.ViterbiMap.Edges != len(env.Edges()) {
			t.Errorf("%s: H(token|place) %v, active %d, edges %d", name, r.HTokenGivenPlace, r.ActiveCodes, r.ViterbiMap.Edges)
		}
	}
}

func TestMergedPlaces(t *testing.T) {
	// A perfect decoding of aliased, except places 0 and 1 share state 0.
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	in := perfectInput(t, env, 5000, 3)
	v := [2]float64{}
	for i, g := range in.Places {
		if g == 1 {
			in.States[i] = 0
		}
		if g < 2 {
			v[g]++
		}
	}
	r := mustEval(t, in, DefaultOptions())
	T, P := float64(len(in.Places)), float64(env.NumPlaces())
	big := max(v[0], v[1])
	// The merged state's purity is max/(v0+v1); the other P-2 states are pure.
	if want := (P - 2 + big/(v[0]+v[1])) / (P - 1); !near(r.ClonePurity, want) {
		t.Errorf("clone purity %v, want %v", r.ClonePurity, want)
	}
	if want := (T - min(v[0], v[1])) / T; !near(r.StatePlacePurity, want) {
		t.Errorf("state->place purity %v, want %v", r.StatePlacePurity, want)
	}
	if want := (P - 1) / P; !near(r.RepresentedPlaceFraction, want) {
		t.Errorf("represented %v, want %v", r.RepresentedPlaceFraction, want)
	}
	if r.ActionCoverage != (P-1)/P {
		t.Errorf("coverage %v", r.ActionCoverage)
	}
}

func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Input, *Options)
		want   string
	}{
		{"nil env", func(in *Input, _ *Options) { in.Env = nil }, "Env is nil"},
		{"empty", func(in *Input, _ *Options) { in.Places, in.States, in.Tokens = nil, nil, nil }, "empty episode"},
		{"states len", func(in *Input, _ *Options) { in.States = in.States[:9] }, "len(States) = 9, want len(Places) = 10"},
		{"tokens len", func(in *Input, _ *Options) { in.Tokens = append(in.Tokens, 0) }, "len(Tokens) = 11"},
		{"place range", func(in *Input, _ *Options) { in.Places[3] = 4 }, "Places[3] = 4 out of range [0, 4)"},
		{"state range", func(in *Input, _ *Options) { in.States[2] = -1 }, "States[2] = -1"},
		{"token range", func(in *Input, _ *Options) { in.Tokens[9] = 4 }, "Tokens[9] = 4 out of range [0, 4)"},
		{"N", func(in *Input, _ *Options) { in.NumStates = 0 }, "NumStates = 0"},
		{"K", func(in *Input, _ *Options) { in.NumTokens = -1 }, "NumTokens = -1"},
		{"trans len", func(in *Input, _ *Options) { in.Trans = in.Trans[:10] }, "len(Trans) = 10, want A*N*N = 4*5*5 = 100"},
		{"trans NaN", func(in *Input, _ *Options) { in.Trans[(1*5+2)*5+3] = math.NaN() }, "Trans[1,2,3] = NaN"},
		{"trans negative", func(in *Input, _ *Options) { in.Trans[7] = -0.5 }, "Trans[0,1,2] = -0.5"},
		{"trans inf", func(in *Input, _ *Options) { in.Trans[0] = math.Inf(1) }, "Trans[0,0,0] = +Inf"},
		{"cutoff", func(_ *Input, o *Options) { o.Cutoff = -1 }, "Cutoff = -1"},
		{"sweep", func(_ *Input, o *Options) { o.CutoffSweep = []float64{math.NaN()} }, "CutoffSweep"},
		{"thresholds", func(_ *Input, o *Options) { o.Thresholds = []float64{math.Inf(1)} }, "Thresholds"},
		{"share", func(_ *Input, o *Options) { o.MinTokenShare = 2 }, "MinTokenShare = 2"},
	} {
		in, opt := handInput(t), DefaultOptions()
		tc.mutate(&in, &opt)
		_, err := Evaluate(in, opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPRF(t *testing.T) {
	truth := [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 3}}
	for _, tc := range []struct {
		name           string
		learned, truth [][2]int
		p, r, f1       float64
	}{
		{"perfect", truth, truth, 1, 1, 1},
		{"reversed pairs and duplicates", [][2]int{{1, 0}, {2, 1}, {1, 2}, {3, 2}, {3, 0}}, truth, 1, 1, 1},
		{"self loops ignored", [][2]int{{0, 1}, {2, 2}}, truth, 1, 0.25, 0.4},
		{"half right", [][2]int{{0, 1}, {1, 2}, {0, 2}, {1, 3}}, truth, 0.5, 0.5, 0.5},
		{"nothing learned", nil, truth, 0, 0, 0},
		{"empty truth", [][2]int{{0, 1}}, nil, 0, 0, 0},
		{"both empty (one place: the empty map is exact)", nil, nil, 1, 1, 1},
		{"all wrong", [][2]int{{0, 2}}, truth, 0, 0, 0},
		// tp 3 of 5 learned, 3 of 4 true: P 0.6, R 0.75, F1 = 2·0.45/1.35.
		{"mixed", [][2]int{{0, 1}, {1, 2}, {2, 3}, {0, 2}, {1, 3}}, truth, 0.6, 0.75, 0.9 / 1.35},
	} {
		p, r, f1 := PRF(tc.learned, tc.truth)
		if !near(p, tc.p) || !near(r, tc.r) || !near(f1, tc.f1) {
			t.Errorf("%s: PRF = %v %v %v, want %v %v %v", tc.name, p, r, f1, tc.p, tc.r, tc.f1)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	for _, name := range []string{"two_rooms", "cscg_empty"} {
		b.Run(name, func(b *testing.B) {
			env, err := gridworld.Named(name)
			if err != nil {
				b.Fatal(err)
			}
			// The reference model size (two_rooms N = 151, cscg_empty N = 631):
			// each step decodes to a random clone of its class, so every state
			// is visited; dense random transitions.
			in := perfectInput(b, env, 10000, 1)
			clones := env.Defaults().Clones(env.NumClasses())
			offset := make([]int, len(clones))
			for k := 1; k < len(clones); k++ {
				offset[k] = offset[k-1] + clones[k-1]
			}
			N, A := env.Defaults().NumStates(env.NumClasses()), env.NumActions()
			rng := gridworld.NewRand(2)
			for i, k := range in.Tokens {
				in.States[i] = offset[k] + rng.IntN(clones[k])
			}
			in.NumStates = N
			in.Trans = make([]float64, A*N*N)
			for k := range in.Trans {
				in.Trans[k] = rng.Float64() / float64(N)
			}
			opt := DefaultOptions()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Evaluate(in, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTokenClassPurity: on "0 1 / 0 2" (places 0 and 2 show class 0), tokens that
// merge classes 1 and 2 and read one class-0 frame as a third token.
//
//	t      0 1 2 3 4 5 6 7 8 9
//	place  0 1 3 3 2 0 1 1 3 2
//	class  0 1 2 2 0 0 1 1 2 0
//	token  0 1 1 1 0 0 1 1 1 2
//
// n(k,c): token 0 {c0: 3}, token 1 {c1: 3, c2: 3}, token 2 {c0: 1}: purity
// (3 + 3 + 1) / 10; classes 0, 1, 2 shown 4, 3, 3 times.
func TestTokenClassPurity(t *testing.T) {
	env, err := gridworld.ParseLayout("merged", strings.NewReader("0 1\n0 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := perfectInput(t, env, 2, 1)
	in.Places = []int{0, 1, 3, 3, 2, 0, 1, 1, 3, 2}
	in.States = slices.Clone(in.Places)
	in.Tokens = []int{0, 1, 1, 1, 0, 0, 1, 1, 1, 2}
	in.NumTokens = 3
	r := mustEval(t, in, DefaultOptions())
	if want := 0.7; !near(r.TokenClassPurity, want) {
		t.Errorf("token class purity %.15g, want %g", r.TokenClassPurity, want)
	}
	if want := math.Exp(-(0.4*math.Log(0.4) + 0.6*math.Log(0.3))); !near(r.ClassPerplexity, want) {
		t.Errorf("class perplexity %.15g, want %.15g", r.ClassPerplexity, want)
	}
	if r.ClassesShown != 3 {
		t.Errorf("classes shown %d, want 3", r.ClassesShown)
	}
	// Tokens equal to the classes: purity 1 and perplexity = class perplexity.
	in.Tokens = []int{0, 1, 2, 2, 0, 0, 1, 1, 2, 0}
	r = mustEval(t, in, DefaultOptions())
	if !near(r.TokenClassPurity, 1) || !near(r.Perplexity, r.ClassPerplexity) {
		t.Errorf("tokens = classes: purity %.15g, perplexity %.15g vs class perplexity %.15g", r.TokenClassPurity, r.Perplexity, r.ClassPerplexity)
	}
}
