package dataset

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

func mnistPath(b *testing.B, file string) string {
	data, err := DataDir()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(data, "mnist", file)
}

// BenchmarkReadImagesGzip decodes data/mnist's training images (7,996 × 28×28).
func BenchmarkReadImagesGzip(b *testing.B) {
	path := mnistPath(b, TrainImagesFile)
	for b.Loop() {
		if _, err := ReadImages(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadMNIST is Load("mnist", "train"), checksums included.
func BenchmarkLoadMNIST(b *testing.B) {
	for b.Loop() {
		if _, err := Load("mnist", Train); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBankFramesFloats draws the frames of a 10,000-step episode and
// scales them to float32 ([10000, 28, 28]), as an image-episode generator does.
func BenchmarkBankFramesFloats(b *testing.B) {
	s, err := Load("mnist", Train)
	if err != nil {
		b.Fatal(err)
	}
	bank, err := NewBank(s)
	if err != nil {
		b.Fatal(err)
	}
	classes := make([]int, 10000)
	for t := range classes {
		classes[t] = t % 10
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var dst []float32
	for b.Loop() {
		dst = bank.Floats(bank.Frames(rng, classes), dst)
	}
}
