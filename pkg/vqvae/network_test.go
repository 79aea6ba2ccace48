package vqvae

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestNumParameters checks the parameter counts of the reference architecture
// (F = 32, D = 32, 28×28; spec: "about 72k + 174k"):
//
//	encoder: conv1 32·4·2·2+32 = 544, conv2 64·128·2·2+64 = 32,832,
//	         conv3 64·64·3·3+64 = 36,928, dense 32·64+32 = 2,080        → 72,384
//	decoder: dense 3136·32+3136 = 103,488, conv1 36,928,
//	         up1 128·64·2·2+128 = 32,896, up2 4·32·2·2+4 = 516          → 173,828
//
// (the reference's transposed convolutions have 96 + 3 fewer biases: 173,729).
func TestNumParameters(t *testing.T) {
	enc, dec, other := DefaultConfig(10).NumParameters()
	if enc != 72384 || dec != 173828 || other != 0 {
		t.Errorf("parameters: encoder %d, decoder %d, other %d; want 72384, 173828, 0", enc, dec, other)
	}
	c := DefaultConfig(10)
	c.Classify = true
	if _, _, other := c.NumParameters(); other != 10*32+10 {
		t.Errorf("classifier parameters %d, want 330", other)
	}
}

// TestGradientsFiniteDifferences checks the gradient of
// L = Σ r₁⊙Encode(x) + Σ r₂⊙Decode(Encode(x)) w.r.t. every encoder and decoder
// variable and the input images against central finite differences, in float64, on a
// narrow network (28×28 images, F = 2, D = 3). This exercises every hand-written
// backward pass through the whole encoder and decoder.
func TestGradientsFiniteDifferences(t *testing.T) {
	for _, arch := range []Arch{ArchConv, ArchMLP} {
		t.Run(string(arch), func(t *testing.T) {
			cfg := DefaultConfig(3)
			cfg.Side, cfg.F, cfg.D, cfg.Arch = 28, 2, 3, arch
			store := model.NewStore()
			if err := cfg.InitVariables(store.RootScope().At("vq"), 5, dtypes.Float64); err != nil {
				t.Fatal(err)
			}
			const b = 3
			rng := rand.New(rand.NewPCG(19, 20))
			x := randSlice(rng, b*784, 0.5)
			for i := range x {
				x[i] += 0.5
			}
			r1, r2 := randSlice(rng, b*cfg.D, 1), randSlice(rng, b*784, 1)
			var vars []*model.Variable
			for _, p := range cfg.params() {
				v := subScope(store.RootScope().At("vq"), p.scope).GetVariable(p.name)
				if p.name == "b" {
					// Non-zero biases: with zero biases, units whose inputs are all zero sit
					// exactly on the ReLU kink, where finite differences see half a slope.
					v.MustSetValue(tensors.FromFlatDataAndDimensions(randSlice(rng, v.Shape().Size(), 0.1), v.Shape().Dimensions...))
				}
				vars = append(vars, v)
			}
			lossFn := func(root *model.Scope, x, r1, r2 *Node) *Node {
				root.Store().SetTraining(x.Graph(), true) // keep variables as parameters
				scope := root.At("vq")
				z := cfg.Encode(scope, x)
				return Add(ReduceAllSum(Mul(z, r1)), ReduceAllSum(Mul(cfg.Decode(scope, z), r2)))
			}
			gradExec := model.MustNewExec(testBackend(), store, func(root *model.Scope, x, r1, r2 *Node) []*Node {
				loss := lossFn(root, x, r1, r2)
				nodes := []*Node{x}
				for _, v := range vars {
					nodes = append(nodes, v.NodeValue(x.Graph()))
				}
				return Gradient(loss, nodes...)
			})
			lossExec := model.MustNewExec(testBackend(), store, lossFn)
			xt := func(x []float64) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(x, b, 28, 28, 1) }
			r1t, r2t := mat(r1, b, cfg.D), tensors.FromFlatDataAndDimensions(r2, b, 28, 28, 1)
			grads := gradExec.MustCall(xt(x), r1t, r2t)
			loss := func(x []float64) float64 { return flat64(t, lossExec.MustCall(xt(x), r1t, r2t)[0])[0] }

			const eps = 1e-5
			check := func(name string, analytic, fd float64) {
				if math.Abs(analytic-fd) > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("%s: autodiff %.10g, finite difference %.10g", name, analytic, fd)
				}
			}
			// Input pixels.
			gx := flat64(t, grads[0])
			for _, i := range []int{0, 9, 27, 100, 191} {
				xp, xm := slices.Clone(x), slices.Clone(x)
				xp[i] += eps
				xm[i] -= eps
				check(fmt.Sprintf("∂/∂x[%d]", i), gx[i], (loss(xp)-loss(xm))/(2*eps))
			}
			// Parameters: a few entries of every variable.
			for vi, v := range vars {
				orig := flat64(t, v.MustValue())
				g := flat64(t, grads[vi+1])
				if maxAbs(g) == 0 {
					t.Errorf("%s: gradient is identically zero", v.Path())
				}
				for _, i := range []int{0, len(orig) / 2, len(orig) - 1} {
					val := func(delta float64) float64 {
						w := slices.Clone(orig)
						w[i] += delta
						v.MustSetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...))
						return loss(x)
					}
					fd := (val(eps) - val(-eps)) / (2 * eps)
					v.MustSetValue(tensors.FromFlatDataAndDimensions(orig, v.Shape().Dimensions...))
					check(fmt.Sprintf("%s[%d]", v.Path(), i), g[i], fd)
				}
			}
		})
	}
}
