package hmmgraph

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// benchPass measures value + gradient (w.r.t. π, Θ and soft log ρ) of variant v, float32, on
// B = 4 sequences of T steps with K tokens × C clones and A = 4 actions.
func benchPass(b *testing.B, be compute.Backend, v Variant, K, C, T int) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := randomProblem(rng, UniformLayout(K, C), 4, []int{T, T, T, T}, T, false)
	fn := v.Func()
	exec, err := graph.NewExec(be, func(in []*graph.Node) []*graph.Node {
		ll := graph.ReduceAllSum(fn(in[0], in[1], p.layout.StateLogEmissions(in[2]), in[3], in[4]))
		return append([]*graph.Node{ll}, graph.Gradient(ll, in[0], in[1], in[2])...)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer exec.Finalize()
	in := p.inputs(dtypes.Float32)
	run := func() {
		out, err := exec.Call(in...)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			_ = o.FinalizeAll()
		}
	}
	run() // compile
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// BenchmarkLogLikelihoodGrad (N = 901 is four_rooms' joint phase): go test ./pkg/hmmgraph/ -run '^$' -bench LogLikelihoodGrad -benchtime 10x
func BenchmarkLogLikelihoodGrad(b *testing.B) {
	for _, c := range []struct{ K, C, T int }{{10, 15, 256}, {10, 20, 1024}, {10, 90, 256}} {
		for _, v := range []Variant{Loop, Unrolled} {
			if v == Unrolled && c.C > 20 {
				continue // minutes to compile at N = 901
			}
			b.Run(fmt.Sprintf("%s/N=%d/T=%d", v, 1+c.K*c.C, c.T), func(b *testing.B) {
				benchPass(b, backend(b), v, c.K, c.C, c.T)
			})
		}
	}
}

// BenchmarkLogLikelihoodGradLong is the full-episode finalisation size: T = 10,000, N = 151.
func BenchmarkLogLikelihoodGradLong(b *testing.B) {
	benchPass(b, backend(b), Loop, 10, 15, 10000)
}

// convWorkload is a small conv autoencoder-like step (forward + gradient), batch 64 of 28×28:
// two strided 3×3 convolutions, a dense bottleneck and a dense decoder, MSE loss.
func convWorkload(b *testing.B, be compute.Backend) {
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(dims ...int) *tensors.Tensor {
		s := shapes.Make(dtypes.Float32, dims...)
		x := make([]float32, s.Size())
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 0.1
		}
		return tensors.FromFlatDataAndDimensions(x, dims...)
	}
	in := []any{rnd(64, 28, 28, 1), rnd(3, 3, 1, 32), rnd(3, 3, 32, 64), rnd(7*7*64, 64), rnd(64, 784)}
	exec, err := graph.NewExec(be, func(in []*graph.Node) []*graph.Node {
		x, k1, k2, w1, w2 := in[0], in[1], in[2], in[3], in[4]
		h := graph.Max(graph.Convolve(x, k1).Strides(2).PadSame().Done(), graph.ScalarZero(x.Graph(), dtypes.Float32))
		h = graph.Max(graph.Convolve(h, k2).Strides(2).PadSame().Done(), graph.ScalarZero(x.Graph(), dtypes.Float32))
		z := graph.Tanh(graph.Dot(graph.Reshape(h, 64, 7*7*64), w1).Product())
		y := graph.Dot(z, w2).Product()
		loss := graph.ReduceAllMean(graph.Square(graph.Sub(y, graph.Reshape(x, 64, 784))))
		return append([]*graph.Node{loss}, graph.Gradient(loss, k1, k2, w1, w2)...)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer exec.Finalize()
	run := func() {
		out, err := exec.Call(in...)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			_ = o.FinalizeAll()
		}
	}
	run()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// BenchmarkBackendConfig compares go-backend settings on a conv-like step and on the HMM loop pass
// (N = 151, T = 256): go test ./pkg/hmmgraph/ -run '^$' -bench BackendConfig -benchtime 20x
// The HMM pass runs on the default and "ops_parallel" settings only with GRADCSCG_PROBE_DEADLOCK=1:
// at this size it finished in every trial, but those settings can deadlock (see doc.go).
func BenchmarkBackendConfig(b *testing.B) {
	for _, cfg := range []string{GoBackendConfig, "", "ops_parallel"} {
		be, err := gobackend.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		name := cfg
		if name == "" {
			name = "default"
		}
		b.Run("conv/"+name, func(b *testing.B) { convWorkload(b, be) })
		if cfg == GoBackendConfig || os.Getenv("GRADCSCG_PROBE_DEADLOCK") != "" {
			b.Run("hmm/"+name, func(b *testing.B) { benchPass(b, be, Loop, 10, 15, 256) })
		}
	}
}
