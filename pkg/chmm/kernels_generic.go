//go:build !(goexperiment.simd && amd64)

package chmm

// Without GOEXPERIMENT=simd on amd64 the block kernels are the plain Go ones.
var (
	vecMat      = vecMatGo
	matVec      = matVecGo
	matVecCount = matVecCountGo
	addCounts   = addCountsGo
	scale       = scaleGo
	addTo       = addToGo
	inUse       = kernelsGo
)

// setKernels keeps the plain Go kernels (there are no others in this build).
func setKernels(kernelSet) {}

// availableKernels are the sets this build can run: plain Go.
func availableKernels() []kernelSet { return []kernelSet{kernelsGo} }

// Kernels says which block kernels are in use, and why.
func Kernels() string { return "plain Go (built without GOEXPERIMENT=simd on amd64)" }

// clearUpper is kernels_simd.go's; this build has no vector code to clear after.
func clearUpper() {}
