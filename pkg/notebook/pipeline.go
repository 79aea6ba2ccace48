package notebook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// Configure returns the pixel-pipeline configuration of the built-in environment env
// as `gradcscg train` chooses it (experiment.ConfigurePipeline): the environment's
// defaults, the preset ("" none; pipeline.Presets), the size ("" the notebooks' own:
// full, or experiment.SizeSmoke at GRADCSCG_NB_SIZE=ci), then the settings
// "key=value" in order (pipeline.Config.Set), validated.
func Configure(env, preset string, size experiment.Size, settings ...string) (pipeline.Config, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return pipeline.Config{}, err
	}
	return ConfigureFor(e, preset, size, settings...)
}

// ConfigureFor is Configure for any environment, e.g. a custom layout.
func ConfigureFor(e *gridworld.Env, preset string, size experiment.Size, settings ...string) (pipeline.Config, error) {
	if size == "" {
		nb, err := Size()
		if err != nil {
			return pipeline.Config{}, err
		}
		size = experiment.SizeFull
		if nb == SizeCI {
			size = experiment.SizeSmoke
		}
	}
	cfg, _, err := experiment.ConfigurePipeline(experiment.PipelineSpec{Env: e, Preset: preset, Size: size,
		Sets: experiment.SettingsFrom("notebook", settings...)})
	return cfg, err
}

// PipelineConfig returns the pixel-pipeline configuration (paper Sec. 3.6) the
// notebooks train env with: Configure(env, "", ""), the environment's defaults at
// full size, experiment.SizeSmoke of them at CI size.
func PipelineConfig(env string) (pipeline.Config, error) { return Configure(env, "", "") }

// PipelineConfigFor is PipelineConfig for any environment, e.g. a custom layout.
func PipelineConfigFor(e *gridworld.Env) (pipeline.Config, error) { return ConfigureFor(e, "", "") }

// QuickConfig returns the quick-start configuration for env, at both sizes:
// Configure(env, "", experiment.SizeCI), the MLP VQ-VAE on 4 episodes of 5,000 steps,
// which recovers the map of aliased from MNIST pixels in about a minute on two cores.
func QuickConfig(env string) (pipeline.Config, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return pipeline.Config{}, err
	}
	return QuickConfigFor(e)
}

// QuickConfigFor is QuickConfig for any environment, e.g. a custom layout.
func QuickConfigFor(e *gridworld.Env) (pipeline.Config, error) {
	if _, err := Size(); err != nil {
		return pipeline.Config{}, err
	}
	return ConfigureFor(e, "", experiment.SizeCI)
}

// Pipeline trains, resumes or loads the pixel run called name (in RunDir(name)) with
// cfg, writing progress lines to stderr, and returns the loaded run.
func Pipeline(name string, cfg pipeline.Config) (*pipeline.Result, error) {
	dir, err := RunDir(name)
	if err != nil {
		return nil, err
	}
	return PipelineIn(dir, cfg, Progress())
}

// PipelineIn is Pipeline for a run directory dir, with progress to progressOut (nil:
// none).
func PipelineIn(dir string, cfg pipeline.Config, progressOut io.Writer) (*pipeline.Result, error) {
	if _, err := pipeline.Run(context.Background(), dir, cfg, progressOut); err != nil {
		return nil, err
	}
	return pipeline.LoadRun(dir)
}

// SymbolicNamed trains or loads the symbolic run called name (in RunDir(name)) with
// cfg, writing progress lines to stderr.
func SymbolicNamed(name string, cfg SymbolicConfig) (*SymbolicRun, error) {
	dir, err := RunDir(name)
	if err != nil {
		return nil, err
	}
	return Symbolic(dir, cfg, Progress())
}

// FinishedRun returns the directory runs/<name> at the repository root (not
// GRADCSCG_RUNS_DIR: full-size runs are shared with `gradcscg train` and `gradcscg
// reproduce`) and whether it holds a finished pipeline run.
func FinishedRun(name string) (string, bool) {
	root, err := RepoRoot()
	if err != nil {
		return "", false
	}
	dir := filepath.Join(root, "runs", name)
	for _, f := range []string{pipeline.ConfigFile, pipeline.ReportFile, pipeline.CHMMFile, pipeline.VQVAEFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return dir, false
		}
	}
	return dir, true
}

// Benchmark returns the MNIST run of a benchmark environment (paper Sec. 5.2) with the
// given seed, and a sentence saying where it came from. A finished run in
// runs/<env>_mnist_seed<seed> (the directory `gradcscg train` and `gradcscg reproduce`
// use) is loaded at either size. Otherwise, at full size the paper's configuration is
// trained (or resumed) there; at CI size a smoke-sized run (experiment.SizeSmoke) is trained in
// RunDir("nb_<env>_seed<seed>").
func Benchmark(env string, seed uint64) (*pipeline.Result, string, error) {
	full, err := experiment.ImageRun(env, "mnist", "conv", int(seed))
	if err != nil {
		return nil, "", err
	}
	name := experiment.RunName(full)
	dir, done := FinishedRun(name)
	if done {
		res, err := pipeline.LoadRun(dir)
		return res, fmt.Sprintf("loaded the finished full-size run runs/%s", name), err
	}
	cfg, err := PipelineConfig(env)
	if err != nil {
		return nil, "", err
	}
	cfg.Seed = seed
	size, err := Size()
	if err != nil {
		return nil, "", err
	}
	if size == SizeFull {
		if dir == "" {
			return nil, "", fmt.Errorf("notebook: no repository root above the working directory for runs/%s", name)
		}
		res, err := PipelineIn(dir, cfg, Progress())
		return res, fmt.Sprintf("trained the full-size run runs/%s", name), err
	}
	res, err := Pipeline(fmt.Sprintf("nb_%s_seed%d", env, seed), cfg)
	return res, "trained a CI-sized run (no finished full-size run in runs/" + name + ")", err
}
