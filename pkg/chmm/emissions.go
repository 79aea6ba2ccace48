package chmm

import (
	"fmt"
	"math"
)

// Emissions are how a decode (Decode) or a filter (pkg/plan) reads observations: for
// step t, the log-likelihood log p(o_t | k) of the observation under every token k.
// The emission type is an argument, as in the original CSCG's decode and decodeE:
// Tokens (hard tokens, the paper's B), LogRho (the soft posteriors log ρ of Sec. 3.5)
// and Confused (hard tokens read through a confusion matrix).
type Emissions interface {
	// Steps is the number of observations T.
	Steps() int
	// LogTokens writes log p(o_t | k) for every token k into dst (len K), or says why
	// step t cannot be read.
	LogTokens(t int, dst []float64) error
}

// Likelihoods is implemented by emissions that hold p(o_t | k) itself (Tokens,
// Confused), so that a filter in probability space reads it without a round trip
// through the logarithm.
type Likelihoods interface {
	// TokenLikelihoods writes p(o_t | k) for every token k into dst (len K).
	TokenLikelihoods(t int, dst []float64) error
}

// Tokens are hard observations: log p(o_t | k) is 0 for k = o_t and −Inf otherwise.
type Tokens []int

// Steps is len(o).
func (o Tokens) Steps() int { return len(o) }

// LogTokens is 0 at the observed token, −Inf elsewhere.
func (o Tokens) LogTokens(t int, dst []float64) error { return logOf(o, t, dst) }

// TokenLikelihoods is 1 at the observed token, 0 elsewhere.
func (o Tokens) TokenLikelihoods(t int, dst []float64) error {
	if o[t] < 0 || o[t] >= len(dst) {
		return fmt.Errorf("chmm: step %d: token %d outside [0,%d)", t, o[t], len(dst))
	}
	clear(dst)
	dst[o[t]] = 1
	return nil
}

// LogRho are soft observations, [T][K]: log p(o_t | k) = log ρ_t(k), the encoder's
// posterior over tokens (Sec. 3.5; proportional to the likelihood under a uniform
// prior over codes, which Viterbi and a normalised filter do not see).
type LogRho [][]float32

// Steps is len(o).
func (o LogRho) Steps() int { return len(o) }

// LogTokens copies log ρ_t; a NaN or +Inf, or a row of −Inf, is an error.
func (o LogRho) LogTokens(t int, dst []float64) error {
	if len(o[t]) != len(dst) {
		return fmt.Errorf("chmm: step %d: soft emissions need log ρ over %d tokens, got %d values", t, len(dst), len(o[t]))
	}
	mx := math.Inf(-1)
	for k, v := range o[t] {
		x := float64(v)
		if math.IsNaN(x) || math.IsInf(x, 1) {
			return fmt.Errorf("chmm: step %d: log ρ[%d] = %v", t, k, v)
		}
		dst[k], mx = x, max(mx, x)
	}
	if math.IsInf(mx, -1) {
		return fmt.Errorf("chmm: step %d: log ρ is -Inf for every token", t)
	}
	return nil
}

// Confused are hard observations read through a confusion matrix: C[k][o] is the
// chance that a place of token k is read as token o (rows sum to 1), so
// log p(o_t | k) = log C[k][o_t].
type Confused struct {
	Tokens []int
	C      [][]float64 // [K][K]
}

// Steps is len(o.Tokens).
func (o Confused) Steps() int { return len(o.Tokens) }

// LogTokens is log C[k][o_t] for every k.
func (o Confused) LogTokens(t int, dst []float64) error { return logOf(o, t, dst) }

// logOf is LogTokens of emissions that know their likelihoods.
func logOf(e Likelihoods, t int, dst []float64) error {
	if err := e.TokenLikelihoods(t, dst); err != nil {
		return err
	}
	for k, p := range dst {
		dst[k] = math.Log(p)
	}
	return nil
}

// TokenLikelihoods is C[k][o_t] for every k.
func (o Confused) TokenLikelihoods(t int, dst []float64) error {
	tok := o.Tokens[t]
	if tok < 0 || tok >= len(dst) {
		return fmt.Errorf("chmm: step %d: token %d outside [0,%d)", t, tok, len(dst))
	}
	if len(o.C) != len(dst) {
		return fmt.Errorf("chmm: a %d-row confusion matrix for K=%d tokens", len(o.C), len(dst))
	}
	for k, row := range o.C {
		if len(row) != len(dst) {
			return fmt.Errorf("chmm: confusion row %d has %d entries, want K=%d", k, len(row), len(dst))
		}
		dst[k] = row[tok]
	}
	return nil
}

// Decode is Viterbi (paper Sec. 3.7) under emissions e:
//
//	δ_1(j)     = log π̄_j + log p(o_1 | ω(j))
//	δ_{t+1}(j) = max_i [δ_t(i) + log T_{a_t,i,j}] + log p(o_{t+1} | ω(j))
//
// (the sink emits nothing). actions has T−1 entries. Ties go to the lowest state
// index. It returns the path and its log score. Hard Tokens take Viterbi's sparse
// recursion, which gives the same path.
func Decode(m *Model, e Emissions, actions []int) ([]int, float64, error) {
	if tok, ok := e.(Tokens); ok {
		return Viterbi(m, Sequence{Obs: tok, Actions: actions})
	}
	if err := m.Validate(); err != nil {
		return nil, 0, err
	}
	T, n, k := e.Steps(), m.N(), m.K()
	if T == 0 {
		return nil, 0, nil
	}
	if len(actions) != T-1 {
		return nil, 0, fmt.Errorf("chmm: Decode: %d actions for %d steps (want %d)", len(actions), T, T-1)
	}
	omega := m.StateTokens()
	logTr := m.Transitions()
	for i, v := range logTr {
		logTr[i] = math.Log(v)
	}
	tok := make([]float64, k)
	emit := func(t int, dst []float64) error {
		if err := e.LogTokens(t, tok); err != nil {
			return err
		}
		for j, w := range omega {
			if w < 0 {
				dst[j] = math.Inf(-1)
			} else {
				dst[j] = tok[w]
			}
		}
		return nil
	}
	delta, next, ev := make([]float64, n), make([]float64, n), make([]float64, n)
	back := make([]int32, T*n)
	if err := emit(0, ev); err != nil {
		return nil, 0, err
	}
	for j, p := range m.Pi() {
		delta[j] = math.Log(p) + ev[j]
	}
	for t := 1; t < T; t++ {
		a := actions[t-1]
		if a < 0 || a >= m.NumActions {
			return nil, 0, fmt.Errorf("chmm: Decode: action %d at step %d outside [0,%d)", a, t-1, m.NumActions)
		}
		if err := emit(t, ev); err != nil {
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
			next[j] += ev[j]
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
		return nil, math.Inf(-1), fmt.Errorf("chmm: Decode: no path of positive probability")
	}
	path := make([]int, T)
	path[T-1] = best
	for t := T - 1; t > 0; t-- {
		path[t-1] = int(back[t*n+path[t]])
	}
	return path, delta[best], nil
}
