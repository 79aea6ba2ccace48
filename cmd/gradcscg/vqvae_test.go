package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
)

// tinyVQ are the flags of a run small enough for tests: 4 steps of batch 16 on one
// 96-step aliased episode, scored on a 60-step held-out episode.
var tinyVQ = []string{"--env", "aliased", "--set", "batch=16", "--set", "episodes=1", "--set", "episode_len=96", "--set", "eval_len=60", "--quiet"}

func vqArgs(extra ...string) []string {
	return append(append([]string{"vqvae"}, tinyVQ...), extra...)
}

func readReport(t *testing.T, path string) *experiment.VQReport {
	t.Helper()
	r, err := experiment.ReadVQReport(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMeanSD(t *testing.T) {
	s := evaluate.MeanSD([]float64{1, 2, 6})
	// mean 3; squared deviations 4, 1, 9 → variance 14/2.
	if s.Mean != 3 || math.Abs(s.SD-math.Sqrt(7)) > 1e-15 || s.N != 3 {
		t.Errorf("meanSD = %+v, want mean 3, sd √7, n 3", s)
	}
	if s := evaluate.MeanSD([]float64{5}); s.Mean != 5 || s.SD != 0 {
		t.Errorf("meanSD of one value = %+v", s)
	}
}

// TestVQVAERun trains a tiny model, checks its outputs, resumes it, checks that the
// resumed run equals an uninterrupted one, reloads the finished model, and refuses a
// checkpoint of another run.
func TestVQVAERun(t *testing.T) {
	dir := t.TempDir()
	run4 := filepath.Join(dir, "a")
	jsonPath := filepath.Join(dir, "copy.json")
	code, out, errOut := run(t, vqArgs("--set", "steps=4", "--out", run4, "--json", jsonPath)...)
	if code != 0 {
		t.Fatalf("tiny run failed (%d): %s", code, errOut)
	}
	for _, want := range []string{"token purity", "H(token | class)", "perplexity", "majority token", "recon.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{experiment.VQModelFile, experiment.VQReconFile, experiment.VQReportFile, experiment.VQManifestFile} {
		if _, err := os.Stat(filepath.Join(run4, f)); err != nil {
			t.Errorf("output missing: %v", err)
		}
	}
	rep := readReport(t, filepath.Join(run4, experiment.VQReportFile))
	if c := readReport(t, jsonPath); c.Purity != rep.Purity || c.Steps != rep.Steps {
		t.Errorf("--json copy differs from report.json")
	}
	if rep.Steps != 4 || rep.NumTokens != 4 || rep.EvalFrames != 60 || rep.TrainFrames != 96 || rep.Dataset != "mnist" {
		t.Errorf("report identity: steps %d K %d eval %d train %d dataset %q", rep.Steps, rep.NumTokens,
			rep.EvalFrames, rep.TrainFrames, rep.Dataset)
	}
	frames := 0
	for _, c := range rep.Classes {
		frames += c.Frames
	}
	if len(rep.Classes) != 4 || frames != 60 {
		t.Errorf("%d classes with %d frames, want 4 classes (aliased) and 60 frames", len(rep.Classes), frames)
	}
	if !(rep.Purity > 0 && rep.Purity <= 1) || !(rep.Perplexity >= 1 && rep.Perplexity <= 4) ||
		rep.ActiveCodes < 1 || rep.ActiveCodes > 4 || !(rep.TestMSE > 0 && rep.TestMSE < 1) {
		t.Errorf("metrics out of range: %+v", rep)
	}
	// Figure: two frames per class (8 columns), 3× scaled 28-pixel images.
	f, err := os.Open(filepath.Join(run4, experiment.VQReconFile))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 8*84 || w > 8*84+200 {
		t.Errorf("recon.png is %d pixels wide, want 8 columns of 84", w)
	}

	// Resume to 6 steps; the result equals an uninterrupted 6-step run.
	code, _, errOut = run(t, append(vqArgs("--set", "steps=6", "--out", run4), "--quiet=false")...)
	if code != 0 || !strings.Contains(errOut, "resuming the warm-up at step 4 of 6") {
		t.Fatalf("resume: exit %d, stderr:\n%s", code, errOut)
	}
	resumed := readReport(t, filepath.Join(run4, experiment.VQReportFile))
	run6 := filepath.Join(dir, "b")
	if code, _, errOut := run(t, vqArgs("--set", "steps=6", "--out", run6)...); code != 0 {
		t.Fatalf("6-step run failed: %s", errOut)
	}
	straight := readReport(t, filepath.Join(run6, experiment.VQReportFile))
	if resumed.Steps != 6 || resumed.TestMSE != straight.TestMSE || resumed.Purity != straight.Purity {
		t.Errorf("resumed run (steps %d, MSE %v, purity %v) differs from the uninterrupted one (MSE %v, purity %v)",
			resumed.Steps, resumed.TestMSE, resumed.Purity, straight.TestMSE, straight.Purity)
	}

	// A finished model is loaded, not retrained.
	code, _, errOut = run(t, append(vqArgs("--set", "steps=6", "--out", run4), "--quiet=false")...)
	if code != 0 || !strings.Contains(errOut, "loaded the finished model") || strings.Contains(errOut, "warm-up") {
		t.Errorf("reload: exit %d, stderr:\n%s", code, errOut)
	}
	if again := readReport(t, filepath.Join(run4, experiment.VQReportFile)); again.TestMSE != resumed.TestMSE {
		t.Errorf("reloaded model scores MSE %v, the saved one %v", again.TestMSE, resumed.TestMSE)
	}

	// Another run's checkpoint is refused.
	code, _, errOut = run(t, vqArgs("--set", "steps=6", "--seed", "2", "--out", run4)...)
	if code != 1 {
		t.Errorf("foreign checkpoint: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "belongs to another study (trained with seed 1, not 2)")

	// A corrupt checkpoint is reported.
	model := filepath.Join(run6, experiment.VQModelFile)
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(model, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, vqArgs("--set", "steps=6", "--out", run6)...)
	if code != 1 {
		t.Errorf("corrupt checkpoint: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "checksum mismatch")
}

// TestVQVAESuite runs a 2-seed grid of tiny runs, then collects it again without
// training.
func TestVQVAESuite(t *testing.T) {
	dir := t.TempDir()
	args := vqArgs("--suite", "--envs", "aliased", "--datasets", "mnist", "--seeds", "2", "--set", "steps=2", "--set", "curve=1", "--out", dir)
	code, out, errOut := run(t, args...)
	if code != 0 {
		t.Fatalf("suite failed (%d): %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(dir, "vqvae.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != out {
		t.Errorf("stdout differs from vqvae.md")
	}
	for _, want := range []string{"| aliased | mnist | 4 | 2 |", "| aliased/mnist seed 2 |", "Learning curves", "\n| 1 | ", "\n| 2 | "} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	path := func(seed int) string {
		return filepath.Join(dir, "vqvae", fmt.Sprintf("aliased_mnist_seed%d", seed), experiment.VQReportFile)
	}
	if r1, r2 := readReport(t, path(1)), readReport(t, path(2)); r1.TestMSE == r2.TestMSE || r2.Seed != 2 {
		t.Errorf("seeds 1 and 2 gave the same test MSE %v (seed field %d)", r1.TestMSE, r2.Seed)
	}
	before, err := os.Stat(path(1))
	if err != nil {
		t.Fatal(err)
	}
	// Collecting again reads the reports instead of re-running.
	code, out2, errOut := run(t, args...)
	if code != 0 || out2 != out {
		t.Errorf("second suite call: exit %d, same table %v, stderr:\n%s", code, out2 == out, errOut)
	}
	if after, err := os.Stat(path(1)); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second suite call rewrote %s (%v)", path(1), err)
	}
}

// TestVQVAEBadInput checks that bad input gives one clean error line.
func TestVQVAEBadInput(t *testing.T) {
	dir := t.TempDir()
	layout := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twelve := layout("twelve.txt", "// class 12 is not a digit\n0 1\n2 12\n")
	single := layout("single.txt", "3 3\n3 3\n")
	for _, tc := range []struct {
		name string
		args []string
		env  string // GOMLX_BACKEND, if set
		want string
	}{
		{"unknown dataset", []string{"--dataset", "nosuch"}, "", `dataset "nosuch"`},
		{"unknown env", []string{"--env", "nowhere", "--set", "k=0"}, "", `unknown environment "nowhere"`},
		{"class outside the dataset", []string{"--layout", twelve, "--set", "k=0"}, "", twelve + ":3:"},
		{"one class and k=0", []string{"--layout", single, "--set", "k=0"}, "", "--set k=0: environment single shows 1 class"},
		{"k = 1", []string{"--set", "k=1"}, "", "--set k=1: need 0"},
		{"no steps", []string{"--set", "steps=0"}, "", "--set steps=0: need an integer in [1, 100000000]"},
		{"fewer frames than a batch", []string{"--set", "batch=500"}, "", "--set batch=500: the 96 training frames (episodes × steps: 1 × 96) are fewer than one batch"},
		{"unknown backend", []string{}, "nosuch", `backend "nosuch" is not compiled into this binary`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GOMLX_BACKEND", tc.env)
			}
			code, _, errOut := run(t, vqArgs(append(tc.args, "--out", filepath.Join(dir, "out"))...)...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			oneCleanError(t, errOut, tc.want)
		})
	}
}

// TestVQReportJSONKeys pins the report's JSON keys that tables and notebooks read.
func TestVQReportJSONKeys(t *testing.T) {
	data, err := json.Marshal(&experiment.VQReport{})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"env", "dataset", "seed", "num_tokens", "steps", "purity", "h_token_given_class",
		"h_class_given_token", "h_token_given_place", "perplexity", "active_codes", "test_mse", "classes", "tokens", "seconds"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("report JSON lacks key %q", k)
		}
	}
}

// TestVQVAESetHelpShowsGiven: `vqvae --set help` lists the settings with the other
// --set values applied, whatever their order, and still refuses an unknown key.
func TestVQVAESetHelpShowsGiven(t *testing.T) {
	for _, args := range [][]string{
		{"vqvae", "--set", "steps=77", "--set", "help"},
		{"vqvae", "--set", "help", "--set", "steps=77"},
	} {
		code, out, errOut := run(t, args...)
		if code != 0 || !regexp.MustCompile(`(?m)^  steps = 77 `).MatchString(out) {
			t.Errorf("%v: exit %d, stderr %q; want steps = 77 in\n%s", args, code, errOut, out)
		}
	}
	if code, _, errOut := run(t, "vqvae", "--set", "stepz=1", "--set", "help"); code != 1 || !strings.Contains(errOut, "stepz") {
		t.Errorf("unknown key with help: exit %d, %q", code, errOut)
	}
}
