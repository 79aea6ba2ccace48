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
		{[]string{"--dataset", "cifar"}, "--dataset: dataset=cifar: need mnist or fashion"},
		{[]string{"--size", "huge"}, "--size"},
		{[]string{"--preset", "best"}, `preset "best": want one of frozen, no-collapse-response`},
		{[]string{"--set", "eval.decode=fuzzy"}, "--set: eval.decode=fuzzy: need soft or hard"},
		{[]string{"--set", "final.trainer=adam"}, "--set: final.trainer=adam: need gradient or em"},
		{[]string{"--set", "final.split_rounds=17"}, "--set: final.split_rounds=17: need an integer in [0, 16]"},
		{[]string{"--set", "joint.iters=1000000000000"}, "--set: joint.iters=1000000000000: need an integer in [0, 1000000]"},
		{[]string{"--set", "warmup.epochs=4611686018427387904"}, "--set: warmup.epochs=4611686018427387904: need an integer in [0, 1000]"},
		{[]string{"--set", "joint.jitter=NaN"}, "--set: joint.jitter=NaN: need an integer in [0, 27]"},
		{[]string{"--set", "joint.alpha_div=Inf"}, "--set: joint.alpha_div=Inf: need a number in [0, 100]"},
		{[]string{"--set", "joint.iter=5"}, "--set: joint.iter: no such setting (did you mean joint.iters"},
		{[]string{"--set", "iters"}, `--set: "iters": want key=value`},
		{[]string{"--set", "env=tiled"}, "--set: env: not a setting (it has a flag of its own)"},
		{[]string{"--set", "final.trainer=em", "--set", "final.iters=0"}, "--set: final.iters=0: need at least 1 with final.trainer=em"},
		{[]string{"--set", "joint.chunk_len=20000"}, "--set: joint.chunk_len=20000: need at most data.steps = 10000"},
		{[]string{"--config", cfgPath}, "config.json: line 3"},
		{[]string{"--config", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"--reevaluate", "--run", filepath.Join(dir, "norun")}, "norun"},
		// Flags that cannot apply are refused, not dropped.
		{[]string{"--config", cfgPath, "--env", "tiled"}, "--env with --config: the file names its environment"},
		{[]string{"--config", cfgPath, "--layout", bad}, "--layout with --config: the file names its environment"},
		{[]string{"--env", "tiled", "--layout", bad}, "--env with --layout: give one environment"},
		{[]string{"--reevaluate", "--run", dir, "--seed", "2"}, "--seed with --reevaluate: the run is re-scored with its own settings"},
		{[]string{"--reevaluate", "--run", dir, "--set", "joint.iters=5"}, "--set with --reevaluate"},
	} {
		code, _, errOut := run(t, append([]string{"train", "--quiet"}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit code %d, want 1 (%s)", c.args, code, errOut)
		}
		oneCleanError(t, errOut, c.want)
	}
}

// trainConfig is the configuration "gradcscg train ARGS" would train.
func trainConfig(t *testing.T, args ...string) (pipeline.Config, []experiment.Origin, error) {
	t.Helper()
	var o trainOptions
	o.fs = trainFlags(&o)
	if err := o.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o.pipelineConfig()
}

// TestTrainConfigFlags: the layers env → preset → size → --arch → --config → --set,
// the run directory names they give, and where each printed setting came from.
func TestTrainConfigFlags(t *testing.T) {
	cfg, origins, err := trainConfig(t, "--env", "two_rooms", "--dataset", "fashion", "--seed", "7", "--size", "ci",
		"--set", "joint.iters=5", "--set", "joint.alpha_div=0", "--set", "eval.decode=hard", "--preset", "frozen",
		"--set", "joint.no_length_norm=true")
	if err != nil {
		t.Fatal(err)
	}
	ci := pipeline.CISized(mustDefault(t, "two_rooms"))
	if cfg.Dataset != "fashion" || cfg.Seed != 7 || cfg.Joint.Iters != 5 || cfg.Joint.AlphaDiv != 0 || cfg.Eval.Decode != "hard" ||
		!cfg.Joint.FreezeVQVAE || !cfg.Joint.NoLengthNorm || cfg.Data.Steps != ci.Data.Steps || cfg.Data.Episodes != ci.Data.Episodes || cfg.Preset != "frozen" {
		t.Errorf("config %+v", cfg)
	}
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_frozen_nolennorm_nodiv_joint5_eval.decodehard"; got != want {
		t.Errorf("runName = %q, want %q", got, want)
	}
	want := map[string]string{"dataset": "fashion (--dataset)", "seed": "7 (--seed)", "joint.freeze_vqvae": "true (preset frozen)",
		"data.steps": "5000 (size ci)", "vqvae.arch": "mlp (size ci)", "joint.iters": "5 (--set)", "eval.decode": "hard (--set)"}
	got := map[string]string{}
	for _, o := range origins {
		got[o.Key] = o.Value + " (" + o.Source + ")"
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("origin of %s: %q, want %q", k, got[k], w)
		}
	}
	if _, ok := got["joint.lambda"]; ok {
		t.Errorf("a default setting printed: %v", got)
	}
	// The paper's τ and α_div (the ablation suite's variant) get their own directory.
	cfg, _, err = trainConfig(t, "--env", "two_rooms", "--dataset", "fashion", "--seed", "7", "--size", "ci", "--preset", "paper-joint",
		"--set", "joint.iters=5")
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_div0.1_tau1_joint5"; err != nil || got != want {
		t.Errorf("runName = %q, want %q (%v)", got, want, err)
	}
	// The MLP's default is every frame with gradients; a subset and no collapse
	// response name themselves.
	if cfg.Joint.GradFrames != 0 {
		t.Errorf("MLP GradFrames = %d, want 0 (every frame)", cfg.Joint.GradFrames)
	}
	cfg.Joint.GradFrames, cfg.Joint.CollapseLevel = 256, 0
	if got, want := experiment.RunName(cfg), "two_rooms_fashion_seed7_mlp_ci_div0.1_tau1_grad256_cl0_joint5"; got != want {
		t.Errorf("runName = %q, want %q", got, want)
	}
	for _, c := range []struct {
		args []string
		want string
		ok   func(pipeline.Config) bool
	}{
		// --arch sets the architecture's defaults; a setting after it overrides them.
		{[]string{"--arch", "mlp"}, "aliased_mnist_seed1_mlp", func(c pipeline.Config) bool { return c.Joint.GradFrames == 0 }},
		{[]string{"--arch", "conv", "--set", "joint.grad_frames=128"}, "aliased_mnist_seed1_grad128", func(c pipeline.Config) bool { return c.Joint.GradFrames == 128 }},
		// A given architecture outlives the CI size's MLP (named against the CI size's).
		{[]string{"--arch", "conv", "--size", "ci"}, "aliased_mnist_seed1_ci_divend0.03_grad256_cl0.15", func(c pipeline.Config) bool {
			return c.Joint.GradFrames == 256 && c.Joint.CollapseLevel == 0.15 && c.Data.Steps == 5000
		}},
		// --size smoke: seconds, named for its size.
		{[]string{"--size", "smoke"}, "aliased_mnist_seed1_mlp_smoke", func(c pipeline.Config) bool { return c.Data.Steps == 600 }},
		// final.trainer brings its iterations unless given after it; naming the
		// default trainer keeps the size's own.
		{[]string{"--size", "ci", "--set", "final.trainer=em"}, "aliased_mnist_seed1_mlp_ci_finalem", func(c pipeline.Config) bool {
			return c.Final.Iters == pipeline.FinalEMIters
		}},
		{[]string{"--size", "ci", "--set", "final.trainer=em", "--set", "final.iters=300"}, "aliased_mnist_seed1_mlp_ci_finalem_iters300",
			func(c pipeline.Config) bool { return c.Final.Iters == 300 }},
		{[]string{"--size", "ci", "--set", "final.trainer=gradient"}, "aliased_mnist_seed1_mlp_ci", func(c pipeline.Config) bool { return c.Final.Iters == 500 }},
		{[]string{"--size", "ci", "--set", "final.chunk_above=0"}, "aliased_mnist_seed1_mlp_ci_chunkabove0", func(c pipeline.Config) bool {
			return c.Final.ChunkAbove == 0
		}},
		{[]string{"--size", "ci"}, "aliased_mnist_seed1_mlp_ci", func(c pipeline.Config) bool { return c.Final.ChunkAbove == chmm.DefaultChunkAbove }},
		// data.steps takes the held-out episode and the chunk length along.
		{[]string{"--set", "data.steps=100"}, "aliased_mnist_seed1_data.steps100_joint.chunk_len100_eval.steps100", func(c pipeline.Config) bool {
			return c.Eval.Steps == 100 && c.Joint.ChunkLen == 100
		}},
		// The environments that need them bring their settings; a run name says them.
		{[]string{"--env", "big_room"}, "big_room_mnist_seed1", func(c pipeline.Config) bool {
			return c.VQVAE.K == 40 && c.Warmup.MergeCodes == 30 && c.Joint.ScaledEmissions && c.Final.MergeTokens == 100 && c.Final.Trainer == "em"
		}},
		{[]string{"--env", "tiled"}, "tiled_mnist_seed1", func(c pipeline.Config) bool {
			return c.Joint.ScaledEmissions && c.Final.MergeTokens == 100 && c.Final.Trainer == "em"
		}},
		// The paper's preset: the named parts, then the preset for the others.
		{[]string{"--preset", "paper"}, "aliased_mnist_seed1_div0.1_divend0_tau1_jitter0_prune0_grow0_grad0_joint2000_paper", func(c pipeline.Config) bool {
			return c.Final.LR == 0.01 && c.Final.Budget == "joint" && c.Eval.Decode == "hard"
		}},
	} {
		cfg, _, err := trainConfig(t, c.args...)
		if err != nil || experiment.RunName(cfg) != c.want || !c.ok(cfg) {
			t.Errorf("%v: name %q (want %q), err %v, config %+v", c.args, experiment.RunName(cfg), c.want, err, cfg)
		}
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
	args := []string{"train", "--quiet", "--from", src, "--run", dst, "--set", "final.trainer=em", "--set", "final.iters=20", "--set", "final.split_rounds=2"}
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
		{[]string{"--from", src, "--run", dst, "--config", filepath.Join(src, "config.json")}, "--config with --from: the run's settings are its source's"},
		{[]string{"--from", src, "--run", dst, "--env", "tiled"}, "--env with --from"},
		{[]string{"--from", src, "--run", dst, "--layout", "x.txt"}, "--layout with --from"},
		{[]string{"--from", filepath.Join(dir, "nothing"), "--run", dst}, "no run there"},
		{[]string{"--from", src, "--run", filepath.Join(dir, "dst2"), "--seed", "2"}, "--seed with --from"},
		{[]string{"--from", src, "--run", filepath.Join(dir, "dst2"), "--set", "joint.jitter=0"}, "joint.jitter: 2 in the run, 0 now"},
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
