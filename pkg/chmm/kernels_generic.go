//go:build !(goexperiment.simd && amd64)

package chmm

// Without GOEXPERIMENT=simd on amd64 the block kernels are the plain Go ones.
var (
	vecMat      = vecMatGo
	matVec      = matVecGo
	matVecCount = matVecCountGo
	addCounts   = addCountsGo
)

// kernelName names the block kernels in use.
func kernelName() string { return "go" }

// Kernels says which block kernels are in use, and why.
func Kernels() string { return "plain Go (built without GOEXPERIMENT=simd on amd64)" }
