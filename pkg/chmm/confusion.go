package chmm

import (
	"errors"
	"fmt"
	"math"
)

// Training through a confusion matrix. A step observed as token o may have been
// any token k with C[k][o] > 0 (a misread digit), so the step's emission is
//
//	p(o_t | s) = C[ω(s)][o_t]
//
// and the recursions run over the union of the candidate tokens' clone blocks:
// one step costs Σ_{k ∈ cand(o_t), k' ∈ cand(o_{t+1})} C_k·C_k'. With C = I this
// is the hard-token pass exactly. EMConfig.Confusion turns it on; EM can also
// learn C (EMConfig.LearnConfusion) from the posterior of the true token,
//
//	C[k][o] ∝ Σ_{t: o_t = o} P(ω(s_t) = k | o, a),
//
// restricted to C's nonzero entries (a zero stays a zero).
//
// A beam (EMConfig.ConfusionBeam) keeps the cost near the hard pass's: a candidate
// whose clones would hold less than the beam of α_{t+1} is dropped at that step (its
// α set to 0), and neither pass multiplies its blocks; the forward pass knows its
// share before multiplying, from the mass each state's row sends to each token
// (params.rowTok). The result is the exact likelihood, posterior and counts of a
// model whose emission is 0 at the dropped (step, token) pairs, so EM stays EM;
// beam 0 is the full model.

// candidate is one token an observation may have been: its clones occupy
// active[off : off+size[k]] of the step's active vector, with emission weight w.
type candidate struct {
	k   int
	w   float64
	off int
}

// ValidateConfusion checks that c is a K×K matrix of finite entries in [0, 1]
// whose rows sum to 1 (within 1e-6; ValidateConfusionRows) and in which every token
// can be observed (every column has a nonzero entry).
func ValidateConfusion(c [][]float64, k int) error {
	if err := ValidateConfusionRows(c, k); err != nil {
		return err
	}
	for o := range k {
		seen := false
		for _, row := range c {
			seen = seen || row[o] > 0
		}
		if !seen {
			return fmt.Errorf("chmm: confusion column %d is zero: token %d could never be observed", o, o)
		}
	}
	return nil
}

// ValidateConfusionRows checks that c is a K×K matrix of finite entries in [0, 1]
// whose rows sum to 1 (within 1e-6). A token may have a zero column: one fitted to a
// walk that never showed it (plan.Map.EstimateConfusion).
func ValidateConfusionRows(c [][]float64, k int) error {
	if len(c) != k {
		return fmt.Errorf("chmm: a %d-row confusion matrix for K=%d tokens", len(c), k)
	}
	for i, row := range c {
		if len(row) != k {
			return fmt.Errorf("chmm: confusion row %d has %d entries, want K=%d", i, len(row), k)
		}
		var s float64
		for o, v := range row {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("chmm: confusion C[%d][%d] = %v, want a number in [0, 1]", i, o, v)
			}
			s += v
		}
		if math.Abs(s-1) > 1e-6 {
			return fmt.Errorf("chmm: confusion row %d sums to %v, want 1", i, s)
		}
	}
	return nil
}

// setConfusion makes p's recursions read observations through c (nil: hard
// tokens) with the given beam (0: none). c must have passed ValidateConfusion.
func (p *params) setConfusion(c [][]float64, beam float64) {
	p.cands, p.active, p.beam = nil, nil, beam
	if c == nil {
		return
	}
	k := len(p.size)
	p.cands = make([][]candidate, k)
	p.active = make([]int, k)
	for o := range k {
		off := 0
		for kk := range k {
			if w := c[kk][o]; w > 0 {
				p.cands[o] = append(p.cands[o], candidate{k: kk, w: w, off: off})
				off += p.size[kk]
			}
		}
		p.active[o] = off
		p.maxActive = max(p.maxActive, off)
		p.maxCands = max(p.maxCands, len(p.cands[o]))
	}
	p.rowTok = make([]float64, p.a*k*p.n)
	for a := range p.a {
		for i := range p.n {
			row := p.trans[(a*p.n+i)*p.n : (a*p.n+i+1)*p.n]
			for kk := range k {
				var m float64
				for _, v := range row[p.first[kk] : p.first[kk]+p.size[kk]] {
					m += v
				}
				p.rowTok[(a*k+kk)*p.n+i] = m
			}
		}
	}
}

// resetConf sizes w for seq under p's candidates.
func (w *fbWork) resetConf(p *params, seq Sequence) {
	w.off = w.off[:0]
	total := 0
	for _, o := range seq.Obs {
		w.off = append(w.off, total)
		total += p.active[o]
	}
	w.off = append(w.off, total)
	w.alpha = grow(w.alpha, total)
	w.scale = grow(w.scale, len(seq.Obs))
	w.beta = grow(w.beta, p.maxActive)
	w.prev = grow(w.prev, p.maxActive)
	w.tmp = grow(w.tmp, p.maxC)
	w.coff = w.coff[:0]
	n := 0
	for _, o := range seq.Obs {
		w.coff = append(w.coff, n)
		n += len(p.cands[o])
	}
	w.coff = append(w.coff, n)
	w.live = grow(w.live, n)
	w.mass = grow(w.mass, p.maxCands)
}

// forwardConf is forward under p's candidates:
//
//	α_1(j)     = init(j) C[ω(j)][o_1]
//	α_{t+1}(j) = C[ω(j)][o_{t+1}] Σ_i α̂_t(i) T[a_t, i, j],  i, j over the candidates' clones,
//
// with p.beam's candidates dropped (w.live records which were kept): ℓ is exactly the
// likelihood of the model whose emission is 0 at the dropped (step, token) pairs.
func (p *params) forwardConf(seq Sequence, init []float64, w *fbWork) (float64, int, bool) {
	w.resetConf(p, seq)
	obs, acts := seq.Obs, seq.Actions
	a0 := w.alpha[w.off[0]:w.off[1]]
	for _, c := range p.cands[obs[0]] {
		seg := a0[c.off : c.off+p.size[c.k]]
		for i, v := range init[p.first[c.k] : p.first[c.k]+p.size[c.k]] {
			seg[i] = v * c.w
		}
	}
	// Step 0's candidates are dropped by their mass; a later step's by the mass the
	// step before sends them, w·Σ_i α̂_t(i) Σ_{j ∈ clones(k)} T[a_t,i,j] (p.rowTok),
	// before their blocks are multiplied.
	live0 := w.live[w.coff[0]:w.coff[1]]
	var m0 float64
	for ci, cd := range p.cands[obs[0]] {
		w.mass[ci] = 0
		for _, v := range a0[cd.off : cd.off+p.size[cd.k]] {
			w.mass[ci] += v
		}
		m0 += w.mass[ci]
	}
	for ci, cd := range p.cands[obs[0]] {
		if live0[ci] = w.mass[ci] > 0 && w.mass[ci] >= p.beam*m0; !live0[ci] {
			clear(a0[cd.off : cd.off+p.size[cd.k]])
		}
	}
	kk := len(p.size)
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
		scale(cur, 1/c)
		if t+1 == len(obs) {
			return ll, 0, true
		}
		live := w.live[w.coff[t]:w.coff[t+1]]
		liveNext := w.live[w.coff[t+1]:w.coff[t+2]]
		dsts := p.cands[obs[t+1]]
		var tot float64
		for di, dst := range dsts {
			var pm float64
			for ci, src := range p.cands[obs[t]] {
				if !live[ci] {
					continue
				}
				r := p.rowTok[(acts[t]*kk+dst.k)*p.n+p.first[src.k]:][:p.size[src.k]]
				for i, v := range cur[src.off : src.off+p.size[src.k]] {
					pm += v * r[i]
				}
			}
			w.mass[di] = dst.w * pm
			tot += w.mass[di]
		}
		next := w.alpha[w.off[t+1]:w.off[t+2]]
		clear(next)
		for di, dst := range dsts {
			if liveNext[di] = w.mass[di] > 0 && w.mass[di] >= p.beam*tot; !liveNext[di] {
				continue
			}
			seg := next[dst.off : dst.off+p.size[dst.k]]
			for ci, src := range p.cands[obs[t]] {
				if !live[ci] {
					continue
				}
				off, _, _ := p.block(acts[t], src.k, dst.k)
				vecMat(seg, cur[src.off:src.off+p.size[src.k]], p.trans[off:], p.n)
			}
			scale(seg, dst.w)
		}
	}
}

// expectConf is expect under p's candidates (its counts, too, grouped by block
// where the matrices are large). With β̂_T = 1,
//
//	b_{t+1}(j) = C[ω(j)][o_{t+1}] β̂_{t+1}(j) / c_{t+1}
//	β̂_t(i)     = Σ_j T[a_t,i,j] b_{t+1}(j),   ξ_t(i,j) = α̂_t(i) T[a_t,i,j] b_{t+1}(j),
//
// and the posterior of the true token, γ_t(k) = Σ_{i ∈ clones(k)} α̂_t(i) β̂_t(i),
// is added to acc.conf[k][o_t].
func (p *params) expectConf(seq Sequence, w *fbWork, acc *accum) (step int, ok bool) {
	return p.expectConfFrom(seq, nil, w, acc)
}

// expectConfFrom is expectConf on one segment of a sequence whose ends e carries
// (segments.go; nil: a whole sequence, as expectConf).
func (p *params) expectConfFrom(seq Sequence, e *segEnds, w *fbWork, acc *accum) (step int, ok bool) {
	ll, step, ok := p.forwardConf(seq, e.initial(p), w)
	if !ok {
		return step, false
	}
	obs, acts := seq.Obs, seq.Actions
	kk := len(p.size)
	last := len(obs) - 1
	b := w.beta[:p.active[obs[last]]]
	al := w.alpha[w.off[last]:w.off[last+1]]
	tail := e.more()
	if tail {
		ll -= math.Log(w.scale[last])
		e.startBeta(p, obs[last], b, al)
	} else {
		for j := range b {
			b[j] = 1
		}
		for _, c := range p.cands[obs[last]] {
			f := p.first[c.k]
			for i, v := range al[c.off : c.off+p.size[c.k]] {
				acc.last[f+i] += v
			}
		}
	}
	addConf := func(t int, beta []float64) {
		al := w.alpha[w.off[t]:w.off[t+1]]
		live := w.live[w.coff[t]:w.coff[t+1]]
		for ci, c := range p.cands[obs[t]] {
			if !live[ci] {
				continue
			}
			var g float64
			for i, v := range al[c.off : c.off+p.size[c.k]] {
				g += v * beta[c.off+i]
			}
			acc.conf[c.k*kk+obs[t]] += g
		}
	}
	grouped := p.groupCounts()
	if grouped {
		w.betaAll = grow(w.betaAll, len(w.alpha))
		w.counts.terms = w.counts.terms[:0]
	}
	for t := last - 1; t >= 0; t-- {
		if t+1 < last || !tail {
			addConf(t+1, b)
		}
		inv := 1 / w.scale[t+1]
		for _, c := range p.cands[obs[t+1]] {
			scale(b[c.off:c.off+p.size[c.k]], c.w*inv)
		}
		if grouped {
			copy(w.betaAll[w.off[t+1]:w.off[t+2]], b)
		}
		cur := w.alpha[w.off[t]:w.off[t+1]]
		nb := w.prev[:p.active[obs[t]]]
		clear(nb)
		live, liveNext := w.live[w.coff[t]:w.coff[t+1]], w.live[w.coff[t+1]:w.coff[t+2]]
		for ci, src := range p.cands[obs[t]] {
			if !live[ci] {
				continue
			}
			rows := p.size[src.k]
			out := nb[src.off : src.off+rows]
			tmp := w.tmp[:rows]
			for di, dst := range p.cands[obs[t+1]] {
				if !liveNext[di] {
					continue
				}
				off, _, _ := p.block(acts[t], src.k, dst.k)
				if grouped {
					matVec(tmp, b[dst.off:dst.off+p.size[dst.k]], p.trans[off:], p.n)
					w.counts.terms = append(w.counts.terms, countTerm{block: (acts[t]*kk+src.k)*kk + dst.k, ai: w.off[t] + src.off, bi: w.off[t+1] + dst.off})
				} else {
					matVecCount(tmp, b[dst.off:dst.off+p.size[dst.k]], p.trans[off:], p.n, cur[src.off:src.off+rows], acc.counts[off:])
				}
				addTo(out, tmp)
			}
		}
		w.beta, w.prev = w.prev, w.beta
		b = nb
	}
	if grouped {
		w.counts.add(p, w.alpha, w.betaAll, acc.counts)
	}
	addConf(0, b)
	if e.isStart() {
		a1 := w.alpha[w.off[0]:w.off[1]]
		for _, c := range p.cands[obs[0]] {
			f := p.first[c.k]
			for i, v := range a1[c.off : c.off+p.size[c.k]] {
				acc.gamma1[f+i] += v * b[c.off+i]
			}
		}
		acc.seqs++
	}
	e.keep(p, seq, w, b)
	acc.ll += ll
	acc.steps += e.steps(len(obs))
	return 0, true
}

// TrimConfusion sets the off-diagonal entries of c below min to 0 and renormalises
// the rows, in place: entries that explain almost nothing stop costing candidates.
func TrimConfusion(c [][]float64, min float64) {
	for k, row := range c {
		var s float64
		for o, v := range row {
			if o != k && v < min {
				row[o] = 0
			}
			s += row[o]
		}
		for o := range row {
			row[o] /= s
		}
	}
}

// confusionStep is EM's M-step for C: each row ∝ the posterior counts of the true
// token (acc.conf), over C's nonzero entries; a row with no counts keeps its values.
func confusionStep(c [][]float64, acc *accum) {
	kk := len(c)
	for k, row := range c {
		var tot float64
		for o, v := range row {
			if v > 0 {
				tot += acc.conf[k*kk+o]
			}
		}
		if !(tot > 0) {
			continue
		}
		for o, v := range row {
			if v > 0 {
				// A floor keeps the pattern: an entry that reached 0 would drop its candidate.
				row[o] = max(acc.conf[k*kk+o]/tot, 1e-12)
			}
		}
		var s float64
		for _, v := range row {
			s += v
		}
		for o := range row {
			row[o] /= s
		}
	}
}

// ConfusedLogLikelihoods returns ℓ of every sequence with its tokens read through
// the confusion matrix c (see EMConfig.Confusion), on workers goroutines (<= 0:
// GOMAXPROCS). A sequence of zero probability gives -Inf and an error wrapping
// ErrZeroProbability.
func ConfusedLogLikelihoods(m *Model, seqs []Sequence, c [][]float64, workers int) ([]float64, error) {
	return confusedLogLikelihoods(m, seqs, nil, c, workers)
}

// ConfusedLogLikelihoodsFrom returns, for every sequence i, the log-likelihood of its
// steps from[i] on given the steps before, with its tokens read through c: ℓ of the
// whole sequence less ℓ of its first from[i] steps, both as ConfusedLogLikelihoods
// gives them (bit for bit), from one forward pass where that takes two. from[i] must be
// in [0, len(seqs[i].Obs)].
func ConfusedLogLikelihoodsFrom(m *Model, seqs []Sequence, from []int, c [][]float64, workers int) ([]float64, error) {
	if len(from) != len(seqs) {
		return nil, fmt.Errorf("chmm: ConfusedLogLikelihoodsFrom: %d starts for %d sequences", len(from), len(seqs))
	}
	for i, f := range from {
		if f < 0 || f > len(seqs[i].Obs) {
			return nil, fmt.Errorf("chmm: ConfusedLogLikelihoodsFrom: sequence %d of %d steps from step %d", i, len(seqs[i].Obs), f)
		}
	}
	return confusedLogLikelihoods(m, seqs, from, c, workers)
}

// confusedLogLikelihoods is ConfusedLogLikelihoods (from nil) and
// ConfusedLogLikelihoodsFrom.
func confusedLogLikelihoods(m *Model, seqs []Sequence, from []int, c [][]float64, workers int) ([]float64, error) {
	if err := m.Check(seqs); err != nil {
		return nil, err
	}
	if err := ValidateConfusion(c, m.K()); err != nil {
		return nil, err
	}
	p := newParams(m)
	p.setConfusion(c, 0)
	out := make([]float64, len(seqs))
	nw := workerCount(workers, len(seqs))
	work := make([]fbWork, nw)
	err := parallel(len(seqs), nw, func(w, i int) error {
		ll, step, ok := p.forwardConf(seqs[i], p.pi, &work[w])
		out[i] = ll
		if ok && from != nil {
			// The forward pass of the first from[i] steps alone has the same normalisers,
			// summed in the same order.
			var before float64
			for _, s := range work[w].scale[:from[i]] {
				before += math.Log(s)
			}
			out[i] = ll - before
		}
		if !ok {
			return zeroProbError(i, step)
		}
		return nil
	})
	return out, err
}

// ExpectedVisits returns, for every state, the expected number of steps spent
// in it, Σ_t P(s_t = i | o, a), with tokens read through c (nil: hard tokens).
func ExpectedVisits(m *Model, seqs []Sequence, c [][]float64, workers int) ([]float64, error) {
	if err := m.Check(seqs); err != nil {
		return nil, err
	}
	p := newParams(m)
	if c != nil {
		if err := ValidateConfusion(c, m.K()); err != nil {
			return nil, err
		}
		p.setConfusion(c, 0)
	}
	acc, err := newEstepper(p, workers, len(seqs)).run(p, seqs)
	if err != nil {
		return nil, err
	}
	// Σ_t<T γ_t(i) = Σ_{a,j} ξ_a(i,j); the last step of each sequence is γ_T.
	n := p.n
	visits := make([]float64, n)
	for r := 0; r < len(acc.counts); r += n {
		var s float64
		for _, v := range acc.counts[r : r+n] {
			s += v
		}
		visits[(r/n)%n] += s
	}
	for i, v := range acc.last {
		visits[i] += v
	}
	return visits, nil
}

// FitConfusionConfig configures FitConfusion. The zero value is the default.
type FitConfusionConfig struct {
	// MaxIters bounds the E-steps (0: 100).
	MaxIters int
	// Tol ends the fit once ℓ/T (nats per step) gains no more than Tol over the
	// E-step before (0: 1e-5).
	Tol float64
	// Beam is EMConfig.ConfusionBeam for every E-step (0: no beam). Must be in
	// [0, 0.5).
	Beam float64
	// Workers is the number of goroutines over sequences (<= 0: GOMAXPROCS).
	Workers int
}

// FitConfusion fits the confusion matrix C of map m to seqs by EM over C alone:
// m's transitions and π stay as they are, and each M-step sets every row of C
// to the posterior counts of the true token as EMConfig.LearnConfusion does,
//
//	C[k][o] ∝ Σ_{t: o_t = o} P(ω(s_t) = k | o, a)    over the entries where start[k][o] > 0,
//
// so a zero of start stays zero and a row whose token the walks never visit keeps
// start's values. start must pass ValidateConfusion; it is not modified. It returns
// C after the last M-step and ℓ/T before every M-step and after the last (non-
// decreasing up to rounding without a beam). A hard-token map fitted this way
// reads its misreads through C: DiagnoseConfused judges it as a map the EM
// finalisation made.
func FitConfusion(m *Model, seqs []Sequence, start [][]float64, cfg FitConfusionConfig) ([][]float64, []float64, error) {
	if err := m.Check(seqs); err != nil {
		return nil, nil, err
	}
	steps := 0
	for _, s := range seqs {
		steps += s.Len()
	}
	if steps == 0 {
		return nil, nil, errors.New("chmm: FitConfusion: no steps")
	}
	if err := ValidateConfusion(start, m.K()); err != nil {
		return nil, nil, fmt.Errorf("chmm: FitConfusion: %w", err)
	}
	if cfg.MaxIters < 0 || math.IsNaN(cfg.Tol) || cfg.Tol < 0 || !(cfg.Beam >= 0 && cfg.Beam < 0.5) {
		return nil, nil, fmt.Errorf("chmm: FitConfusion: MaxIters %d, Tol %v, Beam %v: want MaxIters >= 0, Tol >= 0 and Beam in [0, 0.5)",
			cfg.MaxIters, cfg.Tol, cfg.Beam)
	}
	iters, tol := cfg.MaxIters, cfg.Tol
	if iters == 0 {
		iters = 100
	}
	if tol == 0 {
		tol = 1e-5
	}
	c := cloneRows(start)
	p := newParams(m)
	es := newEstepper(p, cfg.Workers, len(seqs))
	var lls []float64
	for it := 0; ; it++ {
		p.setConfusion(c, cfg.Beam)
		acc, err := es.run(p, seqs)
		if err != nil {
			return nil, nil, fmt.Errorf("chmm: FitConfusion: E-step %d: %w", it, err)
		}
		ll := acc.ll / float64(steps)
		lls = append(lls, ll)
		if it == iters || it > 0 && ll-lls[it-1] <= tol {
			return c, lls, nil
		}
		confusionStep(c, acc)
	}
}
