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
}

// TestKernelChoice: the AVX-512 kernels are in use exactly where the CPU has AVX-512
// and they timed within maxAVX512Ratio of the plain Go ones, and Kernels says so.
func TestKernelChoice(t *testing.T) {
	t.Log(Kernels())
	if want := hasAVX512 && avx512Ratio > 0 && avx512Ratio <= maxAVX512Ratio; useAVX512 != want {
		t.Errorf("useAVX512 %v with AVX-512 %v and ratio %.2f", useAVX512, hasAVX512, avx512Ratio)
	}
	if hasAVX512 && !strings.Contains(Kernels(), "×") {
		t.Errorf("Kernels() = %q does not give the timed ratio", Kernels())
	}
	if d := timeKernels(false); d <= 0 {
		t.Errorf("timeKernels: %v", d)
	}
}
