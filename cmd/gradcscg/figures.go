package main

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/experiment"
)

func init() {
	register("figures", "draw the paper's figures (layouts, symbolic maps, per-run maps, dynamics, Table 4)", runFigures)
}

func runFigures(args []string) error {
	var f experiment.Figures
	var symbolic, quiet bool
	fset := newFlagSet("figures", "[--runs DIR] [--out DIR] [--models DIR] [flags]")
	fset.StringVar(&f.Runs, "runs", "runs", "directory of pipeline run directories (each finished one gets Figures 4, 5, 6 and Table 4)")
	fset.StringVar(&f.Out, "out", "figures", "output directory")
	fset.StringVar(&f.Models, "models", "", "directory of symbolic models ENV.model for Figure 3 (missing ones are trained and saved there)")
	fset.StringVar(&f.Format, "format", "png", "file format: png, svg or pdf")
	fset.Uint64Var(&f.Seed, "seed", 1, "seed of the symbolic training and held-out walks")
	fset.BoolVar(&symbolic, "symbolic", true, "draw Figure 3 (trains three small symbolic models when --models has none, ~1 min)")
	fset.BoolVar(&quiet, "quiet", false, "no progress output")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if err := checkInputDir(fset, "runs", f.Runs); err != nil {
		return err
	}
	if f.Seed == 0 {
		return fmt.Errorf("--seed 0: must be at least 1")
	}
	f.SkipSymbolic = !symbolic
	if !quiet {
		f.Progress = stderr
	}
	_, err := experiment.RunFigures(f, stderr)
	return flagNamed(err, map[string]string{"Format": "--format"})
}
