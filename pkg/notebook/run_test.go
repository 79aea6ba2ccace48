package notebook

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

func TestSymbolicDefaults(t *testing.T) {
	t.Setenv(SizeEnv, "full")
	full, err := SymbolicDefaults("room", TrainerEM)
	if err != nil {
		t.Fatal(err)
	}
	if full.Episodes != 4 || full.Steps != 10000 || full.ClonesPerClass != 4 || full.ClonesByClass[0] != 20 ||
		full.Restarts != 1 || full.Doublings != 16 || full.ViterbiIters != 100 || full.Iters != 0 || full.Layout != "" {
		t.Errorf("full-size room/em defaults: %+v", full)
	}
	t.Setenv(SizeEnv, "ci")
	ci, err := SymbolicDefaults("room", TrainerGradient)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Episodes != 1 || ci.Steps != 3000 || ci.ClonesByClass[0] != 10 || ci.ClonesPerClass != 4 || ci.Iters != 200 || ci.ViterbiIters != 0 {
		t.Errorf("CI-size room/gradient defaults: %+v", ci)
	}
	if _, err := SymbolicDefaults("room", "sgd"); err == nil {
		t.Error("trainer sgd: no error")
	}
	if _, err := SymbolicDefaults("nowhere", TrainerEM); err == nil {
		t.Error("unknown environment: no error")
	}
}

func TestSymbolicValidate(t *testing.T) {
	t.Setenv(SizeEnv, "full")
	good, err := SymbolicDefaults("aliased", TrainerGradient)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*SymbolicConfig)
		want string
	}{
		{"trainer", func(c *SymbolicConfig) { c.Trainer = "sgd" }, `trainer="sgd"`},
		{"episodes", func(c *SymbolicConfig) { c.Episodes = 0 }, "episodes=0"},
		{"absent class", func(c *SymbolicConfig) { c.ClonesByClass = map[int]int{7: 3} }, "no class 7"},
		{"zero clones", func(c *SymbolicConfig) { c.ClonesByClass = map[int]int{0: 0} }, "clones_by_class[0]=0"},
		{"layout", func(c *SymbolicConfig) { c.Layout = "0 x\n" }, "env: layout"},
	} {
		c := good
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestSymbolicTrainsAndLoads trains aliased (symbols) by gradient descent, which must
// recover the true map (recall 1 against the environment's edges), then loads the
// run again: same report, same decoded path. A different config is refused.
func TestSymbolicTrainsAndLoads(t *testing.T) {
	t.Setenv(SizeEnv, "full")
	cfg, err := SymbolicDefaults("aliased", TrainerGradient)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Episodes, cfg.Steps, cfg.EvalSteps = 1, 4000, 4000
	dir := t.TempDir()
	run, err := Symbolic(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := run.Report
	if r.ViterbiMap.Recall != 1 || r.StatePlacePurity < 0.95 || r.Trainer != TrainerGradient || r.Dataset != "symbolic" {
		t.Errorf("aliased/gradient: recall %.3f, purity %.3f, trainer %q, dataset %q; want recall 1, purity ≥ 0.95",
			r.ViterbiMap.Recall, r.StatePlacePurity, r.Trainer, r.Dataset)
	}
	if len(run.States) != cfg.EvalSteps || len(run.Tokens) != cfg.EvalSteps || run.History == nil || len(run.History.LogLik) == 0 {
		t.Fatalf("run: %d states, %d tokens, history %v", len(run.States), len(run.Tokens), run.History != nil)
	}
	for _, f := range []string{SymbolicConfigFile, SymbolicModelFile, SymbolicReportFile, SymbolicHistoryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	again, err := Symbolic(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := run.Report.MarshalIndent()
	b, _ := again.Report.MarshalIndent()
	if !bytes.Equal(a, b) || !reflect.DeepEqual(run.States, again.States) || !reflect.DeepEqual(run.Model.ThetaLogits, again.Model.ThetaLogits) {
		t.Error("the loaded run differs from the trained one")
	}
	if len(again.History.LogLik) != len(run.History.LogLik) {
		t.Errorf("loaded history has %d entries, trained %d", len(again.History.LogLik), len(run.History.LogLik))
	}
	other := cfg
	other.Seed = 2
	if _, err := Symbolic(dir, other, nil); err == nil || !strings.Contains(err.Error(), "seed: 1 there, 2 here") {
		t.Errorf("another config in the same directory: %v, want an error naming the seed", err)
	}
	readout, err := SymbolicReadout(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(readout.Graph.Edges) == 0 {
		t.Error("SymbolicReadout: no recovered edges")
	}
	if _, err := LikelihoodPlot("t", []string{"g"}, []*SymbolicRun{run}); err != nil {
		t.Error(err)
	}
	if _, err := LikelihoodPlot("t", []string{"g", "h"}, []*SymbolicRun{run}); err == nil {
		t.Error("LikelihoodPlot with 2 labels for 1 run: no error")
	}
}

// TestPixelRunHelpers trains a smoke-sized pixel run (seconds), then checks that
// DecodeHeldOut re-creates the held-out episode the report was scored on (and that
// its consistency check fails on a tampered report), and that the figure helpers
// display PNGs.
func TestPixelRunHelpers(t *testing.T) {
	t.Setenv(SizeEnv, "ci")
	cfg, err := PipelineConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.VQVAE.Arch != "mlp" || cfg.Data.Steps != 600 || cfg.Joint.Iters != 16 {
		t.Fatalf("CI-size PipelineConfig is not smoke-sized: %+v", cfg)
	}
	dir := t.TempDir()
	res, err := PipelineIn(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := DecodeHeldOut(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.States) != cfg.Eval.Steps || len(h.Images) != cfg.Eval.Steps*h.Side*h.Side || h.Side != 28 {
		t.Errorf("held-out: %d states, %d pixels, side %d", len(h.States), len(h.Images), h.Side)
	}
	tampered := *res
	rep := *res.Report
	rep.StatePlacePurity += 0.01
	tampered.Report = &rep
	if _, err := DecodeHeldOut(&tampered); err == nil || !strings.Contains(err.Error(), "report says") {
		t.Errorf("DecodeHeldOut with a tampered report: %v, want a mismatch error", err)
	}

	buf := capture(t)
	r, err := RunReadout(res)
	if err != nil {
		t.Fatal(err)
	}
	fig, err := figures.ImageMaps(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := Show(fig); err != nil {
		t.Fatal(err)
	}
	if err := Reconstructions(res, 5); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "[PNG image"); n != 2 {
		t.Errorf("displayed %d PNGs, want 2:\n%s", n, buf.String())
	}
	if hist := History(res); len(hist) != len(res.History) || hist[0].Phase != pipeline.PhaseWarmup {
		t.Errorf("History: %d records (run has %d), first phase %q", len(hist), len(res.History), hist[0].Phase)
	}
	// The run is finished: Run loads it.
	if _, err := pipeline.Run(context.Background(), dir, cfg, nil); err != nil {
		t.Error(err)
	}
}

// TestXLAWithoutPluginInANotebook: a notebook cell that trains (notebook.PipelineIn)
// with GOMLX_BACKEND=xla:cpu and no PJRT plugin returns one error line naming the
// variable to set, within a second.
func TestXLAWithoutPluginInANotebook(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "xla:cpu")
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	cfg, err := QuickConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = PipelineIn(filepath.Join(t.TempDir(), "run"), cfg, nil)
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "GOMLX_BACKEND=\"xla:cpu\"") {
		t.Fatalf("error %v: want one line naming GOMLX_BACKEND", err)
	}
}

// TestSymbolicImpossibleHeldOutKeepsTheMap: a map trained on too short a walk calls a
// held-out step impossible; the error says so and where the trained map is, which is
// kept, and the run is not marked finished (no report).
func TestSymbolicImpossibleHeldOutKeepsTheMap(t *testing.T) {
	t.Setenv(SizeEnv, "full")
	cfg, err := SymbolicDefaults("aliased", TrainerEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Episodes, cfg.Steps, cfg.EvalSteps, cfg.Restarts, cfg.Pseudocount = 1, 40, 3000, 1, 0
	dir := t.TempDir()
	_, err = Symbolic(dir, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "held-out walk impossible") || !strings.Contains(err.Error(), SymbolicModelFile) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SymbolicModelFile)); err != nil {
		t.Errorf("the trained map was not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SymbolicReportFile)); err == nil {
		t.Error("a report was written for a run that could not be scored")
	}
}

// TestConfigure: a notebook chooses a configuration as train does: the defaults, a
// preset, a size and settings, in that order; a bad setting is an error naming it.
func TestConfigure(t *testing.T) {
	t.Setenv(SizeEnv, SizeFull)
	cfg, err := Configure("aliased", "frozen", experiment.SizeCI, "joint.iters=7", "dataset=fashion")
	if err != nil {
		t.Fatal(err)
	}
	want := pipeline.CISized(mustDefault(t, "aliased"))
	want.Joint.FreezeVQVAE, want.Joint.Iters, want.Dataset, want.Preset = true, 7, "fashion", "frozen"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got %+v\nwant %+v", cfg, want)
	}
	if _, err := Configure("aliased", "", "", "joint.iters=-1"); err == nil || !strings.Contains(err.Error(), "notebook: joint.iters=-1: need an integer in [0, 1000000]") {
		t.Errorf("bad setting: %v", err)
	}
	t.Setenv(SizeEnv, SizeCI)
	if cfg, err := Configure("tiled", "", ""); err != nil || cfg.Data.Steps != 600 || !cfg.Joint.ScaledEmissions {
		t.Errorf("CI notebooks: smoke size with the environment's settings: %v %+v", err, cfg)
	}
}

func mustDefault(t *testing.T, env string) pipeline.Config {
	t.Helper()
	c, err := pipeline.DefaultConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
