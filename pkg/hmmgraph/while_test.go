package hmmgraph

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
)

// runLoopWithTimeout runs value+gradient of the loop pass on be for a batch large enough that the
// matmuls and element-wise ops inside the While bodies use the worker pool (B = 64, N = 201), and
// reports whether it finished within the timeout. A hung run leaks its goroutine.
func runLoopWithTimeout(tb testing.TB, be compute.Backend, timeout time.Duration) (finished bool, err error) {
	rng := rand.New(rand.NewPCG(1, 1))
	lengths := make([]int, 64)
	for i := range lengths {
		lengths[i] = 48 - i%5
	}
	p := randomProblem(rng, UniformLayout(10, 20), 4, lengths, 48, true) // N = 201
	done := make(chan error, 1)
	go func() {
		exec, err := graph.NewExec(be, func(in []*graph.Node) []*graph.Node {
			ll := graph.ReduceAllSum(LogLikelihoodLoop(in[0], in[1], p.layout.StateLogEmissions(in[2]), in[3], in[4]))
			return append([]*graph.Node{ll}, graph.Gradient(ll, in[0], in[1], in[2])...)
		})
		if err == nil {
			for range 2 {
				if _, err = exec.Call(p.inputs(dtypes.Float32)...); err != nil {
					break
				}
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		return true, err
	case <-time.After(timeout):
		return false, nil
	}
}

// TestLoopFinishes: the While-based pass finishes on the go backend with GoBackendConfig (the
// setting every program uses; three times, as a deadlock depends on timing) and with each other
// setting that safeGoOptions lets through.
func TestLoopFinishes(t *testing.T) {
	for _, c := range []struct {
		cfg  string
		runs int
	}{{GoBackendConfig, 3}, {"ops_sequential", 1}, {"ops_parallel,parallelism=-1", 1}, {"parallelism=2,ops_sequential", 1}} {
		be, err := gobackend.New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range c.runs {
			finished, err := runLoopWithTimeout(t, be, 3*time.Minute)
			if !finished {
				t.Fatalf("loop pass with %q did not finish in 3 minutes (deadlock?)", c.cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestProbeDefaultBackendDeadlock documents why GoBackendConfig exists: the same pass on the go
// backend with its default worker pool and its default (dynamic) scheduling, or with
// "ops_parallel", hangs. It leaks the hung
// goroutines, so it only runs with GRADCSCG_PROBE_DEADLOCK=1; it fails if a setting deadlocks.
func TestProbeDefaultBackendDeadlock(t *testing.T) {
	if os.Getenv("GRADCSCG_PROBE_DEADLOCK") == "" {
		t.Skip("set GRADCSCG_PROBE_DEADLOCK=1 to probe the default go backend")
	}
	for _, cfg := range []string{"", "ops_parallel"} {
		be, err := gobackend.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		finished, err := runLoopWithTimeout(t, be, time.Minute)
		if !finished {
			t.Errorf("go backend config %q: the While-based pass did not finish in 1 minute (deadlock)", cfg)
			continue
		}
		t.Logf("go backend config %q finished (err=%v): no deadlock this time", cfg, err)
	}
}
