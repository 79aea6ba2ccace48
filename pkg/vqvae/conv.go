package vqvae

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// This file holds the network's layers as graph functions with hand-written backward
// passes (performance.md, "window gather" row).
//
// Layout. Inside the encoder and decoder, tensors are feature-major with the batch
// last: feature maps are [C,H,W,B] and dense activations [F,B]. With this layout every
// matrix product of the forward and backward passes runs in one of the matmul kernel's
// native layouts (no transposes of activations or gradients), and the im2col gather
// copies contiguous runs of Wo·B values.
//
// Every layer is an affine map of "patches" followed by an element-wise activation,
//
//	y = act(W·P + b),   P [K,M] built from the input x, W [O,K], b [O], y [O,M],
//
// and its backward pass, given v = ∂L/∂y, is
//
//	δ  = act'(·) ⊙ v                 [O,M]
//	∂W = (P·δᵀ)ᵀ                     [O,K]   (δ as right operand in the "transposed"
//	                                          layout; only the small result is transposed)
//	∂b = Σ_m δ                       [O]
//	∂x = layer-specific (Wᵀ·δ for a dense layer, a window-gather convolution of δ with
//	     the flipped kernel for a stride-1 convolution).
//
// GoMLX only offers single-input custom gradients (IdentityWithCustomGradient), so a
// layer places identity nodes with custom gradients on its input x, on W, on b and on
// its output y. The output hook runs first in the reverse sweep (it is the newest of
// the four nodes) and stores δ; the three input hooks then return the gradients above
// computed from δ and ignore the gradients that autodiff routed to them through the
// default rules of Dot, Gather and Pad. Those default-rule nodes are never consumed and
// the backend drops them (dead-code elimination), so they cost nothing at run time.
//
// Copies. The go backend copies a buffer that an Identity or a Reshape reads while it
// has other consumers. The layers therefore never reshape a shared buffer (patches are
// built directly as [K, Ho, Wo, B], δ keeps the output's shape) and the ReLU backward
// reads the pre-activation rather than the output, so that the output — the next
// layer's input — has a single consumer.
//
// Data movement. On the go backend the time not spent in matrix products goes to
// copies (im2col gathers, padding, the matmul's operand packing), so the layers avoid
// materialising intermediate layouts: stride-2 convolutions gather their patches
// straight from the padded input (no space-to-depth copy, convStride2), the decoder's
// up-sampling stays in sub-pixel form and its output layer multiplies before gathering
// (subpixel.go), masked outputs are a bias offset rather than a multiplication
// (affineSpec.outMask), and kernels are flipped by the gather's indices, not by Reverse.

// activation is the element-wise nonlinearity fused into a layer.
type activation int

const (
	// actNone is the identity.
	actNone activation = iota
	// actReLU is max(0, x).
	actReLU
	// actSigmoid is 1/(1+e^{-x}).
	actSigmoid
)

func (a activation) String() string {
	switch a {
	case actNone:
		return "none"
	case actReLU:
		return "relu"
	case actSigmoid:
		return "sigmoid"
	}
	return fmt.Sprintf("activation(%d)", int(a))
}

func applyActivation(a activation, x *Node) *Node {
	switch a {
	case actReLU:
		return MaxScalar(x, 0)
	case actSigmoid:
		// The clip keeps outputs ≥ σ(−30) ≈ 1e−13: a saturated output layer would
		// otherwise produce subnormal floats, which slow float arithmetic ~10×.
		return Sigmoid(ClipScalar(x, -30, 30))
	}
	return x
}

// activationVJP returns v ⊙ act'(pre). ReLU reads the pre-activation (so the layer's
// output buffer has a single consumer and the next layer's input hook does not have to
// copy it); the sigmoid reads the output y = act(pre).
func activationVJP(a activation, pre, y, v *Node) *Node {
	switch a {
	case actReLU:
		// v ⊙ 1[pre > 0] computed as v ⊙ max(sign(pre), 0): the same values, but Sign,
		// Max and Mul are vectorised in the go backend while GreaterThan is a scalar loop
		// (GreaterThan + Where took 1.6× as long in a micro-benchmark).
		return Mul(v, MaxScalar(Sign(pre), 0))
	case actSigmoid:
		return Mul(v, Mul(y, OneMinus(y)))
	}
	return v
}

// affineSpec describes how a layer builds its patches from its input and how it maps
// δ back to the input.
type affineSpec struct {
	// patches maps the layer input x to P [K, M...] (K rows; the remaining axes, of
	// total size M, are the output positions in the order of outDims[1:]).
	patches func(x *Node) *Node
	// inputVJP maps δ (shape outDims) and W [O,K] to ∂L/∂x (shape of x).
	inputVJP func(delta, w2 *Node) *Node
	// outDims is the output shape [O, M...].
	outDims []int
	// outMask, if not nil, zeroes outputs of a ReLU layer: a constant [O, M/B] (per
	// channel and output position, shared by the batch) that is 0 where the output is
	// kept and maskedPre where it is forced to 0. It is added to the bias, so
	// ReLU(W·P + b + mask) is ReLU(W·P + b) or exactly 0 without an extra pass over
	// the output, and δ = 1[pre > 0] ⊙ v vanishes at the masked outputs.
	outMask *Node
}

// affine computes act(W·P + b) with the hand-written backward pass described at the
// top of this file. w may have any shape whose first axis is O (it is used as [O,K]);
// b is [O]. No buffer with several consumers is reshaped (the go backend copies those).
func affine(x, w, b *Node, act activation, spec affineSpec) *Node {
	o := w.Shape().Dimensions[0]
	k := w.Shape().Size() / o
	if b.Rank() != 1 || b.Shape().Dimensions[0] != o {
		exceptions.Panicf("vqvae: bias shape %s does not match %d output channels of weights %s", b.Shape(), o, w.Shape())
	}
	if spec.outMask != nil && act != actReLU {
		exceptions.Panicf("vqvae: output mask needs a ReLU layer, got %s", act)
	}
	var delta *Node // δ (shape outDims), set by the output hook during the reverse sweep.
	var p *Node     // P [K, M...], the forward patches.
	needDelta := func(what string) *Node {
		if delta == nil {
			exceptions.Panicf("vqvae: internal error: gradient of %s requested before the layer output's gradient", what)
		}
		return delta
	}
	posAxes := func(n *Node) []int { // all axes but the first
		axes := make([]int, n.Rank()-1)
		for i := range axes {
			axes[i] = i + 1
		}
		return axes
	}
	wShape := w.Shape()
	xI := IdentityWithCustomGradient(x, func(_, _ *Node) *Node {
		return spec.inputVJP(needDelta("layer input"), Reshape(w, o, k))
	})
	wI := IdentityWithCustomGradient(w, func(_, _ *Node) *Node {
		// ∂Wᵀ = P·δᵀ: [K,M]·[O,M]ᵀ → [K,O], then a transpose of the small result.
		d := needDelta("weights")
		dwT := Dot(p, d).General(posAxes(p), nil, posAxes(d), nil)
		return Reshape(TransposeAllAxes(dwT, 1, 0), wShape.Dimensions...)
	})
	bI := IdentityWithCustomGradient(b, func(_, _ *Node) *Node {
		d := needDelta("bias")
		return ReduceSum(d, posAxes(d)...)
	})
	p = spec.patches(xI)
	if p.Shape().Dimensions[0] != k || p.Shape().Size() != k*(shapes.Make(p.DType(), spec.outDims...).Size()/o) {
		exceptions.Panicf("vqvae: patches shape %s do not match weights %s and output %v", p.Shape(), wShape, spec.outDims)
	}
	m := p.Shape().Size() / k
	// pre = W·P + b: [O,K]·[K,M] → [O,M].
	pre := Dot(Reshape(wI, o, k), p).General([]int{1}, nil, []int{0}, nil)
	if spec.outMask == nil {
		pre = Add(Reshape(pre, o, m), ExpandAxes(bI, 1))
	} else {
		// Per-position bias b[o] + mask[o, i] as [O·M/B, 1], broadcast over the batch.
		pos := spec.outMask.Shape().Dimensions[1]
		bm := Reshape(Add(spec.outMask, ExpandAxes(bI, 1)), o*pos, 1)
		pre = Reshape(Add(Reshape(pre, o*pos, m/pos), bm), o, m)
	}
	y := Reshape(applyActivation(act, pre), spec.outDims...)
	return IdentityWithCustomGradient(y, func(out, v *Node) *Node {
		if act == actReLU {
			delta = Reshape(activationVJP(act, pre, nil, Reshape(v, o, m)), spec.outDims...)
		} else {
			delta = activationVJP(act, nil, out, v)
		}
		return v
	})
}

// denseT is a dense layer in feature-major layout: xT [K,B], w [O,K], b [O] →
// act(W·xT + b) [O,B]. Backward: ∂x = Wᵀ·δ.
func denseT(xT, w, b *Node, act activation) *Node {
	if xT.Rank() != 2 || w.Rank() != 2 || w.Shape().Dimensions[1] != xT.Shape().Dimensions[0] {
		exceptions.Panicf("vqvae: dense layer wants x [K,B] and w [O,K], got %s and %s", xT.Shape(), w.Shape())
	}
	bsz := xT.Shape().Dimensions[1]
	o := w.Shape().Dimensions[0]
	return affine(xT, w, b, act, affineSpec{
		patches: func(x *Node) *Node { return x },
		inputVJP: func(delta, w2 *Node) *Node {
			// [K,O]·[O,B] → [K,B] (only the small weight matrix is transposed).
			return Dot(TransposeAllAxes(w2, 1, 0), delta).General([]int{1}, nil, []int{0}, nil)
		},
		outDims: []int{o, bsz},
	})
}

// windowPatches is the im2col step of a stride-1 convolution in [C,H,W,B] layout: it
// pads x with zeros (padLo before, padHi after, on both spatial axes) and copies, with
// one GatherSlices, the Ho×Wo×B block seen by every kernel tap into a row:
// P [C·k·k, Ho, Wo, B], rows ordered (c, ky, kx), Ho = H+padLo+padHi−k+1. Each copied
// run is Wo·B contiguous values. With flip, row (c, ky, kx) holds tap (k−1−ky, k−1−kx)
// (the patches of a convolution with the spatially flipped kernel, without flipping it).
func windowPatches(x *Node, k, padLo, padHi int, flip bool) *Node {
	if x.Rank() != 4 {
		exceptions.Panicf("vqvae: patches want x [C,H,W,B], got %s", x.Shape())
	}
	if padLo < 0 || padHi < 0 {
		exceptions.Panicf("vqvae: negative padding (%d, %d)", padLo, padHi)
	}
	dims := x.Shape().Dimensions
	c, h, w, bsz := dims[0], dims[1], dims[2], dims[3]
	x = padSpatial(x, padLo, padHi)
	ho, wo := h+padLo+padHi-k+1, w+padLo+padHi-k+1
	if ho <= 0 || wo <= 0 {
		exceptions.Panicf("vqvae: kernel %d larger than padded input %dx%d", k, h+padLo+padHi, w+padLo+padHi)
	}
	starts := make([][][][]int32, c)
	for ci := range c {
		starts[ci] = make([][][]int32, k)
		for ky := range k {
			starts[ci][ky] = make([][]int32, k)
			for kx := range k {
				ty, tx := ky, kx
				if flip {
					ty, tx = k-1-ky, k-1-kx
				}
				starts[ci][ky][kx] = []int32{int32(ci), int32(ty), int32(tx)}
			}
		}
	}
	p := GatherSlices(x, []int{0, 1, 2}, Const(x.Graph(), starts), []int{1, ho, wo}, true) // [C,k,k,1,Ho,Wo,B]
	return Reshape(p, c*k*k, ho, wo, bsz)
}

// padSpatial pads the spatial axes 1 and 2 of x [C,H,W,B] with zeros: lo before and hi
// after, on both axes.
//
// The padding value is −0.0, which equals 0 in every arithmetic use (x·(−0) = ±0,
// a + (−0) = a): the go backend fills a buffer padded with +0 by a scalar loop but any
// other value by memmove, which is faster.
func padSpatial(x *Node, lo, hi int) *Node { return padSpatialAxes(x, 1, 2, lo, hi) }

// padSpatialAxes is padSpatial for the spatial axes ay and ax of x.
func padSpatialAxes(x *Node, ay, ax, lo, hi int) *Node {
	if lo == 0 && hi == 0 {
		return x
	}
	pad := compute.PadAxis{Start: lo, End: hi}
	axes := make([]compute.PadAxis, x.Rank())
	axes[ay], axes[ax] = pad, pad
	return Pad(x, negZero(x), axes...)
}

// negZero returns the scalar −0.0 of x's dtype.
func negZero(x *Node) *Node {
	return ConstAsDType(x.Graph(), x.DType(), math.Copysign(0, -1))
}

// conv2D is a stride-1 convolution with zero padding in [C,H,W,B] layout:
// x [C,H,W,B], w [O,C,k,k], b [O] → act(conv) [O,Ho,Wo,B], Ho = H+padLo+padHi−k+1
// (cross-correlation, as in every deep-learning library). Backward: ∂x is the
// window-gather convolution of δ, padded by k−1−padLo / k−1−padHi, with the spatially
// flipped, channel-transposed kernel; ∂W and ∂b as in affine.
func conv2D(x, w, b *Node, padLo, padHi int, act activation) *Node {
	return conv2DMasked(x, w, b, padLo, padHi, act, nil)
}

// conv2DMasked is conv2D with an optional 0/1 output mask [O,Ho,Wo] (see affineSpec.outMask).
func conv2DMasked(x, w, b *Node, padLo, padHi int, act activation, mask [][][]float64) *Node {
	if x.Rank() != 4 || w.Rank() != 4 {
		exceptions.Panicf("vqvae: convolution wants x [C,H,W,B] and w [O,C,k,k], got %s and %s", x.Shape(), w.Shape())
	}
	wd := w.Shape().Dimensions
	o, c, k := wd[0], wd[1], wd[2]
	if wd[3] != k || x.Shape().Dimensions[0] != c {
		exceptions.Panicf("vqvae: kernel %s does not fit input %s (want [O,C,k,k] and [C,H,W,B])", w.Shape(), x.Shape())
	}
	if padLo > k-1 || padHi > k-1 {
		exceptions.Panicf("vqvae: padding (%d,%d) larger than k-1=%d is not supported", padLo, padHi, k-1)
	}
	xd := x.Shape().Dimensions
	h, wdt, bsz := xd[1], xd[2], xd[3]
	ho, wo := h+padLo+padHi-k+1, wdt+padLo+padHi-k+1
	return affine(x, w, b, act, affineSpec{
		patches: func(x *Node) *Node { return windowPatches(x, k, padLo, padHi, false) },
		inputVJP: func(delta, w2 *Node) *Node {
			// ∂x[c,y,x] = Σ_{o,ky,kx} w[o,c,ky,kx]·δp[o, y+k−1−ky, x+k−1−kx]: the patches of
			// δ padded by k−1−pad with flipped taps, times the channel-transposed kernel.
			pv := windowPatches(delta, k, k-1-padLo, k-1-padHi, true)                  // [O·k·k, H, W, B]
			wt := Reshape(TransposeAllAxes(Reshape(w2, o, c, k*k), 1, 0, 2), c, o*k*k) // wt[c,(o,ky,kx)] = w[o,c,ky,kx]
			return Dot(wt, pv).General([]int{1}, nil, []int{0}, nil)                   // [C, H, W, B]
		},
		outDims: []int{o, ho, wo, bsz},
		outMask: maskNode(x, mask),
	})
}

// maskedPre is the pre-activation offset of a masked output: ReLU(pre + maskedPre) = 0
// for any finite pre of a working network (|pre| ≪ 1e30), in float32 and float64.
const maskedPre = -1e30

// maskNode turns a [O][Ho][Wo] 0/1 mask into the additive constant [O, Ho·Wo] of
// affineSpec.outMask (0 where the mask is 1, maskedPre where it is 0), of x's dtype.
func maskNode(x *Node, mask [][][]float64) *Node {
	if mask == nil {
		return nil
	}
	var flat []float64
	for _, a := range mask {
		for _, r := range a {
			for _, v := range r {
				if v == 0 {
					flat = append(flat, maskedPre)
				} else {
					flat = append(flat, 0)
				}
			}
		}
	}
	return Reshape(ConstAsDType(x.Graph(), x.DType(), flat), len(mask), len(flat)/len(mask))
}

// convStride2 is a 4×4 convolution with stride 2 and zero padding 1 (output H/2×W/2):
// x [C,H,W,B], w [O,4C,2,2] (see stride2Kernel for the map from a [4,4,C,O] kernel),
// b [O] → [O,H/2,W/2,B]. It is the stride-1 2×2 convolution of the space-to-depth s
// of the padded input xp, s[(c,ry,rx), i, j] = xp[c, 2i+ry, 2j+rx], but s is never
// materialised: one GatherSlices copies the patches straight from xp, and the input
// gradient, computed for s, is moved back to x (depth-to-space and crop) by another.
func convStride2(x, w, b *Node, act activation) *Node {
	if x.Rank() != 4 || w.Rank() != 4 {
		exceptions.Panicf("vqvae: stride-2 convolution wants x [C,H,W,B] and w [O,4C,2,2], got %s and %s", x.Shape(), w.Shape())
	}
	xd, wd := x.Shape().Dimensions, w.Shape().Dimensions
	c, h, wdt, bsz := xd[0], xd[1], xd[2], xd[3]
	o := wd[0]
	if wd[1] != 4*c || wd[2] != 2 || wd[3] != 2 {
		exceptions.Panicf("vqvae: stride-2 kernel %s does not fit input %s (want [O,4C,2,2])", w.Shape(), x.Shape())
	}
	if h%2 != 0 || wdt%2 != 0 {
		exceptions.Panicf("vqvae: stride-2 convolution of odd spatial size %dx%d", h, wdt)
	}
	u, v := h/2+1, wdt/2+1 // space-to-depth grid of the padded input
	ho, wo := h/2, wdt/2
	g := x.Graph()
	return affine(x, w, b, act, affineSpec{
		patches: func(x *Node) *Node {
			// xp [C, U, 2, V, 2, B]: xp[c, 2i+ry, 2j+rx, b] sits at [c, i, ry, j, rx, b].
			xp := Reshape(padSpatial(x, 1, 1), c, u, 2, v, 2, bsz)
			// Row (c, ry, rx, qy, qx) of P is s[(c,ry,rx), i+qy, j+qx] = xp[c, i+qy, ry, j+qx, rx]
			// over (i, j, b): runs of B contiguous values.
			starts := make([][][][][][]int32, c)
			for ci := range c {
				starts[ci] = make([][][][][]int32, 2)
				for ry := range 2 {
					starts[ci][ry] = make([][][][]int32, 2)
					for rx := range 2 {
						starts[ci][ry][rx] = make([][][]int32, 2)
						for qy := range 2 {
							starts[ci][ry][rx][qy] = make([][]int32, 2)
							for qx := range 2 {
								starts[ci][ry][rx][qy][qx] = []int32{int32(ci), int32(qy), int32(ry), int32(qx), int32(rx)}
							}
						}
					}
				}
			}
			p := GatherSlices(xp, []int{0, 1, 2, 3, 4}, Const(g, starts), []int{1, ho, 1, wo, 1}, true)
			return Reshape(p, 16*c, ho, wo, bsz)
		},
		inputVJP: func(delta, w2 *Node) *Node {
			// ∂s as for a stride-1 2×2 convolution with padding 0 (see conv2D).
			pv := windowPatches(delta, 2, 1, 1, true)                                            // [O·4, U, V, B]
			wt := Reshape(TransposeAllAxes(Reshape(w2, o, 4*c, 4), 1, 0, 2), 4*c, o*4)           // wt[(c,ry,rx),(o,qy,qx)]
			ds := Reshape(Dot(wt, pv).General([]int{1}, nil, []int{0}, nil), c, 2, 2, u, v, bsz) // ∂s [C,2,2,U,V,B]
			// ∂x[c, y, x'] = ∂xp[c, y+1, x'+1] = ∂s[c, (y+1)%2, (x'+1)%2, (y+1)/2, (x'+1)/2]:
			// one copy of B values per pixel.
			starts := make([][][][]int32, c)
			for ci := range c {
				starts[ci] = make([][][]int32, h)
				for y := range h {
					starts[ci][y] = make([][]int32, wdt)
					for xx := range wdt {
						starts[ci][y][xx] = []int32{int32(ci), int32((y + 1) % 2), int32((xx + 1) % 2), int32((y + 1) / 2), int32((xx + 1) / 2)}
					}
				}
			}
			dx := GatherSlices(ds, []int{0, 1, 2, 3, 4}, Const(g, starts), []int{1, 1, 1, 1, 1}, true)
			return Reshape(dx, c, h, wdt, bsz)
		},
		outDims: []int{o, ho, wo, bsz},
	})
}

// stride2Kernel maps a 4×4 kernel k4 [4,4,C,O] (GoMLX/TensorFlow layout) of a
// stride-2, padding-1 convolution to the [O,4C,2,2] kernel of convStride2:
// w[o, c·4+ry·2+rx, qy, qx] = k4[2qy+ry, 2qx+rx, c, o].
func stride2Kernel[T float32 | float64](k4 []T, c, o int) []T {
	w := make([]T, o*4*c*2*2)
	for ky := range 4 {
		for kx := range 4 {
			qy, ry, qx, rx := ky/2, ky%2, kx/2, kx%2
			for ci := range c {
				for oi := range o {
					src := ((ky*4+kx)*c+ci)*o + oi
					dst := ((oi*4*c+ci*4+ry*2+rx)*2+qy)*2 + qx
					w[dst] = k4[src]
				}
			}
		}
	}
	return w
}

// checkFloat panics unless x has a float dtype.
func checkFloat(x *Node, what string) {
	if !x.DType().IsFloat() {
		exceptions.Panicf("vqvae: %s must be float, got %s", what, x.DType())
	}
}
