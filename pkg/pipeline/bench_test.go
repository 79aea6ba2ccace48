package pipeline

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// benchJointStep times one joint step (Algorithm 1, forward + backward + both Adam
// updates + EMA) at the paper's configuration: B = 4 chunks of T = 256 frames through
// the reference conv VQ-VAE, and K tokens × clones states.
func benchJointStep(b *testing.B, k, clones int, arch vqvae.Arch, gradFrames int) {
	be := testBackend(b)
	vc := vqvae.DefaultConfig(k)
	vc.Arch = arch
	vq, err := vqvae.New(be.Backend, vc, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	j, err := NewJoint(vq, chmm.New(chmm.UniformClones(k, clones), 4, rng), 0.25, 3e-4, 3e-2)
	if err != nil {
		b.Fatal(err)
	}
	j.GradFrames = gradFrames
	ch := randomChunk(rng, 28, []int{256, 256, 256, 256}, 256, 4)
	ch.Order = make([]int32, 1024)
	for i, p := range rng.Perm(1024) {
		ch.Order[i] = int32(p)
	}
	if _, err := j.Step(ch, 1, 0.1); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for b.Loop() {
		if _, err := j.Step(ch, 1, 0.1); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1024, "µs/frame")
	b.ReportMetric(cpu/float64(b.N), "cpu-s/iter")
	b.ReportMetric(cpu/float64(b.N)/1024*1e6, "cpu-µs/frame")
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkJointStep* time one joint iteration of 4 × 256 frames: conv or MLP VQ-VAE,
// every frame with gradients (Full), 256 of the 1,024 (Subset, Config.Joint.GradFrames) or 128
// (Subset128, `--grad-frames 128`).
// Aliased: K = 4, 5 clones (N = 21); TwoRooms: K = 10, 15 clones (N = 151); FourRooms:
// K = 10, 90 clones (N = 901, the share budget four_rooms' joint phase gets).
func BenchmarkJointStepAliasedConvFull(b *testing.B)   { benchJointStep(b, 4, 5, vqvae.ArchConv, 0) }
func BenchmarkJointStepAliasedConvSubset(b *testing.B) { benchJointStep(b, 4, 5, vqvae.ArchConv, 256) }
func BenchmarkJointStepTwoRoomsConvFull(b *testing.B)  { benchJointStep(b, 10, 15, vqvae.ArchConv, 0) }
func BenchmarkJointStepTwoRoomsConvSubset(b *testing.B) {
	benchJointStep(b, 10, 15, vqvae.ArchConv, 256)
}
func BenchmarkJointStepTwoRoomsMLPFull(b *testing.B)   { benchJointStep(b, 10, 15, vqvae.ArchMLP, 0) }
func BenchmarkJointStepTwoRoomsMLPSubset(b *testing.B) { benchJointStep(b, 10, 15, vqvae.ArchMLP, 256) }
func BenchmarkJointStepFourRoomsConvSubset(b *testing.B) {
	benchJointStep(b, 10, 90, vqvae.ArchConv, 256)
}
func BenchmarkJointStepTwoRoomsConvSubset128(b *testing.B) {
	benchJointStep(b, 10, 15, vqvae.ArchConv, 128)
}
