package vqvae

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Variable layout under the VQ-VAE's scope (e.g. "/vqvae"):
//
//	encoder/<layer>/{w,b}, decoder/<layer>/{w,b}, classifier/{w,b} (trainable)
//	codebook/{embeddings [K,D], size [K], sum [K,D]}                (EMA, not trainable)
//
// Weights are stored output-channel first: dense [O,K], convolutions [O,C,k,k].

// paramSpec describes one trainable tensor.
type paramSpec struct {
	scope  string // e.g. "encoder/conv1"
	name   string // "w" or "b"
	dims   []int
	fanIn  int  // fans of the equivalent reference layer (0 for biases)
	fanOut int  //
	relu   bool // the layer is followed by a ReLU (He initialisation)
}

// params lists the trainable tensors of c in a fixed order (the order of initialisation).
func (c Config) params() []paramSpec {
	f, d, s := c.F, c.D, c.Side
	var ps []paramSpec
	add := func(scope string, w []int, fanIn, fanOut int, relu bool) {
		ps = append(ps,
			paramSpec{scope: scope, name: "w", dims: w, fanIn: fanIn, fanOut: fanOut, relu: relu},
			paramSpec{scope: scope, name: "b", dims: []int{w[0]}})
	}
	switch c.Arch {
	case ArchMLP:
		add("encoder/fc1", []int{256, s * s}, s*s, 256, true)
		add("encoder/fc2", []int{128, 256}, 256, 128, true)
		add("encoder/fc3", []int{d, 128}, 128, d, false)
		add("decoder/fc1", []int{128, d}, d, 128, true)
		add("decoder/fc2", []int{256, 128}, 128, 256, true)
		add("decoder/fc3", []int{s * s, 256}, 256, s*s, false)
	default:
		b := s / 4
		// Fans are those of the reference layers (4×4 kernels for the stride-2 ones; a
		// 4×4/2 transposed convolution reaches 4 input taps per output pixel).
		add("encoder/conv1", []int{f, 4, 2, 2}, 16, 16*f, true)
		add("encoder/conv2", []int{2 * f, 4 * f, 2, 2}, 16*f, 32*f, true)
		add("encoder/conv3", []int{2 * f, 2 * f, 3, 3}, 18*f, 18*f, true)
		add("encoder/dense", []int{d, 2 * f}, 2*f, d, false)
		add("decoder/dense", []int{2 * f * b * b, d}, d, b*b*2*f, true)
		add("decoder/conv1", []int{2 * f, 2 * f, 3, 3}, 18*f, 18*f, true)
		add("decoder/up1", []int{4 * f, 2 * f, 2, 2}, 8*f, 16*f, true)
		add("decoder/up2", []int{4, f, 2, 2}, 4*f, 16, false)
	}
	if c.Classify {
		add("classifier", []int{c.NumClasses, d}, d, c.NumClasses, false)
	}
	return ps
}

// NumParameters returns the number of trainable scalars (encoder, decoder and, with
// Classify, the classification head).
func (c Config) NumParameters() (encoder, decoder, other int) {
	for _, p := range c.params() {
		n := 1
		for _, x := range p.dims {
			n *= x
		}
		switch {
		case strings.HasPrefix(p.scope, "encoder"):
			encoder += n
		case strings.HasPrefix(p.scope, "decoder"):
			decoder += n
		default:
			other += n
		}
	}
	return
}

// subScope enters every element of a "/"-separated path.
func subScope(scope *model.Scope, path string) *model.Scope {
	for _, p := range strings.Split(path, "/") {
		scope = scope.At("%s", p)
	}
	return scope
}

// InitVariables creates the VQ-VAE's variables under scope with deterministic values
// drawn from seed: He-uniform weights (U(±√(6/fan_in))) for layers followed by a ReLU
// and Glorot-uniform weights (the reference's Keras default) for the others, zero
// biases, and the reference codebook e ~ U(−1/K, 1/K) with zero EMA statistics. dtype
// is Float32 or Float64. Call it once before building graphs with Encode/Decode.
//
// (With Glorot weights throughout, the ReLU stacks shrink the signal: the initial
// latents have |z| ≈ 0.01 and the convolutional autoencoder learns several times slower.)
func (c Config) InitVariables(scope *model.Scope, seed uint64, dtype dtypes.DType) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if dtype != dtypes.Float32 && dtype != dtypes.Float64 {
		return fmt.Errorf("vqvae.InitVariables: dtype %s not supported (Float32 or Float64)", dtype)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed_0f_7a5e))
	for _, p := range c.params() {
		n := 1
		for _, x := range p.dims {
			n *= x
		}
		vals := make([]float64, n)
		if p.name == "w" {
			limit := math.Sqrt(6 / float64(p.fanIn+p.fanOut))
			if p.relu {
				limit = math.Sqrt(6 / float64(p.fanIn))
			}
			for i := range vals {
				vals[i] = (2*rng.Float64() - 1) * limit
			}
		}
		v, err := subScope(scope, p.scope).CreateVariable(p.name, makeTensor(vals, dtype, p.dims...))
		if err != nil {
			return fmt.Errorf("vqvae.InitVariables: %s/%s: %w", p.scope, p.name, err)
		}
		v.SetTrainable(true)
	}
	k, d := c.K, c.D
	e := make([]float64, k*d)
	for i := range e {
		e[i] = (2*rng.Float64() - 1) / float64(k)
	}
	cb := scope.At("codebook")
	for _, x := range []struct {
		name string
		vals []float64
		dims []int
	}{
		{"embeddings", e, []int{k, d}},
		{"size", make([]float64, k), []int{k}},
		{"sum", make([]float64, k*d), []int{k, d}},
	} {
		v, err := cb.CreateVariable(x.name, makeTensor(x.vals, dtype, x.dims...))
		if err != nil {
			return fmt.Errorf("vqvae.InitVariables: codebook/%s: %w", x.name, err)
		}
		v.SetTrainable(false)
	}
	return nil
}

// makeTensor builds a tensor of the given dtype from float64 values.
func makeTensor(vals []float64, dtype dtypes.DType, dims ...int) *tensors.Tensor {
	if dtype == dtypes.Float64 {
		return tensors.FromFlatDataAndDimensions(vals, dims...)
	}
	f := make([]float32, len(vals))
	for i, v := range vals {
		f[i] = float32(v)
	}
	return tensors.FromFlatDataAndDimensions(f, dims...)
}

// varNode returns the graph value of variable path/name under scope; it panics with a
// clear message when InitVariables was not called.
//
// It marks the graph as a training graph first: outside training mode, backends that
// prefer constants (the go backend) embed a variable's current value into the compiled
// graph, so a cached graph would keep using stale weights after the variables change.
func varNode(scope *model.Scope, g *Graph, path, name string) *Node {
	if st := scope.Store(); !st.IsTraining(g) {
		st.SetTraining(g, true)
	}
	s := subScope(scope, path)
	v := s.GetVariable(name)
	if v == nil {
		exceptions.Panicf("vqvae: variable %s/%s missing under scope %q: call Config.InitVariables first", path, name, scope.Scope())
	}
	return v.NodeValue(g)
}

// CodebookVars returns the codebook variables (embeddings [K,D], size [K], sum [K,D]).
func CodebookVars(scope *model.Scope) (e, n, m *model.Variable) {
	cb := scope.At("codebook")
	return cb.GetVariable("embeddings"), cb.GetVariable("size"), cb.GetVariable("sum")
}

// CodebookState returns the codebook's current graph values.
func CodebookState(scope *model.Scope, g *Graph) EMAState {
	return EMAState{
		Codebook: varNode(scope, g, "codebook", "embeddings"),
		Size:     varNode(scope, g, "codebook", "size"),
		Sum:      varNode(scope, g, "codebook", "sum"),
	}
}

// SetCodebookState assigns s to the codebook variables (inside the graph being built).
func SetCodebookState(scope *model.Scope, s EMAState) {
	e, n, m := CodebookVars(scope)
	if e == nil || n == nil || m == nil {
		exceptions.Panicf("vqvae: codebook variables missing under scope %q: call Config.InitVariables first", scope.Scope())
	}
	e.SetNodeValue(s.Codebook)
	n.SetNodeValue(s.Size)
	m.SetNodeValue(s.Sum)
}

// Encode maps images x [B,Side,Side,1] with values in [0,1] to latents z [B,D]
// (paper Sec. 3.2, E_φ). scope is the VQ-VAE's scope (variables under scope/encoder).
// Internally the network runs in the feature-major layout of conv.go.
func (c Config) Encode(scope *model.Scope, x *Node) *Node {
	checkFloat(x, "images")
	g := x.Graph()
	s := c.Side
	if x.Rank() != 4 || x.Shape().Dimensions[1] != s || x.Shape().Dimensions[2] != s || x.Shape().Dimensions[3] != 1 {
		exceptions.Panicf("vqvae.Encode: images must be [B,%d,%d,1], got %s", s, s, x.Shape())
	}
	b := x.Shape().Dimensions[0]
	w := func(layer string) (*Node, *Node) {
		return varNode(scope, g, "encoder/"+layer, "w"), varNode(scope, g, "encoder/"+layer, "b")
	}
	var zT *Node // [D,B]
	if c.Arch == ArchMLP {
		h := TransposeAllAxes(Reshape(x, b, s*s), 1, 0) // [S²,B]
		w1, b1 := w("fc1")
		h = denseT(h, w1, b1, actReLU)
		w2, b2 := w("fc2")
		h = denseT(h, w2, b2, actReLU)
		w3, b3 := w("fc3")
		zT = denseT(h, w3, b3, actNone)
	} else {
		h := Reshape(TransposeAllAxes(Reshape(x, b, s*s), 1, 0), 1, s, s, b) // [1,S,S,B]
		w1, b1 := w("conv1")
		h = convStride2(h, w1, b1, actReLU) // [F,S/2,S/2,B]
		w2, b2 := w("conv2")
		h = convStride2(h, w2, b2, actReLU) // [2F,S/4,S/4,B]
		w3, b3 := w("conv3")
		h = conv2D(h, w3, b3, 1, 1, actReLU) // [2F,S/4,S/4,B]
		h = ReduceMean(h, 1, 2)              // [2F,B] global average pool
		wd, bd := w("dense")
		zT = denseT(h, wd, bd, actNone)
	}
	return TransposeAllAxes(zT, 1, 0) // [B,D]
}

// Decode maps (straight-through) codes q [B,D] to reconstructions [B,Side,Side,1] in
// (0,1) (paper Sec. 3.2, D_ψ). scope is the VQ-VAE's scope (variables under scope/decoder).
func (c Config) Decode(scope *model.Scope, q *Node) *Node {
	checkFloat(q, "codes")
	g := q.Graph()
	if q.Rank() != 2 || q.Shape().Dimensions[1] != c.D {
		exceptions.Panicf("vqvae.Decode: codes must be [B,%d], got %s", c.D, q.Shape())
	}
	bsz, s, f := q.Shape().Dimensions[0], c.Side, c.F
	w := func(layer string) (*Node, *Node) {
		return varNode(scope, g, "decoder/"+layer, "w"), varNode(scope, g, "decoder/"+layer, "b")
	}
	qT := TransposeAllAxes(q, 1, 0) // [D,B]
	if c.Arch == ArchMLP {
		w1, b1 := w("fc1")
		h := denseT(qT, w1, b1, actReLU)
		w2, b2 := w("fc2")
		h = denseT(h, w2, b2, actReLU)
		w3, b3 := w("fc3")
		h = denseT(h, w3, b3, actSigmoid) // [S²,B]
		return Reshape(TransposeAllAxes(h, 1, 0), bsz, s, s, 1)
	}
	base := s / 4
	wd, bd := w("dense")
	h := Reshape(denseT(qT, wd, bd, actReLU), 2*f, base, base, bsz) // [2F,S/4,S/4,B]
	w1, b1 := w("conv1")
	h = conv2D(h, w1, b1, 1, 1, actReLU) // [2F,S/4,S/4,B]
	w2, b2 := w("up1")
	// Sub-pixel upsampling to [F,S/2,S/2,B]; the border is zeroed instead of cropped, so
	// it serves as the next layer's zero padding. The result stays in sub-pixel form:
	// [4F,S/4+1,S/4+1,B] holds the zero-bordered [F,S/2+2,S/2+2,B] (see subpixel.go).
	h = conv2DMasked(h, w2, b2, 1, 1, actReLU, subPixelBorderMask(4*f, base+1, base+1))
	w3, b3 := w("up2")
	return subPixelOutput(h, w3, b3, actSigmoid) // [B,S,S,1]
}

// outputBiasPath is the scope of the decoder's output layer.
func (c Config) outputBiasPath() string {
	if c.Arch == ArchMLP {
		return "decoder/fc3"
	}
	return "decoder/up2"
}

// ClassLogits is the optional classification head (Config.Classify): z [B,D] →
// logits [B,NumClasses].
func (c Config) ClassLogits(scope *model.Scope, z *Node) *Node {
	g := z.Graph()
	logitsT := denseT(TransposeAllAxes(z, 1, 0), varNode(scope, g, "classifier", "w"), varNode(scope, g, "classifier", "b"), actNone)
	return TransposeAllAxes(logitsT, 1, 0)
}
