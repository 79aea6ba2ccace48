//go:build goexperiment.simd && amd64

package chmm

import (
	"strings"
	"testing"
)

// TestKernelsAVX512 checks the AVX-512 kernels wherever the CPU has AVX-512, whether
// or not the start-up timing chose them (TestKernels checks those in use).
func TestKernelsAVX512(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	testKernels(t, vecMatAVX512, matVecAVX512, matVecCountAVX512, addCountsAVX512)
	testElementwise(t, scaleAVX512, addToAVX512)
}

// TestKernelsAVX2 checks the AVX2 kernels wherever the CPU has AVX2 and FMA.
func TestKernelsAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 with FMA on this CPU")
	}
	testKernels(t, vecMatAVX2, matVecAVX2, matVecCountAVX2, addCountsAVX2)
}

// TestKernelChoice: the widest vector set the CPU has that timed within maxSIMDRatio
// of plain Go is in use, and Kernels says so with the timed ratios.
func TestKernelChoice(t *testing.T) {
	t.Log(Kernels())
	for _, c := range []struct {
		avx512, avx2 bool
		r512, r2     float64
		want         kernelSet
	}{
		{false, false, 0, 0, kernelsGo},
		{true, true, 0.5, 0.6, kernelsAVX512},
		{true, true, 0.7, 0.5, kernelsAVX512}, // the widest acceptable, not the fastest
		{true, true, 10.4, 0.6, kernelsAVX2},  // AVX-512 slow (the machine in the README)
		{true, true, 10.4, 1.3, kernelsGo},
		{false, true, 0, 1.25, kernelsAVX2},
		{false, true, 0, 1.26, kernelsGo},
		{true, false, 1.2, 0, kernelsAVX512},
	} {
		if got := chooseKernels(c.avx512, c.avx2, c.r512, c.r2); got != c.want {
			t.Errorf("chooseKernels(%v, %v, %.2f, %.2f) = %v, want %v", c.avx512, c.avx2, c.r512, c.r2, got, c.want)
		}
	}
	if want := chooseKernels(hasAVX512, hasAVX2, avx512Ratio, avx2Ratio); inUse != want {
		t.Errorf("in use %v, want %v (AVX-512 %v ratio %.2f, AVX2 %v ratio %.2f)", inUse, want, hasAVX512, avx512Ratio, hasAVX2, avx2Ratio)
	}
	if (hasAVX512 || hasAVX2) && !strings.Contains(Kernels(), "×") {
		t.Errorf("Kernels() = %q does not give the timed ratio", Kernels())
	}
	defer setKernels(inUse)
	if d := timeKernels(kernelsGo); d <= 0 {
		t.Errorf("timeKernels: %v", d)
	}
}
