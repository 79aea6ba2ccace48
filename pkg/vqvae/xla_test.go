package vqvae

import (
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gradcscg/gradcscg/pkg/internal/xlabuild"
)

// TestXLABuildsGraphs: go-xla v0.4.13's own StableHLO builder (driven without a PJRT plugin)
// accepts every graph a Model compiles — the training step (conv and MLP, with and without the
// classification head), Encode, Latents and Reconstruct — as it does on a GPU.
func TestXLABuildsGraphs(t *testing.T) {
	if !xlabuild.Available {
		t.Skip("go-xla is compiled in only with cgo")
	}
	be, err := xlabuild.New("cuda", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arch     Arch
		classify bool
	}{{ArchConv, false}, {ArchConv, true}, {ArchMLP, false}} {
		cfg := DefaultConfig(8)
		cfg.Arch, cfg.Classify = tc.arch, tc.classify
		m, err := New(testBackend(), cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		const n = 16
		x := shapes.Make(dtypes.Float32, n, cfg.Side, cfg.Side, 1)
		trainIn := []shapes.Shape{x}
		if tc.classify {
			trainIn = append(trainIn, shapes.Make(dtypes.Int32, n))
		}
		for name, err := range map[string]error{
			"train step":  buildOnXLA(be, m, m.trainGraph, trainIn...),
			"Encode":      buildOnXLA(be, m, m.encodeGraph, x),
			"Latents":     buildOnXLA(be, m, m.latentGraph, x),
			"Reconstruct": buildOnXLA(be, m, m.reconGraph, x),
		} {
			if err != nil {
				t.Errorf("%s (classify %v) %s: go-xla refuses the graph: %v", tc.arch, tc.classify, name, err)
			}
		}
	}
}

// buildOnXLA compiles fn over m's variables for the input shapes on the xlabuild backend be and
// returns go-xla's error, nil when the StableHLO program was built.
func buildOnXLA[F model.ExecGraphFn](be compute.Backend, m *Model, fn F, in ...shapes.Shape) error {
	e, err := model.NewExec(be, m.Store(), fn)
	if err != nil {
		return err
	}
	_, err = e.Compile(in...)
	_, err = xlabuild.ProgramOf(err)
	return err
}
