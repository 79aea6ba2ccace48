package chmm

// Inner loops of the block-restricted recursions. A block is a C_src × C_dst
// sub-matrix of T (or of the counts) whose row i starts at mat[i*stride].
// Rows are processed two or four at a time so that each load of a shared
// vector serves several multiply-adds (1.2–1.7× faster than one row at a
// time at C = 15 and 70; BenchmarkKernels).

// The package-level names (vecMat, matVec, matVecCount, addCounts) are set in
// kernels_simd.go and kernels_generic.go: the AVX-512 or AVX2 versions where the build
// has GOEXPERIMENT=simd on amd64, the CPU has them and they timed fast enough at
// start-up (Kernels), else the plain Go ones below. All compute the same sums in a
// different order (results agree to rounding).

// kernelSet is one set of block kernels.
type kernelSet int

const (
	kernelsGo kernelSet = iota
	kernelsAVX2
	kernelsAVX512
)

// String names the set: "go", "avx2" or "avx512".
func (s kernelSet) String() string {
	return [...]string{"go", "avx2", "avx512"}[s]
}

// KernelSet names the block kernels in use: "go", "avx2" or "avx512" (Kernels says
// why). The sums of the recursions depend on it, to rounding.
func KernelSet() string { return inUse.String() }

// scaleGo multiplies x by f in place: x[i] *= f. Every set's scale and addTo give the
// same bits (one rounding per element, no fused operation).
func scaleGo(x []float64, f float64) {
	for i := range x {
		x[i] *= f
	}
}

// addToGo adds src to dst: dst[i] += src[i] for i < len(src).
func addToGo(dst, src []float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// vecMatGo adds coef · M to dst: dst[j] += Σ_i coef[i] M[i, j], with
// M[i, j] = mat[i*stride+j], j < len(dst).
func vecMatGo(dst, coef, mat []float64, stride int) {
	cols := len(dst)
	i := 0
	for ; i+4 <= len(coef); i += 4 {
		a0, a1, a2, a3 := coef[i], coef[i+1], coef[i+2], coef[i+3]
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		for j := range dst {
			dst[j] += a0*r0[j] + a1*r1[j] + a2*r2[j] + a3*r3[j]
		}
	}
	for ; i < len(coef); i++ {
		a := coef[i]
		if a == 0 {
			continue
		}
		r := mat[i*stride:][:cols]
		for j := range dst {
			dst[j] += a * r[j]
		}
	}
}

// matVecGo sets out[i] = Σ_j M[i, j] b[j] for i < len(out), j < len(b).
func matVecGo(out, b, mat []float64, stride int) {
	cols := len(b)
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		var s0, s1, s2, s3 float64
		for j, bj := range b {
			s0 += r0[j] * bj
			s1 += r1[j] * bj
			s2 += r2[j] * bj
			s3 += r3[j] * bj
		}
		out[i], out[i+1], out[i+2], out[i+3] = s0, s1, s2, s3
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		var s float64
		for j, bj := range b {
			s += r[j] * bj
		}
		out[i] = s
	}
}

// matVecCountGo is matVec fused with the expected-count update of
// forward–backward: with x = M[i, j] b[j], out[i] = Σ_j x and
// counts[i*stride+j] += coef[i] x.
func matVecCountGo(out, b, mat []float64, stride int, coef, counts []float64) {
	cols := len(b)
	i := 0
	for ; i+2 <= len(out); i += 2 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		c0 := counts[i*stride:][:cols]
		c1 := counts[(i+1)*stride:][:cols]
		a0, a1 := coef[i], coef[i+1]
		var s0, s1 float64
		for j, bj := range b {
			x0 := r0[j] * bj
			x1 := r1[j] * bj
			s0 += x0
			s1 += x1
			c0[j] += a0 * x0
			c1[j] += a1 * x1
		}
		out[i], out[i+1] = s0, s1
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		a := coef[i]
		var s float64
		for j, bj := range b {
			x := r[j] * bj
			s += x
			c[j] += a * x
		}
		out[i] = s
	}
}

// addCountsGo adds coef[i] M[i, j] b[j] to counts[i*stride+j].
func addCountsGo(coef, b, mat []float64, stride int, counts []float64) {
	cols := len(b)
	i := 0
	for ; i+2 <= len(coef); i += 2 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		c0 := counts[i*stride:][:cols]
		c1 := counts[(i+1)*stride:][:cols]
		a0, a1 := coef[i], coef[i+1]
		for j, bj := range b {
			c0[j] += a0 * r0[j] * bj
			c1[j] += a1 * r1[j] * bj
		}
	}
	for ; i < len(coef); i++ {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		a := coef[i]
		for j, bj := range b {
			c[j] += a * r[j] * bj
		}
	}
}
