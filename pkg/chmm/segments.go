package chmm

import (
	"fmt"
	"math"
)

// The segmented E-step (EMConfig.Segments): the sequences are cut into segments that
// run forward–backward in parallel, each starting from the messages its neighbours
// computed at the E-step before. Segment g covers steps [lo, hi) of its sequence; its
// forward pass starts from
//
//	init(j) = Σ_i α̂_{lo−1}(i) T[a_{lo−1}, i, j]
//
// (α̂_{lo−1} as the segment before ended it last time, T the current parameters) and
// runs one step further, to hi, the next segment's first step; its backward pass starts
// there from β̂_hi as the next segment left it last time, scaled so that
// Σ_i α̂_hi(i) β̂_hi(i) = 1. The segment adds its ℓ (Σ_{lo ≤ t < hi} log c_t) and the
// expected counts of its transitions, the one into hi included. When the carried
// messages equal those of a pass over the whole sequence under the current parameters,
// so do ℓ and the counts; at a fixed point of EM they do. A segment that starts its
// sequence starts from π̄; before its first E-step any other starts from init = 1 (every
// state alike) and ends with β̂_hi = 1.

// segEnds is what one segment's forward–backward pass reads and writes at its ends; a
// nil *segEnds is a whole sequence.
type segEnds struct {
	first bool      // the segment starts its sequence: its γ_1 and the sequence count are added
	init  []float64 // the distribution of its first state up to scale, over all N states (nil: π̄)
	next  bool      // the pass's last step is the next segment's first (see above)
	tail  []float64 // β̂ at that step up to scale, over all N states (nil: all ones)
	// If not nil, set by the pass, over all N states: alpha to α̂ at the step before the
	// next segment's (next only), beta to β̂ at the first step normalised to sum 1.
	alpha, beta []float64
}

func (e *segEnds) initial(p *params) []float64 {
	if e == nil || e.init == nil {
		return p.pi
	}
	return e.init
}

func (e *segEnds) isStart() bool { return e == nil || e.first }

func (e *segEnds) more() bool { return e != nil && e.next }

// steps is the number of steps a pass over n steps adds.
func (e *segEnds) steps(n int) int {
	if e.more() {
		return n - 1
	}
	return n
}

// startBeta sets b, β̂ at the pass's last step (laid out as the active vector of
// observation o), from e.tail scaled so that Σ α̂ β̂ = 1 with al, α̂ there; all ones
// where there is no tail or it misses α̂.
func (e *segEnds) startBeta(p *params, o int, b, al []float64) {
	if e.tail != nil {
		p.gather(b, o, e.tail)
		var z float64
		for j, v := range al {
			z += v * b[j]
		}
		if z > 0 {
			inv := 1 / z
			for j := range b {
				b[j] *= inv
			}
			return
		}
	}
	for j := range b {
		b[j] = 1
	}
}

// keep writes e's outputs (alpha, beta) from the pass's α̂ in w and b, β̂ at step 0.
func (e *segEnds) keep(p *params, seq Sequence, w *fbWork, b []float64) {
	if e == nil {
		return
	}
	if e.alpha != nil && e.next {
		t := len(seq.Obs) - 2
		p.scatter(e.alpha, seq.Obs[t], w.alpha[w.off[t]:w.off[t+1]])
	}
	if e.beta != nil {
		p.scatter(e.beta, seq.Obs[0], b)
		var s float64
		for _, v := range e.beta {
			s += v
		}
		if s > 0 {
			inv := 1 / s
			for i := range e.beta {
				e.beta[i] *= inv
			}
		}
	}
}

// gather sets dst, laid out as the active vector of observation o (the clones of o,
// or under a confusion matrix those of its candidates), from full, over all N states.
func (p *params) gather(dst []float64, o int, full []float64) {
	if p.cands == nil {
		copy(dst, full[p.first[o]:p.first[o]+p.size[o]])
		return
	}
	for _, c := range p.cands[o] {
		copy(dst[c.off:c.off+p.size[c.k]], full[p.first[c.k]:p.first[c.k]+p.size[c.k]])
	}
}

// scatter is gather's inverse: full gets src on the active states of o, 0 elsewhere.
func (p *params) scatter(full []float64, o int, src []float64) {
	clear(full)
	if p.cands == nil {
		copy(full[p.first[o]:p.first[o]+p.size[o]], src)
		return
	}
	for _, c := range p.cands[o] {
		copy(full[p.first[c.k]:p.first[c.k]+p.size[c.k]], src[c.off:c.off+p.size[c.k]])
	}
}

// segment is steps [lo, hi) of sequence seq.
type segment struct{ seq, lo, hi int }

// minSegment is the fewest steps a segment is cut to: the carried messages stand for
// a segment's ends, and a short segment is mostly ends (a variable so that the tests
// can cut tiny sequences).
var minSegment = 1000

// cutSegments cuts seqs into about n segments (at least one per sequence) of near-equal
// length, none shorter than minSegment steps unless its sequence is: a sequence of
// T steps gets round(n·T/ΣT) of them (at least 1, at most T/minSegment).
func cutSegments(seqs []Sequence, n int) []segment {
	total := 0
	for _, s := range seqs {
		total += len(s.Obs)
	}
	var out []segment
	for q, s := range seqs {
		tt := len(s.Obs)
		k := int(math.Round(float64(n) * float64(tt) / float64(max(1, total))))
		k = max(1, min(k, tt/minSegment))
		for g := range k {
			out = append(out, segment{seq: q, lo: g * tt / k, hi: (g + 1) * tt / k})
		}
	}
	return out
}

// segmenter runs segmented E-steps over fixed segments and keeps their messages.
type segmenter struct {
	segs []segment
	// alpha[g]: α̂ at step lo−1 of segment g, as segment g−1 ended it (nil: none yet, or g
	// starts its sequence); beta[g]: β̂ at step hi as segment g+1 began it (nil: none yet,
	// or g ends its sequence). Over all N states; next* are the E-step's new ones.
	alpha, beta         [][]float64
	nextAlpha, nextBeta [][]float64
	accs                []*accum
	work                []fbWork
	init                [][]float64 // per worker: a segment's first-state distribution
}

// newSegmenter cuts seqs into about n segments (cutSegments) run on workers goroutines
// (<= 0: GOMAXPROCS).
func newSegmenter(p *params, seqs []Sequence, n, workers int) *segmenter {
	s := &segmenter{segs: cutSegments(seqs, n)}
	ns := len(s.segs)
	s.alpha, s.beta = make([][]float64, ns), make([][]float64, ns)
	s.nextAlpha, s.nextBeta = make([][]float64, ns), make([][]float64, ns)
	for g, sg := range s.segs {
		if g > 0 && s.segs[g-1].seq == sg.seq {
			s.nextAlpha[g] = make([]float64, p.n)
		}
		if g+1 < ns && s.segs[g+1].seq == sg.seq {
			s.nextBeta[g] = make([]float64, p.n)
		}
	}
	nw := workerCount(workers, ns)
	s.accs, s.work, s.init = make([]*accum, nw), make([]fbWork, nw), make([][]float64, nw)
	for w := range nw {
		s.accs[w] = newAccum(p)
		s.init[w] = make([]float64, p.n)
	}
	return s
}

// run is one segmented E-step under p: the statistics summed over the segments (in
// worker order, so deterministic for a given worker count), whose ℓ is the sum of the
// segments'. It then carries the new messages to the next run.
func (s *segmenter) run(p *params, seqs []Sequence) (*accum, error) {
	resetAccums(s.accs)
	ns := len(s.segs)
	err := parallel(ns, len(s.accs), func(w, g int) error { return s.segment(p, seqs, w, g, s.accs[w]) })
	if err != nil {
		return nil, err
	}
	for g := range s.segs {
		s.alpha[g], s.nextAlpha[g] = swapNew(s.alpha[g], s.nextAlpha[g])
		s.beta[g], s.nextBeta[g] = swapNew(s.beta[g], s.nextBeta[g])
	}
	return sumAccums(s.accs), nil
}

// segment adds segment g's statistics under p to acc, on worker w's buffers, from the
// messages of the last E-step, and writes its new messages for its neighbours
// (nextAlpha, nextBeta).
func (s *segmenter) segment(p *params, seqs []Sequence, w, g int, acc *accum) error {
	ns := len(s.segs)
	sg := s.segs[g]
	seq := seqs[sg.seq]
	next := g+1 < ns && s.segs[g+1].seq == sg.seq
	end := sg.hi
	if next {
		end++
	}
	sub := Sequence{Obs: seq.Obs[sg.lo:end], Actions: seq.Actions[sg.lo : end-1]}
	e := &segEnds{first: sg.lo == 0, next: next, tail: s.beta[g]}
	if !e.first {
		e.beta = s.nextBeta[g-1]
	}
	if next {
		e.alpha = s.nextAlpha[g+1]
	}
	if !e.first {
		e.init = s.init[w]
		if a := s.alpha[g]; a != nil {
			p.propagate(e.init, a, seq.Actions[sg.lo-1])
		} else {
			fill(e.init, 1)
		}
	}
	step, ok := s.expect(p, sub, e, &s.work[w], acc)
	if !ok && s.alpha[g] != nil { // the carried message misses every path: start afresh
		fill(e.init, 1)
		step, ok = s.expect(p, sub, e, &s.work[w], acc)
	}
	if !ok {
		return zeroProbError(sg.seq, sg.lo+step)
	}
	return nil
}

// swapNew returns (next, cur) where next was written, keeping a buffer for the next
// write: cur is nil before the first E-step.
func swapNew(cur, next []float64) ([]float64, []float64) {
	if next == nil {
		return cur, nil
	}
	if cur == nil {
		cur = make([]float64, len(next))
	}
	return next, cur
}

func (s *segmenter) expect(p *params, sub Sequence, e *segEnds, w *fbWork, acc *accum) (int, bool) {
	if p.cands != nil {
		return p.expectConfFrom(sub, e, w, acc)
	}
	return p.expectFrom(sub, e, w, acc)
}

// propagate sets dst[j] = Σ_i a[i] T[act, i, j] over all N states.
func (p *params) propagate(dst, a []float64, act int) {
	clear(dst)
	n := p.n
	for i, v := range a {
		if v == 0 {
			continue
		}
		row := p.trans[(act*n+i)*n : (act*n+i+1)*n]
		for j, t := range row {
			dst[j] += v * t
		}
	}
}

// messages returns copies of the carried messages (alpha, beta per segment; nil where
// none), for EMState.
func (s *segmenter) messages() (alpha, beta [][]float64) {
	cp := func(x [][]float64) [][]float64 {
		out := make([][]float64, len(x))
		for i, v := range x {
			if v != nil {
				out[i] = append([]float64(nil), v...)
			}
		}
		return out
	}
	return cp(s.alpha), cp(s.beta)
}

// setMessages restores messages saved by messages, checking their shape against s's
// segments and N states.
func (s *segmenter) setMessages(alpha, beta [][]float64, n int) error {
	if len(alpha) != len(s.segs) || len(beta) != len(s.segs) {
		return fmt.Errorf("messages of %d and %d segments, want %d", len(alpha), len(beta), len(s.segs))
	}
	for g := range s.segs {
		for _, m := range [][]float64{alpha[g], beta[g]} {
			if len(m) != 0 && len(m) != n {
				return fmt.Errorf("segment %d: a message of %d states, want %d", g, len(m), n)
			}
		}
		s.alpha[g], s.beta[g] = nil, nil
		if len(alpha[g]) > 0 {
			s.alpha[g] = append([]float64(nil), alpha[g]...)
		}
		if len(beta[g]) > 0 {
			s.beta[g] = append([]float64(nil), beta[g]...)
		}
	}
	return nil
}

// eStepper is an E-step over fixed sequences: whole ones (estepper) or segments
// (segmenter).
type eStepper interface {
	run(p *params, seqs []Sequence) (*accum, error)
}

func fill(x []float64, v float64) {
	for i := range x {
		x[i] = v
	}
}
