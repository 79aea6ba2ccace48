package chmm

import (
	"fmt"
	"math"
)

// logParams caches log π̄ and the row log-normalisers of Θ, so that
// log T[a,i,j] = Θ[a,i,j] − rowLSE[a*N+i] without a log per entry.
type logParams struct {
	n      int
	first  []int
	size   []int
	maxC   int
	logPi  []float64 // log π̄ [N]
	theta  []float64 // Θ [A][N][N] (the model's slice, read only)
	rowLSE []float64 // log Σ_j exp Θ[a,i,j]  [A*N]
}

func newLogParams(m *Model) *logParams {
	n := m.N()
	lp := &logParams{n: n, size: m.Clones, first: make([]int, len(m.Clones)), theta: m.ThetaLogits}
	s := 0
	for k, c := range m.Clones {
		lp.first[k] = s
		s += c
		lp.maxC = max(lp.maxC, c)
	}
	lse := logSumExp(m.PiLogits)
	lp.logPi = make([]float64, n)
	for i, v := range m.PiLogits {
		lp.logPi[i] = v - lse
	}
	lp.rowLSE = make([]float64, m.NumActions*n)
	for r := range lp.rowLSE {
		lp.rowLSE[r] = logSumExp(m.ThetaLogits[r*n : (r+1)*n])
	}
	return lp
}

// viterbiWork is the scratch of one Viterbi decode.
type viterbiWork struct {
	back  []int32   // ψ_{t+1}(j) relative to the first clone of o_t, concatenated over t
	off   []int     // ψ_t = back[off[t]:off[t+1]]
	delta []float64 // δ_t (max C)
	next  []float64 // δ_{t+1} (max C)
}

// viterbi decodes seq into states (len T) and returns log p(s*, o | a)
// (paper Section 3.7), in log space on the blocks of the observed tokens:
//
//	δ_1(j)     = log π̄_j                                 j ∈ clones(o_1)
//	δ_{t+1}(j) = max_i [δ_t(i) + log T[a_t,i,j]]        i ∈ clones(o_t), j ∈ clones(o_{t+1})
//	ψ_{t+1}(j) = argmax_i (lowest i on ties),  s*_T = argmax_j δ_T(j) (lowest j).
//
// It returns the 0-based step where every δ is -Inf when ok is false.
func (lp *logParams) viterbi(seq Sequence, w *viterbiWork, states []int) (logp float64, step int, ok bool) {
	obs, acts := seq.Obs, seq.Actions
	tt := len(obs)
	w.off = w.off[:0]
	total := 0
	for _, o := range obs {
		w.off = append(w.off, total)
		total += lp.size[o]
	}
	w.off = append(w.off, total)
	if cap(w.back) < total {
		w.back = make([]int32, total)
	}
	w.back = w.back[:total]
	w.delta = grow(w.delta, lp.maxC)
	w.next = grow(w.next, lp.maxC)

	n := lp.n
	f0 := lp.first[obs[0]]
	delta := w.delta[:lp.size[obs[0]]]
	copy(delta, lp.logPi[f0:f0+len(delta)])
	if !anyFinite(delta) {
		return math.Inf(-1), 0, false
	}
	for t := 0; t+1 < tt; t++ {
		a, src, dst := acts[t], obs[t], obs[t+1]
		fs, fd := lp.first[src], lp.first[dst]
		cols := lp.size[dst]
		next := w.next[:cols]
		back := w.back[w.off[t+1]:w.off[t+2]]
		for j := range next {
			next[j] = math.Inf(-1)
			back[j] = 0
		}
		for i, di := range delta {
			if math.IsInf(di, -1) {
				continue
			}
			r := a*n + fs + i
			base := di - lp.rowLSE[r]
			row := lp.theta[r*n+fd : r*n+fd+cols]
			for j, th := range row {
				if v := base + th; v > next[j] { // strict: the lowest i wins ties
					next[j] = v
					back[j] = int32(i)
				}
			}
		}
		if !anyFinite(next) {
			return math.Inf(-1), t + 1, false
		}
		w.delta, w.next = w.next, w.delta
		delta = next
	}
	best := 0
	for j, v := range delta {
		if v > delta[best] {
			best = j
		}
	}
	logp = delta[best]
	for t := tt - 1; ; t-- {
		states[t] = lp.first[obs[t]] + best
		if t == 0 {
			break
		}
		best = int(w.back[w.off[t]+best])
	}
	return logp, 0, true
}

func anyFinite(x []float64) bool {
	for _, v := range x {
		if !math.IsInf(v, -1) {
			return true
		}
	}
	return false
}

// Viterbi returns the most likely state path s*_{1:T} of seq and its log
// probability log p(s*, o | a) (paper Section 3.7). Ties are broken toward
// the lowest state index. Cost O(Σ_t C_{o_t} C_{o_{t+1}}), memory O(T·C). A
// sequence of zero probability is an error wrapping ErrZeroProbability that
// names the step.
func Viterbi(m *Model, seq Sequence) (states []int, logp float64, err error) {
	if err := m.Check([]Sequence{seq}); err != nil {
		return nil, 0, err
	}
	states = make([]int, len(seq.Obs))
	logp, step, ok := newLogParams(m).viterbi(seq, &viterbiWork{}, states)
	if !ok {
		return nil, math.Inf(-1), fmt.Errorf("chmm: viterbi: step %d: %w", step, ErrZeroProbability)
	}
	return states, logp, nil
}

// ViterbiAll decodes every sequence (in parallel on workers goroutines, <= 0:
// GOMAXPROCS) and returns the paths and their log probabilities.
func ViterbiAll(m *Model, seqs []Sequence, workers int) (states [][]int, logp []float64, err error) {
	if err := m.Check(seqs); err != nil {
		return nil, nil, err
	}
	lp := newLogParams(m)
	states = make([][]int, len(seqs))
	logp = make([]float64, len(seqs))
	nw := workerCount(workers, len(seqs))
	work := make([]viterbiWork, nw)
	err = parallel(len(seqs), nw, func(w, i int) error {
		states[i] = make([]int, len(seqs[i].Obs))
		var step int
		var ok bool
		logp[i], step, ok = lp.viterbi(seqs[i], &work[w], states[i])
		if !ok {
			return fmt.Errorf("chmm: viterbi: sequence %d, step %d: %w", i, step, ErrZeroProbability)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return states, logp, nil
}

// logForward is the forward recursion of paper Section 3.3 in log space on
// the blocks of the observed tokens,
//
//	log α_{t+1}(j) = lse_i [log α_t(i) + log T[a_t,i,j]],   ℓ = lse_j log α_T(j),
//
// with the maximum taken per destination j, so no path is lost to underflow.
// It costs an exp per block entry and is the fallback of LogLikelihood when
// the per-step normalised pass (forward) underflows.
func (lp *logParams) logForward(seq Sequence) (float64, int, bool) {
	return lp.logForwardSteps(seq, nil)
}

// logForwardSteps is logForward that also calls step(t, log c_t) with the log of
// every step's normaliser c_t = p(o_t | o_<t, a_<t) (the probability-space
// pass's scale), for t = 1, 2, …, when step is not nil.
func (lp *logParams) logForwardSteps(seq Sequence, step func(t int, logC float64)) (float64, int, bool) {
	obs, acts := seq.Obs, seq.Actions
	n := lp.n
	f0 := lp.first[obs[0]]
	la := append([]float64(nil), lp.logPi[f0:f0+lp.size[obs[0]]]...)
	if !anyFinite(la) {
		return math.Inf(-1), 0, false
	}
	prev := 0.0
	if step != nil {
		prev = logSumExp(la)
	}
	next := make([]float64, lp.maxC)
	for t := 0; t+1 < len(obs); t++ {
		a, fs, fd := acts[t], lp.first[obs[t]], lp.first[obs[t+1]]
		cols := lp.size[obs[t+1]]
		nx := next[:cols]
		for j := range nx {
			mx := math.Inf(-1)
			for i, v := range la {
				r := a*n + fs + i
				mx = math.Max(mx, v+lp.theta[r*n+fd+j]-lp.rowLSE[r])
			}
			if math.IsInf(mx, -1) {
				nx[j] = mx
				continue
			}
			var s float64
			for i, v := range la {
				r := a*n + fs + i
				s += math.Exp(v + lp.theta[r*n+fd+j] - lp.rowLSE[r] - mx)
			}
			nx[j] = mx + math.Log(s)
		}
		if !anyFinite(nx) {
			return math.Inf(-1), t + 1, false
		}
		la = append(la[:0], nx...)
		if step != nil {
			z := logSumExp(la)
			step(t+1, z-prev)
			prev = z
		}
	}
	return logSumExp(la), 0, true
}
