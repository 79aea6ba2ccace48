package vqvae

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// The decoder's two stride-2 transposed convolutions (4×4 kernels, padding 1) run as
// sub-pixel convolutions: a 4×4/2 transposed convolution of x [C,H,W,B] equals a 2×2
// stride-1 convolution of x padded by 1 to 4·O channels (one per output phase
// (ry, rx)), then depth-to-space (channel o·4+ry·2+rx becomes pixel (2i+ry, 2j+rx) of
// a [O,2H+2,2W+2] image) and a one-pixel crop. The decoder never materialises the
// depth-to-space or the crop:
//
//   - the first up-convolution (conv2DMasked with subPixelBorderMask) stays in
//     sub-pixel form and zeroes the image's outer pixel ring instead of cropping it,
//     so the ring serves as the next layer's zero padding;
//   - the output layer (subPixelOutput) reads that sub-pixel form directly and writes
//     the cropped image batch-major.
//
// The tests check both against the explicit chain (reference_test.go), which is in
// turn checked against the transposed convolution's definition.

// subPixelKernel maps a 4×4 kernel k4 [4,4,C,O] of a stride-2, padding-1 transposed
// convolution (out[2i−1+ky] += x[i]·k4[ky]) to the [4O,C,2,2] sub-pixel kernel:
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

// subPixelBorderMask is the 0/1 mask [4O][hh][ww] of a sub-pixel convolution output
// [4O,hh,ww,B] (channel o·4+ry·2+rx is pixel (2i+ry, 2j+rx) of the [O,2hh,2ww] image)
// that is 0 on the image's outer pixel ring.
func subPixelBorderMask(o4, hh, ww int) [][][]float64 {
	mask := make([][][]float64, o4)
	for ch := range o4 {
		ry, rx := (ch/2)%2, ch%2
		mask[ch] = make([][]float64, hh)
		for i := range hh {
			mask[ch][i] = make([]float64, ww)
			for j := range ww {
				// Pixel (2i+ry, 2j+rx) of the [2hh, 2ww] output.
				y, xx := 2*i+ry, 2*j+rx
				if y > 0 && xx > 0 && y < 2*hh-1 && xx < 2*ww-1 {
					mask[ch][i][j] = 1
				}
			}
		}
	}
	return mask
}

// subPixelOutput is the decoder's output layer: the sub-pixel 4×4/2 transposed
// convolution (w [4O,C,2,2], b [4O], see subPixelKernel) of a zero-bordered image
// hp [C,2H,2W,B], then the activation and the one-pixel crop — the same function as
// cropBorder(depthToSpace(conv2D(hp, w, b, 0, 0, act))) of reference_test.go —
// returned batch-major as [B, 4H−4, 4W−4, O].
//
// hp arrives in sub-pixel form, h [4C,H,W,B] with h[(c,ry1,rx1), i1, j1] =
// hp[c, 2i1+ry1, 2j1+rx1] (the raw output of the previous sub-pixel layer, see
// subPixelBorderMask), so its depth-to-space is never materialised.
//
// With few output channels it is cheaper to multiply first and gather after than to
// build im2col patches: Z = Wz·h [16O, 4HWB] holds every (output channel, tap) product,
// Wz[(o,ry,rx,qy,qx), c] = w[(o,ry,rx), c, qy, qx], and each output is the sum of the
// four Z rows of its taps at shifted positions (one GatherSlices, one ReduceSum). The
// patches would be 32× larger than Z for the reference's C = 32, O = 1.
//
// Output layout. Cropped pixel (Y, X) with Y = 4a + 2p + r'y (a < H−1, p, r'y ∈ {0,1})
// is sub-pixel phase ry = 1 − r'y at row i = 2a + p + r'y of the uncropped
// sub-pixel grid; inside the layer the activation is kept as
// [(o, r'y, r'x), p, q, a, e, B] (X = 4e + 2q + r'x), which makes every gather a
// regular slice.
//
// Backward, given δ = act'(·) ⊙ ∂L/∂y in that layout: ∂Z is a window gather of δ (zero
// padded by one on a and e), ∂h = Wzᵀ·∂Z, ∂Wz = ∂Z·hᵀ and ∂b = Σ δ.
func subPixelOutput(h, w, b *Node, act activation) *Node {
	if h.Rank() != 4 || w.Rank() != 4 || b.Rank() != 1 {
		exceptions.Panicf("vqvae: sub-pixel output layer wants h [4C,H,W,B], w [4O,C,2,2], b [4O], got %s, %s, %s", h.Shape(), w.Shape(), b.Shape())
	}
	hd, wd := h.Shape().Dimensions, w.Shape().Dimensions
	c4, hh, wh, bsz := hd[0], hd[1], hd[2], hd[3]
	o4, c := wd[0], wd[1]
	if c4 != 4*c || o4%4 != 0 || wd[2] != 2 || wd[3] != 2 || b.Shape().Dimensions[0] != o4 || hh < 2 || wh < 2 {
		exceptions.Panicf("vqvae: sub-pixel output layer: kernel %s and bias %s do not fit input %s", w.Shape(), b.Shape(), h.Shape())
	}
	o := o4 / 4
	n, m := hh-1, wh-1 // output is [B, 4n, 4m, O]
	g := h.Graph()
	posH := 4 * hh * wh * bsz // positions of h per hp channel: (ry1, rx1, i1, j1, b)
	posY := 4 * n * m * bsz   // output positions per (o, r'y, r'x): (p, q, a, e, b)

	// tapMatrix maps w [4O,C,2,2] to Wz [16O, C], rows (o, ry, rx, qy, qx).
	tapMatrix := func(w *Node) *Node { return Reshape(TransposeAllAxes(w, 0, 2, 3, 1), 16*o, c) }
	// flipPhase maps a per-(o, ry, rx) vector to per-(o, r'y, r'x) = (o, 1−ry, 1−rx) (an involution).
	flipPhase := func(v *Node) *Node { return Reshape(Reverse(Reshape(v, o, 2, 2), 1, 2), o4) }

	var delta *Node // δ [o, r'y, r'x, p, q, a, e, B], set by the output hook.
	var hm *Node    // h as [C, posH], the right operand of the forward product.
	needDelta := func(what string) *Node {
		if delta == nil {
			exceptions.Panicf("vqvae: internal error: gradient of %s requested before the layer output's gradient", what)
		}
		return delta
	}
	// ∂Z [16O, posH]: ∂Z[(o,ry,rx,qy,qx), ry1, rx1, i1, j1] = δ[(o,1−ry,1−rx), p, q, a, e]
	// where 2i1+ry1 = 2a+p+(1−ry)+qy (and likewise for columns), i.e. with
	// t = ry1−(1−ry)−qy ∈ [−2,1]: p = t mod 2, a = i1 + ⌊t/2⌋ (zero outside [0,n)).
	dZ := func() *Node {
		d := needDelta("layer input")
		d = Reshape(d, o4, 2, 2, n, m, bsz)
		d = padSpatialAxes(d, 3, 4, 1, 1) // a, e padded by one: [4O, 2, 2, n+2, m+2, B]
		starts := make([]int32, 0, 16*o*4*5)
		for oi := range o {
			for ry := range 2 {
				for rx := range 2 {
					for qy := range 2 {
						for qx := range 2 {
							for ry1 := range 2 {
								for rx1 := range 2 {
									ty, tx := ry1-(1-ry)-qy, rx1-(1-rx)-qx
									starts = append(starts,
										int32(oi*4+(1-ry)*2+(1-rx)), int32(mod2(ty)), int32(mod2(tx)),
										int32(floorHalf(ty)+1), int32(floorHalf(tx)+1))
								}
							}
						}
					}
				}
			}
		}
		idx := Reshape(Const(g, starts), 16*o*4, 5)
		dz := GatherSlices(d, []int{0, 1, 2, 3, 4}, idx, []int{1, 1, 1, hh, wh}, true) // [16O·4, 1,1,1, H, W, B]
		return Reshape(dz, 16*o, posH)
	}
	var dz *Node // ∂Z, shared by the input and weight hooks.
	getDZ := func() *Node {
		if dz == nil {
			dz = dZ()
		}
		return dz
	}

	hI := IdentityWithCustomGradient(h, func(_, _ *Node) *Node {
		// ∂h = Wzᵀ·∂Z: [C,16O]·[16O,posH] → [C, (ry1,rx1,i1,j1,b)] = [4C,H,W,B].
		wzT := TransposeAllAxes(tapMatrix(w), 1, 0)
		dh := Dot(wzT, getDZ()).General([]int{1}, nil, []int{0}, nil)
		return Reshape(dh, c4, hh, wh, bsz)
	})
	wI := IdentityWithCustomGradient(w, func(_, _ *Node) *Node {
		// ∂Wz = ∂Z·hᵀ: [16O,posH]·[C,posH]ᵀ → [16O,C], back to [4O,C,2,2].
		dwz := Dot(getDZ(), hm).General([]int{1}, nil, []int{1}, nil)
		return TransposeAllAxes(Reshape(dwz, o4, 2, 2, c), 0, 3, 1, 2)
	})
	bI := IdentityWithCustomGradient(b, func(_, _ *Node) *Node {
		return flipPhase(ReduceSum(Reshape(needDelta("bias"), o4, posY), 1))
	})

	hm = Reshape(hI, c, posH)
	z := Dot(tapMatrix(wI), hm).General([]int{1}, nil, []int{0}, nil) // [16O, posH]
	z = Reshape(z, 16*o, 2, 2, hh, wh, bsz)
	// pre[(o,r'y,r'x), p, q, a, e] = Σ_{qy,qx} Z[(o,1−r'y,1−r'x,qy,qx), ry1, rx1, i1, j1]
	// with 2i1+ry1 = 2a+p+r'y+qy: ry1 = (p+r'y+qy) mod 2, i1 = a + ⌊(p+r'y+qy)/2⌋.
	starts := make([]int32, 0, 4*o4*4*5)
	for qy := range 2 {
		for qx := range 2 {
			for oi := range o {
				for rpy := range 2 {
					for rpx := range 2 {
						for p := range 2 {
							for q := range 2 {
								sy, sx := p+rpy+qy, q+rpx+qx
								starts = append(starts,
									int32((((oi*2+(1-rpy))*2+(1-rpx))*2+qy)*2+qx), int32(sy%2), int32(sx%2), int32(sy/2), int32(sx/2))
							}
						}
					}
				}
			}
		}
	}
	idx := Reshape(Const(g, starts), 4*o4*4, 5)
	gz := GatherSlices(z, []int{0, 1, 2, 3, 4}, idx, []int{1, 1, 1, n, m}, true) // [4·4O·4, 1,1,1, n, m, B]
	pre := ReduceSum(Reshape(gz, 4, o4*posY), 0)                                 // Σ over the 4 taps
	pre = Add(Reshape(pre, o4, posY), ExpandAxes(flipPhase(bI), 1))              // [(o,r'y,r'x), posY]
	y := Reshape(applyActivation(act, pre), o, 2, 2, 2, 2, n, m, bsz)
	y = IdentityWithCustomGradient(y, func(out, v *Node) *Node {
		if act == actReLU {
			delta = Reshape(activationVJP(act, pre, nil, Reshape(v, o4, posY)), out.Shape().Dimensions...)
		} else {
			delta = activationVJP(act, nil, out, v)
		}
		return v
	})
	// [o, r'y, r'x, p, q, a, e, b] → [(a, p, r'y), (e, q, r'x), o, b] → [b, 4n, 4m, o]: two
	// transposes with fast paths in the go backend (trailing axis kept, then 2D).
	y = Reshape(TransposeAllAxes(y, 5, 3, 1, 6, 4, 2, 0, 7), 16*n*m*o, bsz)
	return Reshape(TransposeAllAxes(y, 1, 0), bsz, 4*n, 4*m, o)
}

// mod2 is t mod 2 in {0, 1}; floorHalf is ⌊t/2⌋ (both for negative t too).
func mod2(t int) int      { return ((t % 2) + 2) % 2 }
func floorHalf(t int) int { return (t - mod2(t)) / 2 }
