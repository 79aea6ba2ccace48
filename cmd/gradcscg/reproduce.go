package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func init() {
	register("reproduce", "run a suite of seeds × environments × trainers and write result tables", runReproduce)
}

func runReproduce(args []string) error {
	fset := newFlagSet("reproduce", "[--suite symbolic|cscg|bigger|images|ablation|plan|stress] [--seeds 3] [--out results] [--force]")
	suite := fset.String("suite", "symbolic", "symbolic (7 environments), cscg (original CSCG demos), bigger (100-365 places), images (Tables 3, 4), ablation, plan or stress")
	dataset := fset.String("dataset", "mnist", "images and plan suites: mnist or fashion")
	arch := fset.String("arch", "conv", "images and plan suites: VQ-VAE architecture, conv (the reference) or mlp (fast); plan suite also all (both)")
	runs := fset.String("runs", "runs", "images and plan suites: where the run directories live")
	pairs := fset.Int("pairs", 200, "plan suite: random (start, goal) pairs per run")
	variantFlag := fset.String("variant", "default", "plan suite: default, uniform-noise (--noise auto), soft (--obs soft), no-look (MPC stops on any majority) or previous (both)")
	seeds := fset.Int("seeds", 3, "seeds 1..n per environment and trainer (stress suite: caps each configuration's own 5 or 3)")
	trainers := fset.String("trainers", "gradient,em", "comma-separated trainers")
	envsFlag := fset.String("envs", "", "comma-separated subset of the suite's environments")
	out := fset.String("out", "results", "output directory: one JSON report per run and <suite>.md")
	force := fset.Bool("force", false, "re-run runs whose report already exists")
	quiet := fset.Bool("quiet", false, "no per-run progress output")
	collect := fset.Bool("collect", false, "train nothing: tabulate the reports that exist")
	steps := fset.Int("steps", 0, "symbolic suites: steps of every walk (0: each environment's own); reports and table named with _steps<N>")
	restarts := fset.Int("restarts", 0, "symbolic suites: train the reference budget from this many starts (0: grow each budget by splitting, one start)")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: need at least 1", *seeds)
	}
	if err := checkCollectOut(fset, *collect, *out); err != nil {
		return err
	}
	if _, symbolic := experiment.SymbolicSuites[*suite]; flagGiven(fset, "steps") && !symbolic {
		return fmt.Errorf("--steps with --suite %s: only the symbolic suites (symbolic, cscg, bigger) take a data size", *suite)
	}
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}
	// The pixel suites stop at a checkpoint on Ctrl-C or SIGTERM and resume where they
	// stopped; the symbolic and plan suites are simply killed, and a rerun skips the
	// reports already written.
	ctx := context.Background()
	if *suite == "images" || *suite == "ablation" || *suite == "stress" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	envs := splitList(*envsFlag)
	for _, e := range envs {
		if _, err := gridworld.Named(e); err != nil {
			return fmt.Errorf("--envs: %w", err)
		}
	}
	var table, path string
	var err error
	switch *suite {
	case "images":
		if *arch != "conv" && *arch != "mlp" {
			return fmt.Errorf("--arch %q: must be conv or mlp", *arch)
		}
		s := experiment.ImageSuite{Envs: envs, Dataset: *dataset, Arch: *arch, Seeds: *seeds, Runs: *runs, Out: *out,
			Collect: *collect, Progress: progress}
		var t4 string
		table, t4, err = experiment.RunImageSuite(ctx, s, stderr)
		if table != "" {
			fmt.Fprint(stdout, table, "\n", t4)
		}
		return suiteError(err)
	case "ablation":
		if *arch != "conv" && *arch != "mlp" {
			return fmt.Errorf("--arch %q: must be conv or mlp", *arch)
		}
		table, path, err = experiment.RunAblationSuite(ctx, experiment.AblationSuite{Envs: envs, Dataset: *dataset, Arch: *arch,
			Seeds: *seeds, Runs: *runs, Out: *out, Collect: *collect, Progress: progress}, stderr)
	case "stress":
		capSeeds := 0 // the configurations' own seeds unless --seeds is given
		if flagGiven(fset, "seeds") {
			capSeeds = *seeds
		}
		table, path, err = experiment.RunStressSuite(ctx, experiment.StressSuite{Envs: envs, Seeds: capSeeds, Runs: *runs, Out: *out,
			Collect: *collect, Force: *force, Progress: progress}, stderr)
	case "plan":
		archs := []string{*arch}
		switch *arch {
		case "conv", "mlp":
		case "all":
			archs = []string{"conv", "mlp"}
		default:
			return fmt.Errorf("--arch %q: must be conv, mlp or all", *arch)
		}
		if *pairs < 1 {
			return fmt.Errorf("--pairs %d: need at least 1", *pairs)
		}
		preset, perr := experiment.LookupPlanPreset(*variantFlag)
		if perr != nil {
			return flagNamed(perr, map[string]string{"preset": "--variant"})
		}
		table, path, err = experiment.RunPlanSuite(experiment.PlanSuite{Envs: envs, Dataset: *dataset, Archs: archs, Seeds: *seeds,
			Pairs: *pairs, Preset: preset, Runs: *runs, Out: *out, Collect: *collect, Force: *force, Progress: progress}, stderr)
	default:
		if _, ok := experiment.SymbolicSuites[*suite]; !ok {
			return fmt.Errorf("--suite %q: must be symbolic, cscg, bigger, images, ablation, plan or stress", *suite)
		}
		table, path, err = experiment.RunSymbolicSuite(experiment.SymbolicSuite{Name: *suite, Envs: envs,
			Trainers: splitList(*trainers), Seeds: *seeds, Restarts: *restarts, Steps: *steps, Out: *out, Force: *force, Collect: *collect,
			Progress: progress}, stderr)
	}
	if table != "" {
		fmt.Fprint(stdout, table)
		fmt.Fprintf(stderr, "table written to %s\n", path)
	}
	return suiteError(err)
}

// suiteError names the flag behind a suite's field error and says how to resume an
// interrupted suite.
func suiteError(err error) error {
	if errors.Is(err, experiment.ErrInterrupted) {
		return err
	}
	return flagNamed(err, map[string]string{"trainer": "--trainers", "Seeds": "--seeds", "Restarts": "--restarts", "Steps": "--steps",
		"Dataset": "--dataset", "Arch": "--arch", "Pairs": "--pairs"})
}
