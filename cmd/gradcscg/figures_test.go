package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// checkPNGFile checks that path holds a decodable, non-empty PNG.
func checkPNGFile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 50 || b.Dy() < 50 {
		t.Errorf("%s: %v is too small", path, b)
	}
}

func TestFiguresBadArguments(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := run(t, "figures", "--format", "bmp", "--out", dir, "--quiet")
	if code != 1 {
		t.Errorf("--format bmp: exit %d", code)
	}
	oneCleanError(t, errOut, `--format "bmp"`)
	code, _, errOut = run(t, "figures", "--no-such-flag")
	if code != 2 || !strings.Contains(errOut, "no-such-flag") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, errOut)
	}
	// A model file that does not fit its environment.
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	first := experiment.SymbolicFigureEnvs[0]
	m := chmm.New([]int{1, 1}, 4, nil) // 2 symbols: the figure's rooms show more
	if err := m.Save(filepath.Join(models, first+".model")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "none"), 0o755); err != nil { // no runs in it
		t.Fatal(err)
	}
	code, _, errOut = run(t, "figures", "--runs", filepath.Join(dir, "none"), "--out", filepath.Join(dir, "out"), "--models", models, "--quiet")
	if code != 1 {
		t.Errorf("misfit model: exit %d", code)
	}
	oneCleanError(t, errOut, first+".model")
}

// TestFiguresLayoutsSymbolicAndSkips draws the layout figures and Figure 3 from
// (untrained, so instant) symbolic models in --models, and skips an unfinished
// run directory with a note.
func TestFiguresLayoutsSymbolicAndSkips(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range experiment.SymbolicFigureEnvs {
		env, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		m := chmm.New(chmm.UniformClones(len(env.ClassesUsed()), 2), env.NumActions(), rand.New(rand.NewPCG(1, 2)))
		if err := m.Save(filepath.Join(models, name+".model")); err != nil {
			t.Fatal(err)
		}
	}
	runs := filepath.Join(dir, "runs")
	unfinished := filepath.Join(runs, "aliased_unfinished")
	if err := os.MkdirAll(unfinished, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := pipeline.DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unfinished, pipeline.ConfigFile), mustJSON(t, cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "figs")
	code, _, errOut := run(t, "figures", "--runs", runs, "--out", out, "--models", models)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"note: skipping " + unfinished, "no finished aliased run", "loaded"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, name := range []string{"fig2_benchmarks", "fig2_all", "fig2_layout_three_rooms", "fig2_layout_two_rooms", "fig3_symbolic"} {
		checkPNGFile(t, filepath.Join(out, name+".png"))
	}
	// SVG output by --format.
	code, _, errOut = run(t, "figures", "--runs", runs, "--out", out, "--symbolic=false", "--format", "svg", "--quiet")
	if code != 0 {
		t.Fatalf("svg: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(out, "fig2_benchmarks.svg"))
	if err != nil || !strings.Contains(string(data), "<svg") {
		t.Errorf("fig2_benchmarks.svg: %v, %.40q", err, data)
	}
}

// TestFiguresFromRun trains a tiny pipeline run (seconds, not a meaningful map)
// and draws Figures 4, 5, 6 and the Table 4 plot from it.
func TestFiguresFromRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny pipeline run")
	}
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "aliased_tiny")
	cfg, err := pipeline.DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg.VQVAE.Arch = "mlp"
	cfg.Data.Episodes, cfg.Data.Steps, cfg.Eval.Steps = 1, 600, 600
	cfg.Warmup.Epochs, cfg.Warmup.Batch, cfg.Warmup.RecenterFrames = 1, 64, 600
	cfg.Joint.Iters, cfg.Joint.ChunkLen, cfg.Joint.Batch, cfg.Joint.CheckpointEvery = 4, 32, 2, 2
	cfg.Final.Iters = 20
	if _, err := pipeline.Run(context.Background(), runDir, cfg, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "figs")
	code, _, errOut := run(t, "figures", "--runs", filepath.Join(dir, "runs"), "--out", out, "--symbolic=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "note: skipping") {
		t.Errorf("the figure's held-out decoding is not the evaluated one:\n%s", errOut)
	}
	// Table 4 is drawn per configuration: this tiny MLP run is not the paper's, so its
	// sweep is named after its run name without the seed, not table4_aliased.
	sweep := "table4_" + strings.Replace(experiment.RunName(cfg), "_seed1", "", 1)
	if _, err := os.Stat(filepath.Join(out, "table4_aliased.png")); err == nil {
		t.Errorf("table4_aliased.png drawn from a run that is not MNIST, conv, default settings")
	}
	for _, name := range []string{"fig4_aliased_tiny", "fig5_aliased_tiny", "fig6_aliased_tiny", sweep, "fig5"} {
		checkPNGFile(t, filepath.Join(out, name+".png"))
	}
	// The same run plans and draws its trials.
	planFig := filepath.Join(out, "plan.png")
	code, _, errOut = run(t, "plan", "--run", runDir, "--pairs", "4", "--mode", "mpc", "--figure", planFig, "--quiet")
	if code != 0 || !strings.Contains(errOut, "figure written to") {
		t.Fatalf("plan --figure: exit %d: %s", code, errOut)
	}
	checkPNGFile(t, planFig)
	// And is exported: the listing names every shipped file, and the folder loads.
	shipped := filepath.Join(dir, "results", "runs", "aliased_tiny")
	code, out2, errOut := run(t, "export", "--run", runDir, "--out", shipped)
	if code != 0 || !strings.Contains(out2, "exported "+runDir+" to "+shipped+": 6 files") || !strings.Contains(out2, pipeline.WeightsFile) {
		t.Fatalf("export: exit %d:\n%s%s", code, out2, errOut)
	}
	if _, err := pipeline.LoadShipped(shipped); err != nil {
		t.Error(err)
	}
}

// mustJSON marshals v as indented JSON.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
