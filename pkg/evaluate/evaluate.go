package evaluate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Input is one decoded held-out episode and the learned model.
type Input struct {
	Env    *gridworld.Env
	Places []int // g_t, true places of the held-out episode, len T
	States []int // s*_t, the Viterbi path, len T
	Tokens []int // hard token per step, len T (symbolic: the class)
	// Trans holds the transition probabilities T[a,i,j] as a flat row-major
	// [A, N, N] array: Trans[(a*N+i)*N+j], A = Env.NumActions().
	Trans     []float64
	NumStates int // N (including the sink)
	NumTokens int // K (codebook size or alphabet)
}

// Options are the read-out parameters of the suite.
type Options struct {
	Cutoff        float64   // Viterbi-path map cutoff fraction f (0.002)
	CutoffSweep   []float64 // f values of the sweep (0.001, 0.002, 0.005)
	Thresholds    []float64 // projected-map thresholds η (0.01, 0.05, 0.1, 0.2, 0.3)
	MinTokenShare float64   // share of a place's visits for a token to count there (0.05)
}

// DefaultOptions returns the reference setup's options (package doc).
func DefaultOptions() Options {
	return Options{
		Cutoff:        0.002,
		CutoffSweep:   []float64{0.001, 0.002, 0.005},
		Thresholds:    []float64{0.01, 0.05, 0.1, 0.2, 0.3},
		MinTokenShare: 0.05,
	}
}

// Evaluate computes the suite (definitions in the package documentation).
// It returns an error naming the field when lengths or ranges are wrong.
// Env, Dataset, Trainer, Seed and Backend are for the caller to set; Seconds
// starts with "evaluate" (and "total", which callers should overwrite with the
// run's total).
func Evaluate(in Input, opt Options) (*Report, error) {
	start := time.Now()
	if err := validate(in, opt); err != nil {
		return nil, err
	}
	env := in.Env
	r := &Report{
		NumTokens: in.NumTokens,
		NumStates: in.NumStates,
		NumPlaces: env.NumPlaces(),
		Steps:     len(in.Places),
		TrueEdges: len(env.Edges()),
		Env:       env.Name,
	}
	m, err := r.assign(in)
	if err != nil {
		return nil, err
	}
	Wa := r.projectedMap(in, opt, m)
	r.viterbiPathMap(in, opt, m)
	r.actionAccuracy(env, m, Wa)
	r.tokenStats(in, opt, m)
	el := time.Since(start).Seconds()
	r.Seconds = map[string]float64{"evaluate": el, "total": el}
	return r, nil
}

// assignment is the state→place assignment of a decoded walk and the places it covers.
type assignment struct {
	chi     []int  // χ(s), -1 for unvisited states
	visited []int  // V: the visited states, increasing
	rep     []int  // R: the represented places χ(V), increasing
	pos     []int  // position of a represented place in rep
	isVis   []bool // places the walk visits
}

// assign computes χ (paper 3.9, "State-to-place assignment"), the clone and
// state→place purities and the represented and visited places.
func (r *Report) assign(in Input) (*assignment, error) {
	T, N, P := len(in.Places), in.NumStates, in.Env.NumPlaces()
	chi, visits, err := Assign(in.Places, in.States, N) // χ = -1 for unvisited states
	if err != nil {
		return nil, err
	}
	hits := make([]int, N) // n(s, χ(s))
	for t, s := range in.States {
		if in.Places[t] == chi[s] {
			hits[s]++
		}
	}
	m := &assignment{chi: chi}
	sumMax, purity := 0, 0.0
	for s := range N {
		if visits[s] == 0 {
			continue
		}
		m.visited = append(m.visited, s)
		sumMax += hits[s]
		purity += float64(hits[s]) / float64(visits[s])
	}
	r.StatePlace = chi
	r.VisitedStates = len(m.visited)
	r.ClonePurity = purity / float64(len(m.visited))
	r.StatePlacePurity = float64(sumMax) / float64(T)

	isRep := make([]bool, P)
	for _, s := range m.visited {
		isRep[chi[s]] = true
	}
	for g, ok := range isRep {
		if ok {
			m.rep = append(m.rep, g)
		}
	}
	m.isVis = make([]bool, P)
	for _, g := range in.Places {
		m.isVis[g] = true
	}
	for _, ok := range m.isVis {
		if ok {
			r.VisitedPlaces++
		}
	}
	r.RepresentedPlaces = len(m.rep)
	r.RepresentedPlaceFraction = float64(len(m.rep)) / float64(r.VisitedPlaces)
	r.StatesPerPlace = float64(len(m.visited)) / float64(len(m.rep))
	m.pos = make([]int, P)
	for i, g := range m.rep {
		m.pos[g] = i
	}
	return m, nil
}

// projectedMap scores the projected map W = max_a W_a over the represented places at
// every threshold and returns W_a(g, g') = max over clones of g, g' of T[a, ·, ·],
// [A, R, R] indexed by position in rep.
func (r *Report) projectedMap(in Input, opt Options, m *assignment) []float64 {
	N, A, R := in.NumStates, in.Env.NumActions(), len(m.rep)
	Wa := make([]float64, A*R*R)
	for a := range A {
		for _, i := range m.visited {
			gi := m.pos[m.chi[i]]
			row := in.Trans[(a*N+i)*N : (a*N+i+1)*N]
			out := Wa[(a*R+gi)*R : (a*R+gi+1)*R]
			for _, j := range m.visited {
				if v, gj := row[j], m.pos[m.chi[j]]; v > out[gj] {
					out[gj] = v
				}
			}
		}
	}
	W := make([]float64, R*R) // W = max_a W_a
	for a := range A {
		for k, v := range Wa[a*R*R : (a+1)*R*R] {
			W[k] = max(W[k], v)
		}
	}
	truth := in.Env.Edges()
	for _, eta := range opt.Thresholds {
		var learned [][2]int
		for x := range R {
			for y := x + 1; y < R; y++ {
				if W[x*R+y] > eta || W[y*R+x] > eta {
					learned = append(learned, [2]int{m.rep[x], m.rep[y]})
				}
			}
		}
		r.ProjectedMap = append(r.ProjectedMap, ThresholdScore{Threshold: eta, EdgeScore: score(learned, truth)})
	}
	return Wa
}

// viterbiPathMap counts the decoded walk's moves between places (undirected pairs)
// and scores the pairs crossed more than f·T times, at the cutoff and its sweep.
func (r *Report) viterbiPathMap(in Input, opt Options, m *assignment) {
	T := len(in.Places)
	path := make([]int, T) // χ(s*_t)
	for t, s := range in.States {
		path[t] = m.chi[s]
	}
	r.ViterbiTransitions = crossings(path)
	truth := in.Env.Edges()
	r.ViterbiEdges = keptPairs(r.ViterbiTransitions, opt.Cutoff, T)
	r.ViterbiMap = CutoffScore{CutoffFraction: opt.Cutoff, EdgeScore: score(r.ViterbiEdges, truth)}
	w := WalkMap(in.Env, in.Places, opt.Cutoff)
	r.WalkMap = &w
	for _, f := range opt.CutoffSweep {
		r.ViterbiMapSweep = append(r.ViterbiMapSweep, CutoffScore{CutoffFraction: f, EdgeScore: score(keptPairs(r.ViterbiTransitions, f, T), truth)})
	}
}

// WalkMap scores a walk's own place path as the Viterbi-path map is scored (the
// undirected place pairs it crosses more than cutoff·T times): what the true map
// scores on that walk (Report.WalkMap).
func WalkMap(env *gridworld.Env, places []int, cutoff float64) CutoffScore {
	es := keptPairs(crossings(places), cutoff, len(places))
	return CutoffScore{CutoffFraction: cutoff, EdgeScore: score(es, env.Edges())}
}

// crossings counts the moves of a place path between places, by undirected pair
// (A < B), sorted.
func crossings(path []int) []PlaceEdge {
	counts := map[[2]int]int{}
	for t := 0; t+1 < len(path); t++ {
		if g, h := path[t], path[t+1]; g != h {
			counts[[2]int{min(g, h), max(g, h)}]++
		}
	}
	var es []PlaceEdge
	for uv, c := range counts {
		es = append(es, PlaceEdge{A: uv[0], B: uv[1], Count: c})
	}
	sort.Slice(es, func(i, j int) bool {
		return es[i].A < es[j].A || (es[i].A == es[j].A && es[i].B < es[j].B)
	})
	return es
}

// keptPairs are the pairs of es crossed more than f·T times.
func keptPairs(es []PlaceEdge, f float64, T int) [][2]int {
	var kept [][2]int
	for _, e := range es {
		if float64(e.Count) > f*float64(T) {
			kept = append(kept, [2]int{e.A, e.B})
		}
	}
	return kept
}

// actionAccuracy is the share of (represented place, available action) pairs whose
// most likely projected successor (W_a) is the true one, and their coverage of all
// pairs.
func (r *Report) actionAccuracy(env *gridworld.Env, m *assignment, Wa []float64) {
	R := len(m.rep)
	correct, pairs, allPairs := 0, 0, 0
	for g := range env.NumPlaces() {
		allPairs += env.ActionsAt(g)
	}
	for x, g := range m.rep {
		for a := range env.ActionsAt(g) {
			pairs++
			row := Wa[(a*R+x)*R : (a*R+x+1)*R]
			best, pred := 0.0, -1
			for y, v := range row {
				if v > best { // strict: ties keep the lowest place id
					best, pred = v, m.rep[y]
				}
			}
			if pred >= 0 && pred == env.Next(g, a) {
				correct++
			}
		}
	}
	r.ActionAccuracy = float64(correct) / float64(pairs)
	r.ActionCoverage = float64(pairs) / float64(allPairs)
}

// tokenStats fills the token metrics from the joint counts n(k, g): the conditional
// entropies, tokens per place and places per token (a pair counts from MinTokenShare
// of the place's visits), the active codes and the perplexity.
func (r *Report) tokenStats(in Input, opt Options, m *assignment) {
	K, P := in.NumTokens, in.Env.NumPlaces()
	nkg := make([]int, K*P) // [K, P]
	nk := make([]int, K)
	ng := make([]int, P)
	for t, k := range in.Tokens {
		nkg[k*P+in.Places[t]]++
		nk[k]++
		ng[in.Places[t]]++
	}
	Tf := float64(len(in.Places))
	tokPerPlace := make([]int, P)
	placePerTok := make([]int, K)
	for k := range K {
		for g := range P {
			n := nkg[k*P+g]
			if n == 0 {
				continue
			}
			if float64(n) >= opt.MinTokenShare*float64(ng[g]) {
				tokPerPlace[g]++
				placePerTok[k]++
			}
		}
	}
	r.HTokenGivenPlace, r.HPlaceGivenToken = CondEntropy(in.Tokens, in.Places), CondEntropy(in.Places, in.Tokens)
	r.TokensPerPlaceMean, r.TokensPerPlaceMax = meanMax(tokPerPlace, m.isVis)
	r.PlacesPerTokenMean, r.PlacesPerTokenMax = meanMax(placePerTok, nil)
	h := 0.0
	for _, n := range nk {
		if n > 0 {
			r.ActiveCodes++
			p := float64(n) / Tf
			h -= p * math.Log(p)
		}
	}
	r.Perplexity = math.Exp(clampZero(h))
	r.classStats(in)
}

// classStats fills the token–class metrics: TokenClassPurity = Σ_k max_c n(k,c) / T
// over the hard tokens k and the classes c of the true places, ClassPerplexity =
// exp H(class) and ClassesShown, the distinct classes of the episode. The classes are
// read here, to score, and nowhere else.
func (r *Report) classStats(in Input) {
	nkc := map[[2]int]int{} // n(k, c)
	nc := map[int]int{}     // n(c)
	for t, k := range in.Tokens {
		c := in.Env.Class[in.Places[t]]
		nkc[[2]int{k, c}]++
		nc[c]++
	}
	best := make(map[int]int, in.NumTokens) // max_c n(k, c)
	for kc, n := range nkc {
		best[kc[0]] = max(best[kc[0]], n)
	}
	right := 0
	for _, n := range best {
		right += n
	}
	T := len(in.Tokens)
	r.TokenClassPurity = float64(right) / float64(T)
	r.ClassPerplexity = math.Exp(clampZero(entropyOf(nc, T)))
	r.ClassesShown = len(nc)
}

// clampZero turns the tiny negative rounding residue of an entropy into 0.
func clampZero(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}

// meanMax returns the mean and max of xs over the indices with keep[i] (when
// keep is nil: over the non-zero entries).
func meanMax(xs []int, keep []bool) (float64, int) {
	sum, n, mx := 0, 0, 0
	for i, x := range xs {
		if (keep != nil && keep[i]) || (keep == nil && x > 0) {
			sum += x
			n++
			mx = max(mx, x)
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), mx
}

func score(learned, truth [][2]int) EdgeScore {
	p, r, f := PRF(learned, truth)
	return EdgeScore{Precision: p, Recall: r, F1: f, Edges: len(normEdges(learned))}
}

// PRF returns precision, recall and F1 of the learned undirected edges
// against the true ones: P = tp/(tp+fp), R = tp/(tp+fn), F1 = 2PR/(P+R), with
// 0/0 := 0, except that an empty map of a world without edges (a single place) is
// exact: 1, 1, 1. Pairs are unordered; duplicates and self-loops are ignored.
func PRF(learned, truth [][2]int) (p, r, f1 float64) {
	L, E := normEdges(learned), normEdges(truth)
	if len(L) == 0 && len(E) == 0 {
		return 1, 1, 1
	}
	inE := make(map[[2]int]bool, len(E))
	for _, e := range E {
		inE[e] = true
	}
	tp := 0
	for _, e := range L {
		if inE[e] {
			tp++
		}
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	p = div(float64(tp), float64(len(L)))
	r = div(float64(tp), float64(len(E)))
	f1 = div(2*p*r, p+r)
	return p, r, f1
}

// normEdges returns the distinct unordered pairs (u < v) of es, sorted,
// without self-loops.
func normEdges(es [][2]int) [][2]int {
	out := make([][2]int, 0, len(es))
	for _, e := range es {
		if e[0] != e[1] {
			out = append(out, [2]int{min(e[0], e[1]), max(e[0], e[1])})
		}
	}
	slices.SortFunc(out, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	return slices.Compact(out)
}

func validate(in Input, opt Options) error {
	if in.Env == nil {
		return errors.New("evaluate: Input.Env is nil")
	}
	T := len(in.Places)
	if T == 0 {
		return errors.New("evaluate: empty episode (len(Places) = 0)")
	}
	if len(in.States) != T {
		return fmt.Errorf("evaluate: len(States) = %d, want len(Places) = %d", len(in.States), T)
	}
	if len(in.Tokens) != T {
		return fmt.Errorf("evaluate: len(Tokens) = %d, want len(Places) = %d", len(in.Tokens), T)
	}
	if in.NumStates <= 0 {
		return fmt.Errorf("evaluate: NumStates = %d, want > 0", in.NumStates)
	}
	if in.NumTokens <= 0 {
		return fmt.Errorf("evaluate: NumTokens = %d, want > 0", in.NumTokens)
	}
	check := func(field string, xs []int, n int) error {
		for t, x := range xs {
			if x < 0 || x >= n {
				return fmt.Errorf("evaluate: %s[%d] = %d out of range [0, %d)", field, t, x, n)
			}
		}
		return nil
	}
	if err := check("Places", in.Places, in.Env.NumPlaces()); err != nil {
		return err
	}
	if err := check("States", in.States, in.NumStates); err != nil {
		return err
	}
	if err := check("Tokens", in.Tokens, in.NumTokens); err != nil {
		return err
	}
	A, N := in.Env.NumActions(), in.NumStates
	if len(in.Trans) != A*N*N {
		return fmt.Errorf("evaluate: len(Trans) = %d, want A*N*N = %d*%d*%d = %d", len(in.Trans), A, N, N, A*N*N)
	}
	for k, v := range in.Trans {
		if !(v >= 0) || math.IsInf(v, 0) {
			a, i, j := k/(N*N), k/N%N, k%N
			return fmt.Errorf("evaluate: Trans[%d,%d,%d] = %v, want a finite probability >= 0", a, i, j, v)
		}
	}
	if !(opt.Cutoff >= 0) || math.IsInf(opt.Cutoff, 0) {
		return fmt.Errorf("evaluate: Options.Cutoff = %v, want a finite fraction >= 0", opt.Cutoff)
	}
	for _, f := range opt.CutoffSweep {
		if !(f >= 0) || math.IsInf(f, 0) {
			return fmt.Errorf("evaluate: Options.CutoffSweep holds %v, want finite fractions >= 0", f)
		}
	}
	for _, eta := range opt.Thresholds {
		if math.IsNaN(eta) || math.IsInf(eta, 0) {
			return fmt.Errorf("evaluate: Options.Thresholds holds %v, want finite thresholds", eta)
		}
	}
	if !(opt.MinTokenShare >= 0 && opt.MinTokenShare <= 1) {
		return fmt.Errorf("evaluate: Options.MinTokenShare = %v, want a share in [0, 1]", opt.MinTokenShare)
	}
	return nil
}
