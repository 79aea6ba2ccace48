package vqvae

import (
	"fmt"
	"strings"
)

// Arch selects the encoder/decoder family.
type Arch string

const (
	// ArchConv is the reference convolutional architecture (spec model.md, F = 32):
	// encoder Conv 4×4/2 (F) → Conv 4×4/2 (2F) → Conv 3×3/1 (2F), ReLU after each,
	// global average pool, Dense → D; decoder Dense → 7·7·2F (ReLU), Conv 3×3/1 (2F),
	// two stride-2 upsamplings (F, then 1 channel), ReLU between, sigmoid output.
	// Stride-2 convolutions run as space-to-depth + 2×2 convolutions and the transposed
	// convolutions as exactly equivalent sub-pixel convolutions (conv.go).
	ArchConv Arch = "conv"
	// ArchMLP is a small fully connected autoencoder (side²-256-128-D and back), for
	// comparison and quick experiments.
	ArchMLP Arch = "mlp"
)

// CodebookInit selects how the codebook starts.
type CodebookInit string

const (
	// InitKMeans seeds the codebook by k-means++ (plus a few Lloyd iterations) on the
	// encoder outputs of the first training batch (Model.InitCodebook).
	InitKMeans CodebookInit = "kmeans"
	// InitUniform is the reference's e ~ U(−1/K, 1/K) with zero EMA statistics: codes
	// that get no early assignment collapse to the origin and stay dead.
	InitUniform CodebookInit = "uniform"
)

// Config holds the VQ-VAE's static hyperparameters (paper Table 1). The zero value is
// not usable; start from DefaultConfig.
type Config struct {
	K    int  `json:"k"`    // codebook size
	D    int  `json:"d"`    // embedding dimension
	F    int  `json:"f"`    // encoder base width (conv) — hidden widths F, 2F
	Side int  `json:"side"` // image side in pixels (28 for MNIST); a multiple of 4
	Arch Arch `json:"arch"` // ArchConv or ArchMLP

	Beta  float64 `json:"beta"`  // commitment weight β
	Gamma float64 `json:"gamma"` // EMA decay γ
	Eps   float64 `json:"eps"`   // EMA Laplace smoothing ε
	Tau   float64 `json:"tau"`   // soft-posterior temperature τ

	// Revive is the dead-code threshold as a fraction of the uniform share Σn/K: a
	// code whose EMA size falls below Revive·Σn/K is re-seeded from a random encoder
	// output of the batch. 0 disables revival (the reference's default).
	Revive float64 `json:"revive"`
	// Init selects the codebook initialisation.
	Init CodebookInit `json:"init"`

	// Classify adds the reference's digit-classification head (Dense D → NumClasses on
	// z) and ClassWeight × cross-entropy to the warm-up loss. Off by default; it needs
	// labels and exists only to compare with the reference.
	Classify    bool    `json:"classify"`
	NumClasses  int     `json:"num_classes"`
	ClassWeight float64 `json:"class_weight"`
}

// DefaultConfig returns the paper's VQ-VAE configuration (Table 1) with K codes:
// D = 32, F = 32, 28×28 images, β = 0.25, γ = 0.99, ε = 1e-5, τ = 1, k-means++
// codebook initialisation and dead-code revival at 1% of the uniform share.
func DefaultConfig(k int) Config {
	return Config{
		K: k, D: 32, F: 32, Side: 28, Arch: ArchConv,
		Beta: 0.25, Gamma: 0.99, Eps: 1e-5, Tau: 1,
		Revive: 0.01, Init: InitKMeans,
		NumClasses: 10, ClassWeight: 0.1,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	var bad []string
	if c.K < 2 {
		bad = append(bad, fmt.Sprintf("K=%d (need ≥ 2)", c.K))
	}
	if c.D < 1 {
		bad = append(bad, fmt.Sprintf("D=%d (need ≥ 1)", c.D))
	}
	if c.F < 1 {
		bad = append(bad, fmt.Sprintf("F=%d (need ≥ 1)", c.F))
	}
	if c.Side < 4 || c.Side%4 != 0 {
		bad = append(bad, fmt.Sprintf("Side=%d (need a positive multiple of 4)", c.Side))
	}
	if c.Arch != ArchConv && c.Arch != ArchMLP {
		bad = append(bad, fmt.Sprintf("Arch=%q (want %q or %q)", c.Arch, ArchConv, ArchMLP))
	}
	if !(c.Beta >= 0) {
		bad = append(bad, fmt.Sprintf("Beta=%g (need ≥ 0)", c.Beta))
	}
	if !(c.Gamma > 0 && c.Gamma < 1) {
		bad = append(bad, fmt.Sprintf("Gamma=%g (need 0 < γ < 1)", c.Gamma))
	}
	if !(c.Eps > 0) {
		bad = append(bad, fmt.Sprintf("Eps=%g (need > 0)", c.Eps))
	}
	if !(c.Tau > 0) {
		bad = append(bad, fmt.Sprintf("Tau=%g (need > 0)", c.Tau))
	}
	if !(c.Revive >= 0 && c.Revive < 1) {
		bad = append(bad, fmt.Sprintf("Revive=%g (need 0 ≤ r < 1)", c.Revive))
	}
	if c.Init != InitKMeans && c.Init != InitUniform {
		bad = append(bad, fmt.Sprintf("Init=%q (want %q or %q)", c.Init, InitKMeans, InitUniform))
	}
	if c.Classify && c.NumClasses < 2 {
		bad = append(bad, fmt.Sprintf("NumClasses=%d (need ≥ 2 with Classify)", c.NumClasses))
	}
	if c.Classify && !(c.ClassWeight >= 0) {
		bad = append(bad, fmt.Sprintf("ClassWeight=%g (need ≥ 0)", c.ClassWeight))
	}
	if len(bad) > 0 {
		return fmt.Errorf("vqvae: invalid config: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Pixels is the number of pixels of one image (Side²).
func (c Config) Pixels() int { return c.Side * c.Side }
