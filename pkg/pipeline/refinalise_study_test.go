package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestRefinaliseStudy is a measurement, not a check (skipped unless REFINALISE_RUN
// names a finished run directory finalised by FinalEM): the run's finalisation redone
// with the current code from its final encoder's tokens and its config, then scored by
// Evaluate and Diagnose as the run was, and the report table printed
// (REFINALISE_JSON=FILE also writes it; REFINALISE_ITERS=N sets the EM iterations
// per split round, Config.FinalIters; REFINALISE_DOUBLINGS=N the most split rounds,
// Config.FinalDoublings; REFINALISE_PATIENCE=N the rounds in a row without a gain that
// stop it, SplitPatience). The run directory is not touched. README,
// "Bigger worlds":
//
//	REFINALISE_RUN=runs/tiled_mnist_seed1_finalem go test ./pkg/pipeline -run TestRefinaliseStudy -v -timeout 3h
func TestRefinaliseStudy(t *testing.T) {
	dir := os.Getenv("REFINALISE_RUN")
	if dir == "" {
		t.Skip("a measurement: set REFINALISE_RUN")
	}
	res, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config
	knob := func(name string, min int, set *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				t.Fatalf("%s=%q: want an integer ≥ %d", name, v, min)
			}
			*set = n
		}
	}
	var patience int
	knob("REFINALISE_ITERS", 1, &cfg.FinalIters)
	knob("REFINALISE_DOUBLINGS", 0, &cfg.FinalDoublings)
	knob("REFINALISE_PATIENCE", 1, &patience)
	if cfg.FinalTrainer != FinalEM {
		t.Fatalf("%s: final_trainer %q, want %q", dir, cfg.FinalTrainer, FinalEM)
	}
	d, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := d.encodeAll(res.VQVAE)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{ctx: context.Background(), cfg: cfg, st: &runState{}, out: os.Stderr, d: d, patience: patience}
	start := time.Now()
	hmm, err := r.finaliseEM(d.sequences(tokens), res.HMM.K(), res.HMM.NumActions)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r.st.Made.Confusion)
	if err != nil {
		t.Fatal(err)
	}
	hmm.Meta = map[string]string{ConfusionMeta: string(b)}
	final := time.Since(start).Seconds()
	start = time.Now()
	rep, err := Evaluate(res.VQVAE, hmm, d.env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diagnosis, err = diagnose(d, cfg, res.VQVAE, hmm, &r.st.Made); err != nil {
		t.Fatal(err)
	}
	eval := time.Since(start).Seconds()
	rep.Seconds = map[string]float64{PhaseFinal: final, PhaseEval: eval, "total": final + eval}
	made := r.st.Made
	made.Episodes, made.Steps, made.Clones = cfg.Episodes, cfg.Steps, hmm.Clones
	rep.Trainer, rep.Training = "joint (finalisation redone)", &made
	if err := rep.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("REFINALISE_JSON"); out != "" {
		if err := rep.WriteJSON(out); err != nil {
			t.Fatal(err)
		}
	}
}
