package notebook

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// Notebook sizes (GRADCSCG_NB_SIZE).
const (
	SizeFull = "full" // the paper's configurations (default)
	SizeCI   = "ci"   // small configurations for the headless notebook test

	SizeEnv = "GRADCSCG_NB_SIZE"  // selects the size
	RunsEnv = "GRADCSCG_RUNS_DIR" // overrides the runs root (default: runs/ at the repository root)

	// Module is the module path that marks the repository root's go.mod.
	Module = "github.com/gradcscg/gradcscg"
)

// Size returns the notebook size from GRADCSCG_NB_SIZE: SizeFull when unset or
// empty, SizeCI, or an error naming the bad value.
func Size() (string, error) {
	switch v := strings.TrimSpace(os.Getenv(SizeEnv)); v {
	case "", SizeFull:
		return SizeFull, nil
	case SizeCI:
		return SizeCI, nil
	default:
		return "", fmt.Errorf("notebook: %s=%q: want %q or %q", SizeEnv, v, SizeFull, SizeCI)
	}
}

// CI reports whether the notebooks run at CI size. An invalid GRADCSCG_NB_SIZE
// panics with Size's error: a notebook must not silently pick a size.
func CI() bool {
	s, err := Size()
	if err != nil {
		panic(err)
	}
	return s == SizeCI
}

// RepoRoot returns the repository root: the closest directory, from the working
// directory upwards, whose go.mod declares module github.com/gradcscg/gradcscg.
// GoNB runs cells in the notebook's directory (notebooks/), so this is its parent.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("notebook: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if ok, err := isRepoRoot(dir); err != nil {
			return "", err
		} else if ok {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("notebook: no go.mod of module %s in %s or above", Module, wd)
		}
	}
}

// goModLimit bounds a go.mod file read to find the repository root.
var goModLimit = inputfile.Limit{Format: "go.mod file", Bytes: 1 << 20}

// isRepoRoot reports whether dir/go.mod declares Module.
func isRepoRoot(dir string) (bool, error) {
	f, err := inputfile.Open(filepath.Join(dir, "go.mod"), goModLimit)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("notebook: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == Module, nil
		}
	}
	return false, sc.Err()
}

// RunsRoot returns the directory that holds run directories: GRADCSCG_RUNS_DIR when
// set, else runs/ at the repository root.
func RunsRoot() (string, error) {
	if d := os.Getenv(RunsEnv); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "runs"), nil
}

// RunDir returns the run directory of a notebook run called name under RunsRoot, with
// the suffix "_ci" at CI size. The directory is not created.
func RunDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("notebook: run name %q: want a plain directory name", name)
	}
	size, err := Size()
	if err != nil {
		return "", err
	}
	root, err := RunsRoot()
	if err != nil {
		return "", err
	}
	if size == SizeCI {
		name += "_ci"
	}
	return filepath.Join(root, name), nil
}
