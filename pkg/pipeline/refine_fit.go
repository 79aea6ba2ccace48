package pipeline

// The refinement's arithmetic: the training frames' states and latents, label
// statistics, class means and the codebook fitted to the pseudo-classes.

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// onLabel returns the share of the labelled frames (label ≠ vqvae.NoTarget) whose
// latent's nearest row of codebook is their label.
func onLabel(zs, codebook [][]float32, label []int) float64 {
	on, n := 0, 0
	for i, z := range zs {
		if label[i] == vqvae.NoTarget {
			continue
		}
		n++
		best, bestD := -1, math.Inf(1)
		for k, e := range codebook {
			d := 0.0
			for j, v := range z {
				x := float64(v - e[j])
				d += x * x
			}
			if d < bestD {
				best, bestD = k, d
			}
		}
		if best == label[i] {
			on++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(on) / float64(n)
}

// relabelStats returns the share of the labelled frames whose new token is their
// pseudo-class, and the frames whose new token is not the one most frames of their
// old token got.
func relabelStats(labels *refineLabels, tokens []int) (onLabel float64, relabelled int) {
	labelled, on := 0, 0
	moves := map[[2]int]int{} // (old, new) → frames
	for i, l := range labels.Label {
		if l != vqvae.NoTarget {
			labelled++
			if tokens[i] == l {
				on++
			}
		}
		moves[[2]int{labels.Tokens[i], tokens[i]}]++
	}
	most := map[int]int{} // old token → frames of its commonest new token
	for m, n := range moves {
		most[m[0]] = max(most[m[0]], n)
	}
	relabelled = len(tokens)
	for _, n := range most {
		relabelled -= n
	}
	if labelled > 0 {
		onLabel = float64(on) / float64(labelled)
	}
	return onLabel, relabelled
}

// decodeWalks returns the state of every training frame on the Viterbi paths of hmm
// through the training walks whose frames have tokens (read through the map's
// confusion matrix, MapConfusion, if it has one).
func (d *data) decodeWalks(hmm *chmm.Model, tokens []int) ([]int, error) {
	conf, err := MapConfusion(hmm)
	if err != nil {
		return nil, err
	}
	seqs := d.sequences(tokens)
	if conf == nil {
		paths, _, err := chmm.ViterbiAll(hmm, seqs, 0)
		if err != nil {
			return nil, err
		}
		return slices.Concat(paths...), nil
	}
	var states []int
	for _, q := range seqs {
		path, _, err := chmm.Decode(hmm, chmm.Confused{Tokens: q.Obs, C: conf}, q.Actions)
		if err != nil {
			return nil, err
		}
		states = append(states, path...)
	}
	return states, nil
}

// latents returns vq's latents of every training frame, in blocks.
func (d *data) latents(vq *vqvae.Model) ([][]float32, error) {
	const block = 4096
	var zs [][]float32
	var buf []float32
	for s := 0; s < len(d.allFrames); s += block {
		buf = d.train.Floats(d.allFrames[s:min(s+block, len(d.allFrames))], buf)
		z, err := vq.Latents(buf)
		if err != nil {
			return nil, err
		}
		zs = append(zs, z...)
	}
	return zs, nil
}

// labelMeans returns the mean of zs over the frames of each label 0..k−1 and the
// frames of each (at least 1: the codebook's EMA sizes); a label without frames gets
// the mean of all frames.
func labelMeans(zs [][]float32, label []int, k int) (rows [][]float32, sizes []float64) {
	dim := len(zs[0])
	sum := make([][]float64, k+1) // the last: every frame
	n := make([]int, k+1)
	for i := range sum {
		sum[i] = make([]float64, dim)
	}
	for i, z := range zs {
		for _, l := range []int{label[i], k} {
			if l < 0 {
				continue
			}
			n[l]++
			for j, v := range z {
				sum[l][j] += float64(v)
			}
		}
	}
	rows, sizes = make([][]float32, k), make([]float64, k)
	for l := range k {
		src := l
		if n[l] == 0 {
			src = k
		}
		rows[l] = make([]float32, dim)
		for j := range dim {
			rows[l][j] = float32(sum[src][j] / float64(n[src]))
		}
		sizes[l] = float64(max(n[l], 1))
	}
	return rows, sizes
}

// taughtModel returns a VQ-VAE with src's encoder and decoder, a fresh optimiser and
// the codebook rows (EMA sizes sizes).
func taughtModel(src *vqvae.Model, rows [][]float32, sizes []float64, seed uint64) (*vqvae.Model, error) {
	keep := make([]int, len(rows)) // compact copies the networks; the codebook is replaced below
	for i := range keep {
		keep[i] = min(i, src.Config().K-1)
	}
	dst, err := compact(src, keep, seed)
	if err != nil {
		return nil, err
	}
	return dst, dst.SetCodebook(rows, sizes)
}

// Constants of the codebook fit (fitCodebook).
const (
	fitIters = 200  // Adam steps
	fitRate  = 0.01 // Adam's rate, times the latents' RMS
)

// fitCodebook returns rows moved to minimise the mean cross-entropy −log ρ(label) of
// the labelled latents zs under the soft posterior ρ_k ∝ exp(−‖z − e_k‖²/τ), the
// latents fixed: the codebook whose nearest-code read-out best gives each frame its
// label (the means of the labels' latents are its start, not its optimum, when the
// classes' spreads differ). Full-batch Adam, fitIters steps at fitRate times the
// latents' RMS; the frames are shared among GOMAXPROCS goroutines.
func fitCodebook(zs, rows [][]float32, label []int, tau float64) [][]float32 {
	k, dim := len(rows), len(rows[0])
	e := make([]float64, k*dim)
	for i, r := range rows {
		for j, v := range r {
			e[i*dim+j] = float64(v)
		}
	}
	var idx []int // the labelled frames
	rms := 0.0
	for i, z := range zs {
		if label[i] == vqvae.NoTarget {
			continue
		}
		idx = append(idx, i)
		for _, v := range z {
			rms += float64(v) * float64(v)
		}
	}
	if len(idx) == 0 {
		return rows
	}
	step := fitRate * math.Sqrt(rms/float64(len(idx)*dim))
	workers := min(runtime.GOMAXPROCS(0), len(idx))
	grads := make([][]float64, workers)
	for w := range grads {
		grads[w] = make([]float64, len(e))
	}
	m1, m2 := make([]float64, len(e)), make([]float64, len(e))
	const b1, b2, eps = 0.9, 0.999, 1e-12
	for it := 1; it <= fitIters; it++ {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fitGradient(grads[w], e, zs, label, idx[w*len(idx)/workers:(w+1)*len(idx)/workers], k, tau, len(idx))
			}()
		}
		wg.Wait()
		c1, c2 := 1-math.Pow(b1, float64(it)), 1-math.Pow(b2, float64(it))
		for j := range e {
			g := 0.0
			for w := range workers {
				g += grads[w][j]
			}
			m1[j] = b1*m1[j] + (1-b1)*g
			m2[j] = b2*m2[j] + (1-b2)*g*g
			e[j] -= step * (m1[j] / c1) / (math.Sqrt(m2[j]/c2) + eps)
		}
	}
	out := make([][]float32, k)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = float32(e[i*dim+j])
		}
	}
	return out
}

// fitGradient writes into grad the gradient over the frames idx (of n labelled frames
// in all) of the mean cross-entropy of fitCodebook at the codebook e [k·D]:
// ∂(−log ρ_y)/∂e_c = (ρ_c − δ_cy)·(2/τ)·(z − e_c).
func fitGradient(grad, e []float64, zs [][]float32, label, idx []int, k int, tau float64, n int) {
	clear(grad)
	dim := len(e) / k
	w := make([]float64, k)
	for _, i := range idx {
		z, y := zs[i], label[i]
		top := math.Inf(-1)
		for c := range k {
			d := 0.0
			for j, v := range z {
				x := float64(v) - e[c*dim+j]
				d += x * x
			}
			w[c] = -d / tau
			top = max(top, w[c])
		}
		sum := 0.0
		for c := range k {
			w[c] = math.Exp(w[c] - top)
			sum += w[c]
		}
		for c := range k {
			g := w[c] / sum // ρ_c
			if c == y {
				g--
			}
			g *= 2 / tau / float64(n)
			for j, v := range z {
				grad[c*dim+j] += g * (float64(v) - e[c*dim+j])
			}
		}
	}
}
