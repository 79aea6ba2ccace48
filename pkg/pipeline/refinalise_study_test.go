//go:build study

package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// TestRefinaliseStudy is a measurement, not a check (skipped unless REFINALISE_RUN
// names a finished run directory): the run's finalisation redone with the current code
// from its final encoder's tokens and its config, then scored by Evaluate and Diagnose
// as the run was, and the report table printed (REFINALISE_JSON=FILE also writes it;
// REFINALISE_ITERS=N sets the EM iterations per split round, Config.Final.Iters;
// REFINALISE_DOUBLINGS=N the most split rounds, Config.Final.SplitRounds;
// REFINALISE_PATIENCE=N the rounds in a row without a gain that stop it,
// SplitPatience; REFINALISE_TRAINER=em|gradient redoes it with that trainer and its
// default Final.Iters instead of the run's). A gradient finalisation (FinalGradient) is
// redone as configured, or with REFINALISE_UNIFORM=N from N clones for every token
// instead of the budget by token share (no growth). REFINALISE_SCORE=1 also scores
// every FinalEM round's map (labels only to score) and prints how often its training
// walks surprise it, and how often its Viterbi path misses, lines starting "SCORE".
// REFINALISE_SEED=N seeds the finalisation alone (its start, its splits and its EM)
// with N instead of the run's seed; the walks and the scoring keep the run's.
// The run directory is not touched. Results: results/notes/bigger-pixels.md.
//
//	REFINALISE_RUN=runs/tiled_mnist_seed1_finalem go test -tags study ./pkg/pipeline -run TestRefinaliseStudy -v -timeout 3h
//	REFINALISE_TRAINER=em REFINALISE_RUN=runs/big_room_mnist_seed1 go test -tags study ./pkg/pipeline -run TestRefinaliseStudy -v -timeout 3h
//	REFINALISE_UNIFORM=25 REFINALISE_RUN=runs/big_room_mnist_seed1 go test -tags study ./pkg/pipeline -run TestRefinaliseStudy -v -timeout 3h
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
	if tr := os.Getenv("REFINALISE_TRAINER"); tr != "" {
		if tr != FinalEM && tr != FinalGradient {
			t.Fatalf("REFINALISE_TRAINER=%q: want %q or %q", tr, FinalEM, FinalGradient)
		}
		cfg = cfg.WithFinalTrainer(tr)
	}
	var patience, uniform int
	seed := -1 // the run's
	knob("REFINALISE_ITERS", 1, &cfg.Final.Iters)
	knob("REFINALISE_DOUBLINGS", 0, &cfg.Final.SplitRounds)
	knob("REFINALISE_PATIENCE", 1, &patience)
	knob("REFINALISE_UNIFORM", 1, &uniform)
	knob("REFINALISE_SEED", 0, &seed)
	d, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := d.encodeAll(res.VQVAE)
	if err != nil {
		t.Fatal(err)
	}
	r := testFinaliser(cfg, d, os.Stderr, &hooks{patience: patience})
	if seed >= 0 {
		r.s.cfg.Seed = uint64(seed)
	}
	if os.Getenv("REFINALISE_SCORE") != "" {
		seqs := d.sequences(tokens)
		r.s.hooks.emRound = func(round int, m *chmm.Model, conf [][]float64) error {
			mc := m.Clone()
			b, err := json.Marshal(conf)
			if err != nil {
				return err
			}
			mc.Meta = map[string]string{ConfusionMeta: string(b)}
			rep, err := Evaluate(res.VQVAE, mc, d.env, cfg)
			if err != nil {
				return err
			}
			dg, err := chmm.DiagnoseConfused(m, seqs, nil, conf, 0)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "SCORE round %d: %d states; F1 %.3f (recall %.3f), purity %.3f, action accuracy %.3f; surprises %.4f, misses %.4f (hindsight %.4f), predicts next %.3f\n",
				round, m.N(), rep.ViterbiMap.F1, rep.ViterbiMap.Recall, rep.StatePlacePurity, rep.ActionAccuracy, dg.Surprises, dg.Misses, dg.Surprises-dg.Misses, dg.Determinism)
			return nil
		}
	}
	start := time.Now()
	k, numActions := res.HMM.K(), res.HMM.NumActions
	var hmm *chmm.Model
	if cfg.Final.Trainer == FinalEM {
		if hmm, err = r.em(d.sequences(tokens), k, numActions); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r.st.Made.Confusion)
		if err != nil {
			t.Fatal(err)
		}
		hmm.Meta = map[string]string{ConfusionMeta: string(b)}
	} else {
		share := make([]float64, k)
		for _, x := range tokens {
			share[x] += 1 / float64(len(tokens))
		}
		from := chmm.New(chmm.UniformClones(k, 1), numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
		if uniform > 0 {
			r.s.cfg.Final.Budget = FinalFromJoint // train from this model: uniform clones, no growth
			from = chmm.New(chmm.UniformClones(k, uniform), numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
		}
		if hmm, err = r.gradient(d.sequences(tokens), share, from); err != nil {
			t.Fatal(err)
		}
	}
	final := time.Since(start).Seconds()
	start = time.Now()
	rep, err := Evaluate(res.VQVAE, hmm, d.env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diagnosis, err = diagnose(d, cfg, res.VQVAE, hmm, &r.st.Made, os.Stderr); err != nil {
		t.Fatal(err)
	}
	eval := time.Since(start).Seconds()
	rep.Seconds = map[string]float64{PhaseFinal: final, PhaseEval: eval, "total": final + eval}
	made := r.st.Made
	made.Episodes, made.Steps, made.Clones = cfg.Data.Episodes, cfg.Data.Steps, hmm.Clones
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
