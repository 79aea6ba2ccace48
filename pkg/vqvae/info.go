package vqvae

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// Info is what a checkpoint records about the model it holds, read without building
// the model.
type Info struct {
	Config Config // the model's configuration (K after any compaction)
	Seed   uint64 // the seed it was created with
	Steps  int    // warm-up steps taken
}

// ReadInfo reads the record of the checkpoint at path (checked as Load checks it).
func ReadInfo(path string) (Info, error) {
	raw, err := inputfile.ReadFile(path, CheckpointLimit)
	if err != nil {
		return Info{}, fmt.Errorf("vqvae: %w", err)
	}
	p, err := decodeCheckpoint(raw)
	if err != nil {
		return Info{}, fmt.Errorf("vqvae: %s: %w", path, err)
	}
	return Info{Config: p.Config, Seed: p.Seed, Steps: len(p.History)}, nil
}
