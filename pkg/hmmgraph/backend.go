package hmmgraph

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
)

// NewBackend returns the backend on which every program of this project runs its graphs,
// and its label in GOMLX_BACKEND's syntax (reports and run directories record it):
//
//   - GOMLX_BACKEND unset or empty: the embedded go backend with GoBackendConfig;
//   - "go" or "go:OPTIONS": the go backend, with ops_sequential added when missing (the
//     While loops of the forward–backward pass deadlock without it); ops_parallel is
//     refused for the same reason;
//   - any other backend compiled into this binary, e.g. "xla:cpu" or "xla:cuda" (XLA is
//     compiled in when the binary is built with cgo): it needs a PJRT plugin, found
//     through PJRT_PLUGIN_LIBRARY_PATH; nothing is ever downloaded.
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
		var keep []string
		for _, o := range strings.Split(opts, ",") {
			switch o = strings.TrimSpace(o); o {
			case "", GoBackendConfig:
			case "ops_parallel":
				return nil, "", fmt.Errorf("%s=%q: ops_parallel deadlocks the While loops of this program's graphs; use %q",
					compute.ConfigEnvVar, cfg, "go:"+GoBackendConfig)
			default:
				keep = append(keep, o)
			}
		}
		label = "go:" + strings.Join(append(keep, GoBackendConfig), ",")
		if b, err = gobackend.New(strings.TrimPrefix(label, "go:")); err != nil {
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
	if b, err = compute.NewWithConfig(cfg); err != nil {
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
	return b, cfg, nil
}
