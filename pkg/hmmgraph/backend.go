package hmmgraph

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
)

// NewBackend returns the backend on which every program of this project runs its graphs,
// and its label in GOMLX_BACKEND's syntax (reports and run directories record it):
//
//   - GOMLX_BACKEND unset or empty: the embedded go backend with GoBackendConfig;
//   - "go" or "go:OPTIONS": the go backend, made safe for the While loops of the
//     forward–backward pass (see GoBackendConfig): parallelism=-1 is added unless the
//     options bound the worker pool (parallelism=N, N > 0) or ask for ops_sequential; with
//     a bounded pool ops_sequential is added (ops_parallel with one is refused);
//   - any other backend compiled into this binary, e.g. "xla:cpu" or "xla:cuda" (XLA is
//     compiled in when the binary is built with cgo): it needs a PJRT plugin, found
//     through PJRT_PLUGIN_LIBRARY_PATH; nothing is ever downloaded. go-xla's options get
//     tf32=false unless they set tf32 (withFullFloat32): float32 matrix products run at
//     full float32 precision, which the HMM pass needs, also on GPUs whose default is TF32.
//     The label is the configuration used, e.g. "xla:cuda,tf32=false".
//
// Every failure is one error line that names GOMLX_BACKEND.
func NewBackend() (b compute.Backend, label string, err error) {
	cfg := strings.TrimSpace(os.Getenv(compute.ConfigEnvVar))
	if cfg == "" {
		b, err = NewGoBackend()
		return b, "go:" + GoBackendConfig, err
	}
	name, opts, _ := strings.Cut(cfg, ":")
	if name == "go" {
		opts, err := safeGoOptions(opts)
		if err != nil {
			return nil, "", fmt.Errorf("%s=%q: %w", compute.ConfigEnvVar, cfg, err)
		}
		label = "go:" + opts
		if b, err = newGo(opts); err != nil {
			return nil, "", fmt.Errorf("%s=%q: %w", compute.ConfigEnvVar, cfg, err)
		}
		return b, label, nil
	}
	if !slices.Contains(compute.List(), name) {
		why := ""
		if name == "xla" || name == "stablehlo" {
			why = " (XLA is compiled in only when the binary is built with cgo: a C compiler and CGO_ENABLED=1)"
		}
		return nil, "", fmt.Errorf("%s=%q: backend %q is not compiled into this binary%s; available: %s",
			compute.ConfigEnvVar, cfg, name, why, strings.Join(compute.List(), ", "))
	}
	defer func() {
		if r := recover(); r != nil {
			b, label, err = nil, "", fmt.Errorf("%s=%q: %v", compute.ConfigEnvVar, cfg, r)
		}
	}()
	used := cfg
	if slices.Contains(xlaNames, name) {
		used = name + ":" + withFullFloat32(opts)
	}
	if b, err = compute.NewWithConfig(used); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "plugin") {
			where := "a PJRT plugin library (pjrt_c_api_<name>_plugin.so)"
			switch plugin, _, _ := strings.Cut(opts, ","); plugin {
			case "cpu":
				where = "pjrt_c_api_cpu_plugin.so, the PJRT CPU plugin built from OpenXLA"
			case "cuda":
				where = "the CUDA PJRT plugin that JAX's jax-cuda12-pjrt or jax-cuda13-pjrt package installs (its xla_cuda_plugin.so)"
			}
			return nil, "", fmt.Errorf("%s=%q: no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH to the directory that holds %s (README, Backends and GPUs)",
				compute.ConfigEnvVar, cfg, where)
		}
		return nil, "", fmt.Errorf("%s=%q: %v", compute.ConfigEnvVar, cfg, strings.ReplaceAll(msg, "\n", " "))
	}
	return b, used, nil
}

// xlaNames are the names under which go-xla registers its backend.
var xlaNames = []string{"xla", "stablehlo", "hlo", "shlo"}

// withFullFloat32 returns go-xla's options opts (the plugin name, then comma-separated
// options) with tf32=false appended unless an option sets tf32 ("tf32=…" or "notf32"):
// go-xla then marks every float32 DotGeneral for the highest precision (CUDA) instead of
// letting it run in TF32 (10-bit mantissa), its default on CUDA.
func withFullFloat32(opts string) string {
	for _, o := range strings.Split(opts, ",")[1:] {
		key, _, _ := strings.Cut(strings.TrimSpace(o), "=")
		if key == "tf32" || key == "notf32" {
			return opts
		}
	}
	return opts + ",tf32=false"
}

// safeGoOptions returns the go backend's options opts (comma-separated) with what keeps
// a While loop from deadlocking: nothing when they hold ops_sequential or an unbounded
// pool (parallelism ≤ 0), ops_sequential when they bound the pool (parallelism=N, N > 0),
// else parallelism=-1. ops_parallel with a bounded pool or with ops_sequential is an error.
func safeGoOptions(opts string) (string, error) {
	var keep []string
	sequential, parallel, bounded, pool := false, false, false, false
	for _, o := range strings.Split(opts, ",") {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			continue
		case o == "ops_sequential":
			sequential = true
		case o == "ops_parallel":
			parallel = true
		case strings.HasPrefix(o, "parallelism="):
			n, err := strconv.Atoi(strings.TrimPrefix(o, "parallelism="))
			if err != nil {
				return "", fmt.Errorf("%q: parallelism needs an integer (-1: unbounded)", o)
			}
			pool, bounded = true, n > 0
		}
		keep = append(keep, o)
	}
	switch {
	case sequential && parallel:
		return "", fmt.Errorf("ops_sequential and ops_parallel contradict each other")
	case sequential:
	case bounded && parallel:
		return "", fmt.Errorf("ops_parallel with a bounded worker pool deadlocks the While loops of this program's graphs; use %q",
			"go:"+GoBackendConfig)
	case bounded:
		keep = append(keep, "ops_sequential")
	case !pool:
		keep = append(keep, GoBackendConfig)
	}
	return strings.Join(keep, ","), nil
}

// newGo is gobackend.New(opts) without the line "Go backend: parallelism set to N" that it
// prints on stdout when opts set the pool size: a command's stdout carries its results.
func newGo(opts string) (compute.Backend, error) {
	if !strings.Contains(opts, "parallelism=") {
		return gobackend.New(opts)
	}
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return gobackend.New(opts)
	}
	defer null.Close()
	old := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = old }()
	return gobackend.New(opts)
}

var stdoutMu sync.Mutex
