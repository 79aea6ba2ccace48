package notebook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

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

// Pipeline returns the pixel run called name with cfg: loaded when RunDir(name) holds
// it finished; at full size, loaded from the shipped run results/runs/<name> when that
// is cfg's run; otherwise trained, or resumed, in RunDir(name), with its progress in
// one live block. After a Kernel → Interrupt during its training, later cells of the
// kernel refuse to resume it until Resume(name) (or a kernel restart).
func Pipeline(name string, cfg pipeline.Config) (*pipeline.Result, error) {
	dir, err := RunDir(name)
	if err != nil {
		return nil, err
	}
	res, _, err := trainOrLoad(name, dir, cfg)
	return res, err
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
// cfg, with its progress in one live block; a training interrupted in this kernel is
// not resumed by later cells until Resume(name), as with Pipeline.
func SymbolicNamed(name string, cfg SymbolicConfig) (*SymbolicRun, error) {
	dir, err := RunDir(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, SymbolicReportFile)); err == nil {
		return Symbolic(dir, cfg, nil)
	}
	var run *SymbolicRun
	out, finish := trainingProgress()
	start := time.Now()
	err = guardTraining(name, func(context.Context) error {
		run, err = Symbolic(dir, cfg, out)
		return err
	})
	if err != nil {
		return nil, err
	}
	finish(fmt.Sprintf("trained %s in %s", ShowPath(dir), time.Since(start).Round(time.Second)))
	return run, nil
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
// given seed, and a sentence saying where it came from. At full size a finished run in
// runs/<env>_mnist_seed<seed> (the directory `gradcscg train` and `gradcscg reproduce`
// use) is loaded; otherwise the shipped run
// results/runs/<env>_mnist_seed<seed> is loaded when it is the paper's configuration,
// else that configuration is trained (or resumed) in runs/<env>_mnist_seed<seed>; at
// CI size a smoke-sized run (experiment.SizeSmoke) is trained in
// RunDir("nb_<env>_seed<seed>"). Trainings are guarded as Pipeline's.
func Benchmark(env string, seed uint64) (*pipeline.Result, string, error) {
	full, err := experiment.ImageRun(env, "mnist", "conv", int(seed))
	if err != nil {
		return nil, "", err
	}
	size, err := Size()
	if err != nil {
		return nil, "", err
	}
	name := experiment.RunName(full)
	dir, done := FinishedRun(name)
	if done && size == SizeFull {
		res, err := pipeline.LoadRun(dir)
		return res, "loaded the finished full-size run " + ShowPath(dir), err
	}
	cfg, err := PipelineConfig(env)
	if err != nil {
		return nil, "", err
	}
	cfg.Seed = seed
	if size == SizeFull {
		if dir == "" {
			return nil, "", fmt.Errorf("notebook: no repository root above the working directory for runs/%s", name)
		}
		return trainOrLoad(name, dir, cfg)
	}
	ci := fmt.Sprintf("nb_%s_seed%d", env, seed)
	if dir, err = RunDir(ci); err != nil {
		return nil, "", err
	}
	return trainOrLoad(ci, dir, cfg)
}
