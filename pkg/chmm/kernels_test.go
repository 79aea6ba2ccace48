package chmm

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func matVecCount1(out, b, mat []float64, stride int, coef, counts []float64) {
	cols := len(b)
	for i := range out {
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

func vecMat1(dst, coef, mat []float64, stride int) {
	cols := len(dst)
	for i, a := range coef {
		r := mat[i*stride:][:cols]
		for j := range dst {
			dst[j] += a * r[j]
		}
	}
}

// BenchmarkKernels: each block kernel on a C × C block, with every kernel set the
// CPU has side by side (go, avx2, avx512), and the plain Go kernels one row at a time
// (go1row), the unrolling's baseline.
func BenchmarkKernels(b *testing.B) {
	defer setKernels(inUse)
	for _, c := range []int{8, 15, 24, 32, 51, 70} {
		stride := 4 * c
		mat := make([]float64, c*stride)
		counts := make([]float64, c*stride)
		for i := range mat {
			mat[i] = float64(i%13) * 0.01
		}
		v := make([]float64, c)
		w := make([]float64, c)
		out := make([]float64, c)
		for i := range v {
			v[i], w[i] = 0.3, 0.7
		}
		for _, set := range availableKernels() {
			setKernels(set)
			vm, mv, mvc, ac := vecMat, matVec, matVecCount, addCounts
			b.Run(fmt.Sprintf("vecMat/C=%d/%s", c, set), func(b *testing.B) {
				for b.Loop() {
					vm(out, v, mat, stride)
				}
			})
			b.Run(fmt.Sprintf("matVec/C=%d/%s", c, set), func(b *testing.B) {
				for b.Loop() {
					mv(out, v, mat, stride)
				}
			})
			b.Run(fmt.Sprintf("matVecCount/C=%d/%s", c, set), func(b *testing.B) {
				for b.Loop() {
					mvc(out, v, mat, stride, w, counts)
				}
			})
			b.Run(fmt.Sprintf("addCounts/C=%d/%s", c, set), func(b *testing.B) {
				for b.Loop() {
					ac(w, v, mat, stride, counts)
				}
			})
		}
		b.Run(fmt.Sprintf("vecMat/C=%d/go1row", c), func(b *testing.B) {
			for b.Loop() {
				vecMat1(out, v, mat, stride)
			}
		})
		b.Run(fmt.Sprintf("matVecCount/C=%d/go1row", c), func(b *testing.B) {
			for b.Loop() {
				matVecCount1(out, v, mat, stride, w, counts)
			}
		})
	}
}

func TestKernels(t *testing.T) {
	// Every kernel (the plain Go ones and those in use, AVX2 or AVX-512 where the
	// build and CPU have them) against the plain double loop, for row and column
	// counts that exercise the unrolled parts, the 8-wide vectors and the tails.
	t.Logf("kernels in use: %s", KernelSet())
	type kernels struct {
		vecMat      func(dst, coef, mat []float64, stride int)
		matVec      func(out, b, mat []float64, stride int)
		matVecCount func(out, b, mat []float64, stride int, coef, counts []float64)
		addCounts   func(coef, b, mat []float64, stride int, counts []float64)
	}
	for _, k := range []kernels{{vecMatGo, matVecGo, matVecCountGo, addCountsGo}, {vecMat, matVec, matVecCount, addCounts}} {
		testKernels(t, k.vecMat, k.matVec, k.matVecCount, k.addCounts)
	}
	testElementwise(t, scaleGo, addToGo)
	testElementwise(t, scale, addTo)
}

// testElementwise checks scale and addTo against the plain loops bit for bit, for
// lengths that exercise the 8-wide vectors and the tails, addTo with a longer dst
// whose tail it must leave alone.
func testElementwise(t *testing.T, scale func(x []float64, f float64), addTo func(dst, src []float64)) {
	t.Helper()
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23, 70} {
		x := make([]float64, n)
		for i := range x {
			x[i] = (float64((i*7)%11) - 3.3) / 7
		}
		const f = 0.1 / 3
		got := slices.Clone(x)
		scale(got, f)
		for i, v := range x {
			if w := v * f; math.Float64bits(got[i]) != math.Float64bits(w) {
				t.Fatalf("scale, n = %d: x[%d] = %v, want %v", n, i, got[i], w)
			}
		}
		dst := make([]float64, n+3)
		for i := range dst {
			dst[i] = float64(i) / 3
		}
		want := slices.Clone(dst)
		for i, v := range x {
			want[i] += v
		}
		addTo(dst, x)
		for i := range dst {
			if math.Float64bits(dst[i]) != math.Float64bits(want[i]) {
				t.Fatalf("addTo, n = %d: dst[%d] = %v, want %v", n, i, dst[i], want[i])
			}
		}
	}
}

func testKernels(t *testing.T, vecMat func(dst, coef, mat []float64, stride int), matVec func(out, b, mat []float64, stride int),
	matVecCount func(out, b, mat []float64, stride int, coef, counts []float64), addCounts func(coef, b, mat []float64, stride int, counts []float64)) {
	t.Helper()
	for rows := 1; rows <= 9; rows++ {
		for _, cols := range []int{1, 3, 8, 9, 16, 23, 70} {
			stride := cols + 2
			mat := make([]float64, rows*stride)
			for i := range mat {
				mat[i] = float64((i*7)%11) - 3
			}
			coef := make([]float64, rows)
			for i := range coef {
				coef[i] = float64(i%3) - 0.5
			}
			coef[0] = 0 // a zero coefficient (skipped in the tails)
			b := make([]float64, cols)
			for j := range b {
				b[j] = float64(j) + 0.25
			}
			// vecMat
			got := make([]float64, cols)
			want := make([]float64, cols)
			for j := range got {
				got[j], want[j] = 1, 1
			}
			vecMat(got, coef, mat, stride)
			for i := range rows {
				for j := range cols {
					want[j] += coef[i] * mat[i*stride+j]
				}
			}
			if d := maxAbsDiff(got, want); d > 1e-12 {
				t.Errorf("vecMat %dx%d: off by %v", rows, cols, d)
			}
			// matVec, matVecCount, addCounts
			out := make([]float64, rows)
			out2 := make([]float64, rows)
			wantOut := make([]float64, rows)
			c1 := make([]float64, len(mat))
			c2 := make([]float64, len(mat))
			wantC := make([]float64, len(mat))
			for i := range wantC { // counts accumulate onto what is there
				c1[i], c2[i], wantC[i] = float64(i%5)-1, float64(i%5)-1, float64(i%5)-1
			}
			for i := range rows {
				for j := range cols {
					x := mat[i*stride+j] * b[j]
					wantOut[i] += x
					wantC[i*stride+j] += coef[i] * x
				}
			}
			matVec(out, b, mat, stride)
			matVecCount(out2, b, mat, stride, coef, c1)
			addCounts(coef, b, mat, stride, c2)
			if maxAbsDiff(out, wantOut) > 1e-12 || maxAbsDiff(out2, wantOut) > 1e-12 ||
				maxAbsDiff(c1, wantC) > 1e-12 || maxAbsDiff(c2, wantC) > 1e-12 {
				t.Errorf("matVec/matVecCount/addCounts %dx%d differ from the double loop", rows, cols)
			}
		}
	}
}
