package chmm

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// ErrZeroProbability is wrapped by the errors of LogLikelihood, Gradient,
// Viterbi and the trainers when a sequence has zero probability under the
// model (an observation no allowed path can emit, e.g. after hard EM left an
// exact zero). LogLikelihood and Viterbi work in log space where needed and
// report only true zeros; the forward–backward pass of Gradient and the
// trainers, in probability space, also reports a step where every path still
// alive has underflowed (relative probability below ~1e-308), which needs
// logit differences beyond ~700.
var ErrZeroProbability = errors.New("zero probability under the model")

// params caches the probability-space parameters of a model for the
// block-restricted recursions.
type params struct {
	n, a  int
	first []int     // first state of token k
	size  []int     // C_k
	maxC  int       // max_k C_k
	pi    []float64 // π̄ [N]
	trans []float64 // T [A][N][N]

	// Under a confusion matrix (setConfusion; nil for hard tokens): the tokens an
	// observed token o may have been, and the length of their clones' active vector.
	cands     [][]candidate
	active    []int
	maxActive int
	maxCands  int       // max_o |cands[o]|
	rowTok    []float64 // Σ_{j ∈ clones(k)} T[a,i,j], [A][K][N]
	beam      float64   // drop a candidate holding less than this share of α̂_t (confusion.go)

	workers int // goroutines of the dense passes over T (dense.go; <= 0: GOMAXPROCS)
}

func newParams(m *Model) *params { return newParamsWorkers(m, 0) }

// newParamsWorkers is newParams with the dense passes over T (the softmax here, the
// gradient and the entropy term later) on workers goroutines (<= 0: GOMAXPROCS).
func newParamsWorkers(m *Model, workers int) *params {
	p := &params{n: m.N(), a: m.NumActions, size: m.Clones, first: make([]int, len(m.Clones)), workers: workers}
	s := 0
	for k, c := range m.Clones {
		p.first[k] = s
		s += c
		p.maxC = max(p.maxC, c)
	}
	p.pi = m.Pi()
	p.trans = make([]float64, len(m.ThetaLogits))
	transitionsInto(p.trans, m.ThetaLogits, p.n, workers)
	return p
}

// block returns the offset of T[a, first(src) : , first(dst) :] in trans and
// the block's shape (rows = C_src, cols = C_dst); row i starts at off+i*n.
func (p *params) block(a, src, dst int) (off, rows, cols int) {
	return (a*p.n+p.first[src])*p.n + p.first[dst], p.size[src], p.size[dst]
}

// fbWork is the per-goroutine scratch of the forward–backward recursions.
type fbWork struct {
	alpha []float64 // α̂_t restricted to the clones of o_t, concatenated over t
	off   []int     // α̂_t = alpha[off[t]:off[t+1]]
	scale []float64 // c_t, the per-step normaliser (ℓ = Σ_t log c_t)
	beta  []float64 // β̂_{t+1} / c_{t+1} (max C)
	prev  []float64 // β̂_t being built (max C)

	betaAll []float64  // expectSplit: β̃_t for all t; expect, expectConf: b_t (below); laid out like alpha
	counts  countTerms // expect, expectConf: the steps' count terms, where grouped
	tmp     []float64  // expectConf: one block's β̂ (max C)
	live    []bool     // under a confusion matrix: candidate kept at step t, live[coff[t]+c]
	coff    []int
	mass    []float64 // forwardConf: the mass each candidate of the next step receives
}

func (w *fbWork) reset(p *params, seq Sequence) {
	tt := len(seq.Obs)
	w.off = w.off[:0]
	total := 0
	for _, o := range seq.Obs {
		w.off = append(w.off, total)
		total += p.size[o]
	}
	w.off = append(w.off, total)
	w.alpha = grow(w.alpha, total)
	w.scale = grow(w.scale, tt)
	w.beta = grow(w.beta, p.maxC)
	w.prev = grow(w.prev, p.maxC)
}

func grow[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
	}
	return x[:n]
}

// forward runs the per-step normalised forward recursion (paper Section 3.3,
// in probability space): with α̂_t = α_t / Π_{s≤t} c_t,
//
//	α_1(j)     = init(j) B(j, o_1)
//	α_{t+1}(j) = Σ_{i ∈ clones(o_t)} α̂_t(i) T[a_t, i, j],  j ∈ clones(o_{t+1})
//	c_t        = Σ_j α_t(j),  α̂_t = α_t / c_t,  ℓ = Σ_t log c_t.
//
// Only the clones of the observed tokens carry mass (deterministic emissions),
// so one step costs C_{o_t}·C_{o_{t+1}}. init is the distribution of s_1
// (π̄ normally). It stores α̂ and c in w and returns ℓ, or the 0-based step
// whose normaliser is zero.
func (p *params) forward(seq Sequence, init []float64, w *fbWork) (float64, int, bool) {
	w.reset(p, seq)
	return p.forwardRun(seq, init, w)
}

// forwardRun is forward on buffers already sized by w.reset.
func (p *params) forwardRun(seq Sequence, init []float64, w *fbWork) (float64, int, bool) {
	obs, acts := seq.Obs, seq.Actions
	a0 := w.alpha[w.off[0]:w.off[1]]
	copy(a0, init[p.first[obs[0]]:p.first[obs[0]]+p.size[obs[0]]])
	var ll float64
	for t := 0; ; t++ {
		cur := w.alpha[w.off[t]:w.off[t+1]]
		var c float64
		for _, v := range cur {
			c += v
		}
		if !(c > 0) {
			return math.Inf(-1), t, false
		}
		w.scale[t] = c
		ll += math.Log(c)
		inv := 1 / c
		for j := range cur {
			cur[j] *= inv
		}
		if t+1 == len(obs) {
			return ll, 0, true
		}
		next := w.alpha[w.off[t+1]:w.off[t+2]]
		clear(next)
		off, _, _ := p.block(acts[t], obs[t], obs[t+1])
		vecMat(next, cur, p.trans[off:], p.n)
	}
}

// accum holds expected sufficient statistics summed over sequences.
type accum struct {
	counts []float64 // ξ_a(i, j) = Σ_{t: a_t=a} P(s_t=i, s_{t+1}=j | o, a), [A][N][N]
	gamma1 []float64 // Σ over sequences of P(s_1 = i | o, a), [N]
	last   []float64 // Σ over sequences of P(s_T = i | o, a), [N]
	conf   []float64 // under a confusion matrix: Σ_{t: o_t=o} P(ω(s_t)=k | o, a), [K][K]
	ll     float64   // Σ ℓ
	steps  int       // Σ T
	seqs   int       // number of sequences
}

func newAccum(p *params) *accum {
	k := len(p.size)
	return &accum{counts: make([]float64, p.a*p.n*p.n), gamma1: make([]float64, p.n), last: make([]float64, p.n), conf: make([]float64, k*k)}
}

// expect runs forward–backward on seq and adds its expected transition
// counts ξ and first-state posterior γ_1 to acc. With β̂_T = 1 and
//
//	b_{t+1}(j) = β̂_{t+1}(j) / c_{t+1}
//	β̂_t(i)     = Σ_j T[a_t,i,j] b_{t+1}(j)
//	ξ_t(i, j)  = α̂_t(i) T[a_t,i,j] b_{t+1}(j)
//	γ_1(i)     = α̂_1(i) β̂_1(i),
//
// memory is O(T·C) (α̂ stored, and b where the counts are grouped). The counts
// are added during the backward pass, or after it grouped by block where the
// matrices are large (groupCounts). It returns the zero-probability step when ok is
// false.
func (p *params) expect(seq Sequence, w *fbWork, acc *accum) (step int, ok bool) {
	return p.expectFrom(seq, nil, w, acc)
}

// expectFrom is expect on one segment of a sequence whose ends e carries (segments.go;
// nil: a whole sequence, as expect).
func (p *params) expectFrom(seq Sequence, e *segEnds, w *fbWork, acc *accum) (step int, ok bool) {
	ll, step, ok := p.forward(seq, e.initial(p), w)
	if !ok {
		return step, false
	}
	obs, acts := seq.Obs, seq.Actions
	last := len(obs) - 1
	grouped := p.groupCounts()
	if grouped {
		w.betaAll = grow(w.betaAll, len(w.alpha))
		w.counts.terms = w.counts.terms[:0]
	}
	b := w.beta[:p.size[obs[last]]]
	if e.more() {
		ll -= math.Log(w.scale[last])
		e.startBeta(p, obs[last], b, w.alpha[w.off[last]:w.off[last+1]])
	} else {
		for j := range b {
			b[j] = 1
		}
		fl := p.first[obs[last]]
		for i, v := range w.alpha[w.off[last]:w.off[last+1]] {
			acc.last[fl+i] += v
		}
	}
	k := len(p.size)
	for t := last - 1; t >= 0; t-- {
		// b holds β̂_{t+1}; fold in 1/c_{t+1}.
		inv := 1 / w.scale[t+1]
		for j := range b {
			b[j] *= inv
		}
		off, rows, _ := p.block(acts[t], obs[t], obs[t+1])
		nb := w.prev[:rows]
		cur := w.alpha[w.off[t]:w.off[t+1]]
		if grouped {
			copy(w.betaAll[w.off[t+1]:], b)
			matVec(nb, b, p.trans[off:], p.n)
			w.counts.terms = append(w.counts.terms, countTerm{block: (acts[t]*k+obs[t])*k + obs[t+1], ai: w.off[t], bi: w.off[t+1]})
		} else {
			matVecCount(nb, b, p.trans[off:], p.n, cur, acc.counts[off:])
		}
		w.beta, w.prev = w.prev, w.beta
		b = nb
	}
	if grouped {
		w.counts.add(p, w.alpha, w.betaAll, acc.counts)
	}
	if e.isStart() {
		a1 := w.alpha[w.off[0]:w.off[1]]
		f := p.first[obs[0]]
		for i, v := range a1 {
			acc.gamma1[f+i] += v * b[i]
		}
		acc.seqs++
	}
	e.keep(p, seq, w, b)
	acc.ll += ll
	acc.steps += e.steps(len(obs))
	return 0, true
}

// groupCountsAbove is the size of T (A·N·N entries) from which the E-step adds its
// counts grouped by block after the backward pass (countTerms.add) instead of step by
// step during it: the second pass pays only for count matrices too large for the
// cache (the E-step benchmarks time both sides of the threshold).
var groupCountsAbove = 1 << 19 // a variable so that the tests can take both paths

// groupCounts says whether the E-step groups its counts by block (groupCountsAbove).
func (p *params) groupCounts() bool { return p.a*p.n*p.n >= groupCountsAbove }

// countTerm is one step's part of the expected counts, ξ_t(i, j) = α̂_t(i) T[a,i,j]
// b(j) over one block (a, src, dst): block = (a·K + src)·K + dst, and α̂_t's and b's
// clones of the block start at alpha[ai] and b[bi] (laid out like fbWork.alpha).
type countTerm struct{ block, ai, bi int }

// countTerms collects a pass's count terms and adds them grouped by block.
type countTerms struct {
	terms  []countTerm
	sorted []countTerm // the terms grouped by block
	bucket []int       // terms per block, then where each block's terms start
}

// add adds the terms to counts grouped by block (a counting sort), so that each
// block of T and of the counts stays in cache while its steps are added. In time
// order the blocks come from all over the A·N·N matrices and the counts'
// read–modify–write dominates the E-step: 8× the time of the same update to a block
// in cache (48 × 48 blocks of a 480-state map), against 1.5× for a read-only pass.
func (c *countTerms) add(p *params, alpha, b, counts []float64) {
	k := len(p.size)
	nb := p.a * k * k
	c.bucket = grow(c.bucket, nb+1)
	clear(c.bucket)
	for _, t := range c.terms {
		c.bucket[t.block+1]++
	}
	for i := 1; i <= nb; i++ {
		c.bucket[i] += c.bucket[i-1]
	}
	c.sorted = grow(c.sorted, len(c.terms))
	for _, t := range c.terms {
		c.sorted[c.bucket[t.block]] = t
		c.bucket[t.block]++
	}
	for _, t := range c.sorted {
		a, src, dst := t.block/(k*k), t.block/k%k, t.block%k
		off, rows, cols := p.block(a, src, dst)
		addCounts(alpha[t.ai:t.ai+rows], b[t.bi:t.bi+cols], p.trans[off:], p.n, counts[off:])
	}
}

// workerCount resolves a Workers setting (<= 0: GOMAXPROCS) for n jobs.
func workerCount(workers, n int) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return max(1, min(workers, n))
}

// parallel runs job(w, i) for i in [0, n) on W goroutines with a static
// assignment (worker w takes i ≡ w mod W), so results reduced in worker order
// are deterministic for a given W. It returns the error of the lowest i.
func parallel(n, workers int, job func(w, i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				errs[i] = job(w, i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func zeroProbError(seq, step int) error {
	return fmt.Errorf("chmm: sequence %d, step %d: %w", seq, step, ErrZeroProbability)
}

// LogLikelihood returns Σ over seqs of ℓ = log p(o_{1:T} | a_{1:T-1}) (paper
// Section 3.3), computed by the block-restricted, per-step normalised forward
// recursion, in parallel over sequences on GOMAXPROCS goroutines. Where that
// pass underflows (a path that is more than ~e^-700 less likely than the
// others turns out to be the only one left) the sequence is redone in log
// space, so ℓ is exact down to any finite value. A sequence of zero
// probability gives -Inf and an error wrapping ErrZeroProbability that names
// the sequence and step.
func LogLikelihood(m *Model, seqs []Sequence) (float64, error) {
	lls, err := SequenceLogLikelihoods(m, seqs, 0)
	if lls == nil {
		return math.NaN(), err
	}
	var ll float64
	for _, v := range lls {
		ll += v
	}
	return ll, err
}

// SequenceLogLikelihoods returns ℓ of every sequence, on workers goroutines
// (<= 0: GOMAXPROCS). Zero-probability sequences get -Inf and the error of
// the first of them wraps ErrZeroProbability; other errors return nil.
func SequenceLogLikelihoods(m *Model, seqs []Sequence, workers int) ([]float64, error) {
	if err := m.Check(seqs); err != nil {
		return nil, err
	}
	p := newParams(m)
	var lp *logParams
	var once sync.Once
	out := make([]float64, len(seqs))
	nw := workerCount(workers, len(seqs))
	work := make([]fbWork, nw)
	err := parallel(len(seqs), nw, func(w, i int) error {
		ll, step, ok := p.forward(seqs[i], p.pi, &work[w])
		if !ok { // zero, or below float64's range: redo in log space
			once.Do(func() { lp = newLogParams(m) })
			ll, step, ok = lp.logForward(seqs[i])
		}
		out[i] = ll
		if !ok {
			return zeroProbError(i, step)
		}
		return nil
	})
	return out, err
}

// estep runs forward–backward over seqs in parallel and returns the summed
// statistics. With one sequence and several workers it parallelises inside
// the sequence (expectSplit).
func estep(p *params, seqs []Sequence, accs []*accum, work []fbWork) (*accum, error) {
	nw := len(accs)
	resetAccums(accs)
	var err error
	if p.cands != nil {
		err = parallel(len(seqs), nw, func(w, i int) error {
			if step, ok := p.expectConf(seqs[i], &work[w], accs[w]); !ok {
				return zeroProbError(i, step)
			}
			return nil
		})
	} else if len(seqs) == 1 && nw > 1 && len(seqs[0].Obs) >= minSplitLen {
		if step, ok := p.expectSplit(seqs[0], &work[0], accs); !ok {
			err = zeroProbError(0, step)
		}
	} else {
		err = parallel(len(seqs), nw, func(w, i int) error {
			if step, ok := p.expect(seqs[i], &work[w], accs[w]); !ok {
				return zeroProbError(i, step)
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return sumAccums(accs), nil
}

// minSplitLen is the shortest sequence worth splitting across goroutines;
// maxSplitWorkers bounds the goroutines (each holds an A·N·N count buffer).
const (
	minSplitLen     = 2000
	maxSplitWorkers = 8
)

// expectSplit is expect for one long sequence on len(accs) goroutines: the
// forward pass (α̂, c) and a backward pass with its own normalisation run
// concurrently,
//
//	β̃_T = 1,  β̃_t(i) ∝ Σ_j T[a_t,i,j] β̃_{t+1}(j)   (Σ_i β̃_t(i) = 1),
//
// then the counts are summed over len(accs) time segments in parallel with
//
//	ξ_t(i,j) = α̂_t(i) T[a_t,i,j] β̃_{t+1}(j) / Z_t,  Z_t = c_{t+1} Σ_j α̂_{t+1}(j) β̃_{t+1}(j).
//
// Where the matrices are large each segment adds its steps grouped by block
// (groupCounts). ℓ, γ_1 and the counts of segment 0 go to accs[0].
func (p *params) expectSplit(seq Sequence, w *fbWork, accs []*accum) (step int, ok bool) {
	w.reset(p, seq)
	obs, acts := seq.Obs, seq.Actions
	tt := len(obs)
	w.betaAll = grow(w.betaAll, len(w.alpha))
	var ll float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ll, step, ok = p.forwardRun(seq, p.pi, w) // reads alpha, off; writes alpha, scale
	}()
	// Backward on this goroutine.
	last := w.betaAll[w.off[tt-1]:w.off[tt]]
	for j := range last {
		last[j] = 1 / float64(len(last))
	}
	for t := tt - 2; t >= 0; t-- {
		next := w.betaAll[w.off[t+1]:w.off[t+2]]
		cur := w.betaAll[w.off[t]:w.off[t+1]]
		off, _, _ := p.block(acts[t], obs[t], obs[t+1])
		matVec(cur, next, p.trans[off:], p.n)
		var d float64
		for _, v := range cur {
			d += v
		}
		if d > 0 {
			inv := 1 / d
			for i := range cur {
				cur[i] *= inv
			}
		}
	}
	wg.Wait()
	if !ok {
		return step, false
	}
	// Counts over time segments, grouped by block in each where the matrices are large.
	grouped := p.groupCounts()
	nseg := len(accs)
	per := (tt - 1 + nseg - 1) / nseg
	var cw sync.WaitGroup
	for g := range nseg {
		lo, hi := g*per, min((g+1)*per, tt-1)
		if lo >= hi {
			continue
		}
		cw.Add(1)
		go func() {
			defer cw.Done()
			counts := accs[g].counts
			b := make([]float64, p.maxC)
			var terms countTerms
			k := len(p.size)
			for t := lo; t < hi; t++ {
				an := w.alpha[w.off[t+1]:w.off[t+2]]
				bn := w.betaAll[w.off[t+1]:w.off[t+2]]
				var z float64
				for j, v := range an {
					z += v * bn[j]
				}
				z *= w.scale[t+1]
				if grouped { // β̃_{t+1} is read by no other step: scale it in place
					for j := range bn {
						bn[j] /= z
					}
					terms.terms = append(terms.terms, countTerm{block: (acts[t]*k+obs[t])*k + obs[t+1], ai: w.off[t], bi: w.off[t+1]})
					continue
				}
				bb := b[:len(bn)]
				for j, v := range bn {
					bb[j] = v / z
				}
				cur := w.alpha[w.off[t]:w.off[t+1]]
				off, _, _ := p.block(acts[t], obs[t], obs[t+1])
				addCounts(cur, bb, p.trans[off:], p.n, counts[off:])
			}
			if grouped {
				terms.add(p, w.alpha, w.betaAll, counts)
			}
		}()
	}
	a1 := w.alpha[w.off[0]:w.off[1]]
	b1 := w.betaAll[w.off[0]:w.off[1]]
	var z float64
	for i, v := range a1 {
		z += v * b1[i]
	}
	f := p.first[obs[0]]
	for i, v := range a1 {
		accs[0].gamma1[f+i] += v * b1[i] / z
	}
	fl := p.first[obs[tt-1]]
	for i, v := range w.alpha[w.off[tt-1]:w.off[tt]] {
		accs[0].last[fl+i] += v
	}
	cw.Wait()
	accs[0].ll += ll
	accs[0].steps += tt
	accs[0].seqs++
	return 0, true
}

// estepper keeps the per-worker buffers of repeated E-steps (trainers).
type estepper struct {
	accs []*accum
	work []fbWork
}

// newEstepper sizes the buffers for nseq sequences per E-step: one worker
// per sequence up to workers, or up to maxSplitWorkers for a single sequence.
func newEstepper(p *params, workers, nseq int) *estepper {
	nw := workerCount(workers, nseq)
	if nseq == 1 {
		nw = workerCount(workers, maxSplitWorkers)
	}
	e := &estepper{accs: make([]*accum, nw), work: make([]fbWork, nw)}
	for w := range e.accs {
		e.accs[w] = newAccum(p)
	}
	return e
}

func (e *estepper) run(p *params, seqs []Sequence) (*accum, error) {
	return estep(p, seqs, e.accs, e.work)
}

// Gradient returns ℓ = Σ_seqs log p(o|a) and its exact gradient with respect
// to the logits, from forward–backward:
//
//	∂ℓ/∂Θ[a,i,j] = ξ_a(i,j) − (Σ_j' ξ_a(i,j')) T[a,i,j]
//	∂ℓ/∂π[i]     = Σ_seqs γ_1(i) − S·π̄_i        (S sequences)
//
// gradPi has len N and gradTheta len A*N*N (layout of ThetaLogits). Memory is
// O(T·C) per sequence plus A*N*N per goroutine; sequences run in parallel on
// GOMAXPROCS goroutines. A zero-probability sequence is an error wrapping
// ErrZeroProbability.
func Gradient(m *Model, seqs []Sequence) (ll float64, gradPi, gradTheta []float64, err error) {
	return GradientWorkers(m, seqs, 0)
}

// GradientWorkers is Gradient on the given number of goroutines (<= 0:
// GOMAXPROCS). The result is deterministic for a given worker count.
func GradientWorkers(m *Model, seqs []Sequence, workers int) (ll float64, gradPi, gradTheta []float64, err error) {
	if err := m.Check(seqs); err != nil {
		return 0, nil, nil, err
	}
	if len(seqs) == 0 {
		return 0, make([]float64, m.N()), make([]float64, len(m.ThetaLogits)), nil
	}
	p := newParams(m)
	acc, err := newEstepper(p, workers, len(seqs)).run(p, seqs)
	if err != nil {
		return math.Inf(-1), nil, nil, err
	}
	gradPi = make([]float64, p.n)
	gradTheta = make([]float64, len(p.trans))
	p.gradient(acc, gradPi, gradTheta)
	return acc.ll, gradPi, gradTheta, nil
}

// gradient turns expected statistics into ∂ℓ/∂π and ∂ℓ/∂Θ (see Gradient).
func (p *params) gradient(acc *accum, gradPi, gradTheta []float64) {
	s := float64(acc.seqs)
	for i, g := range acc.gamma1 {
		gradPi[i] = g - s*p.pi[i]
	}
	n := p.n
	forRanges(len(p.trans)/n, n, p.workers, func(lo, hi int) {
		for r := lo * n; r < hi*n; r += n {
			xi := acc.counts[r : r+n]
			var tot float64
			for _, v := range xi {
				tot += v
			}
			g := gradTheta[r : r+n]
			if tot == 0 {
				clear(g)
				continue
			}
			for j, t := range p.trans[r : r+n] {
				g[j] = xi[j] - tot*t
			}
		}
	})
}
