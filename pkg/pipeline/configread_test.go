package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// The version-1 files of testdata: config_v1.json is the config.json of a run the
// previous version wrote (train --env aliased --size ci --seed 1); config_v1_flatvq.json
// is hand-made in the older flat-VQ-VAE form, with the keys that form's writer had;
// config_v1_flatvq_read.json is what the previous version wrote for a run started
// with --config config_v1_flatvq.json (its reader's result, written out).

// wantV1 is config_v1.json read, written out by hand.
var wantV1 = Config{Version: 2, Env: "aliased", Dataset: "mnist", Seed: 1,
	Data: DataConfig{Episodes: 4, Steps: 5000},
	VQVAE: vqvae.Config{K: 4, D: 32, F: 32, Side: 28, Arch: "mlp", Beta: 0.25, Gamma: 0.99, Eps: 1e-5, Tau: 0.2,
		Revive: 0.01, Init: "kmeans", NumClasses: 10, ClassWeight: 0.1},
	Warmup: WarmupConfig{Epochs: 6, Batch: 64, LR: 3e-4, Recenter: true, RecenterFrames: 4000},
	Joint: JointConfig{Clones: 5, Budget: "uniform", Iters: 300, ChunkLen: 128, Batch: 4, Lambda: 1, AnnealFrac: 0.25,
		AlphaDiv: 1, AlphaDivEnd: 0.1, Jitter: 2, LR: 3e-4, HMMLRFactor: 100, ThrottleFactor: 0.5, CollapseLevel: 0.25,
		MaxInterventions: 4, CheckpointEvery: 50},
	Final: FinalConfig{Trainer: "gradient", SplitRounds: 12, Budget: "share", Clones: 10, Iters: 500, LR: 0.1, Entropy: 1e-3,
		Patience: 100, Tol: 1e-3, PlateauSplits: 5, ChunkAbove: 1e8, Prune: 0.002, PruneIters: 300, BudgetDoublings: 2},
	Refine: RefineConfig{Epochs: DefaultRefineEpochs, Weight: 1},
	Eval:   EvalConfig{Steps: 5000, Decode: "soft"},
}

// wantFlatVQ is config_v1_flatvq.json read as a run's own file: the VQ-VAE's side,
// initialisation and class head as that version fixed them, the keys it did not have
// as what their absence meant (zero; the gradient trainer).
var wantFlatVQ = Config{Version: 2, Env: "two_rooms", Dataset: "fashion", Seed: 3,
	Data: DataConfig{Episodes: 10, Steps: 10000},
	VQVAE: vqvae.Config{K: 10, D: 32, F: 32, Side: 28, Arch: "conv", Beta: 0.25, Gamma: 0.99, Eps: 1e-5, Tau: 0.2,
		Revive: 0.01, Init: "kmeans", Classify: true, NumClasses: 10, ClassWeight: 0.1},
	Warmup: WarmupConfig{Epochs: 4, Batch: 128, LR: 3e-4, Recenter: true, RecenterFrames: 8192},
	Joint: JointConfig{Clones: 15, Budget: "uniform", Iters: 1500, ChunkLen: 256, Batch: 4, Lambda: 1, AnnealFrac: 0.25,
		AlphaDiv: 1, AlphaDivEnd: 0.1, Jitter: 2, LR: 3e-4, HMMLRFactor: 100, GradFrames: 256, ThrottleFactor: 0.5,
		CollapseLevel: 0.25, MaxInterventions: 4, CheckpointEvery: 50},
	Final: FinalConfig{Trainer: "gradient", Budget: "share", Clones: 30, Iters: 1000, LR: 0.1, Entropy: 1e-3,
		Patience: 100, Tol: 1e-3, PlateauSplits: 5, Prune: 0.001, PruneIters: 300},
	Refine: RefineConfig{Epochs: DefaultRefineEpochs, Weight: 1},
	Eval:   EvalConfig{Steps: 10000, Decode: "soft"},
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestReadV1: version-1 files read as the values written out above, as a run's own
// file and as a user's; the run of config_v1.json is today's CI-sized aliased (its
// missing refinement read as the default, off); a user's flat-VQ-VAE file gets the
// defaults the previous version filled in.
func TestReadV1(t *testing.T) {
	got, err := parseRunConfig(readTestdata(t, "config_v1.json"), "config_v1.json")
	if err != nil || !reflect.DeepEqual(got, wantV1) {
		t.Errorf("config_v1.json: %v\n got %+v\nwant %+v", err, got, wantV1)
	}
	ci := CISized(mustDefault(t, "aliased"))
	if !reflect.DeepEqual(ci, wantV1) {
		t.Errorf("CISized(aliased) %+v, want the old run's %+v", ci, wantV1)
	}
	got, err = parseRunConfig(readTestdata(t, "config_v1_flatvq.json"), "config_v1_flatvq.json")
	if err != nil || !reflect.DeepEqual(got, wantFlatVQ) {
		t.Errorf("config_v1_flatvq.json as a run's: %v\n got %+v\nwant %+v", err, got, wantFlatVQ)
	}
	user, err := parseConfig(readTestdata(t, "config_v1_flatvq.json"), "user.json")
	if err != nil {
		t.Fatal(err)
	}
	want := wantFlatVQ
	want.Final.SplitRounds, want.Final.BudgetDoublings, want.Final.ChunkAbove = 12, 2, 1e8
	want.Refine = DefaultRefine() // a user's file gets today's defaults for what it lacks
	if !reflect.DeepEqual(user, want) {
		t.Errorf("config_v1_flatvq.json as a user's: %v", diffFields(user, want))
	}
	old, err := parseRunConfig(readTestdata(t, "config_v1_flatvq_read.json"), "config_v1_flatvq_read.json")
	if err != nil || !reflect.DeepEqual(old, user) {
		t.Errorf("the previous reader's result %v differs from this one's: %v", err, diffFields(old, user))
	}
}

func mustDefault(t *testing.T, env string) Config {
	t.Helper()
	c, err := DefaultConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReadV2: a version-2 file round-trips; a user's may be partial; a run's must be
// complete; unknown keys, out-of-range values and values of the wrong type name their
// line.
func TestReadV2(t *testing.T) {
	cfg := mustDefault(t, "two_rooms")
	cfg.Joint.Iters, cfg.Final.SplitRounds, cfg.Preset = 7, 3, "paper"
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	if got, err := parseRunConfig(raw, "run.json"); err != nil || !reflect.DeepEqual(got, cfg) {
		t.Errorf("round trip: %v %v", err, diffFields(got, cfg))
	}
	want := mustDefault(t, "two_rooms")
	want.Joint.Iters = 9
	if got, err := parseConfig([]byte("{\"version\": 2, \"env\": \"two_rooms\",\n \"joint\": {\"iters\": 9}}"), "u.json"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("partial: %v %v", err, diffFields(got, want))
	}
	for _, c := range []struct{ name, text, want string }{
		{"run lacks a key", `{"version": 2, "env": "aliased"}`, "lacks key"},
		{"unknown key", "{\"version\": 2,\n\"env\": \"aliased\",\n\"joint\": {\n \"iter\": 3}}", `u.json line 4: unknown key "joint.iter" (did you mean joint.iters`},
		{"unknown section", "{\"version\": 2,\n\"env\": \"aliased\",\n\"jiont\": {}}", `u.json line 3: unknown key "jiont"`},
		{"overflow", "{\"version\": 2, \"env\": \"aliased\",\n\"warmup\": {\"epochs\": 4611686018427387904}}",
			"u.json line 2: warmup.epochs=4611686018427387904: need an integer in [0, 1000]"},
		{"joint iterations", "{\"version\": 2, \"env\": \"aliased\",\n\"joint\": {\n\"iters\": 1000000000000}}",
			"u.json line 3: joint.iters=1000000000000: need an integer in [0, 1000000]"},
		{"type", "{\"version\": 2, \"env\": \"aliased\",\n\"joint\": {\"iters\": \"many\"}}", "u.json line 2: joint.iters: need an integer in [0, 1000000] (got a string)"},
		{"version", `{"version": 3, "env": "aliased"}`, "version 3"},
		{"v1 unknown", "{\"env\": \"aliased\",\n \"colour\": 3}", `u.json line 2: unknown key "colour"`},
		{"v1 overflow", "{\"env\": \"aliased\",\n \"joint_iters\": 1000000000000}", "u.json line 2: joint.iters=1000000000000"},
		{"syntax", "{\"env\": \"aliased\",\n \"joint_iters\": }", "line 2"},
	} {
		parse := parseConfig
		if c.name == "run lacks a key" {
			parse = parseRunConfig
		}
		if _, err := parse([]byte(c.text), "u.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// v1Flat is c in the version-1 format (flat keys, the VQ-VAE's nested), listed by hand.
func v1Flat(c Config) map[string]any {
	j, f := c.Joint, c.Final
	return map[string]any{"env": c.Env, "layout": c.Layout, "dataset": c.Dataset, "seed": c.Seed,
		"episodes": c.Data.Episodes, "steps": c.Data.Steps, "eval_steps": c.Eval.Steps, "decode": c.Eval.Decode,
		"vqvae":         c.VQVAE,
		"warmup_epochs": c.Warmup.Epochs, "warmup_batch": c.Warmup.Batch, "warmup_lr": c.Warmup.LR,
		"recenter": c.Warmup.Recenter, "recenter_frames": c.Warmup.RecenterFrames, "merge_codes": c.Warmup.MergeCodes,
		"clones": j.Clones, "budget": j.Budget, "pretrain_iters": j.PretrainIters, "scaled_emissions": j.ScaledEmissions,
		"joint_iters": j.Iters, "chunk_len": j.ChunkLen, "joint_batch": j.Batch, "lambda": j.Lambda,
		"anneal_frac": j.AnnealFrac, "alpha_div": j.AlphaDiv, "alpha_div_end": j.AlphaDivEnd, "jitter": j.Jitter,
		"joint_lr": j.LR, "hmm_lr_factor": j.HMMLRFactor, "grad_frames": j.GradFrames, "collapse_frac": j.CollapseFrac,
		"throttle_factor": j.ThrottleFactor, "collapse_level": j.CollapseLevel, "max_interventions": j.MaxInterventions,
		"freeze_vqvae": j.FreezeVQVAE, "no_length_norm": j.NoLengthNorm, "checkpoint_every": j.CheckpointEvery,
		"stop_churn": j.StopChurn, "merge_tokens": f.MergeTokens, "final_trainer": f.Trainer, "final_budget": f.Budget,
		"final_clones": f.Clones, "final_iters": f.Iters, "final_lr": f.LR, "final_entropy": f.Entropy,
		"final_patience": f.Patience, "final_tol": f.Tol, "final_splits": f.PlateauSplits, "final_doublings": f.SplitRounds,
		"final_grow": f.BudgetDoublings, "final_chunk_above": f.ChunkAbove, "final_prune": f.Prune,
		"final_prune_iters": f.PruneIters,
	}
}

// TestReadV2WithoutRefine: a run's version-2 config.json written before the refinement
// existed has no refine section: it reads as the refinement off (the run goes on as it
// was made: the defaults, which are off), each refine key it does have is read; a
// user's file without the section keeps the defaults.
func TestReadV2WithoutRefine(t *testing.T) {
	cfg := mustDefault(t, "room")
	raw, _ := json.Marshal(cfg)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "refine")
	old, _ := json.MarshalIndent(m, "", "  ")
	want := cfg
	if got, err := parseRunConfig(old, "config.json"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("run without refine: %v %v", err, diffFields(got, want))
	}
	m["refine"] = map[string]any{"on": true, "epochs": 3}
	partial, _ := json.Marshal(m)
	want.Refine = RefineConfig{On: true, Epochs: 3, Weight: 1}
	if got, err := parseRunConfig(partial, "config.json"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("run with part of refine: %v %v", err, diffFields(got, want))
	}
	delete(m, "refine")
	if got, err := parseConfig(old, "user.json"); err != nil || !reflect.DeepEqual(got, cfg) || got.Refine != DefaultRefine() {
		t.Errorf("user's file without refine: %v %v", err, diffFields(got, cfg))
	}
	// A run written before final.keep_merged reads it as false, the default.
	delete(m["final"].(map[string]any), "keep_merged")
	noKeep, _ := json.Marshal(m)
	if got, err := parseRunConfig(noKeep, "config.json"); err != nil || !reflect.DeepEqual(got, cfg) || got.Final.KeepMerged {
		t.Errorf("run without final.keep_merged: %v %v", err, diffFields(got, cfg))
	}
	// Another section's key is still required.
	delete(m["final"].(map[string]any), "prune")
	noPrune, _ := json.Marshal(m)
	if _, err := parseRunConfig(noPrune, "config.json"); err == nil || !strings.Contains(err.Error(), "lacks key final.prune") {
		t.Errorf("run without final.prune: %v", err)
	}
}
