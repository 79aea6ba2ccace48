package chmm

import (
	"slices"
	"time"
)

// Progress is passed to a trainer's Progress callback.
type Progress struct {
	Phase   string        // "em", "viterbi" or "gradient"
	Iter    int           // iterations done in this phase (1..Iters)
	Iters   int           // the phase's iteration budget
	LogLik  float64       // current per-step log-likelihood ℓ/T (see History.LogLik)
	Best    float64       // best per-step log-likelihood so far in this phase
	Elapsed time.Duration // since the phase started
	Rate    float64       // iterations per second
	ETA     time.Duration // at the current rate, if the budget is used up
}

// History records a training run, one entry per iteration, for plots and
// logs. LogLik is ℓ/T, the log-likelihood per observation summed over the
// training sequences (for phase "viterbi": the log probability of the Viterbi
// paths per observation; for gradient training with chunks: of the sampled
// chunks).
type History struct {
	Phase   []string  // "em", "viterbi", "gradient"
	Iter    []int     // iteration within the phase (0-based)
	LogLik  []float64 // per-step log-likelihood (see above)
	Seconds []float64 // wall-clock seconds since the start of training
	Entropy []float64 // gradient training: occupancy-weighted transition entropy (nats); EM: NaN

	Stop     string  // why training stopped ("converged", "max iterations", "patience", ...)
	BestIter int     // gradient training: iteration whose parameters were kept
	Splits   []Split // gradient training: clone-splitting rounds
	// ChunkLen and Batch are a gradient training's random chunks (GradConfig): Batch
	// chunks of ChunkLen steps per iteration, whose ℓ/T LogLik then records; 0: full
	// batch.
	ChunkLen, Batch int

	// Confusion is EM's confusion matrix at the end of training, C[k][o]
	// (EMConfig.Confusion, learned if EMConfig.LearnConfusion); nil for hard tokens.
	Confusion [][]float64
}

// Split records one clone-splitting round of TrainGradient.
type Split struct {
	Iter   int // iteration at which the round happened
	States int // number of states split
	Grown  int // of them, split into a clone added to their token (GradConfig.GrowClones)
}

// ClonesAdded is the number of clones the splitting rounds added (Split.Grown).
func (h *History) ClonesAdded() int {
	n := 0
	for _, s := range h.Splits {
		n += s.Grown
	}
	return n
}

// clone is a copy of h.
func (h *History) clone() *History {
	c := *h
	c.Phase, c.Iter, c.LogLik = slices.Clone(h.Phase), slices.Clone(h.Iter), slices.Clone(h.LogLik)
	c.Seconds, c.Entropy, c.Splits = slices.Clone(h.Seconds), slices.Clone(h.Entropy), slices.Clone(h.Splits)
	c.Confusion = nil
	for _, row := range h.Confusion {
		c.Confusion = append(c.Confusion, slices.Clone(row))
	}
	return &c
}

func (h *History) add(phase string, iter int, ll float64, sec, ent float64) {
	h.Phase = append(h.Phase, phase)
	h.Iter = append(h.Iter, iter)
	h.LogLik = append(h.LogLik, ll)
	h.Seconds = append(h.Seconds, sec)
	h.Entropy = append(h.Entropy, ent)
}

// reporter calls a Progress callback every `every` iterations and at the end.
type reporter struct {
	fn    func(Progress)
	every int
	phase string
	iters int
	start time.Time
	from  int // the iteration a resumed training started at (its rate counts from there)
	best  float64
	have  bool
}

// resumed tells r that its training resumed at iteration from, after the per-step
// log-likelihoods lls.
func (r *reporter) resumed(from int, lls []float64) {
	r.from = from
	for _, ll := range lls {
		if !r.have || ll > r.best {
			r.best, r.have = ll, true
		}
	}
}

func newReporter(fn func(Progress), every int, phase string, iters int) *reporter {
	if every <= 0 {
		every = 1
	}
	return &reporter{fn: fn, every: every, phase: phase, iters: iters, start: time.Now()}
}

// report records iteration iter (0-based) with per-step ll; final forces a
// report.
func (r *reporter) report(iter int, ll float64, final bool) {
	if !r.have || ll > r.best {
		r.best, r.have = ll, true
	}
	if r.fn == nil || (!final && (iter+1)%r.every != 0) {
		return
	}
	el := time.Since(r.start)
	// A phase evaluates its last iterate once more after its final update:
	// clamp that evaluation to the budget.
	p := Progress{Phase: r.phase, Iter: min(iter+1, r.iters), Iters: r.iters, LogLik: ll, Best: r.best, Elapsed: el}
	if s := el.Seconds(); s > 0 {
		p.Rate = float64(iter+1-r.from) / s
		if left := r.iters - (iter + 1); left > 0 {
			p.ETA = time.Duration(float64(left) / p.Rate * float64(time.Second))
		}
	}
	r.fn(p)
}
