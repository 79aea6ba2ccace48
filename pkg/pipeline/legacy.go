package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// checkAdoption refuses the files adoptLegacy would adopt into st unless they show
// they belong to the run of cfg in dir:
//
//   - a directory without a state file holds no run to adopt them into: a warm-up
//     checkpoint there (WarmupFile) is refused, since nothing but its name ties it to
//     this run;
//   - under a legacy state (a state file without digests), every VQ-VAE checkpoint it
//     adopts must record cfg's seed and VQ-VAE architecture (side, d, f, arch; and k
//     for the warm-up's, before compaction), and a report cfg's environment, data set
//     and seed where it records them.
func checkAdoption(dir string, st *runState, cfg Config) error {
	if _, err := os.Stat(filepath.Join(dir, StateFile)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, WarmupFile)); err == nil {
			return fmt.Errorf("pipeline: %s holds %s but no %s, so nothing shows the checkpoint is this run's (a lost state, or a file copied in): move it away to train from scratch, or use a new run directory",
				dir, WarmupFile, StateFile)
		}
		return nil
	}
	warmup := st.Warmup
	if warmup == "" {
		warmup = WarmupFile
	}
	for _, name := range []string{warmup, st.Checkpoint, st.Healthy, VQVAEFile} {
		if name == "" {
			continue
		}
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		info, err := vqvae.ReadInfo(path)
		if err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		want, got := cfg.VQVAE, info.Config
		if name != warmup {
			want.K = got.K // compacted
		}
		if info.Seed != cfg.Seed || got.Side != want.Side || got.D != want.D || got.F != want.F || got.Arch != want.Arch || got.K != want.K {
			return fmt.Errorf("pipeline: %s was not written by this run (seed %d, VQ-VAE k=%d d=%d f=%d side=%d %s; the run has seed %d, k=%d d=%d f=%d side=%d %s): move it away, or use a new run directory",
				path, info.Seed, got.K, got.D, got.F, got.Side, got.Arch, cfg.Seed, want.K, want.D, want.F, want.Side, want.Arch)
		}
	}
	if path := filepath.Join(dir, ReportFile); fileExists(path) {
		rep, err := evaluate.ReadJSON(path)
		if err != nil {
			return err
		}
		// Older reports may lack a field (empty): only a recorded one that differs counts.
		if rep.Env != "" && rep.Env != cfg.Env || rep.Dataset != "" && rep.Dataset != cfg.Dataset || rep.Seed != 0 && rep.Seed != cfg.Seed {
			return fmt.Errorf("pipeline: %s was not written by this run (%s, %s, seed %d; the run is %s, %s, seed %d): move it away, or use a new run directory",
				path, rep.Env, rep.Dataset, rep.Seed, cfg.Env, cfg.Dataset, cfg.Seed)
		}
	}
	return nil
}

// fileExists reports whether path names a file (of any kind).
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
