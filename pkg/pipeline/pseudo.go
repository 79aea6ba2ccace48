package pipeline

import (
	"fmt"
	"math"
	"slices"
)

// A place shows one class, and every visit shows a fresh image of it: the mean image
// of the training frames that the map decodes to one state is that class's mean image,
// up to sampling noise that shrinks with the state's visits, and up to the encoder's
// selection (a clone belongs to one token, so a state of a place whose class is read
// as two tokens sees the images of one token only: a mean a little off the class's).
// Two states whose mean images differ by no more than that noise, or by less than
// RefineSameEffect of their frames' spread, show one class; states of different classes
// differ by far more. pseudoClasses groups the states so, and every frame gets its
// state's group: a pseudo-label read from the map, not from labels. A state that the
// map decodes frames of several places to, of several classes, shows their mixture: a
// group whose mean image is a mixture of larger groups' means, within RefineMixBar of
// its sampling noise, is no class, and its frames get no label.

// protoGroup is a set of states and the statistics of the frames decoded to them.
type protoGroup struct {
	states []int     // increasing
	n      int       // frames
	sum    []float64 // Σ x over the frames (pixels)
	sq     float64   // Σ ‖x‖²
}

// mean returns Σ x / n.
func (g *protoGroup) mean() []float64 {
	m := make([]float64, len(g.sum))
	for i, v := range g.sum {
		m[i] = v / float64(g.n)
	}
	return m
}

// spread is the frames' mean squared distance to their mean, E‖x − μ‖² (the trace of
// their covariance): the sampling noise of the mean is spread/n.
func (g *protoGroup) spread() float64 {
	s := g.sq / float64(g.n)
	for _, v := range g.sum {
		m := v / float64(g.n)
		s -= m * m
	}
	return max(s, 0)
}

// merge adds h's frames and states to g.
func (g *protoGroup) merge(h *protoGroup) {
	g.states = append(g.states, h.states...)
	slices.Sort(g.states)
	g.n += h.n
	g.sq += h.sq
	for i, v := range h.sum {
		g.sum[i] += v
	}
}

// protoDistance is the squared distance between the groups' mean images over the
// sampling noise it would have if both showed one class: ‖μ_a − μ_b‖² /
// (spread_a/n_a + spread_b/n_b). It is about 1 for groups of one class, whatever
// their visits, and grows with the visits for groups of two.
func protoDistance(a, b *protoGroup) float64 {
	return over(meanDistance(a, b), a.spread()/float64(a.n)+b.spread()/float64(b.n))
}

// meanDistance is ‖μ_a − μ_b‖², the squared distance between the groups' mean images.
func meanDistance(a, b *protoGroup) float64 {
	d := 0.0
	for i := range a.sum {
		x := a.sum[i]/float64(a.n) - b.sum[i]/float64(b.n)
		d += x * x
	}
	return d
}

// over is d/s for a squared distance d over a noise or spread s >= 0: with s = 0, 0
// for d = 0 and +Inf otherwise.
func over(d, s float64) float64 {
	if s <= 0 {
		if d == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return d / s
}

// protoEffect is the squared distance between the groups' mean images over their
// frames' mean spread: ‖μ_a − μ_b‖² / ((spread_a + spread_b)/2), whatever their visits.
func protoEffect(a, b *protoGroup) float64 {
	return over(meanDistance(a, b), (a.spread()+b.spread())/2)
}

// protoCloseness is how far apart two groups are on the scale of protoDistance: their
// protoDistance, or bar·protoEffect/RefineSameEffect where that is smaller. Below bar
// they show one class.
func protoCloseness(a, b *protoGroup, bar float64) float64 {
	return min(protoDistance(a, b), bar*protoEffect(a, b)/RefineSameEffect)
}

// mixtureNoise is how well g's mean image is a mixture of the mean images of the
// groups of: the least squared distance ‖μ_g − Σ w_k μ_k‖² over weights w ≥ 0
// (nnls), over g's sampling noise spread_g/n_g (+Inf with no spread and a distance).
func mixtureNoise(g *protoGroup, of []*protoGroup) float64 {
	mu := g.mean()
	means := make([][]float64, len(of))
	for k, h := range of {
		means[k] = h.mean()
	}
	gram := make([][]float64, len(of))
	c := make([]float64, len(of))
	for i := range of {
		gram[i] = make([]float64, len(of))
		for j := range of {
			gram[i][j] = dot(means[i], means[j])
		}
		c[i] = dot(means[i], mu)
	}
	w := nnls(gram, c)
	res := 0.0
	for p, v := range mu {
		for k, wk := range w {
			v -= wk * means[k][p]
		}
		res += v * v
	}
	return over(res, g.spread()/float64(g.n))
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// nnls returns the w ≥ 0 that minimises wᵀGw − 2cᵀw for a symmetric positive
// semi-definite G (the normal equations of ‖Aw − b‖² with G = AᵀA, c = Aᵀb) by
// Lawson and Hanson's active-set method: coordinates join the free set by the largest
// gradient, and the free set's unconstrained solution is walked towards while it
// stays feasible.
func nnls(gram [][]float64, c []float64) []float64 {
	n := len(c)
	w := make([]float64, n)
	free := make([]bool, n)
	scale := 0.0
	for i := range n {
		scale = max(scale, math.Abs(gram[i][i]), math.Abs(c[i]))
	}
	tol := 1e-12 * max(scale, 1)
	for range 3 * n {
		best, bestG := -1, tol
		for j := range n {
			if free[j] {
				continue
			}
			g := c[j]
			for k := range n {
				g -= gram[j][k] * w[k]
			}
			if g > bestG {
				best, bestG = j, g
			}
		}
		if best < 0 {
			break
		}
		free[best] = true
		for range 3 * n {
			s, ok := solveFree(gram, c, free)
			if !ok { // a singular free set: the coordinate adds nothing
				free[best] = false
				break
			}
			alpha, feasible := 1.0, true
			for i := range n {
				if free[i] && s[i] <= 0 {
					feasible = false
					if a := w[i] / (w[i] - s[i]); a < alpha {
						alpha = a
					}
				}
			}
			if feasible {
				copy(w, s)
				break
			}
			for i := range n {
				if free[i] {
					w[i] += alpha * (s[i] - w[i])
					if w[i] <= tol {
						w[i], free[i] = 0, false
					}
				}
			}
		}
	}
	return w
}

// solveFree solves G_FF s_F = c_F over the free coordinates F (s 0 elsewhere) by
// Gaussian elimination with partial pivoting; false if G_FF is singular.
func solveFree(gram [][]float64, c []float64, free []bool) ([]float64, bool) {
	var idx []int
	for i, f := range free {
		if f {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	a := make([][]float64, m)
	diag := 0.0
	for r, i := range idx {
		a[r] = make([]float64, m+1)
		for q, j := range idx {
			a[r][q] = gram[i][j]
		}
		a[r][m] = c[i]
		diag = max(diag, math.Abs(gram[i][i]))
	}
	for col := range m {
		p := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) <= 1e-12*max(diag, 1e-300) {
			return nil, false
		}
		a[col], a[p] = a[p], a[col]
		for r := col + 1; r < m; r++ {
			f := a[r][col] / a[col][col]
			for q := col; q <= m; q++ {
				a[r][q] -= f * a[col][q]
			}
		}
	}
	s := make([]float64, len(free))
	for r := m - 1; r >= 0; r-- {
		v := a[r][m]
		for q := r + 1; q < m; q++ {
			v -= a[r][q] * s[idx[q]]
		}
		s[idx[r]] = v / a[r][r]
	}
	return s, true
}

// PseudoClasses is what pseudoClasses read from the map: the groups of states that
// show one class each and the label of every frame.
type PseudoClasses struct {
	// Label is each frame's group (its state's), -1 for a frame at a state with fewer
	// than the minimum visits.
	Label []int
	// Groups are the states of each group, the group with most frames first.
	Groups [][]int
	// Frames are each group's frames.
	Frames []int
	// Merged is the largest protoCloseness at which two groups were merged, and Apart
	// the smallest between the groups left (+Inf with one group): the bar lies between.
	// SameEffect is the largest protoEffect of two groups merged by RefineSameEffect
	// alone (protoDistance at or above the bar; 0 with none), and ApartEffect the
	// smallest between the groups kept (+Inf with one): RefineSameEffect lies between.
	Merged, Apart           float64
	SameEffect, ApartEffect float64
	// Seeded is the fewest frames of a state that starts a group: half the median
	// frames of the visited states (a place's), at least the minimum visits.
	Seeded int
	// Mixtures are the groups dropped as mixtures of larger ones (mixtureNoise below
	// RefineMixBar); their states are left out. Mixed is the largest mixtureNoise of
	// those dropped (0 with none) and Unmixed the smallest of those kept from the third
	// on (+Inf with none): RefineMixBar lies between.
	Mixtures       int
	Mixed, Unmixed float64
	// LeftOut are the visited states that neither start a group nor are within the bar
	// of one, and those of the mixtures (states that mix places of several classes),
	// increasing, and Unlabelled their frames.
	LeftOut    []int
	Unlabelled int
}

// pseudoClasses groups the states of the decoded training walks by what their frames
// show: states[i] is frame i's state, image(i, dst) writes its pixels. The states with
// at least Seeded frames (half the median of the visited states', at least
// minVisits) start as groups of one, and the two groups nearest by protoCloseness are
// merged while it is below bar. Then, from the group with most frames down, a group
// is dropped, its states left out, where its mean image is within RefineMixBar of its
// sampling noise of a mixture of the larger groups kept (mixtureNoise; the two largest
// are kept). Then every other visited state joins the group nearest to it if that
// protoCloseness is below bar, and is left out otherwise. Ties go to the lowest states,
// so the result is a function of its inputs.
func pseudoClasses(states []int, numStates, pixels int, image func(i int, dst []float32), minVisits int, bar float64) (*PseudoClasses, error) {
	if minVisits < 2 {
		return nil, fmt.Errorf("pipeline: pseudo-classes: minVisits %d, need at least 2", minVisits)
	}
	byState := make([]*protoGroup, numStates)
	buf := make([]float32, pixels)
	for i, s := range states {
		if s < 0 || s >= numStates {
			return nil, fmt.Errorf("pipeline: pseudo-classes: frame %d at state %d of %d", i, s, numStates)
		}
		g := byState[s]
		if g == nil {
			g = &protoGroup{states: []int{s}, sum: make([]float64, pixels)}
			byState[s] = g
		}
		image(i, buf)
		g.n++
		for j, v := range buf {
			g.sum[j] += float64(v)
			g.sq += float64(v) * float64(v)
		}
	}
	var visits []int
	for _, g := range byState {
		if g != nil {
			visits = append(visits, g.n)
		}
	}
	if len(visits) == 0 {
		return nil, fmt.Errorf("pipeline: pseudo-classes: no frames")
	}
	slices.Sort(visits)
	pc := &PseudoClasses{Seeded: max(minVisits, visits[len(visits)/2]/2), Apart: math.Inf(1)}
	var groups, rest []*protoGroup
	for _, g := range byState {
		switch {
		case g == nil:
		case g.n >= pc.Seeded:
			groups = append(groups, g)
		default:
			rest = append(rest, g)
		}
	}
	groups = mergeGroups(groups, bar, pc)
	slices.SortStableFunc(groups, func(a, b *protoGroup) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return a.states[0] - b.states[0]
	})
	var kept []*protoGroup
	pc.Unmixed = math.Inf(1)
	for _, g := range groups {
		if len(kept) < 2 {
			kept = append(kept, g)
			continue
		}
		z := mixtureNoise(g, kept)
		if z >= RefineMixBar {
			pc.Unmixed = min(pc.Unmixed, z)
			kept = append(kept, g)
			continue
		}
		pc.Mixtures++
		pc.Mixed = max(pc.Mixed, z)
		pc.LeftOut = append(pc.LeftOut, g.states...)
		pc.Unlabelled += g.n
	}
	pc.ApartEffect = math.Inf(1)
	if pc.Mixtures > 0 {
		pc.Apart = math.Inf(1)
	}
	for i, a := range kept {
		for _, b := range kept[i+1:] {
			pc.ApartEffect = min(pc.ApartEffect, protoEffect(a, b))
			if pc.Mixtures > 0 { // the smallest closeness between the groups kept
				pc.Apart = min(pc.Apart, protoCloseness(a, b, bar))
			}
		}
	}
	groups = kept
	group := make([]int, numStates)
	for s := range group {
		group[s] = -1
	}
	for k, g := range groups {
		for _, s := range g.states {
			group[s] = k
		}
	}
	frames := make([]int, len(groups))
	for k, g := range groups {
		frames[k] = g.n
	}
	for _, r := range rest { // join the nearest group, without moving the groups' means
		best, bestD := -1, bar
		if r.n >= 2 {
			for k, g := range groups {
				if d := protoCloseness(r, g, bar); d < bestD {
					best, bestD = k, d
				}
			}
		}
		if best < 0 {
			pc.LeftOut = append(pc.LeftOut, r.states[0])
			pc.Unlabelled += r.n
			continue
		}
		group[r.states[0]] = best
		frames[best] += r.n
	}
	slices.Sort(pc.LeftOut)
	pc.Groups = make([][]int, len(groups))
	for s, k := range group {
		if k >= 0 {
			pc.Groups[k] = append(pc.Groups[k], s)
		}
	}
	pc.Frames = frames
	pc.Label = make([]int, len(states))
	for i, s := range states {
		pc.Label[i] = group[s]
	}
	return pc, nil
}

// mergeGroups merges the two groups nearest by protoCloseness while it is below bar
// (ties: the first pair in order), recording in pc the largest closeness merged and
// the smallest left, and returns the groups left.
func mergeGroups(groups []*protoGroup, bar float64, pc *PseudoClasses) []*protoGroup {
	// dist[i][j], i < j, between live groups; merged groups are nil.
	dist := make([][]float64, len(groups))
	for i := range groups {
		dist[i] = make([]float64, len(groups))
		for j := i + 1; j < len(groups); j++ {
			dist[i][j] = protoCloseness(groups[i], groups[j], bar)
		}
	}
	for {
		bi, bj, best := -1, -1, math.Inf(1)
		for i, gi := range groups {
			if gi == nil {
				continue
			}
			for j := i + 1; j < len(groups); j++ {
				if groups[j] != nil && dist[i][j] < best {
					bi, bj, best = i, j, dist[i][j]
				}
			}
		}
		if bi < 0 || best >= bar {
			pc.Apart = best
			break
		}
		pc.Merged = max(pc.Merged, best)
		if protoDistance(groups[bi], groups[bj]) >= bar {
			pc.SameEffect = max(pc.SameEffect, protoEffect(groups[bi], groups[bj]))
		}
		groups[bi].merge(groups[bj])
		groups[bj] = nil
		for k, gk := range groups {
			if gk == nil || k == bi {
				continue
			}
			d := protoCloseness(groups[bi], gk, bar)
			if k < bi {
				dist[k][bi] = d
			} else {
				dist[bi][k] = d
			}
		}
	}
	var live []*protoGroup
	for _, g := range groups {
		if g != nil {
			live = append(live, g)
		}
	}
	return live
}
