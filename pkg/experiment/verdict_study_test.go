//go:build study

package experiment

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Layouts of the verdict study beyond the built-in environments.
const (
	// tiled12 is a 12 × 12 room tiled with one 3 × 3 motif of 9 classes: every class
	// at 16 places.
	tiled12 = "0 1 2 0 1 2 0 1 2 0 1 2\n3 4 5 3 4 5 3 4 5 3 4 5\n6 7 8 6 7 8 6 7 8 6 7 8\n"
	// loops2 is two loops of 17 places (layouts/loops2.txt) (issue 18's gradient-plateau layout).
	loops2 = "0 1 2 1 0 1 2\n1 # # 2 # # 0\n2 1 0 1 2 0 1\n"
)

// TestVerdictStudy is a measurement, not a check (skipped unless VERDICT_STUDY names
// environments, or "all"): symbolic runs with budgets and data sizes from too small
// to generous, both trainers, seeds 1–2, scored against the true map and judged
// without labels (chmm.Diagnose, Judge). With VERDICT_OUT=FILE it writes the runs
// and the confusion table there (make verdict-study: results/verdict.md).
func TestVerdictStudy(t *testing.T) {
	if os.Getenv("VERDICT_STUDY") == "" {
		t.Skip("a measurement: set VERDICT_STUDY")
	}
	envs := map[string]*gridworld.Env{}
	for _, n := range []string{"aliased", "corridors", "room", "three_rooms"} {
		envs[n], _ = gridworld.Named(n)
	}
	tiled := strings.Repeat(tiled12, 4)
	var err error
	if envs["tiled12"], err = gridworld.ParseLayout("tiled12", strings.NewReader(tiled)); err != nil {
		t.Fatal(err)
	}
	if envs["loops2"], err = gridworld.ParseLayout("loops2", strings.NewReader(loops2)); err != nil {
		t.Fatal(err)
	}
	type cfg struct {
		env             string
		clones          int // 0: the environment's budget
		episodes, steps int // 0: the environment's
	}
	var cfgs []cfg
	names := os.Getenv("VERDICT_STUDY")
	if names == "all" {
		names = "aliased,corridors,three_rooms,room,loops2,tiled12"
	}
	var rows []string
	var conf evaluate.VerdictConfusion
	for _, e := range strings.Split(names, ",") {
		switch e {
		case "tiled12":
			cfgs = append(cfgs, cfg{e, 10, 0, 0}, cfg{e, 30, 0, 0}, cfg{e, 30, 1, 5000})
		case "loops2":
			cfgs = append(cfgs, cfg{e, 0, 0, 0}, cfg{e, 0, 1, 300})
		default:
			cfgs = append(cfgs, cfg{e, 0, 0, 0}, cfg{e, -4, 0, 0}, cfg{e, 0, 1, 600})
		}
	}
	for _, c := range cfgs {
		env := envs[c.env]
		d := env.Defaults()
		episodes, steps := d.Episodes, d.Steps
		if c.episodes > 0 {
			episodes, steps = c.episodes, c.steps
		}
		tok := NewTokens(env)
		clones := make([]int, len(tok.Classes))
		for k, cl := range tok.Classes {
			clones[k] = d.ClonesPerClass
			if n, ok := d.ClonesByClass[cl]; ok {
				clones[k] = n
			}
			if c.clones > 0 {
				clones[k] = c.clones
			} else if c.clones < 0 {
				clones[k] = max(1, clones[k]/-c.clones)
			}
		}
		for _, trainer := range []string{TrainerGradient, TrainerEM} {
			for seed := uint64(1); seed <= 2; seed++ {
				var train []chmm.Sequence
				for _, ep := range SymbolicTrainingWalks(env, seed, episodes, steps) {
					train = append(train, tok.Sequence(ep))
				}
				held := SymbolicHeldOutWalk(env, seed, max(steps, 2000))
				test := tok.Sequence(held)
				pc := d.Pseudocount
				if pc == 0 {
					pc = chmm.DefaultEMConfig().Pseudocount
				}
				m := SymbolicInit(clones, env.NumActions(), seed, InitUniform)
				t0 := time.Now()
				m, _, _, err := TrainSymbolic(m, train, Training{Trainer: trainer, Seed: seed, Pseudocount: pc,
					ViterbiIters: chmm.DefaultEMConfig().ViterbiIters}, nil)
				if err != nil {
					t.Fatal(err)
				}
				sec := time.Since(t0).Seconds()
				// A held-out walk the map cannot decode is a failed run (F1 0).
				rep := &evaluate.Report{}
				if states, _, err := chmm.Viterbi(m, test); err == nil {
					if rep, err = evaluate.Evaluate(evaluate.Input{Env: env, Places: held.Places, States: states, Tokens: test.Obs,
						Trans: m.Transitions(), NumStates: m.N(), NumTokens: m.K()}, evaluate.DefaultOptions()); err != nil {
						t.Fatal(err)
					}
				}
				// The diagnosis holds out the last fifth of the training steps' worth of a
				// fresh walk: the held-out walk's first max(steps/5, 500) steps.
				hs := test
				if n := max(episodes*steps/5, 500); n < hs.Len() {
					hs = chmm.Sequence{Obs: hs.Obs[:n], Actions: hs.Actions[:n-1]}
				}
				dg, err := chmm.Diagnose(m, train, []chmm.Sequence{hs}, 0)
				if err != nil {
					t.Fatal(err)
				}
				good := rep.Recovered()
				v := dg.Judge(chmm.ExactTokens)
				conf.Add(!v.Resolved, !good)
				heldBits := fmt.Sprintf("%.4f", dg.HeldOutBits)
				if dg.HeldOutZero {
					heldBits = "impossible"
				}
				row := fmt.Sprintf("| %s | %d–%d | %d × %d | %s | %d | %.3f | %.3f | %.3f | %s | %.4f | %s | %.3f | %d/%d | %s | %.0f |",
					c.env, minOf(clones), maxOf(clones), episodes, steps, trainer, seed, rep.ViterbiMap.Recall, rep.ViterbiMap.F1,
					rep.StatePlacePurity, map[bool]string{true: "good", false: "**failed**"}[good], dg.TrainBits, heldBits,
					dg.Determinism, len(dg.FullTokens), len(clones), verdictCell(v), sec)
				rows = append(rows, row)
				fmt.Println("VERDICT " + row)
			}
		}
	}
	out := os.Getenv("VERDICT_OUT")
	if out == "" {
		return
	}
	var b strings.Builder
	b.WriteString("# Is the map resolved? The label-free verdict against the true maps (symbolic)\n\n")
	b.WriteString("Generated by `make verdict-study` (`VERDICT_STUDY=all VERDICT_OUT=results/verdict.md go test -tags study ./pkg/experiment -run TestVerdictStudy`). " +
		"Symbolic runs of chmm.Diagnose's verdict (Judge, exact tokens): budgets from too small (1 clone per class, or a quarter of the " +
		"environment's) to the environment's, data from one short walk to the environment's reference walks, both trainers with their " +
		"defaults and no restarts, seeds 1–2. *Good*: Viterbi-path map recall 1.00, F1 ≥ 0.98 and state→place purity ≥ 0.95 on the " +
		"held-out walk (labels used only here). The verdict reads only tokens and actions: bits per step on the training walks and on " +
		"the held-out walk's first max(steps/5, 500) steps, the share of training steps whose Viterbi state and action predict the next " +
		"token (≥ 0.9), and the tokens that use every clone.\n\n")
	b.WriteString(conf.Markdown() + "\n")
	b.WriteString("| env | clones | data | trainer | seed | recall | F1 | purity | truth | train bits | held-out bits | predicts next | full tokens | verdict | seconds |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verdictCell is the verdict in a table cell: "resolved" or the problems.
func verdictCell(v *chmm.Verdict) string {
	if v.Resolved {
		return "resolved"
	}
	return "**not resolved**: " + strings.Join(v.Problems, ", ")
}

func minOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
