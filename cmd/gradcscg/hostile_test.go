package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// runWithin is run that fails the test when the command has not ended after limit (a
// read blocked on a named pipe, or work without a bound).
func runWithin(t *testing.T, limit time.Duration, args ...string) (code int, out, errOut string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		c, o, e := run(t, args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-time.After(limit):
		t.Fatalf("%v: still running after %v", args, limit)
		return 0, "", ""
	}
}

// special makes path a named pipe (kind "fifo") or a symbolic link to a device.
func special(t *testing.T, path, kind string) {
	t.Helper()
	var err error
	if kind == "fifo" {
		err = syscall.Mkfifo(path, 0o644)
	} else {
		err = os.Symlink(kind, path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpecialUserFiles: a --config, --layout, --model or data set file that is a named
// pipe or a link to /dev/zero or /dev/urandom ends in one error line naming it, at
// once: never a hang, never memory running out.
func TestSpecialUserFiles(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"fifo", "/dev/zero", "/dev/urandom"} {
		name := strings.ReplaceAll(strings.TrimPrefix(kind, "/dev/"), "/", "_")
		p := filepath.Join(dir, name)
		special(t, p, kind)
		for _, args := range [][]string{
			{"train", "--config", p, "--run", filepath.Join(dir, "r-"+name), "--quiet"},
			{"train", "--layout", p, "--run", filepath.Join(dir, "r2-"+name), "--quiet"},
			{"symbolic", "--layout", p, "--quiet"},
			{"plan", "--model", p, "--env", "aliased", "--quiet"},
		} {
			code, _, errOut := runWithin(t, 30*time.Second, args...)
			if code != 1 {
				t.Errorf("%v: exit %d, want 1", args, code)
			}
			oneCleanError(t, errOut, p)
			if !strings.Contains(errOut, "not a regular file") {
				t.Errorf("%v: %q does not say it is not a regular file", args, errOut)
			}
		}
	}
	// The data set's checksum list, and a data file it lists.
	for _, file := range []string{dataset.ChecksumFile, dataset.TrainImagesFile} {
		data := copyData(t)
		p := filepath.Join(data, "mnist", file)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		special(t, p, "/dev/zero")
		t.Setenv(dataset.DataEnv, data)
		code, _, errOut := runWithin(t, 60*time.Second, "train", "--env", "aliased", "--size", "smoke", "--run", filepath.Join(t.TempDir(), "r"), "--quiet")
		if code != 1 {
			t.Errorf("%s on /dev/zero: exit %d, want 1", file, code)
		}
		oneCleanError(t, errOut, p)
	}
}

// copyData copies the repository's data/mnist into a new data directory.
func copyData(t *testing.T) string {
	t.Helper()
	root, err := dataset.RepoRoot() // not DataDir: a test may point $GRADCSCG_DATA elsewhere
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "data")
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "mnist"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(src, "mnist"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, "mnist", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "mnist", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// TestOtherImageSize: MNIST files of 32×32 images (checksums regenerated) end train
// and vqvae in one error line naming the file, its image size and the size expected,
// not in a panic.
func TestOtherImageSize(t *testing.T) {
	data := copyData(t)
	dir := filepath.Join(data, "mnist")
	for _, name := range []string{dataset.TrainImagesFile, dataset.TestImagesFile} {
		p := filepath.Join(dir, name)
		im, err := dataset.ReadImages(p)
		if err != nil {
			t.Fatal(err)
		}
		big := &dataset.Images{N: im.N, Rows: 32, Cols: 32, Pixels: make([]uint8, im.N*32*32)}
		for i := range im.N {
			for r := range 28 {
				copy(big.Pixels[(i*32+r+2)*32+2:], im.Image(i)[r*28:(r+1)*28])
			}
		}
		if err := dataset.WriteImages(p, big); err != nil {
			t.Fatal(err)
		}
	}
	if err := dataset.WriteChecksums(dir, []string{dataset.TrainImagesFile, dataset.TrainLabelsFile, dataset.TestImagesFile, dataset.TestLabelsFile}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dataset.DataEnv, data)
	images := filepath.Join(dir, dataset.TrainImagesFile)
	code, _, errOut := run(t, "train", "--env", "aliased", "--size", "smoke", "--run", filepath.Join(t.TempDir(), "r"), "--quiet")
	if code != 1 {
		t.Errorf("train: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, images+" holds 32×32 images, but vqvae.side is 28")
	code, _, errOut = run(t, "vqvae", "--env", "aliased", "--set", "steps=2", "--out", filepath.Join(t.TempDir(), "vq"), "--quiet")
	if code != 1 {
		t.Errorf("vqvae: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, images+" holds 32×32 images; the VQ-VAE reads 28×28")
}

// TestVQVAESideMemory: a configuration file with vqvae.side 1024 (the most Validate
// allows) is refused in one line by the memory estimate before anything is allocated (with no data set to load,
// so that nothing else could refuse it first).
func TestVQVAESideMemory(t *testing.T) {
	defer func(f func() float64) { memTotal = f }(memTotal)
	memTotal = func() float64 { return 16e9 }
	t.Setenv(dataset.DataEnv, t.TempDir())
	cfg, err := pipeline.DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg.VQVAE.Side = 1024
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "train", "--config", p, "--run", filepath.Join(t.TempDir(), "r"), "--quiet")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "this process may use 16.0 GB")
}

// TestFiguresMissingRuns: figures --runs naming no directory exits 1 in one line, and
// draws nothing.
func TestFiguresMissingRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "figs")
	missing := filepath.Join(t.TempDir(), "nonexistent")
	code, _, errOut := run(t, "figures", "--runs", missing, "--out", out, "--symbolic=false", "--quiet")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "--runs "+missing+": no such directory")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("figures written to %s: %v", out, err)
	}
	code, _, errOut = run(t, "reproduce", "--suite", "symbolic", "--collect", "--out", missing, "--quiet")
	if code != 1 {
		t.Errorf("reproduce --collect --out missing: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "--out "+missing+": no such directory")
}

// TestPlanSizeBound: --pairs, --localize and --demo all at 1,000,000 are refused at
// once, the line stating the estimate and the bound; a request under the bound runs.
func TestPlanSizeBound(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "aliased.chmm")
	if code, _, errOut := run(t, "symbolic", "--env", "aliased", "--trainer", "em", "--set", "episodes=2", "--set", "steps=3000",
		"--set", "restarts=1", "--quiet", "--save", model); code != 0 {
		t.Fatalf("training failed (%d): %s", code, errOut)
	}
	code, _, errOut := runWithin(t, 60*time.Second, "plan", "--model", model, "--env", "aliased", "--pairs", "1000000",
		"--localize", "1000000", "--demo", "1000000", "--quiet")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "filter and planning operations, more than the 1e+13")
	if code, _, errOut := runWithin(t, 60*time.Second, "plan", "--model", model, "--env", "aliased", "--pairs", "20", "--localize", "100", "--quiet"); code != 0 {
		t.Errorf("a small request: exit %d: %s", code, errOut)
	}
}
