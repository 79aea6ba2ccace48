package experiment

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// Size is how big an experiment runs: the one size knob of the CLI (--size) and the
// notebooks (GRADCSCG_NB_SIZE).
type Size string

// Sizes.
const (
	// SizeFull is the paper's configurations (the default).
	SizeFull Size = "full"
	// SizeCI takes about a minute on two cores and still recovers the benchmark maps
	// from pixels (pipeline.CISized: the MLP VQ-VAE, 4 × 5,000 steps): the quick
	// start, demos and the CI map-recovery test.
	SizeCI Size = "ci"
	// SizeSmoke takes seconds: every phase runs, and nothing is expected to be
	// recovered (the notebooks' headless test).
	SizeSmoke Size = "smoke"
)

// ParseSize returns the size called s.
func ParseSize(s string) (Size, error) {
	switch z := Size(s); z {
	case SizeFull, SizeCI, SizeSmoke:
		return z, nil
	}
	return "", fmt.Errorf("size %q: want %s, %s or %s", s, SizeFull, SizeCI, SizeSmoke)
}

// Pipeline returns the pixel-pipeline configuration c at size z: c itself, CI-sized
// (pipeline.CISized), or smoke-sized: the MLP VQ-VAE (D = 16), 2 episodes of 600
// steps (held-out 1,000), 2 warm-up epochs of batch 64, 16 joint iterations of 2
// chunks × 64 steps, 100 finalisation iterations, and neither of the walks' merges
// (warmup.merge_codes, final.merge_tokens), which tiny walks cannot support.
func (z Size) Pipeline(c pipeline.Config) pipeline.Config {
	switch z {
	case SizeCI:
		return pipeline.CISized(c)
	case SizeSmoke:
		c = c.WithArch("mlp")
		c.VQVAE.D = 16
		c.Data.Episodes, c.Data.Steps, c.Eval.Steps = 2, 600, 1000
		c.Warmup.Epochs, c.Warmup.Batch = 2, 64
		c.Warmup.RecenterFrames = 1000
		c.Joint.Iters, c.Joint.ChunkLen, c.Joint.Batch, c.Joint.CheckpointEvery = 16, 64, 2, 5
		c.Final.Iters = 100
		c.Warmup.MergeCodes, c.Final.MergeTokens = 0, 0 // their G-tests need full-size walks
	}
	return c
}

// VQStudy returns the VQ-VAE study s at size z: s itself at full size; otherwise
// (the study has no separate CI size) 150 warm-up steps of batch 64 on 2 episodes of
// 1,000 steps, a 1,000-step held-out episode and a curve point every 50 steps, in
// seconds, with rough tokens.
func (z Size) VQStudy(s VQStudy) VQStudy {
	if z == SizeFull {
		return s
	}
	s.Steps, s.Batch, s.Curve, s.CheckpointEvery = 150, 64, 50, 50
	s.Episodes, s.EpisodeLen, s.EvalLen = 2, 1000, 1000
	return s
}
