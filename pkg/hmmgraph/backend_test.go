package hmmgraph

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute"
)

// TestNewBackend: GOMLX_BACKEND unset or go-based gives the go backend with a setting
// under which While loops cannot deadlock (an unbounded pool added when the options say
// nothing, ops_sequential added to a bounded pool, ops_parallel with a bounded pool
// refused); an unknown name and XLA without a plugin are one error line naming the
// variable, within a second, and no download is attempted. go-xla reads its plugin
// search path once, at start-up, so an XLA backend whose plugin it found there
// (startupPlugins) must load instead: GOMLX_BACKEND=xla:cuda on a GPU machine.
func TestNewBackend(t *testing.T) {
	found := startupPlugins()
	for _, c := range []struct{ env, label, err string }{
		{"", "go:parallelism=-1", ""},
		{"go", "go:parallelism=-1", ""},
		{"go:parallelism=-1", "go:parallelism=-1", ""},
		{"go:ops_sequential", "go:ops_sequential", ""},
		{"go:parallelism=1", "go:parallelism=1,ops_sequential", ""},
		{"go:parallelism=2,ops_sequential", "go:parallelism=2,ops_sequential", ""},
		{"go:ops_parallel", "go:ops_parallel,parallelism=-1", ""},
		{"go:parallelism=0", "go:parallelism=0", ""},
		{"go:ops_parallel,parallelism=4", "", "ops_parallel with a bounded worker pool deadlocks"},
		{"go:parallelism=many", "", "parallelism needs an integer"},
		{"go:ops_sequential,ops_parallel", "", "contradict"},
		{"go:nosuch_option", "", "unknown configuration option"},
		{"nosuch", "", `backend "nosuch" is not compiled into this binary`},
		{"xla:cpu", "", "xla"},
		{"xla:cuda", "", "xla"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(compute.ConfigEnvVar, c.env)
			start := time.Now()
			b, label, err := NewBackend()
			if plugin, ok := strings.CutPrefix(c.env, "xla:"); ok && slices.Contains(found, plugin) {
				if err != nil || b == nil || label != c.env+",tf32=false" {
					t.Fatalf("plugin %q was found at start-up, but: backend %v, label %q, error %v", plugin, b, label, err)
				}
				return
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %v", took)
			}
			if c.err == "" {
				if err != nil || b == nil || label != c.label {
					t.Fatalf("backend %v, label %q, error %v; want label %q", b, label, err, c.label)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error (label %q)", label)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "GOMLX_BACKEND=") || !strings.Contains(msg, c.err) {
				t.Errorf("error %q: want one line naming GOMLX_BACKEND and %q", msg, c.err)
			}
			if strings.HasPrefix(c.env, "xla") {
				want := "no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH"
				if !slices.Contains(compute.List(), "xla") {
					want = "not compiled into this binary"
				}
				if !strings.Contains(msg, want) {
					t.Errorf("error %q: want %q", msg, want)
				}
			}
		})
	}
}

// TestFullFloat32Option: go-xla's options get tf32=false unless they already set tf32.
func TestFullFloat32Option(t *testing.T) {
	for opts, want := range map[string]string{
		"cuda":                       "cuda,tf32=false",
		"":                           ",tf32=false",
		"cuda,preallocate=false":     "cuda,preallocate=false,tf32=false",
		"cuda,tf32=true":             "cuda,tf32=true",
		"cuda,tf32=false":            "cuda,tf32=false",
		"cuda,notf32":                "cuda,notf32",
		"cuda, tf32=1,allocator=bfc": "cuda, tf32=1,allocator=bfc",
		"tf32":                       "tf32,tf32=false", // a plugin named tf32
	} {
		if got := withFullFloat32(opts); got != want {
			t.Errorf("withFullFloat32(%q) = %q, want %q", opts, got, want)
		}
	}
}
