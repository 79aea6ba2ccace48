package vqvae

import (
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Reference formulations for the tests: the explicit sub-pixel chain (depth-to-space,
// crop) that the network's layers compute without materialising it (subpixel.go).

// depthToSpace moves channels to 2×2 spatial blocks: [4C,H,W,B] → [C,2H,2W,B];
// channel c·4+ry·2+rx becomes pixel (2i+ry, 2j+rx) of image c.
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
		mask = subPixelBorderMask(w.Shape().Dimensions[0], x.Shape().Dimensions[1]+1, x.Shape().Dimensions[2]+1)
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
