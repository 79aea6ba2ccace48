package pipeline

import (
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// benchJointStep times one joint step (Algorithm 1, forward + backward + both Adam
// updates + EMA) at the paper's configuration: B = 4 chunks of T = 256 frames through
// the reference conv VQ-VAE, and K tokens × clones states.
func benchJointStep(b *testing.B, k, clones int) {
	be := testBackend(b)
	vq, err := vqvae.New(be.Backend, vqvae.DefaultConfig(k), 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	j, err := NewJoint(vq, chmm.New(chmm.UniformClones(k, clones), 4, rng), 0.25, 3e-4, 3e-2)
	if err != nil {
		b.Fatal(err)
	}
	ch := randomChunk(rng, 28, []int{256, 256, 256, 256}, 256, 4)
	if _, err := j.Step(ch, 1, 0.1); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := j.Step(ch, 1, 0.1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1024, "µs/frame")
}

// BenchmarkJointStepAliased: K = 4, 5 clones (N = 21).
func BenchmarkJointStepAliased(b *testing.B) { benchJointStep(b, 4, 5) }

// BenchmarkJointStepTwoRooms: K = 10, 15 clones (N = 151).
func BenchmarkJointStepTwoRooms(b *testing.B) { benchJointStep(b, 10, 15) }
