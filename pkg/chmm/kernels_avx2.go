//go:build goexperiment.simd && amd64

package chmm

import "simd/archsimd"

// The block kernels of kernels.go with 4-wide float64 fused multiply-adds (AVX2 and
// FMA: most x86 CPUs without AVX-512). kernels_simd.go chooses them at start-up.
//
// The Go compiler writes scalar float64 code with legacy SSE instructions and does not
// clear the vector registers' upper halves after 256-bit code (VZEROUPPER), and on
// some CPUs each switch from 256-bit code to scalar code with those halves dirty is
// costly. So each row group runs its vector part, parks the lane sums in
// memory, clears the upper halves (archsimd.ClearAVXUpperBits) and only then does
// scalar work, re-reading what it needs from memory so that no scalar is kept in a
// register across vector code.

// minAVX2Cols is the block width below which the plain Go kernels are used (the
// 4-wide part is too short to pay for the scalar tail and the lane sums).
const minAVX2Cols = 16

// vecMatAVX2 is vecMatGo: dst[j] += Σ_i coef[i] M[i, j].
func vecMatAVX2(dst, coef, mat []float64, stride int) {
	cols := len(dst)
	if cols < minAVX2Cols {
		vecMatGo(dst, coef, mat, stride)
		return
	}
	archsimd.ClearAVXUpperBits()
	n4 := cols &^ 3
	i := 0
	for ; i+4 <= len(coef); i += 4 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		v0, v1 := archsimd.BroadcastFloat64x4(coef[i]), archsimd.BroadcastFloat64x4(coef[i+1])
		v2, v3 := archsimd.BroadcastFloat64x4(coef[i+2]), archsimd.BroadcastFloat64x4(coef[i+3])
		for j := 0; j < n4; j += 4 {
			d := archsimd.LoadFloat64x4(dst[j:])
			d = archsimd.LoadFloat64x4(r0[j:]).MulAdd(v0, d)
			d = archsimd.LoadFloat64x4(r1[j:]).MulAdd(v1, d)
			d = archsimd.LoadFloat64x4(r2[j:]).MulAdd(v2, d)
			d = archsimd.LoadFloat64x4(r3[j:]).MulAdd(v3, d)
			d.Store(dst[j:])
		}
		archsimd.ClearAVXUpperBits()
		for j := n4; j < cols; j++ {
			dst[j] += coef[i]*r0[j] + coef[i+1]*r1[j] + coef[i+2]*r2[j] + coef[i+3]*r3[j]
		}
	}
	for ; i < len(coef); i++ {
		if coef[i] == 0 {
			continue
		}
		r := mat[i*stride:][:cols]
		v := archsimd.BroadcastFloat64x4(coef[i])
		for j := 0; j < n4; j += 4 {
			archsimd.LoadFloat64x4(r[j:]).MulAdd(v, archsimd.LoadFloat64x4(dst[j:])).Store(dst[j:])
		}
		archsimd.ClearAVXUpperBits()
		for j := n4; j < cols; j++ {
			dst[j] += coef[i] * r[j]
		}
	}
}

// matVecAVX2 is matVecGo: out[i] = Σ_j M[i, j] b[j].
func matVecAVX2(out, b, mat []float64, stride int) {
	cols := len(b)
	if cols < minAVX2Cols {
		matVecGo(out, b, mat, stride)
		return
	}
	archsimd.ClearAVXUpperBits()
	n4 := cols &^ 3
	var lanes [16]float64 // the accumulators' lanes, 4 per row
	i := 0
	for ; i+4 <= len(out); i += 4 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		r2 := mat[(i+2)*stride:][:cols]
		r3 := mat[(i+3)*stride:][:cols]
		var s0, s1, s2, s3 archsimd.Float64x4
		for j := 0; j < n4; j += 4 {
			bj := archsimd.LoadFloat64x4(b[j:])
			s0 = archsimd.LoadFloat64x4(r0[j:]).MulAdd(bj, s0)
			s1 = archsimd.LoadFloat64x4(r1[j:]).MulAdd(bj, s1)
			s2 = archsimd.LoadFloat64x4(r2[j:]).MulAdd(bj, s2)
			s3 = archsimd.LoadFloat64x4(r3[j:]).MulAdd(bj, s3)
		}
		s0.Store(lanes[0:])
		s1.Store(lanes[4:])
		s2.Store(lanes[8:])
		s3.Store(lanes[12:])
		archsimd.ClearAVXUpperBits()
		for r, row := range [4][]float64{r0, r1, r2, r3} {
			l := lanes[4*r:][:4]
			t := (l[0] + l[2]) + (l[1] + l[3])
			for j := n4; j < cols; j++ {
				t += row[j] * b[j]
			}
			out[i+r] = t
		}
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		var s archsimd.Float64x4
		for j := 0; j < n4; j += 4 {
			s = archsimd.LoadFloat64x4(r[j:]).MulAdd(archsimd.LoadFloat64x4(b[j:]), s)
		}
		s.Store(lanes[0:])
		archsimd.ClearAVXUpperBits()
		t := (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
		for j := n4; j < cols; j++ {
			t += r[j] * b[j]
		}
		out[i] = t
	}
}

// matVecCountAVX2 is matVecCountGo: with x = M[i, j] b[j], out[i] = Σ_j x and
// counts[i*stride+j] += coef[i] x.
func matVecCountAVX2(out, b, mat []float64, stride int, coef, counts []float64) {
	cols := len(b)
	if cols < minAVX2Cols {
		matVecCountGo(out, b, mat, stride, coef, counts)
		return
	}
	archsimd.ClearAVXUpperBits()
	n4 := cols &^ 3
	var lanes [8]float64 // the accumulators' lanes, 4 per row
	i := 0
	for ; i+2 <= len(out); i += 2 {
		r0 := mat[i*stride:][:cols]
		r1 := mat[(i+1)*stride:][:cols]
		c0 := counts[i*stride:][:cols]
		c1 := counts[(i+1)*stride:][:cols]
		v0, v1 := archsimd.BroadcastFloat64x4(coef[i]), archsimd.BroadcastFloat64x4(coef[i+1])
		var s0, s1 archsimd.Float64x4
		for j := 0; j < n4; j += 4 {
			bj := archsimd.LoadFloat64x4(b[j:])
			x0 := archsimd.LoadFloat64x4(r0[j:]).Mul(bj)
			x1 := archsimd.LoadFloat64x4(r1[j:]).Mul(bj)
			s0 = s0.Add(x0)
			s1 = s1.Add(x1)
			x0.MulAdd(v0, archsimd.LoadFloat64x4(c0[j:])).Store(c0[j:])
			x1.MulAdd(v1, archsimd.LoadFloat64x4(c1[j:])).Store(c1[j:])
		}
		s0.Store(lanes[0:])
		s1.Store(lanes[4:])
		archsimd.ClearAVXUpperBits()
		t0 := (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
		t1 := (lanes[4] + lanes[6]) + (lanes[5] + lanes[7])
		for j := n4; j < cols; j++ {
			x0 := r0[j] * b[j]
			x1 := r1[j] * b[j]
			t0 += x0
			t1 += x1
			c0[j] += coef[i] * x0
			c1[j] += coef[i+1] * x1
		}
		out[i], out[i+1] = t0, t1
	}
	for ; i < len(out); i++ {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		v := archsimd.BroadcastFloat64x4(coef[i])
		var s archsimd.Float64x4
		for j := 0; j < n4; j += 4 {
			x := archsimd.LoadFloat64x4(r[j:]).Mul(archsimd.LoadFloat64x4(b[j:]))
			s = s.Add(x)
			x.MulAdd(v, archsimd.LoadFloat64x4(c[j:])).Store(c[j:])
		}
		s.Store(lanes[0:])
		archsimd.ClearAVXUpperBits()
		t := (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
		for j := n4; j < cols; j++ {
			x := r[j] * b[j]
			t += x
			c[j] += coef[i] * x
		}
		out[i] = t
	}
}

// addCountsAVX2 is addCountsGo: counts[i*stride+j] += coef[i] M[i, j] b[j].
func addCountsAVX2(coef, b, mat []float64, stride int, counts []float64) {
	cols := len(b)
	if cols < minAVX2Cols {
		addCountsGo(coef, b, mat, stride, counts)
		return
	}
	archsimd.ClearAVXUpperBits()
	n4 := cols &^ 3
	for i := range coef {
		r := mat[i*stride:][:cols]
		c := counts[i*stride:][:cols]
		v := archsimd.BroadcastFloat64x4(coef[i])
		for j := 0; j < n4; j += 4 {
			x := archsimd.LoadFloat64x4(r[j:]).Mul(archsimd.LoadFloat64x4(b[j:]))
			x.MulAdd(v, archsimd.LoadFloat64x4(c[j:])).Store(c[j:])
		}
		archsimd.ClearAVXUpperBits()
		for j := n4; j < cols; j++ {
			c[j] += coef[i] * r[j] * b[j]
		}
	}
}
