//go:build !(goexperiment.simd && amd64)

package chmm

// Without GOEXPERIMENT=simd on amd64 the block kernels are the plain Go ones.
var (
	vecMat      = vecMatGo
	matVec      = matVecGo
	matVecCount = matVecCountGo
	addCounts   = addCountsGo
)

// hasAVX512 is false: the AVX-512 kernels need GOEXPERIMENT=simd on amd64.
const hasAVX512 = false

// setKernels keeps the plain Go kernels (there are no others in this build).
func setKernels(bool) {}

// kernelName names the block kernels in use.
func kernelName() string { return "go" }

// Kernels says which block kernels are in use, and why.
func Kernels() string { return "plain Go (built without GOEXPERIMENT=simd on amd64)" }
