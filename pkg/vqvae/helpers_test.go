package vqvae

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
)

// testBackend is the project's backend (hmmgraph.NewBackend: GOMLX_BACKEND, else the go
// backend with hmmgraph.GoBackendConfig), shared by all tests.
var testBackend = sync.OnceValue(func() compute.Backend {
	b, _, err := hmmgraph.NewBackend()
	if err != nil {
		panic(err)
	}
	return b
})

func randSlice(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * (2*rng.Float64() - 1)
	}
	return out
}

func flat64(t *testing.T, x *tensors.Tensor) []float64 {
	t.Helper()
	v, err := tensors.CopyFlatData[float64](x)
	if err != nil {
		t.Fatalf("copy tensor %s: %v", x.Shape(), err)
	}
	return v
}

func flat32(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	v, err := tensors.CopyFlatData[float32](x)
	if err != nil {
		t.Fatalf("copy tensor %s: %v", x.Shape(), err)
	}
	return v
}

func maxAbsDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func maxAbs(a []float64) float64 {
	m := 0.0
	for _, v := range a {
		m = max(m, math.Abs(v))
	}
	return m
}
