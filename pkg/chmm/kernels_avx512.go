//go:build goexperiment.simd && amd64

package chmm

import "simd/archsimd"

// The block kernels of kernels.go with 8-wide float64 fused multiply-adds
// (AVX-512). kernels_simd.go chooses them at start-up.

// minAVX512Cols is the block width below which the plain Go kernels are faster
// (the 8-wide part is too short to pay for the scalar tail and the lane sums;
// BenchmarkKernels at C = 15, 24, 70).
const minAVX512Cols = 16

// hsum is the sum of x's 8 lanes.
func hsum(x archsimd.Float64x8) float64 {
	var a [8]float64
	x.Store(a[:])
	return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

// vecMatAVX512 is vecMatGo: dst[j] += Σ_i coef[i] M[i, j].
func vecMatAVX512(dst, coef, mat []float64, stride int) {
	cols := len(dst)
	if cols < minAVX512Cols {
		vecMatGo(dst, coef, mat, stride)
		return
	}
	n8 := cols &^ 7
	i := 0
	for ; i+4 <= len(coef); i += 4 {
		a0, a1, a2, a3 := coef[i], coef[i+1], coef[i+2], coef[i+3]
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		v0, v1 := archsimd.BroadcastFloat64x8(a0), archsimd.BroadcastFloat64x8(a1)
		v2, v3 := archsimd.BroadcastFloat64x8(a2), archsimd.BroadcastFloat64x8(a3)
		for j := 0; j < n8; j += 8 {
			d := archsimd.LoadFloat64x8(dst[j:])
			d = archsimd.LoadFloat64x8(r0[j:]).MulAdd(v0, d)
			d = archsimd.LoadFloat64x8(r1[j:]).MulAdd(v1, d)
			d = archsimd.LoadFloat64x8(r2[j:]).MulAdd(v2, d)
			d = archsimd.LoadFloat64x8(r3[j:]).MulAdd(v3, d)
			d.Store(dst[j:])
		}
		for j := n8; j < cols; j++ {
			dst[j] += a0*r0[j] + a1*r1[j] + a2*r2[j] + a3*r3[j]
		}
	}
	for ; i < len(coef); i++ {
		a := coef[i]
		if a == 0 {
			continue
		}
		r := mat[i*stride:][:cols]
		v := archsimd.BroadcastFloat64x8(a)
		for j := 0; j < n8; j += 8 {
			archsimd.LoadFloat64x8(r[j:]).MulAdd(v, archsimd.LoadFloat64x8(dst[j:])).Store(dst[j:])
		}
		for j := n8; j < cols; j++ {
			dst[j] += a * r[j]
		}
	}
}

// matVecAVX512 is matVecGo: out[i] = Σ_j M[i, j] b[j].
func matVecAVX512(out, b, mat []float64, stride int) {
	cols := len(b)
	if cols < minAVX512Cols {
		matVecGo(out, b, mat, stride)
		return
	}
	n8 := cols &^ 7
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		var s0, s1, s2, s3 archsimd.Float64x8
		for j := 0; j < n8; j += 8 {
			bj := archsimd.LoadFloat64x8(b[j:])
			s0 = archsimd.LoadFloat64x8(r0[j:]).MulAdd(bj, s0)
			s1 = archsimd.LoadFloat64x8(r1[j:]).MulAdd(bj, s1)
			s2 = archsimd.LoadFloat64x8(r2[j:]).MulAdd(bj, s2)
			s3 = archsimd.LoadFloat64x8(r3[j:]).MulAdd(bj, s3)
		}
		t0, t1, t2, t3 := hsum(s0), hsum(s1), hsum(s2), hsum(s3)
		for j := n8; j < cols; j++ {
			bj := b[j]
			t0 += r0[j] * bj
			t1 += r1[j] * bj
			t2 += r2[j] * bj
			t3 += r3[j] * bj
		}
		out[i], out[i+1], out[i+2], out[i+3] = t0, t1, t2, t3
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		var s archsimd.Float64x8
		for j := 0; j < n8; j += 8 {
			s = archsimd.LoadFloat64x8(r[j:]).MulAdd(archsimd.LoadFloat64x8(b[j:]), s)
		}
		t := hsum(s)
		for j := n8; j < cols; j++ {
			t += r[j] * b[j]
		}
		out[i] = t
	}
}

// matVecCountAVX512 is matVecCountGo: with x = M[i, j] b[j], out[i] = Σ_j x and
// counts[i*stride+j] += coef[i] x.
func matVecCountAVX512(out, b, mat []float64, stride int, coef, counts []float64) {
	cols := len(b)
	if cols < minAVX512Cols {
		matVecCountGo(out, b, mat, stride, coef, counts)
		return
	}
	n8 := cols &^ 7
	i := 0
	for ; i+2 <= len(out); i += 2 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		c0 := counts[i*stride:][:cols]
		c1 := counts[(i+1)*stride:][:cols]
		a0, a1 := coef[i], coef[i+1]
		v0, v1 := archsimd.BroadcastFloat64x8(a0), archsimd.BroadcastFloat64x8(a1)
		var s0, s1 archsimd.Float64x8
		for j := 0; j < n8; j += 8 {
			bj := archsimd.LoadFloat64x8(b[j:])
			x0 := archsimd.LoadFloat64x8(r0[j:]).Mul(bj)
			x1 := archsimd.LoadFloat64x8(r1[j:]).Mul(bj)
			s0 = s0.Add(x0)
			s1 = s1.Add(x1)
			x0.MulAdd(v0, archsimd.LoadFloat64x8(c0[j:])).Store(c0[j:])
			x1.MulAdd(v1, archsimd.LoadFloat64x8(c1[j:])).Store(c1[j:])
		}
		t0, t1 := hsum(s0), hsum(s1)
		for j := n8; j < cols; j++ {
			bj := b[j]
			x0 := r0[j] * bj
			x1 := r1[j] * bj
			t0 += x0
			t1 += x1
			c0[j] += a0 * x0
			c1[j] += a1 * x1
		}
		out[i], out[i+1] = t0, t1
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		a := coef[i]
		v := archsimd.BroadcastFloat64x8(a)
		var s archsimd.Float64x8
		for j := 0; j < n8; j += 8 {
			x := archsimd.LoadFloat64x8(r[j:]).Mul(archsimd.LoadFloat64x8(b[j:]))
			s = s.Add(x)
			x.MulAdd(v, archsimd.LoadFloat64x8(c[j:])).Store(c[j:])
		}
		t := hsum(s)
		for j := n8; j < cols; j++ {
			x := r[j] * b[j]
			t += x
			c[j] += a * x
		}
		out[i] = t
	}
}

// addCountsAVX512 is addCountsGo: counts[i*stride+j] += coef[i] M[i, j] b[j].
func addCountsAVX512(coef, b, mat []float64, stride int, counts []float64) {
	cols := len(b)
	if cols < minAVX512Cols {
		addCountsGo(coef, b, mat, stride, counts)
		return
	}
	n8 := cols &^ 7
	for i, a := range coef {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		v := archsimd.BroadcastFloat64x8(a)
		for j := 0; j < n8; j += 8 {
			x := archsimd.LoadFloat64x8(r[j:]).Mul(archsimd.LoadFloat64x8(b[j:]))
			x.MulAdd(v, archsimd.LoadFloat64x8(c[j:])).Store(c[j:])
		}
		for j := n8; j < cols; j++ {
			c[j] += a * r[j] * b[j]
		}
	}
}

// scaleAVX512 is scaleGo: x[i] *= f.
func scaleAVX512(x []float64, f float64) {
	n8 := len(x) &^ 7
	v := archsimd.BroadcastFloat64x8(f)
	for i := 0; i < n8; i += 8 {
		archsimd.LoadFloat64x8(x[i:]).Mul(v).Store(x[i:])
	}
	for i := n8; i < len(x); i++ {
		x[i] *= f
	}
}

// addToAVX512 is addToGo: dst[i] += src[i] for i < len(src).
func addToAVX512(dst, src []float64) {
	dst = dst[:len(src)]
	n8 := len(src) &^ 7
	for i := 0; i < n8; i += 8 {
		archsimd.LoadFloat64x8(dst[i:]).Add(archsimd.LoadFloat64x8(src[i:])).Store(dst[i:])
	}
	for i := n8; i < len(src); i++ {
		dst[i] += src[i]
	}
}
