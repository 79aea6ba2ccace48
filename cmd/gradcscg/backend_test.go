package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute"
)

// TestXLAWithoutPlugin: with GOMLX_BACKEND=xla:cpu and no PJRT plugin to be found,
// train and vqvae exit 1 within a second with one error line naming the variable to
// set, and leave no run directory behind.
func TestXLAWithoutPlugin(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "xla:cpu")
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	want := "PJRT_PLUGIN_LIBRARY_PATH"
	if !slices.Contains(compute.List(), "xla") {
		want = "not compiled into this binary"
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"train", "--env", "aliased", "--size", "ci", "--run", filepath.Join(dir, "run")},
		{"vqvae", "--env", "aliased", "--set", "steps=10", "--out", filepath.Join(dir, "vq")},
	} {
		start := time.Now()
		code, _, errOut := run(t, args...)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %v", args[0], took)
		}
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", args[0], code)
		}
		oneCleanError(t, errOut, want)
		if !strings.Contains(errOut, "GOMLX_BACKEND=\"xla:cpu\"") {
			t.Errorf("%s: error does not name GOMLX_BACKEND: %s", args[0], errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
		t.Error("train left a run directory")
	}
}
