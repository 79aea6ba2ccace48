package chmm

import (
	"fmt"
	"math"
)

// ViterbiE is Viterbi with soft emissions (the original CSCG's decodeE beside decode):
// the recursion of paper Sec. 3.7 with the emissions log ρ of Sec. 3.5 in place of log B,
//
//	δ_1(j)     = log π̄_j + log ρ_1(ω(j))
//	δ_{t+1}(j) = max_i [δ_t(i) + log T_{a_t,i,j}] + log ρ_{t+1}(ω(j))
//
// (the sink emits nothing: log ρ(⊥) = −Inf). logRho is [T][K] (K = m.K()), actions
// [T−1]. With one-hot ρ it is Viterbi. Ties go to the lowest state index. It returns
// the path and its log score. The pipeline's default held-out read-out (the paper
// decodes hard tokens, Viterbi).
func ViterbiE(m *Model, logRho [][]float32, actions []int) ([]int, float64, error) {
	if err := m.Validate(); err != nil {
		return nil, 0, err
	}
	T, n, k := len(logRho), m.N(), m.K()
	if T == 0 {
		return nil, 0, nil
	}
	if len(actions) != T-1 {
		return nil, 0, fmt.Errorf("chmm: ViterbiE: %d actions for %d steps (want %d)", len(actions), T, T-1)
	}
	omega := m.StateTokens()
	logTr := m.Transitions()
	for i, v := range logTr {
		logTr[i] = math.Log(v)
	}
	emit := func(t int, dst []float64) error {
		if len(logRho[t]) != k {
			return fmt.Errorf("chmm: ViterbiE: step %d: %d log-posteriors, want K=%d", t, len(logRho[t]), k)
		}
		for j, w := range omega {
			if w < 0 {
				dst[j] = math.Inf(-1)
			} else {
				dst[j] = float64(logRho[t][w])
			}
		}
		return nil
	}
	delta, next, e := make([]float64, n), make([]float64, n), make([]float64, n)
	back := make([]int32, T*n)
	if err := emit(0, e); err != nil {
		return nil, 0, err
	}
	for j, p := range m.Pi() {
		delta[j] = math.Log(p) + e[j]
	}
	for t := 1; t < T; t++ {
		a := actions[t-1]
		if a < 0 || a >= m.NumActions {
			return nil, 0, fmt.Errorf("chmm: ViterbiE: action %d at step %d outside [0,%d)", a, t-1, m.NumActions)
		}
		if err := emit(t, e); err != nil {
			return nil, 0, err
		}
		for j := range next {
			next[j] = math.Inf(-1)
		}
		bp := back[t*n : (t+1)*n]
		for i := range n {
			if math.IsInf(delta[i], -1) {
				continue
			}
			row := logTr[(a*n+i)*n : (a*n+i+1)*n]
			for j := range n {
				if v := delta[i] + row[j]; v > next[j] {
					next[j], bp[j] = v, int32(i)
				}
			}
		}
		for j := range next {
			next[j] += e[j]
		}
		delta, next = next, delta
	}
	best := 0
	for j := range delta {
		if delta[j] > delta[best] {
			best = j
		}
	}
	if math.IsInf(delta[best], -1) {
		return nil, math.Inf(-1), fmt.Errorf("chmm: ViterbiE: no path of positive probability")
	}
	path := make([]int, T)
	path[T-1] = best
	for t := T - 1; t > 0; t-- {
		path[t-1] = int(back[t*n+path[t]])
	}
	return path, delta[best], nil
}
