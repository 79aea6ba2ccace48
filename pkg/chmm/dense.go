package chmm

import "sync"

// The dense passes of a training iteration run over arrays of A·N·N entries
// whatever the data: the softmax of Θ into T, the gradient from the counts, the
// entropy term, Adam's step, and the clearing and summing of the per-worker count
// buffers. Past a few hundred states they cost as much as an E-step on chunks, so
// they run on the trainer's workers too. Each entry (each row, for the softmax and
// the entropy) is computed by the same arithmetic in the same order whichever
// goroutine holds it, and sums across rows are added in row order afterwards, so
// the results are bit for bit those of one goroutine, for any worker count.

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

// sumCounts adds the count buffers of accs[1:] to accs[0]'s, in worker order for
// every entry, on len(accs) goroutines.
func sumCounts(accs []*accum) {
	dst := accs[0].counts
	forRanges(len(dst), 1, len(accs), func(lo, hi int) {
		for _, a := range accs[1:] {
			src := a.counts[lo:hi]
			d := dst[lo:hi]
			for i, v := range src {
				d[i] += v
			}
		}
	})
}

// clearCounts zeroes the count buffers of accs on len(accs) goroutines.
func clearCounts(accs []*accum) {
	if len(accs) == 0 {
		return
	}
	forRanges(len(accs[0].counts), 1, len(accs), func(lo, hi int) {
		for _, a := range accs {
			clear(a.counts[lo:hi])
		}
	})
}
