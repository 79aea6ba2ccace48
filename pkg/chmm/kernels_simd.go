//go:build goexperiment.simd && amd64

package chmm

import (
	"fmt"
	"simd/archsimd"
	"strings"
	"time"
)

// Where the build has GOEXPERIMENT=simd on amd64 the block kernels of kernels.go come
// in three sets: plain Go, 4-wide float64 fused multiply-adds (AVX2 with FMA) and
// 8-wide ones (AVX-512). At start-up each vector set the CPU has is timed against the
// plain Go one on a 32 × 32 block, and the widest within maxSIMDRatio of it is used
// (some virtual machines report AVX-512 yet charge each call far more than plain Go).
// The widest acceptable set, not the fastest, so that timing noise cannot make two
// processes on one machine round differently.
var (
	vecMat      = vecMatGo
	matVec      = matVecGo
	matVecCount = matVecCountGo
	addCounts   = addCountsGo
	scale       = scaleGo // the vector scale and addTo: AVX-512's only (AVX2's set keeps Go's)
	addTo       = addToGo
	hasAVX      = archsimd.X86.AVX()
	hasAVX512   = archsimd.X86.AVX512()
	hasAVX2     = archsimd.X86.AVX2() && archsimd.X86.FMA()
	inUse       = kernelsGo
	avx512Ratio float64 // AVX-512 time / plain Go time at start-up (0: not timed)
	avx2Ratio   float64 // AVX2 time / plain Go time at start-up (0: not timed)
)

// maxSIMDRatio is the largest vector / plain Go time ratio at which a vector set is
// used. It lies far from the cases seen (vector kernels 1.5–2.5× faster on the exact
// gradient, and AVX-512 10× slower on the timing block on one machine), so that noise
// does not flip the choice between processes on one machine.
const maxSIMDRatio = 1.25

func init() {
	if hasAVX512 || hasAVX2 {
		goTime := float64(timeKernels(kernelsGo))
		if hasAVX2 {
			avx2Ratio = float64(timeKernels(kernelsAVX2)) / goTime
		}
		if hasAVX512 {
			avx512Ratio = float64(timeKernels(kernelsAVX512)) / goTime
		}
	}
	inUse = chooseKernels(hasAVX512, hasAVX2, avx512Ratio, avx2Ratio)
	setKernels(inUse)
}

// chooseKernels is the widest set the CPU has whose start-up ratio to plain Go is at
// most maxSIMDRatio.
func chooseKernels(avx512, avx2 bool, r512, r2 float64) kernelSet {
	switch {
	case avx512 && r512 > 0 && r512 <= maxSIMDRatio:
		return kernelsAVX512
	case avx2 && r2 > 0 && r2 <= maxSIMDRatio:
		return kernelsAVX2
	}
	return kernelsGo
}

// setKernels puts the set s in use.
func setKernels(s kernelSet) {
	switch s {
	case kernelsAVX512:
		vecMat, matVec, matVecCount, addCounts = vecMatAVX512, matVecAVX512, matVecCountAVX512, addCountsAVX512
		scale, addTo = scaleAVX512, addToAVX512
	case kernelsAVX2:
		vecMat, matVec, matVecCount, addCounts = vecMatAVX2, matVecAVX2, matVecCountAVX2, addCountsAVX2
		scale, addTo = scaleGo, addToGo
	default:
		vecMat, matVec, matVecCount, addCounts = vecMatGo, matVecGo, matVecCountGo, addCountsGo
		scale, addTo = scaleGo, addToGo
	}
}

// availableKernels are the sets this CPU can run, plain Go first.
func availableKernels() []kernelSet {
	s := []kernelSet{kernelsGo}
	if hasAVX2 {
		s = append(s, kernelsAVX2)
	}
	if hasAVX512 {
		s = append(s, kernelsAVX512)
	}
	return s
}

// timeKernels puts the set s in use and returns the least time of 5 rounds of 50
// calls of each kernel on a 32 × 32 block (about 1 ms in all where vectors are fast).
func timeKernels(s kernelSet) time.Duration {
	setKernels(s)
	const c, stride = 32, 4 * 32
	mat, counts := make([]float64, c*stride), make([]float64, c*stride)
	for i := range mat {
		mat[i] = float64(i%13+1) / 16
	}
	v, w, out := make([]float64, c), make([]float64, c), make([]float64, c)
	for i := range v {
		v[i], w[i] = 0.25, 0.5
	}
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := time.Now()
		for range 50 {
			clear(out)
			vecMat(out, v, mat, stride)
			matVec(out, v, mat, stride)
			matVecCount(out, v, mat, stride, w, counts)
			addCounts(w, v, mat, stride, counts)
		}
		best = min(best, max(time.Since(t0), time.Nanosecond))
	}
	return best
}

// Kernels says which block kernels are in use, and why.
func Kernels() string {
	ratio := func(name string, r float64) string {
		return fmt.Sprintf("%s took %.2f× the plain Go time at start-up", name, r)
	}
	switch {
	case inUse == kernelsAVX512:
		return "AVX-512 (" + ratio("they", avx512Ratio) + ")"
	case inUse == kernelsAVX2 && hasAVX512:
		return "AVX2 (" + ratio("they", avx2Ratio) + "; " + ratio("AVX-512", avx512Ratio) + ")"
	case inUse == kernelsAVX2:
		return "AVX2 (" + ratio("they", avx2Ratio) + "; no AVX-512)"
	case hasAVX512 || hasAVX2:
		var timed []string
		if hasAVX2 {
			timed = append(timed, ratio("AVX2", avx2Ratio))
		}
		if hasAVX512 {
			timed = append(timed, ratio("AVX-512", avx512Ratio))
		}
		return "plain Go (" + strings.Join(timed, ", ") + ")"
	}
	return "plain Go (neither AVX2 with FMA nor AVX-512)"
}

// clearUpper clears the vector registers' upper halves (VZEROUPPER) where the CPU has
// AVX. Loops of math.Exp and math.Log (legacy SSE) call it once per row: in this build
// the halves can be dirty when such a loop starts, even one that follows no kernel, and
// scalar code then runs many times slower until they are cleared.
func clearUpper() {
	if hasAVX {
		archsimd.ClearAVXUpperBits()
	}
}
