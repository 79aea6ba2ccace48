package chmm

import (
	"fmt"
	"math"
)

// MergeTokens groups the K tokens of seqs that the walks cannot tell apart: tokens
// that stand for the same kind of place (one digit drawn afresh at every visit, split
// over several codes by its style) are followed and preceded, under every action, by
// the same tokens in the same proportions. Starting from one group per token, it
// merges the two groups whose action-conditioned counts of next and of previous tokens
// are most alike, while a G-test cannot tell them apart: for each action and
// direction the 2 × (groups seen) table of the pair's counts gives G and its degrees of
// freedom, summed over both into
//
//	z = (G − dof) / √(2·dof),
//
// (G is χ²(dof) when the two share one distribution and the counts are independent
// draws, so z is about a standard normal; a walk's counts are not quite independent,
// so a bar well above a few standard deviations is needed), and the merge happens
// while z < maxZ. After a merge the counts are regrouped, so the columns of later
// tests are the merged groups. It returns the group of each token
// (groups numbered 0.. in order of their first token) and the number of groups.
// A token never seen is merged with nothing; it keeps a group of its own.
func MergeTokens(seqs []Sequence, K, numActions int, maxZ float64) (group []int, groups int, err error) {
	if K < 1 || numActions < 1 {
		return nil, 0, fmt.Errorf("chmm.MergeTokens: K=%d, %d actions: need ≥ 1 each", K, numActions)
	}
	if !(maxZ > 0) {
		return nil, 0, fmt.Errorf("chmm.MergeTokens: maxZ=%g: need > 0", maxZ)
	}
	// c[u][a][b]: steps with token a, then action u, then token b.
	c := make([][][]float64, numActions)
	for u := range c {
		c[u] = make([][]float64, K)
		for a := range c[u] {
			c[u][a] = make([]float64, K)
		}
	}
	for i, s := range seqs {
		for t := 0; t+1 < len(s.Obs); t++ {
			a, u, b := s.Obs[t], s.Actions[t], s.Obs[t+1]
			if a < 0 || a >= K || b < 0 || b >= K || u < 0 || u >= numActions {
				return nil, 0, fmt.Errorf("chmm.MergeTokens: sequence %d step %d: token %d, action %d, token %d outside [0,%d), [0,%d)",
					i, t, a, u, b, K, numActions)
			}
			c[u][a][b]++
		}
	}
	group = make([]int, K)
	for k := range group {
		group[k] = k
	}
	groups = K
	x, y := make([]float64, K), make([]float64, K)
	for groups > 1 {
		agg := regroup(c, group, groups)
		bi, bj, bz := -1, -1, math.Inf(1)
		for i := range groups {
			for j := i + 1; j < groups; j++ {
				g, dof := 0.0, 0
				for u := range agg {
					gi, di := gTest(agg[u][i], agg[u][j]) // next tokens
					g, dof = g+gi, dof+di
					for a := range groups {
						x[a], y[a] = agg[u][a][i], agg[u][a][j] // previous tokens
					}
					gi, di = gTest(x[:groups], y[:groups])
					g, dof = g+gi, dof+di
				}
				if dof == 0 {
					continue
				}
				if z := (g - float64(dof)) / math.Sqrt(2*float64(dof)); z < bz {
					bi, bj, bz = i, j, z
				}
			}
		}
		if bi < 0 || bz >= maxZ {
			break
		}
		for k := range group {
			switch {
			case group[k] == bj:
				group[k] = bi
			case group[k] > bj:
				group[k]--
			}
		}
		groups--
	}
	return group, groups, nil
}

// regroup sums the counts c[u][a][b] over the groups of a and b.
func regroup(c [][][]float64, group []int, groups int) [][][]float64 {
	agg := make([][][]float64, len(c))
	for u := range c {
		agg[u] = make([][]float64, groups)
		for a := range agg[u] {
			agg[u][a] = make([]float64, groups)
		}
		for a, row := range c[u] {
			for b, v := range row {
				agg[u][group[a]][group[b]] += v
			}
		}
	}
	return agg
}

// gTest is the G statistic of the 2 × n contingency table (x; y) and its degrees of
// freedom, the columns with a count minus one (0, 0 when a row is empty).
func gTest(x, y []float64) (float64, int) {
	var sx, sy float64
	cols := 0
	for i := range x {
		sx += x[i]
		sy += y[i]
		if x[i]+y[i] > 0 {
			cols++
		}
	}
	if sx == 0 || sy == 0 || cols < 2 {
		return 0, 0
	}
	n := sx + sy
	g := 0.0
	for i := range x {
		tot := x[i] + y[i]
		if x[i] > 0 {
			g += x[i] * math.Log(x[i]*n/(tot*sx))
		}
		if y[i] > 0 {
			g += y[i] * math.Log(y[i]*n/(tot*sy))
		}
	}
	return 2 * g, cols - 1
}
