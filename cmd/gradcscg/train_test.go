package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// TestTrainBadInput: each mistake gets one clean error line naming it and exit code 1,
// before any training starts.
func TestTrainBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("0 1\n0 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte("{\n  \"env\": \"aliased\",\n  \"k\": \"four\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--env", "nowhere"}, "nowhere"},
		{[]string{"--layout", bad}, "bad.txt:2"},
		{[]string{"--dataset", "cifar"}, "dataset"},
		{[]string{"--size", "huge"}, "--size"},
		{[]string{"--decode", "fuzzy"}, "decode"},
		{[]string{"--final-trainer", "adam"}, `final_trainer="adam" (want "gradient" or "em")`},
		{[]string{"--final-doublings", "17"}, "--final-doublings 17: must be an integer in [0, 16]"},
		{[]string{"--final-iters", "0"}, "--final-iters 0: must be an integer in [1, 1000000]"},
		{[]string{"--config", cfgPath}, "config.json"},
		{[]string{"--config", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"--reevaluate", "--run", filepath.Join(dir, "norun")}, "norun"},
	} {
		code, _, errOut := run(t, append([]string{"train", "--quiet"}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit code %d, want 1 (%s)", c.args, code, errOut)
		}
		oneCleanError(t, errOut, c.want)
	}
}

// TestTrainConfigFlags: flags override the defaults, and the default run directory
// names the ablations and the joint iterations (--joint-iters 5).
func TestTrainConfigFlags(t *testing.T) {
	o := trainOptions{env: "two_rooms", dataset: "fashion", seed: 7, size: "ci", jointIters: 5, alphaDiv: 0,
		decode: "hard", freeze: true, noLengthNorm: true, tau: -1, lambda: -1, collapseFrac: -1, alphaDivEnd: -1, jitter: -1, finalPrune: -1, finalGrow: -1, finalIters: -1, finalChunkAbove: -1,
		gradFrames: -1, collapseLevel: -1}
	o.set = newFlagSet("train", "")
	cfg, err := o.pipelineConfig()
	if err != nil {
		t.Fatal(err)
	}
	ci := pipeline.CISized(mustDefault(t, "two_rooms"))
	if cfg.Dataset != "fashion" || cfg.Seed != 7 || cfg.JointIters != 5 || cfg.AlphaDiv != 0 || cfg.Decode != "hard" ||
		!cfg.FreezeVQVAE || !cfg.NoLengthNorm || cfg.Steps != ci.Steps || cfg.Episodes != ci.Episodes {
		t.Errorf("config %+v", cfg)
	}
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_frozen_nolennorm_nodiv_joint5"; got != want {
		t.Errorf("runName = %q, want %q", got, want)
	}
	// The paper's τ and α_div (the ablation suite's last variant) get their own directory.
	cfg.FreezeVQVAE, cfg.NoLengthNorm, cfg.VQVAE.Tau, cfg.AlphaDiv = false, false, 1, 0.1
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_div0.1_tau1_joint5"; got != want {
		t.Errorf("runName = %q, want %q", got, want)
	}
	// The MLP's default is every frame with gradients; a subset and no collapse
	// response name themselves.
	if cfg.GradFrames != 0 {
		t.Errorf("MLP GradFrames = %d, want 0 (every frame)", cfg.GradFrames)
	}
	cfg.GradFrames, cfg.CollapseLevel = 256, 0
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_div0.1_tau1_grad256_cl0_joint5"; got != want {
		t.Errorf("runName = %q, want %q", got, want)
	}
	// --arch sets the architecture's defaults before the flags that override them.
	o = trainOptions{env: "aliased", dataset: "mnist", seed: 1, size: "full", arch: "mlp", tau: -1, lambda: -1, collapseFrac: -1,
		alphaDiv: -1, alphaDivEnd: -1, jitter: -1, finalPrune: -1, finalGrow: -1, finalIters: -1, finalChunkAbove: -1, gradFrames: -1, collapseLevel: -1, jointIters: -1}
	o.set = newFlagSet("train", "")
	if cfg, err := o.pipelineConfig(); err != nil || cfg.GradFrames != 0 || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp" {
		t.Errorf("--arch mlp: grad_frames %d, name %q, err %v", cfg.GradFrames, experiment.RunName(cfg), err)
	}
	o.gradFrames, o.arch = 128, "conv"
	if cfg, err := o.pipelineConfig(); err != nil || cfg.GradFrames != 128 || experiment.RunName(cfg) != "aliased_mnist_seed1_grad128" {
		t.Errorf("--arch conv --grad-frames 128: grad_frames %d, name %q, err %v", cfg.GradFrames, experiment.RunName(cfg), err)
	}
	// --size smoke: seconds, named for its size.
	o.gradFrames, o.arch, o.size = -1, "", "smoke"
	if cfg, err := o.pipelineConfig(); err != nil || cfg.Steps != 600 || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp_smoke" {
		t.Errorf("--size smoke: steps %d, name %q, err %v", cfg.Steps, experiment.RunName(cfg), err)
	}
	// --final-trainer and --final-iters: the trainer's default iterations unless given,
	// and a run name that says so; naming the default trainer keeps the size's own.
	o.size, o.finalTrainer, o.finalDoublings = "ci", "em", -1
	if cfg, err := o.pipelineConfig(); err != nil || cfg.FinalIters != pipeline.FinalEMIters || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp_ci_finalem" {
		t.Errorf("--final-trainer em: final_iters %d, name %q, err %v", cfg.FinalIters, experiment.RunName(cfg), err)
	}
	o.finalIters = 300
	if cfg, err := o.pipelineConfig(); err != nil || cfg.FinalIters != 300 || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp_ci_finalem_iters300" {
		t.Errorf("--final-trainer em --final-iters 300: final_iters %d, name %q, err %v", cfg.FinalIters, experiment.RunName(cfg), err)
	}
	o.finalTrainer, o.finalIters = "gradient", -1
	ci = pipeline.CISized(mustDefault(t, "aliased"))
	if cfg, err := o.pipelineConfig(); err != nil || cfg.FinalIters != ci.FinalIters || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp_ci" {
		t.Errorf("--size ci --final-trainer gradient: final_iters %d (want %d), name %q, err %v", cfg.FinalIters, ci.FinalIters, experiment.RunName(cfg), err)
	}
	// --final-chunk-above: the default reads chunks past chmm.DefaultChunkAbove; another
	// bound names the run.
	if cfg, err := o.pipelineConfig(); err != nil || cfg.FinalChunkAbove != chmm.DefaultChunkAbove {
		t.Errorf("default final_chunk_above %g, err %v", cfg.FinalChunkAbove, err)
	}
	o.finalChunkAbove = 0
	if cfg, err := o.pipelineConfig(); err != nil || cfg.FinalChunkAbove != 0 || experiment.RunName(cfg) != "aliased_mnist_seed1_mlp_ci_chunkabove0" {
		t.Errorf("--final-chunk-above 0: final_chunk_above %g, name %q, err %v", cfg.FinalChunkAbove, experiment.RunName(cfg), err)
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

// TestTrainFrom: --from takes a finished run's warm-up and joint phase over and trains
// another finalisation in --run (the report names the source; the same command run
// again loads it); misuse is one error naming the flag or the field.
func TestTrainFrom(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if code, _, errOut := run(t, "train", "--quiet", "--size", "smoke", "--run", src); code != 0 {
		t.Fatalf("source run: exit %d: %s", code, errOut)
	}
	args := []string{"train", "--quiet", "--from", src, "--run", dst, "--final-trainer", "em", "--final-iters", "20", "--final-doublings", "2"}
	for range 2 {
		code, out, errOut := run(t, args...)
		if code != 0 || !strings.Contains(out, "taken over from") || !strings.Contains(out, "confusion matrix") {
			t.Fatalf("exit %d, want a report of an EM map whose joint phase was taken over:\n%s%s", code, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", src}, "--from " + src + ": needs --run NEW_DIR"},
		{[]string{"--from", src, "--run", dst, "--config", filepath.Join(src, "config.json")}, "neither --config"},
		{[]string{"--from", filepath.Join(dir, "nothing"), "--run", dst}, "no run there"},
		{[]string{"--from", src, "--run", filepath.Join(dir, "dst2"), "--seed", "2"}, "seed: 1 in the run, 2 now"},
		{[]string{"--from", dst, "--run", src}, "already holds a run not branched from"},
	} {
		code, _, errOut := run(t, append([]string{"train", "--quiet"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "panic") {
			t.Errorf("%v: exit %d, %q; want exit 1 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestExportBadInput: export without a run, of a directory without a finished run,
// and into a folder that is not a shipped run: one error line each, nothing written.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	notShipped := filepath.Join(dir, "notes")
	if err := os.MkdirAll(notShipped, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notShipped, "a.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--run: required"},
		{[]string{"--run", filepath.Join(dir, "norun"), "--out", filepath.Join(dir, "x")}, "norun"},
	} {
		code, _, errOut := run(t, append([]string{"export"}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit code %d, want 1 (%s)", c.args, code, errOut)
		}
		oneCleanError(t, errOut, c.want)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed export created its folder")
	}
}

// TestNBClean: nbclean filters stdin to stdout and rewrites files in place, with paths
// under the working directory made relative; a file that is not a notebook is one
// error line naming it.
func TestNBClean(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	nb := `{"cells":[{"cell_type":"code","execution_count":9,"metadata":{"execution":{"x":1}},` +
		`"outputs":[{"name":"stdout","output_type":"stream","text":"` + dir + `/runs/a\n"}],"source":"%%\n"}],` +
		`"metadata":{},"nbformat":4,"nbformat_minor":4}`
	stdin = strings.NewReader(nb)
	defer func() { stdin = os.Stdin }()
	code, out, errOut := run(t, "nbclean")
	if code != 0 || !strings.Contains(out, `"runs/a\n"`) || !strings.Contains(out, `"execution_count": 1`) || strings.Contains(out, dir) {
		t.Fatalf("nbclean from stdin: exit %d:\n%s%s", code, out, errOut)
	}
	path := filepath.Join(dir, "a.ipynb")
	if err := os.WriteFile(path, []byte(nb), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "nbclean", path); code != 0 {
		t.Fatalf("nbclean %s: exit %d: %s", path, code, errOut)
	}
	if got, _ := os.ReadFile(path); string(got) != out {
		t.Errorf("nbclean in place wrote\n%s\nwant\n%s", got, out)
	}
	bad := filepath.Join(dir, "b.ipynb")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "nbclean", bad)
	if code != 1 {
		t.Errorf("nbclean of a broken file: exit %d", code)
	}
	oneCleanError(t, errOut, "b.ipynb")
}
