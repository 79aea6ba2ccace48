package vqvae

import (
	"fmt"

	"github.com/gomlx/compute"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// nativeAct applies the activation with plain GoMLX ops (autodiff reference).
func nativeAct(a activation, x *Node) *Node { return applyActivation(a, x) }

// sliceConv is an autodiff reference for a convolution built only from Pad, strided
// Slice, Dot and Add (one term per kernel tap): x [B,H,W,C], kn [k,k,C,O], zero padding
// lo/hi, stride s, input dilation dil (dil = 2 with the flipped kernel gives a
// transposed convolution). GoMLX's native ConvGeneral gradient mishandles even kernels
// (wrong ∂x, or a panic), so the native op is only used for forward values.
func sliceConv(x, kn *Node, lo, hi, s, dil int) *Node {
	k := kn.Shape().Dimensions[0]
	pad := compute.PadAxis{Start: lo, End: hi, Interior: dil - 1}
	xp := Pad(x, ScalarZero(x.Graph(), x.DType()), compute.PadAxis{}, pad, pad, compute.PadAxis{})
	hp, wp := xp.Shape().Dimensions[1], xp.Shape().Dimensions[2]
	ho, wo := (hp-k)/s+1, (wp-k)/s+1
	var y *Node
	for ky := range k {
		for kx := range k {
			win := Slice(xp, AxisRange(), AxisRange(ky, ky+s*(ho-1)+1).Stride(s), AxisRange(kx, kx+s*(wo-1)+1).Stride(s), AxisRange())
			tap := Slice(kn, AxisElem(ky), AxisElem(kx), AxisRange(), AxisRange())
			tap = Reshape(tap, tap.Shape().Dimensions[2], tap.Shape().Dimensions[3])
			term := Dot(win, tap).General([]int{3}, nil, []int{0}, nil)
			if y == nil {
				y = term
			} else {
				y = Add(y, term)
			}
		}
	}
	return y
}

// toCHWB converts [B,H,W,C] to the package's [C,H,W,B] layout; toNHWC converts back.
func toCHWB(x *Node) *Node { return TransposeAllAxes(x, 3, 1, 2, 0) }
func toNHWC(x *Node) *Node { return TransposeAllAxes(x, 3, 1, 2, 0) }

// TestConv2DMatchesNative compares the window-gather convolution (value and the
// hand-written gradients w.r.t. x, W and b) with autodiff of a tap-by-tap reference,
// itself checked against GoMLX's native ConvGeneral (values).
func TestConv2DMatchesNative(t *testing.T) {
	tests := []struct {
		b, h, w, c, o, k, lo, hi int
		act                      activation
	}{
		{2, 5, 6, 3, 4, 3, 1, 1, actNone},
		{2, 5, 6, 3, 4, 3, 1, 1, actReLU},
		{1, 4, 4, 2, 3, 2, 0, 0, actSigmoid},
		{2, 4, 5, 2, 3, 2, 1, 1, actReLU},
		{1, 6, 5, 3, 2, 3, 0, 2, actNone},
		{2, 3, 3, 2, 3, 1, 0, 0, actNone},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("b%d_%dx%dx%d_o%d_k%d_pad%d,%d_%s", tc.b, tc.h, tc.w, tc.c, tc.o, tc.k, tc.lo, tc.hi, tc.act)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			x := randSlice(rng, tc.b*tc.h*tc.w*tc.c, 1)
			kn := randSlice(rng, tc.k*tc.k*tc.c*tc.o, 0.5) // native layout [k,k,C,O]
			bias := randSlice(rng, tc.o, 0.3)
			ho, wo := tc.h+tc.lo+tc.hi-tc.k+1, tc.w+tc.lo+tc.hi-tc.k+1
			r := randSlice(rng, tc.b*ho*wo*tc.o, 1)
			build := func(mine bool) func(x, kn, b, r *Node) []*Node {
				return func(x, kn, b, r *Node) []*Node {
					var y *Node
					if mine {
						w := TransposeAllAxes(kn, 3, 2, 0, 1) // [O,C,k,k]
						y = toNHWC(conv2D(toCHWB(x), w, b, tc.lo, tc.hi, tc.act))
					} else {
						y = sliceConv(x, kn, tc.lo, tc.hi, 1, 1)
						y = nativeAct(tc.act, Add(y, Reshape(b, 1, 1, 1, tc.o)))
					}
					loss := ReduceAllSum(Mul(y, r))
					grads := Gradient(loss, x, kn, b)
					return append([]*Node{y}, grads...)
				}
			}
			args := []any{
				tensors.FromFlatDataAndDimensions(x, tc.b, tc.h, tc.w, tc.c),
				tensors.FromFlatDataAndDimensions(kn, tc.k, tc.k, tc.c, tc.o),
				tensors.FromFlatDataAndDimensions(bias, tc.o),
				tensors.FromFlatDataAndDimensions(r, tc.b, ho, wo, tc.o),
			}
			got := MustNewExec(testBackend(), build(true)).MustCall(args...)
			want := MustNewExec(testBackend(), build(false)).MustCall(args...)
			native := MustNewExec(testBackend(), func(x, kn *Node) *Node {
				return Convolve(x, kn).PaddingPerDim([][2]int{{tc.lo, tc.hi}, {tc.lo, tc.hi}}).Done()
			}).MustCall(args[0], args[1])[0]
			ref := MustNewExec(testBackend(), func(x, kn *Node) *Node { return sliceConv(x, kn, tc.lo, tc.hi, 1, 1) }).MustCall(args[0], args[1])[0]
			if d := maxAbsDiff(flat64(t, ref), flat64(t, native)); d > 1e-12 {
				t.Fatalf("slice reference disagrees with native ConvGeneral: %g", d)
			}
			for i, what := range []string{"value", "dx", "dW", "db"} {
				g, w := flat64(t, got[i]), flat64(t, want[i])
				if d := maxAbsDiff(g, w); d > 1e-10*(1+maxAbs(w)) {
					t.Errorf("%s: max |diff| = %g (max |want| = %g)", what, d, maxAbs(w))
				}
			}
		})
	}
}

// TestConvStride2MatchesNative checks the space-to-depth formulation of the 4×4/2
// convolution (padding 1) against a strided tap-by-tap reference (values checked
// against native ConvGeneral), values and gradients.
func TestConvStride2MatchesNative(t *testing.T) {
	for _, tc := range []struct{ b, h, w, c, o int }{{2, 6, 8, 3, 4}, {1, 4, 4, 1, 2}} {
		t.Run(fmt.Sprintf("%dx%dx%d_o%d", tc.h, tc.w, tc.c, tc.o), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			x := randSlice(rng, tc.b*tc.h*tc.w*tc.c, 1)
			k4 := randSlice(rng, 16*tc.c*tc.o, 0.5)
			bias := randSlice(rng, tc.o, 0.3)
			ho, wo := tc.h/2, tc.w/2
			r := randSlice(rng, tc.b*ho*wo*tc.o, 1)
			mine := MustNewExec(testBackend(), func(x, w, b, r *Node) []*Node {
				y := toNHWC(convStride2(toCHWB(x), w, b, actReLU))
				return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, w, b)...)
			}).MustCall(
				tensors.FromFlatDataAndDimensions(x, tc.b, tc.h, tc.w, tc.c),
				tensors.FromFlatDataAndDimensions(stride2Kernel(k4, tc.c, tc.o), tc.o, 4*tc.c, 2, 2),
				tensors.FromFlatDataAndDimensions(bias, tc.o),
				tensors.FromFlatDataAndDimensions(r, tc.b, ho, wo, tc.o))
			native := MustNewExec(testBackend(), func(x, k, b, r *Node) []*Node {
				y := sliceConv(x, k, 1, 1, 2, 1)
				y = MaxScalar(Add(y, Reshape(b, 1, 1, 1, tc.o)), 0)
				return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, k, b)...)
			}).MustCall(
				tensors.FromFlatDataAndDimensions(x, tc.b, tc.h, tc.w, tc.c),
				tensors.FromFlatDataAndDimensions(k4, 4, 4, tc.c, tc.o),
				tensors.FromFlatDataAndDimensions(bias, tc.o),
				tensors.FromFlatDataAndDimensions(r, tc.b, ho, wo, tc.o))
			conv := MustNewExec(testBackend(), func(x, k, b *Node) *Node {
				y := Convolve(x, k).StridePerAxis(2, 2).PaddingPerDim([][2]int{{1, 1}, {1, 1}}).Done()
				return MaxScalar(Add(y, Reshape(b, 1, 1, 1, tc.o)), 0)
			}).MustCall(
				tensors.FromFlatDataAndDimensions(x, tc.b, tc.h, tc.w, tc.c),
				tensors.FromFlatDataAndDimensions(k4, 4, 4, tc.c, tc.o),
				tensors.FromFlatDataAndDimensions(bias, tc.o))[0]
			if d := maxAbsDiff(flat64(t, conv), flat64(t, native[0])); d > 1e-12 {
				t.Fatalf("slice reference disagrees with native ConvGeneral: %g", d)
			}
			want := [][]float64{flat64(t, native[0]), flat64(t, native[1]),
				stride2Kernel(flat64(t, native[2]), tc.c, tc.o), flat64(t, native[3])}
			for i, what := range []string{"value", "dx", "dW", "db"} {
				if d := maxAbsDiff(flat64(t, mine[i]), want[i]); d > 1e-10*(1+maxAbs(want[i])) {
					t.Errorf("%s: max |diff| = %g", what, d)
				}
			}
		})
	}
}

// transposedConvBruteForce is the definition of a 4×4 transposed convolution with
// stride 2 and padding 1: out[2i−1+ky, 2j−1+kx, o] += x[i,j,c]·k4[ky,kx,c,o].
func transposedConvBruteForce(x, k4 []float64, b, h, w, c, o int) []float64 {
	out := make([]float64, b*2*h*2*w*o)
	for bi := range b {
		for i := range h {
			for j := range w {
				for ky := range 4 {
					for kx := range 4 {
						oy, ox := 2*i-1+ky, 2*j-1+kx
						if oy < 0 || oy >= 2*h || ox < 0 || ox >= 2*w {
							continue
						}
						for ci := range c {
							xv := x[((bi*h+i)*w+j)*c+ci]
							for oi := range o {
								out[((bi*2*h+oy)*2*w+ox)*o+oi] += xv * k4[((ky*4+kx)*c+ci)*o+oi]
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestSubPixelMatchesTransposedConv checks that the sub-pixel convolution equals the
// reference's 4×4/2 transposed convolution: values against the brute-force definition,
// gradients against autodiff of a tap-by-tap input-dilated reference.
func TestSubPixelMatchesTransposedConv(t *testing.T) {
	const b, h, w, c, o = 2, 3, 4, 3, 2
	rng := rand.New(rand.NewPCG(5, 6))
	x := randSlice(rng, b*h*w*c, 1)
	k4 := randSlice(rng, 16*c*o, 0.5)
	r := randSlice(rng, b*2*h*2*w*o, 1)
	zeroBias := make([]float64, 4*o)
	mine := MustNewExec(testBackend(), func(x, wt, bs, r *Node) []*Node {
		y := toNHWC(subPixelConv(toCHWB(x), wt, bs, actNone))
		return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, wt)...)
	}).MustCall(
		tensors.FromFlatDataAndDimensions(x, b, h, w, c),
		tensors.FromFlatDataAndDimensions(subPixelKernel(k4, c, o), 4*o, c, 2, 2),
		tensors.FromFlatDataAndDimensions(zeroBias, 4*o),
		tensors.FromFlatDataAndDimensions(r, b, 2*h, 2*w, o))
	// Reference transposed convolution: dilate the input by 2, pad by k−1−p = 2, flip the kernel.
	native := MustNewExec(testBackend(), func(x, k, r *Node) []*Node {
		y := sliceConv(x, Reverse(k, 0, 1), 2, 2, 1, 2)
		return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, k)...)
	}).MustCall(
		tensors.FromFlatDataAndDimensions(x, b, h, w, c),
		tensors.FromFlatDataAndDimensions(k4, 4, 4, c, o),
		tensors.FromFlatDataAndDimensions(r, b, 2*h, 2*w, o))

	brute := transposedConvBruteForce(x, k4, b, h, w, c, o)
	if d := maxAbsDiff(flat64(t, native[0]), brute); d > 1e-12 {
		t.Fatalf("slice reference disagrees with the definition: %g", d)
	}
	if d := maxAbsDiff(flat64(t, mine[0]), brute); d > 1e-12 {
		t.Errorf("value: max |diff| = %g", d)
	}
	if d := maxAbsDiff(flat64(t, mine[1]), flat64(t, native[1])); d > 1e-12 {
		t.Errorf("dx: max |diff| = %g", d)
	}
	if d := maxAbsDiff(flat64(t, mine[2]), subPixelKernel(flat64(t, native[2]), c, o)); d > 1e-12 {
		t.Errorf("dW: max |diff| = %g", d)
	}
}

// TestDenseMatchesAutodiff compares the hand-written dense backward with autodiff.
func TestDenseMatchesAutodiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const k, b, o = 4, 5, 3
	x, w, bias, r := randSlice(rng, k*b, 1), randSlice(rng, o*k, 1), randSlice(rng, o, 1), randSlice(rng, o*b, 1)
	for _, act := range []activation{actNone, actReLU, actSigmoid} {
		run := func(mine bool) []*tensors.Tensor {
			return MustNewExec(testBackend(), func(x, w, bias, r *Node) []*Node {
				var y *Node
				if mine {
					y = denseT(x, w, bias, act)
				} else {
					y = applyActivation(act, Add(Dot(w, x).Product(), Reshape(bias, o, 1)))
				}
				return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, w, bias)...)
			}).MustCall(tensors.FromFlatDataAndDimensions(x, k, b), tensors.FromFlatDataAndDimensions(w, o, k),
				tensors.FromFlatDataAndDimensions(bias, o), tensors.FromFlatDataAndDimensions(r, o, b))
		}
		got, want := run(true), run(false)
		for i, what := range []string{"value", "dx", "dW", "db"} {
			if d := maxAbsDiff(flat64(t, got[i]), flat64(t, want[i])); d > 1e-12 {
				t.Errorf("%s %s: max |diff| = %g", act, what, d)
			}
		}
	}
}

// TestZeroBorderEqualsCropAndPad checks the decoder's shortcut: a sub-pixel layer
// whose border ring is zeroed, followed by a convolution with padding 0, equals the
// cropped sub-pixel layer followed by a convolution with padding 1 (values and
// gradients w.r.t. both layers' weights and the input).
func TestZeroBorderEqualsCropAndPad(t *testing.T) {
	const b, h, w, c, o, o2 = 3, 3, 4, 2, 3, 2
	rng := rand.New(rand.NewPCG(9, 10))
	x := randSlice(rng, c*h*w*b, 1)
	w1 := randSlice(rng, 4*o*c*4, 0.6)
	b1 := randSlice(rng, 4*o, 0.3)
	w2 := randSlice(rng, 4*o2*o*4, 0.6)
	b2 := randSlice(rng, 4*o2, 0.3)
	r := randSlice(rng, 4*o2*(2*h+1)*(2*w+1)*b, 1)
	run := func(shortcut bool) []*tensors.Tensor {
		return MustNewExec(testBackend(), func(x, w1, b1, w2, b2, r *Node) []*Node {
			var hid, y *Node
			if shortcut {
				hid = subPixelRaw(x, w1, b1, actReLU, true)
				y = conv2D(hid, w2, b2, 0, 0, actSigmoid)
			} else {
				hid = subPixelConv(x, w1, b1, actReLU)
				y = conv2D(hid, w2, b2, 1, 1, actSigmoid)
			}
			return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), x, w1, b1, w2, b2)...)
		}).MustCall(
			tensors.FromFlatDataAndDimensions(x, c, h, w, b),
			tensors.FromFlatDataAndDimensions(w1, 4*o, c, 2, 2),
			tensors.FromFlatDataAndDimensions(b1, 4*o),
			tensors.FromFlatDataAndDimensions(w2, 4*o2, o, 2, 2),
			tensors.FromFlatDataAndDimensions(b2, 4*o2),
			tensors.FromFlatDataAndDimensions(r, 4*o2, 2*h+1, 2*w+1, b))
	}
	got, want := run(true), run(false)
	for i, what := range []string{"value", "dx", "dW1", "db1", "dW2", "db2"} {
		if d := maxAbsDiff(flat64(t, got[i]), flat64(t, want[i])); d > 1e-12 {
			t.Errorf("%s: max |diff| = %g", what, d)
		}
	}
}

// TestSubPixelOutputMatchesReference checks the decoder's output layer (sub-pixel form
// in, col2im product, batch-major out) against the explicit formulation it replaces —
// depth-to-space of the input, a 2×2 convolution with padding 0, depth-to-space and a
// one-pixel crop — values and gradients w.r.t. the input, weights and bias.
func TestSubPixelOutputMatchesReference(t *testing.T) {
	tests := []struct {
		b, h, w, c, o int
		act           activation
	}{
		{2, 3, 4, 3, 1, actSigmoid},
		{3, 4, 3, 2, 2, actNone},
		{1, 3, 3, 2, 1, actReLU},
		{2, 8, 8, 2, 1, actSigmoid}, // the reference network's 8×8 sub-pixel grid
	}
	for _, tc := range tests {
		name := fmt.Sprintf("b%d_%dx%dx%d_o%d_%s", tc.b, tc.h, tc.w, tc.c, tc.o, tc.act)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			h := randSlice(rng, 4*tc.c*tc.h*tc.w*tc.b, 1)
			w := randSlice(rng, 4*tc.o*tc.c*4, 0.6)
			bias := randSlice(rng, 4*tc.o, 0.3)
			side, sideW := 4*tc.h-4, 4*tc.w-4
			r := randSlice(rng, tc.b*side*sideW*tc.o, 1)
			run := func(mine bool) []*tensors.Tensor {
				return MustNewExec(testBackend(), func(h, w, b, r *Node) []*Node {
					var y *Node
					if mine {
						y = subPixelOutput(h, w, b, tc.act)
					} else {
						y = cropBorder(depthToSpace(conv2D(depthToSpace(h), w, b, 0, 0, tc.act))) // [O,S,S,B]
						y = TransposeAllAxes(y, 3, 1, 2, 0)
					}
					return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), h, w, b)...)
				}).MustCall(
					tensors.FromFlatDataAndDimensions(h, 4*tc.c, tc.h, tc.w, tc.b),
					tensors.FromFlatDataAndDimensions(w, 4*tc.o, tc.c, 2, 2),
					tensors.FromFlatDataAndDimensions(bias, 4*tc.o),
					tensors.FromFlatDataAndDimensions(r, tc.b, side, sideW, tc.o))
			}
			got, want := run(true), run(false)
			if !got[0].Shape().Equal(want[0].Shape()) {
				t.Fatalf("shape %s, want %s", got[0].Shape(), want[0].Shape())
			}
			for i, what := range []string{"value", "dh", "dW", "db"} {
				g, w := flat64(t, got[i]), flat64(t, want[i])
				if d := maxAbsDiff(g, w); d > 1e-12*(1+maxAbs(w)) {
					t.Errorf("%s: max |diff| = %g (max |want| = %g)", what, d, maxAbs(w))
				}
			}
		})
	}
}
