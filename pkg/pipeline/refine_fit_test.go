package pipeline

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// fitLoss is fitCodebook's objective at the codebook e [k·D]: the mean −log ρ(label)
// over the labelled frames, computed directly.
func fitLoss(e []float64, zs [][]float32, label []int, k int, tau float64) float64 {
	dim := len(e) / k
	loss, n := 0.0, 0
	for i, z := range zs {
		if label[i] == vqvae.NoTarget {
			continue
		}
		n++
		logits := make([]float64, k)
		top := math.Inf(-1)
		for c := range k {
			for j, v := range z {
				x := float64(v) - e[c*dim+j]
				logits[c] -= x * x / tau
			}
			top = max(top, logits[c])
		}
		sum := 0.0
		for _, l := range logits {
			sum += math.Exp(l - top)
		}
		loss -= logits[label[i]] - top - math.Log(sum)
	}
	return loss / float64(n)
}

// TestFitGradient: fitGradient against central finite differences of fitLoss.
func TestFitGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, dim, n, tau = 3, 4, 50, 0.7
	zs := make([][]float32, n)
	label := make([]int, n)
	for i := range zs {
		zs[i] = make([]float32, dim)
		for j := range zs[i] {
			zs[i][j] = float32(rng.NormFloat64())
		}
		label[i] = rng.IntN(k)
	}
	label[7] = vqvae.NoTarget
	e := make([]float64, k*dim)
	for j := range e {
		e[j] = rng.NormFloat64()
	}
	var idx []int
	for i := range zs {
		if label[i] != vqvae.NoTarget {
			idx = append(idx, i)
		}
	}
	grad := make([]float64, len(e))
	fitGradient(grad, e, zs, label, idx, k, tau, len(idx))
	for j := range e {
		const h = 1e-6
		up, down := append([]float64(nil), e...), append([]float64(nil), e...)
		up[j] += h
		down[j] -= h
		fd := (fitLoss(up, zs, label, k, tau) - fitLoss(down, zs, label, k, tau)) / (2 * h)
		if math.Abs(fd-grad[j]) > 1e-6*max(1, math.Abs(fd)) {
			t.Errorf("∂/∂e[%d]: %g, finite differences %g", j, grad[j], fd)
		}
	}
}

// TestFitCodebook: one-dimensional latents, label 0 from N(0, 1) and label 1 from
// N(2, 0.2²). The codes at the labels' means (0 and 2) read every z above 1 as label 1,
// about 16% of label 0's frames; the fitted codebook moves that boundary up, towards
// where the two densities cross (about 1.5), and lowers the cross-entropy.
func TestFitCodebook(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 4000
	zs := make([][]float32, 2*n)
	label := make([]int, 2*n)
	for i := range n {
		zs[i] = []float32{float32(rng.NormFloat64())}
		zs[n+i] = []float32{float32(2 + 0.2*rng.NormFloat64())}
		label[n+i] = 1
	}
	means, _ := labelMeans(zs, label, 2)
	fitted := fitCodebook(zs, means, label, 0.2)
	flat := func(rows [][]float32) []float64 { return []float64{float64(rows[0][0]), float64(rows[1][0])} }
	before, after := onLabel(zs, means, label), onLabel(zs, fitted, label)
	boundary := (fitted[0][0] + fitted[1][0]) / 2
	if !(before < 0.93 && after > before+0.03 && boundary > 1.25 && boundary < 1.75) {
		t.Errorf("on label %.4f at the means, %.4f fitted (boundary %.3f): want a boundary near 1.5 and more frames on their label", before, after, boundary)
	}
	if lb, la := fitLoss(flat(means), zs, label, 2, 0.2), fitLoss(flat(fitted), zs, label, 2, 0.2); !(la < lb) {
		t.Errorf("cross-entropy %g at the means, %g fitted", lb, la)
	}
}
