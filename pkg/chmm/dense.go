package chmm

import "sync"

// The dense passes of a training iteration run over arrays of A·N·N entries
// whatever the data: the softmax of Θ into T, the gradient from the counts, the
// entropy term, Adam's step, EM's M-step, and the clearing and summing of the
// per-worker count buffers. They cost A·N·N per iteration however few steps the
// E-step reads (random chunks), so they run on the trainer's workers too. Each
// entry (each row, for the softmax, the entropy and the M-step) is computed by the
// same arithmetic in the same order whichever goroutine holds it, and sums across
// rows are added in row order afterwards, so the results are bit for bit those of
// one goroutine, for any worker count.

// denseMin is the number of entries from which a dense pass is split across
// goroutines; below it one goroutine does it all.
const denseMin = 1 << 16

// forRanges runs f on [0, units) cut into contiguous ranges, one per goroutine, on
// at most workers goroutines (<= 0: GOMAXPROCS), where units·size (entries) reaches
// denseMin; otherwise f(0, units) on the caller's goroutine.
func forRanges(units, size, workers int, f func(lo, hi int)) {
	w := workerCount(workers, units)
	if w == 1 || units*size < denseMin {
		f(0, units)
		return
	}
	var wg sync.WaitGroup
	for g := range w {
		lo, hi := units*g/w, units*(g+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			clearUpper()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// transitionsInto writes T = softmax(Θ) row by row (rows of n) into t, on workers
// goroutines.
func transitionsInto(t, theta []float64, n, workers int) {
	forRanges(len(t)/n, n, workers, func(lo, hi int) {
		for r := lo * n; r < hi*n; r += n {
			softmaxInto(t[r:r+n], theta[r:r+n])
		}
	})
}

// resetAccums zeroes the per-worker statistics of accs before an E-step, the count
// buffers on len(accs) goroutines.
func resetAccums(accs []*accum) {
	if len(accs) == 0 {
		return
	}
	forRanges(len(accs[0].counts), 1, len(accs), func(lo, hi int) {
		for _, a := range accs {
			clear(a.counts[lo:hi])
		}
	})
	for _, a := range accs {
		clear(a.gamma1)
		clear(a.last)
		clear(a.conf)
		a.ll, a.steps, a.seqs = 0, 0, 0
	}
}

// sumAccums adds the statistics of accs[1:] to accs[0], in worker order for every
// entry (the count buffers on len(accs) goroutines), and returns accs[0].
func sumAccums(accs []*accum) *accum {
	acc := accs[0]
	forRanges(len(acc.counts), 1, len(accs), func(lo, hi int) {
		d := acc.counts[lo:hi]
		for _, a := range accs[1:] {
			for i, v := range a.counts[lo:hi] {
				d[i] += v
			}
		}
	})
	for _, o := range accs[1:] {
		for i, v := range o.gamma1 {
			acc.gamma1[i] += v
		}
		for i, v := range o.last {
			acc.last[i] += v
		}
		for i, v := range o.conf {
			acc.conf[i] += v
		}
		acc.ll += o.ll
		acc.steps += o.steps
		acc.seqs += o.seqs
	}
	return acc
}
