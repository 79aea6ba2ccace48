package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// ShippedRoot is where the repository keeps shipped runs (pipeline.Export; `make
// ship-runs`), relative to its root: results/runs/<name> holds the final artefacts of
// the full-size run <name>.
const ShippedRoot = "results/runs"

// ShippedDir returns the folder of the shipped run called name in the repository.
func ShippedDir(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(ShippedRoot), name), nil
}

// shippedDir is ShippedDir; tests replace it.
var shippedDir = ShippedDir

// ShowPath returns path as the notebooks print it, never absolute where it can be
// helped: inside an overriding runs root (GRADCSCG_RUNS_DIR) as $GRADCSCG_RUNS_DIR/…,
// inside the repository relative to its root, anything else unchanged.
func ShowPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if d := os.Getenv(RunsEnv); d != "" {
		if runs, err := filepath.Abs(d); err == nil {
			if rel, ok := inside(runs, abs); ok {
				return filepath.ToSlash(filepath.Join("$"+RunsEnv, rel))
			}
		}
	}
	if root, err := RepoRoot(); err == nil {
		if rel, ok := inside(root, abs); ok {
			return filepath.ToSlash(rel)
		}
	}
	return path
}

// inside returns path relative to dir and whether path is dir or inside it.
func inside(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// showPaths rewrites, in a line of text, the overriding runs root and the repository
// root as ShowPath writes paths under them.
func showPaths(line string) string {
	if d := os.Getenv(RunsEnv); d != "" {
		if runs, err := filepath.Abs(d); err == nil && runs != "/" {
			line = strings.ReplaceAll(line, runs, "$"+RunsEnv)
		}
	}
	if root, err := RepoRoot(); err == nil && root != "/" {
		line = strings.ReplaceAll(line, root+string(filepath.Separator), "")
	}
	return line
}

// runFinished reports whether dir holds the files of a finished pipeline run.
func runFinished(dir string) bool {
	for _, f := range []string{pipeline.ConfigFile, pipeline.ReportFile, pipeline.CHMMFile, pipeline.VQVAEFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// trainOrLoad returns the pixel run called name (its Resume name) with cfg and a
// sentence saying where it came from:
//
//   - dir holds the finished run: it is loaded (a directory with another
//     configuration is refused, as pipeline.Run refuses it);
//   - at full size, the shipped run ShippedDir(name) is cfg's: it is loaded
//     (pipeline.LoadShipped; a damaged one is refused);
//   - otherwise the run is trained, or resumed, in dir with its progress in one live
//     block, unless an earlier cell of this kernel was interrupted while training it
//     (guardTraining).
func trainOrLoad(name, dir string, cfg pipeline.Config) (*pipeline.Result, string, error) {
	size, err := Size()
	if err != nil {
		return nil, "", err
	}
	kind := "full-size"
	if size == SizeCI {
		kind = "CI-size"
	}
	if runFinished(dir) {
		res, err := PipelineIn(dir, cfg, nil)
		return res, fmt.Sprintf("loaded the finished %s run %s", kind, ShowPath(dir)), err
	}
	note := ""
	if size == SizeFull {
		if shipped, err := shippedDir(name); err == nil && pipeline.IsShipped(shipped) {
			diff, err := pipeline.ShippedDiff(shipped, cfg)
			if err != nil {
				return nil, "", err
			}
			if diff == nil {
				res, err := pipeline.LoadShipped(shipped)
				return res, "loaded the shipped full-size run " + ShowPath(shipped), err
			}
			note = fmt.Sprintf(" (the shipped %s has another configuration: %s)", ShowPath(shipped), strings.Join(diff, "; "))
		}
	}
	out, finish := trainingProgress()
	start := time.Now()
	err = guardTraining(name, func(ctx context.Context) error {
		_, err := pipeline.Run(ctx, dir, cfg, out)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	finish(fmt.Sprintf("trained %s in %s", ShowPath(dir), time.Since(start).Round(time.Second)))
	res, err := pipeline.LoadRun(dir)
	return res, fmt.Sprintf("trained the %s run %s%s", kind, ShowPath(dir), note), err
}
