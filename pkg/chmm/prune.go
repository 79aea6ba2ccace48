package chmm

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// KeepVisited marks, for Prune, the clones that hold at least minShare of their
// token's visits (and some), each token's most visited clone and the sink, and counts
// the clones kept. visits are per state: ViterbiVisits' counts or ExpectedVisits'
// expectations.
func KeepVisited[V int | float64](m *Model, visits []V, minShare float64) ([]bool, int) {
	tok := make([]float64, m.K())
	top := make([]int, m.K()) // most visited clone per token
	for k := range top {
		top[k] = -1
	}
	for i, k := range m.StateTokens() {
		if k >= 0 {
			tok[k] += float64(visits[i])
			if top[k] < 0 || visits[i] > visits[top[k]] {
				top[k] = i
			}
		}
	}
	keep, kept := make([]bool, m.N()), 0
	for i, k := range m.StateTokens() {
		if k < 0 {
			keep[i] = true
			continue
		}
		keep[i] = i == top[k] || (visits[i] > 0 && float64(visits[i]) >= minShare*tok[k])
		if keep[i] {
			kept++
		}
	}
	return keep, kept
}

// KeepPairs is KeepVisited for a map whose clones were split in pairs (pair[s] = t
// and pair[t] = s; -1: s has none): where both clones of a pair hold less than minShare
// of their token's visits but together hold minShare or more, the less visited is folded
// into the other (every row's and π's probability of it moves onto the other, whose
// outgoing rows become the two's visit-weighted mean; in place), which is kept. A
// place whose visits a split shared between its two copies thus keeps one clone, not
// none. It returns keep, the clones kept and the pairs folded.
func KeepPairs[V int | float64](m *Model, visits []V, minShare float64, pair []int) (keep []bool, kept, folded int) {
	keep, kept = KeepVisited(m, visits, minShare)
	if pair == nil {
		return keep, kept, 0
	}
	tokens := m.StateTokens()
	tok := make([]float64, m.K())
	for s, k := range tokens {
		if k >= 0 {
			tok[k] += float64(visits[s])
		}
	}
	n := m.N()
	var folds [][2]int // (into, from)
	for s, t := range pair {
		if t <= s || tokens[s] < 0 || keep[s] || keep[t] {
			continue // each pair once, from its lower state
		}
		vs, vt := float64(visits[s]), float64(visits[t])
		if vs+vt == 0 || vs+vt < minShare*tok[tokens[s]] {
			continue
		}
		if vt > vs {
			folds = append(folds, [2]int{t, s})
		} else {
			folds = append(folds, [2]int{s, t})
		}
	}
	if len(folds) == 0 {
		return keep, kept, 0
	}
	// The rows first, from T as trained; then the columns, so that every row (the new
	// ones too) sends nothing to a folded clone.
	trans := m.Transitions()
	for _, f := range folds {
		into, from := f[0], f[1]
		vi, vf := float64(visits[into]), float64(visits[from])
		wi, wf := vi/(vi+vf), vf/(vi+vf)
		for a := range m.NumActions {
			ri, rf := trans[(a*n+into)*n:(a*n+into+1)*n], trans[(a*n+from)*n:(a*n+from+1)*n]
			row := m.ThetaLogits[(a*n+into)*n : (a*n+into+1)*n]
			for j := range row {
				row[j] = math.Log(wi*ri[j] + wf*rf[j]) // log 0 = -Inf: an exact zero
			}
		}
	}
	for _, f := range folds {
		foldInto(m, f[0], f[1])
		keep[f[0]] = true
		kept++
		folded++
	}
	return keep, kept, folded
}

// Prune returns a copy of m restricted to the states s with keep[s] (len N; the
// sink is always kept). Rows and columns of the removed states are dropped from π
// and Θ, so every kept row is renormalised over the kept destinations:
//
//	T'[a,i,j] = T[a,i,j] / Σ_{j' kept} T[a,i,j'].
//
// Each token must keep at least one clone. The second result maps the new states to
// the old ones.
func Prune(m *Model, keep []bool) (*Model, []int, error) {
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	n := m.N()
	if len(keep) != n {
		return nil, nil, fmt.Errorf("chmm: Prune: keep has %d entries, want N = %d", len(keep), n)
	}
	clones := make([]int, m.K())
	var old []int // new state -> old state
	for s, k := range m.StateTokens() {
		if k < 0 || keep[s] {
			old = append(old, s)
			if k >= 0 {
				clones[k]++
			}
		}
	}
	for k, c := range clones {
		if c == 0 {
			return nil, nil, fmt.Errorf("chmm: Prune: token %d would keep no clone", k)
		}
	}
	p := &Model{Clones: clones, NumActions: m.NumActions, PiLogits: make([]float64, len(old))}
	for i, s := range old {
		p.PiLogits[i] = m.PiLogits[s]
	}
	nn := len(old)
	p.ThetaLogits = make([]float64, m.NumActions*nn*nn)
	for a := range m.NumActions {
		for i, si := range old {
			src := m.ThetaLogits[(a*n+si)*n : (a*n+si+1)*n]
			dst := p.ThetaLogits[(a*nn+i)*nn : (a*nn+i+1)*nn]
			for j, sj := range old {
				dst[j] = src[sj]
			}
		}
	}
	p.Meta = maps.Clone(m.Meta)
	return p, old, nil
}

// ViterbiVisits returns, for every state, the number of steps the Viterbi paths of
// seqs spend in it.
func ViterbiVisits(m *Model, seqs []Sequence, workers int) ([]int, error) {
	paths, _, err := ViterbiAll(m, seqs, workers)
	if err != nil {
		return nil, err
	}
	visits := make([]int, m.N())
	for _, p := range paths {
		for _, s := range p {
			visits[s]++
		}
	}
	return visits, nil
}

// addClone gives token k one more clone, the last of its block, in place: no state
// enters it and π never starts there (its incoming logits are −Inf), so the model's
// distribution is unchanged, and its outgoing rows are uniform. It returns the new
// state's index; the states after it move up by one.
func addClone(m *Model, k int) int {
	n, u := m.N(), m.FirstState(k)+m.Clones[k]
	nn := n + 1
	from := func(j int) int { // new index -> old (-1: the new state)
		switch {
		case j < u:
			return j
		case j == u:
			return -1
		default:
			return j - 1
		}
	}
	pi := make([]float64, nn)
	theta := make([]float64, m.NumActions*nn*nn)
	for j := range nn {
		if s := from(j); s >= 0 {
			pi[j] = m.PiLogits[s]
		} else {
			pi[j] = math.Inf(-1)
		}
	}
	for a := range m.NumActions {
		for i := range nn {
			dst := theta[(a*nn+i)*nn : (a*nn+i+1)*nn]
			si := from(i)
			for j := range nn {
				sj := from(j)
				switch {
				case si < 0: // the new state's row: uniform
					dst[j] = 0
				case sj < 0:
					dst[j] = math.Inf(-1)
				default:
					dst[j] = m.ThetaLogits[(a*n+si)*n+sj]
				}
			}
		}
	}
	m.Clones = slices.Clone(m.Clones)
	m.Clones[k]++
	m.PiLogits, m.ThetaLogits = pi, theta
	return u
}

// SplitAll returns a copy of m in which every clone is split in two (splitState):
// token k gets 2·C_k clones, clone c and its copy C_k later. The copy takes a random
// share in [0.1, 0.9] of each probability into c, and its outgoing rows are c's plus
// N(0, noise²) logit noise, so with noise 0 the model gives every sequence the same
// probability. Training from the copy can then tell apart what one clone held.
func SplitAll(m *Model, noise float64, rng *rand.Rand) (*Model, error) {
	return SplitSome(m, nil, noise, rng)
}

// SplitSome is SplitAll for the clones i with split[i] only (nil: all); each token's
// copies follow its clones, in the order of the clones split.
func SplitSome(m *Model, split []bool, noise float64, rng *rand.Rand) (*Model, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if split != nil && len(split) != m.N() {
		return nil, fmt.Errorf("chmm: SplitSome: split has %d entries, want N = %d", len(split), m.N())
	}
	d := m.Clone()
	for k := d.K() - 1; k >= 0; k-- { // adding to token k moves only the tokens after it
		first, c := d.FirstState(k), d.Clones[k]
		for i := first; i < first+c; i++ {
			if split == nil || split[i] {
				splitState(d, i, addClone(d, k), noise, rng)
			}
		}
	}
	return d, nil
}

// FoldAlike folds, in place, the kept clones that behave alike into one: clones of
// one token whose moves lead, for every action, to the same classes of alike clones
// with probabilities within tv in total variation (a partition refined from the
// tokens until it is stable: approximate bisimulation, over the kept states only).
// Each class of two or more is folded into its most visited member: every row (and
// π) moves the others' probability onto it, its outgoing rows become the members'
// visit-weighted mean, and keep drops the others. Where the members' rows agree
// exactly the model gives every sequence the same probability. It returns the number
// of clones folded away. visits are per state, as for KeepVisited.
//
// A map trained by gradient holds many places twice: after a split both copies of a
// clone that needed no split keep their share of its visits, and nothing in the
// likelihood tells them apart.
func FoldAlike[V int | float64](m *Model, keep []bool, visits []V, tv float64) int {
	n, _ := FoldAlikeWithin(m, keep, visits, tv, 0)
	return n
}

// FoldAlikeWithin is FoldAlike with the partition refined at most depth times (0:
// until stable): clones alike for depth moves ahead are folded, though they may
// differ farther on. stable says that the partition stopped changing within depth
// refinements, so that the fold is FoldAlike's.
//
// A map trained by gradient may hold a place several times over, in copies whose
// rows differ only many moves ahead: those fold at a small depth, and not until
// stable. A small depth may also fold clones of different places.
func FoldAlikeWithin[V int | float64](m *Model, keep []bool, visits []V, tv float64, depth int) (folded int, stable bool) {
	n, tokens := m.N(), m.StateTokens()
	trans := m.Transitions()
	cls := make([]int, n) // class of each kept real state, -1 otherwise
	for s, k := range tokens {
		cls[s] = -1
		if k >= 0 && keep[s] {
			cls[s] = k
		}
	}
	ncls := m.K()
	for round := 1; ; round++ {
		// sig[s]: for each action, the distribution of s's next state over the classes.
		sig := make([][]float64, n)
		for s := range n {
			if cls[s] < 0 {
				continue
			}
			v := make([]float64, m.NumActions*ncls)
			for a := range m.NumActions {
				row := trans[(a*n+s)*n : (a*n+s+1)*n]
				var tot float64
				for j, t := range row {
					if cls[j] >= 0 {
						v[a*ncls+cls[j]] += t
						tot += t
					}
				}
				if tot > 0 {
					for c := range ncls {
						v[a*ncls+c] /= tot
					}
				}
			}
			sig[s] = v
		}
		alike := func(r, s int) bool {
			for a := range m.NumActions {
				var d float64
				for c := range ncls {
					d += math.Abs(sig[r][a*ncls+c] - sig[s][a*ncls+c])
				}
				if d/2 >= tv {
					return false
				}
			}
			return true
		}
		next := make([]int, n)
		var reps []int // first state of each new class
		for s := range n {
			next[s] = -1
			if cls[s] < 0 {
				continue
			}
			for c, r := range reps {
				if cls[r] == cls[s] && alike(r, s) {
					next[s] = c
					break
				}
			}
			if next[s] < 0 {
				next[s] = len(reps)
				reps = append(reps, s)
			}
		}
		if len(reps) == ncls {
			stable = true
			break
		}
		cls, ncls = next, len(reps)
		if round == depth {
			break
		}
	}
	members := make([][]int, ncls)
	for s, c := range cls {
		if c >= 0 {
			members[c] = append(members[c], s)
		}
	}
	// First every class's representative (its most visited member) gets the members'
	// visit-weighted mean rows, all from the rows before any fold; then every row and π
	// move the others' probability onto their representative.
	reps := make([]int, ncls)
	for c, ms := range members {
		reps[c] = ms[0]
		var tot float64
		for _, s := range ms {
			if visits[s] > visits[reps[c]] {
				reps[c] = s
			}
			tot += float64(visits[s])
		}
		if len(ms) < 2 {
			continue
		}
		for a := range m.NumActions {
			mean := make([]float64, n)
			for _, s := range ms {
				w := 1 / float64(len(ms))
				if tot > 0 {
					w = float64(visits[s]) / tot
				}
				for j, t := range trans[(a*n+s)*n : (a*n+s+1)*n] {
					mean[j] += w * t
				}
			}
			row := m.ThetaLogits[(a*n+reps[c])*n : (a*n+reps[c]+1)*n]
			for j, p := range mean {
				row[j] = math.Log(p) // log 0 = -Inf: an exact zero
			}
		}
	}
	for c, ms := range members {
		for _, s := range ms {
			if s != reps[c] {
				foldInto(m, reps[c], s)
				keep[s] = false
				folded++
			}
		}
	}
	return folded, stable
}

// foldInto moves, in every row of m and in π, the probability of going to state
// from onto state into (log-space: the two logits' log-sum-exp), leaving from
// unreachable. Rows out of from are left as they are.
func foldInto(m *Model, into, from int) {
	n := m.N()
	fold := func(x []float64) {
		hi, lo := max(x[into], x[from]), min(x[into], x[from])
		if !math.IsInf(hi, -1) {
			x[into] = hi + math.Log1p(math.Exp(lo-hi))
		}
		x[from] = math.Inf(-1)
	}
	fold(m.PiLogits)
	for r := 0; r < len(m.ThetaLogits); r += n {
		fold(m.ThetaLogits[r : r+n])
	}
}
