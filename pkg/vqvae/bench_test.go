package vqvae

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
)

// benchBackend is the project's backend (hmmgraph.NewBackend: GOMLX_BACKEND, else the
// go backend with hmmgraph.GoBackendConfig), as the programs use it.
func benchBackend(b *testing.B) compute.Backend {
	be, _, err := hmmgraph.NewBackend()
	if err != nil {
		b.Fatal(err)
	}
	return be
}

// syntheticImages returns n Side×Side images of random blobs in [0,1].
func syntheticImages(rng *rand.Rand, n, side int) []float32 {
	img := make([]float32, n*side*side)
	for i := range n {
		cy, cx := rng.Float64()*float64(side), rng.Float64()*float64(side)
		r2 := float64(side*side) / (8 + 8*rng.Float64())
		for y := range side {
			for x := range side {
				dy, dx := float64(y)-cy, float64(x)-cx
				if dy*dy+dx*dx < r2 {
					img[(i*side+y)*side+x] = float32(0.5 + 0.5*rng.Float64())
				}
			}
		}
	}
	return img
}

func benchArch(b *testing.B, arch Arch) {
	const batch = 256
	cfg := DefaultConfig(10)
	cfg.Arch = arch
	m, err := New(benchBackend(b), cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	imgs := syntheticImages(rand.New(rand.NewPCG(1, 1)), batch, cfg.Side)
	if _, err := m.TrainStep(Batch{Images: imgs}); err != nil { // compile + k-means init
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := m.TrainStep(Batch{Images: imgs}); err != nil {
			b.Fatal(err)
		}
	}
	reportPerImage(b, batch, cpu0)
}

// cpuTime is the user + system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerImage reports wall-clock and CPU microseconds per image. On a shared
// machine the CPU time (all threads of the process, since cpu0) is the steadier
// number; on an idle machine with several cores it exceeds the wall-clock time.
func reportPerImage(b *testing.B, batch int, cpu0 time.Duration) {
	n := float64(b.N * batch)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/image")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n, "cpu-µs/image")
}

// BenchmarkTrainStep256 is one training step (forward + backward + Adam + EMA) of the
// reference convolutional VQ-VAE at batch 256.
func BenchmarkTrainStep256(b *testing.B) { benchArch(b, ArchConv) }

// BenchmarkTrainStep256MLP is the same for the MLP variant.
func BenchmarkTrainStep256MLP(b *testing.B) { benchArch(b, ArchMLP) }

// BenchmarkEncode256 is inference (encoder, quantisation, soft posterior) at batch 256.
func BenchmarkEncode256(b *testing.B) {
	const batch = evalBatch
	cfg := DefaultConfig(10)
	m, err := New(benchBackend(b), cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	imgs := syntheticImages(rand.New(rand.NewPCG(2, 2)), batch, cfg.Side)
	if _, _, err := m.Encode(imgs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, _, err := m.Encode(imgs); err != nil {
			b.Fatal(err)
		}
	}
	reportPerImage(b, batch, cpu0)
}
