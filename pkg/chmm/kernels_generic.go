//go:build !(goexperiment.simd && amd64)

package chmm

// Without GOEXPERIMENT=simd on amd64 the block kernels are the plain Go ones.
var (
	vecMat      = vecMatGo
	matVec      = matVecGo
	matVecCount = matVecCountGo
	addCounts   = addCountsGo
)

// The AVX-512 kernels need GOEXPERIMENT=simd on amd64.
const hasAVX512, useAVX512 = false, false

// setKernels keeps the plain Go kernels (there are no others in this build).
func setKernels(bool) {}

// Kernels says which block kernels are in use, and why.
func Kernels() string { return "plain Go (built without GOEXPERIMENT=simd on amd64)" }
