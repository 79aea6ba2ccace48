package vqvae

import (
	"fmt"

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

// activationVJP returns v ⊙ act'(pre). ReLU reads the pre-activation (so the
// layer's output buffer has a single consumer and the next layer's input hook does not
// have to copy it); the sigmoid and masked layers read the output y = act(pre).
func activationVJP(a activation, pre, y, v *Node) *Node {
	switch a {
	case actReLU:
		zero := ScalarZero(v.Graph(), v.DType())
		if y != nil {
			return Where(GreaterThan(y, zero), v, zero)
		}
		return Where(GreaterThan(pre, zero), v, zero)
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
	// outMask, if not nil, is a 0/1 constant [O·M/B, 1] multiplied into the output
	// after the activation (ReLU only: δ = (y > 0) ⊙ v then vanishes where it is 0).
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
	pre = Add(Reshape(pre, o, m), ExpandAxes(bI, 1))
	y := applyActivation(act, pre)
	if spec.outMask != nil {
		rows := spec.outMask.Shape().Dimensions[0]
		y = Mul(Reshape(y, rows, o*m/rows), spec.outMask)
	}
	y = Reshape(y, spec.outDims...)
	return IdentityWithCustomGradient(y, func(out, v *Node) *Node {
		if act == actReLU && spec.outMask == nil {
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
// run is Wo·B contiguous values.
func windowPatches(x *Node, k, padLo, padHi int) *Node {
	if x.Rank() != 4 {
		exceptions.Panicf("vqvae: patches want x [C,H,W,B], got %s", x.Shape())
	}
	if padLo < 0 || padHi < 0 {
		exceptions.Panicf("vqvae: negative padding (%d, %d)", padLo, padHi)
	}
	dims := x.Shape().Dimensions
	c, h, w, bsz := dims[0], dims[1], dims[2], dims[3]
	if padLo > 0 || padHi > 0 {
		pad := compute.PadAxis{Start: padLo, End: padHi}
		x = Pad(x, ScalarZero(x.Graph(), x.DType()), compute.PadAxis{}, pad, pad, compute.PadAxis{})
	}
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
				starts[ci][ky][kx] = []int32{int32(ci), int32(ky), int32(kx)}
			}
		}
	}
	p := GatherSlices(x, []int{0, 1, 2}, Const(x.Graph(), starts), []int{1, ho, wo}, true) // [C,k,k,1,Ho,Wo,B]
	return Reshape(p, c*k*k, ho, wo, bsz)
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
		patches: func(x *Node) *Node { return windowPatches(x, k, padLo, padHi) },
		inputVJP: func(delta, w2 *Node) *Node {
			pv := windowPatches(delta, k, k-1-padLo, k-1-padHi) // [O·k·k, H, W, B]
			// Flipped kernel with channels swapped: wf[c, o, ky, kx] = w[o, c, k−1−ky, k−1−kx].
			wf := Reshape(TransposeAllAxes(Reverse(Reshape(w2, o, c, k, k), 2, 3), 1, 0, 2, 3), c, o*k*k)
			return Dot(wf, pv).General([]int{1}, nil, []int{0}, nil) // [C, H, W, B]
		},
		outDims: []int{o, ho, wo, bsz},
		outMask: maskNode(x, mask),
	})
}

// maskNode turns a [O][Ho][Wo] 0/1 mask into a constant [O·Ho·Wo, 1] of x's dtype.
func maskNode(x *Node, mask [][][]float64) *Node {
	if mask == nil {
		return nil
	}
	var flat []float64
	for _, a := range mask {
		for _, r := range a {
			flat = append(flat, r...)
		}
	}
	return Reshape(ConvertDType(Const(x.Graph(), flat), x.DType()), len(flat), 1)
}

// spaceToDepth moves 2×2 spatial blocks into channels: [C,H,W,B] → [4C,H/2,W/2,B];
// channel c·4+ry·2+rx holds x[c, 2i+ry, 2j+rx].
func spaceToDepth(x *Node) *Node {
	d := x.Shape().Dimensions
	c, h, w, b := d[0], d[1], d[2], d[3]
	if h%2 != 0 || w%2 != 0 {
		exceptions.Panicf("vqvae: space-to-depth of odd spatial size %dx%d", h, w)
	}
	x = Reshape(x, c, h/2, 2, w/2, 2, b)
	x = TransposeAllAxes(x, 0, 2, 4, 1, 3, 5) // [C,2,2,H/2,W/2,B]
	return Reshape(x, 4*c, h/2, w/2, b)
}

// depthToSpace is the inverse of spaceToDepth: [4C,H,W,B] → [C,2H,2W,B].
func depthToSpace(x *Node) *Node {
	d := x.Shape().Dimensions
	c4, h, w, b := d[0], d[1], d[2], d[3]
	if c4%4 != 0 {
		exceptions.Panicf("vqvae: depth-to-space of %d channels (not divisible by 4)", c4)
	}
	c := c4 / 4
	x = Reshape(x, c, 2, 2, h, w, b)
	x = TransposeAllAxes(x, 0, 3, 1, 4, 2, 5) // [C,H,2,W,2,B]
	return Reshape(x, c, 2*h, 2*w, b)
}

// convStride2 is a 4×4 convolution with stride 2 and zero padding 1 (output H/2×W/2),
// computed as a stride-1 2×2 convolution of the space-to-depth of the padded input:
// x [C,H,W,B], w [O,4C,2,2] (see stride2Kernel for the map from a [4,4,C,O] kernel),
// b [O] → [O,H/2,W/2,B].
func convStride2(x, w, b *Node, act activation) *Node {
	pad := compute.PadAxis{Start: 1, End: 1}
	xp := Pad(x, ScalarZero(x.Graph(), x.DType()), compute.PadAxis{}, pad, pad, compute.PadAxis{})
	return conv2D(spaceToDepth(xp), w, b, 0, 0, act)
}

// subPixelRaw is the uncropped sub-pixel convolution: a stride-1 2×2 convolution of
// x [C,H,W,B] padded by 1 to 4·O channels, then depth-to-space → [O,2H+2,2W+2,B].
// Cropping one pixel on every side gives a 4×4 transposed convolution with stride 2
// and padding 1 (see subPixelConv). w [4O,C,2,2] (output channel o·4+ry·2+rx; see
// subPixelKernel), b [4O]. With zeroBorder (ReLU only) the outer pixel ring is set to
// zero inside the layer, which equals the crop followed by a zero padding of 1: the
// next convolution can then run with padding 0.
func subPixelRaw(x, w, b *Node, act activation, zeroBorder bool) *Node {
	var mask [][][]float64
	if zeroBorder {
		o4 := w.Shape().Dimensions[0]
		hh, ww := x.Shape().Dimensions[1]+1, x.Shape().Dimensions[2]+1 // conv output size
		mask = make([][][]float64, o4)
		for ch := range o4 {
			ry, rx := (ch/2)%2, ch%2
			mask[ch] = make([][]float64, hh)
			for i := range hh {
				mask[ch][i] = make([]float64, ww)
				for j := range ww {
					// Pixel (2i+ry, 2j+rx) of the [2H+2, 2W+2] output.
					y, xx := 2*i+ry, 2*j+rx
					if y > 0 && xx > 0 && y < 2*hh-1 && xx < 2*ww-1 {
						mask[ch][i][j] = 1
					}
				}
			}
		}
	}
	return depthToSpace(conv2DMasked(x, w, b, 1, 1, act, mask))
}

// subPixelConv is the sub-pixel equivalent of a 4×4 transposed convolution with
// stride 2 and padding 1: x [C,H,W,B] → [O,2H,2W,B].
func subPixelConv(x, w, b *Node, act activation) *Node {
	return cropBorder(subPixelRaw(x, w, b, act, false))
}

// cropBorder removes one pixel on every side: [C,H,W,B] → [C,H−2,W−2,B].
func cropBorder(x *Node) *Node {
	d := x.Shape().Dimensions
	return Slice(x, AxisRange(), AxisRange(1, d[1]-1), AxisRange(1, d[2]-1), AxisRange())
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

// subPixelKernel maps a 4×4 kernel k4 [4,4,C,O] of a stride-2, padding-1 transposed
// convolution (out[2i−1+ky] += x[i]·k4[ky]) to the [4O,C,2,2] kernel of subPixelConv:
// w[o·4+ry·2+rx, c, qy, qx] = k4[ry+2−2qy, rx+2−2qx, c, o].
func subPixelKernel[T float32 | float64](k4 []T, c, o int) []T {
	w := make([]T, 4*o*c*2*2)
	for ry := range 2 {
		for rx := range 2 {
			for qy := range 2 {
				for qx := range 2 {
					ky, kx := ry+2-2*qy, rx+2-2*qx
					for ci := range c {
						for oi := range o {
							src := ((ky*4+kx)*c+ci)*o + oi
							dst := (((oi*4+ry*2+rx)*c+ci)*2+qy)*2 + qx
							w[dst] = k4[src]
						}
					}
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
