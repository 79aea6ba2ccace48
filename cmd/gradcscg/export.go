package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/gradcscg/gradcscg/pkg/ipynb"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

func init() {
	register("export", "copy a finished run's final artefacts (no checkpoints) into a folder to commit", runExport)
	register("nbclean", "normalise notebooks with outputs for committing (in place; stdin to stdout without files)", runNBClean)
}

// stdin is the standard input; tests replace it.
var stdin io.Reader = os.Stdin

// runExport writes pipeline.Export of --run into --out (default
// results/runs/<the run directory's name>) and lists the files with their sizes.
func runExport(args []string) error {
	var run, out string
	fset := newFlagSet("export", "--run DIR [--out DIR]")
	fset.StringVar(&run, "run", "", "finished run directory (required)")
	fset.StringVar(&out, "out", "", "folder to write, replaced when it holds a shipped run (default results/runs/<name of --run>)")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if run == "" {
		return fmt.Errorf("--run: required (a finished run directory, e.g. runs/aliased_mnist_seed1)")
	}
	if out == "" {
		out = filepath.Join("results", "runs", filepath.Base(filepath.Clean(run)))
	}
	m, err := pipeline.Export(run, out)
	if err != nil {
		return err
	}
	names := []string{pipeline.ManifestFile}
	for name := range m.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	var total int64
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			return err
		}
		total += fi.Size()
		fmt.Fprintf(stdout, "%-14s %9d bytes\n", name, fi.Size())
	}
	fmt.Fprintf(stdout, "exported %s to %s: %d files, %d bytes\n", run, out, len(names), total)
	return nil
}

// runNBClean rewrites each notebook given with ipynb.Clean (paths under the working
// directory's repository root made relative), or filters stdin to stdout when none
// is given (a git clean filter).
func runNBClean(args []string) error {
	fset := newFlagSet("nbclean", "[FILE.ipynb...]")
	if err := fset.Parse(args); err != nil {
		return errUsage
	}
	opt := ipynb.Options{}
	if wd, err := os.Getwd(); err == nil {
		opt.Root = wd
	}
	if fset.NArg() == 0 {
		raw, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		clean, err := ipynb.Clean(raw, opt)
		if err != nil {
			return err
		}
		_, err = stdout.Write(clean)
		return err
	}
	for _, path := range fset.Args() {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		clean, err := ipynb.Clean(raw, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := writeFileAtomic(path, clean); err != nil {
			return err
		}
	}
	return nil
}
