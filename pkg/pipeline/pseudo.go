package pipeline

import (
	"fmt"
	"math"
	"slices"
)

// A place shows one class, and every visit shows a fresh image of it: the mean image
// of the training frames that the map decodes to one state is that class's mean image,
// up to sampling noise that shrinks with the state's visits. Two states whose mean
// images differ by no more than that noise show one class; states of different classes
// differ by far more. pseudoClasses groups the states so, and every frame gets its
// state's group: a pseudo-label read from the map, not from labels.

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
	noise := a.spread()/float64(a.n) + b.spread()/float64(b.n)
	d := 0.0
	for i := range a.sum {
		x := a.sum[i]/float64(a.n) - b.sum[i]/float64(b.n)
		d += x * x
	}
	if noise <= 0 {
		if d == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return d / noise
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
	// Merged is the largest protoDistance at which two groups were merged, and Apart
	// the smallest between the groups left (+Inf with one group): the bar lies between.
	Merged, Apart float64
	// Seeded is the fewest frames of a state that starts a group: half the median
	// frames of the visited states (a place's), at least the minimum visits.
	Seeded int
	// LeftOut are the visited states that neither start a group nor are within the bar
	// of one (states that mix places of several classes), and Unlabelled their frames.
	LeftOut    []int
	Unlabelled int
}

// pseudoClasses groups the states of the decoded training walks by what their frames
// show: states[i] is frame i's state, image(i, dst) writes its pixels. The states with
// at least Seeded frames (half the median of the visited states', at least
// minVisits) start as groups of one, and the two groups nearest by protoDistance are
// merged while that distance is below bar; then every other visited state joins the
// group nearest to it if that distance is below bar, and is left out otherwise.
// Ties go to the lowest states, so the result is a function of its inputs.
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
				if d := protoDistance(r, g); d < bestD {
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

// mergeGroups merges the two groups nearest by protoDistance while that distance is
// below bar (ties: the first pair in order), recording in pc the largest distance
// merged and the smallest left, and returns the groups left.
func mergeGroups(groups []*protoGroup, bar float64, pc *PseudoClasses) []*protoGroup {
	// dist[i][j], i < j, between live groups; merged groups are nil.
	dist := make([][]float64, len(groups))
	for i := range groups {
		dist[i] = make([]float64, len(groups))
		for j := i + 1; j < len(groups); j++ {
			dist[i][j] = protoDistance(groups[i], groups[j])
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
		groups[bi].merge(groups[bj])
		groups[bj] = nil
		for k, gk := range groups {
			if gk == nil || k == bi {
				continue
			}
			d := protoDistance(groups[bi], gk)
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
