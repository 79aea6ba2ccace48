package pipeline

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// TestPruneDropsUnvisitedClones: an HMM with clones [3, 2] whose transitions lead every
// state to state 0 (token 0) or state 3 (token 1), on an alternating 0,1,0,1… walk, uses
// only states 0 and 3; pruning at 10% keeps exactly those, continues the finalisation's
// history and records the count.
func TestPruneDropsUnvisitedClones(t *testing.T) {
	hmm := chmm.New([]int{3, 2}, 1, rand.New(rand.NewPCG(1, 1)))
	n := hmm.N() // 6 with the sink
	for i := range n {
		row := hmm.ThetaLogits[i*n : (i+1)*n]
		for j := range row {
			row[j] = -5
		}
		row[0], row[3], row[n-1] = 2, 2, math.Inf(-1)
	}
	seq := chmm.Sequence{Obs: make([]int, 200), Actions: make([]int, 199)}
	for t := range seq.Obs {
		seq.Obs[t] = t % 2
	}
	r := &runner{cfg: Config{FinalPrune: 0.1, FinalPruneIters: 5, Seed: 1},
		st: &runState{History: []Record{{Step: 7, Phase: PhaseFinal}}}}
	got, err := r.prune(hmm, []chmm.Sequence{seq}, chmm.GradConfig{LR: 0.1, Seed: 1}, "retrain")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Clones, []int{1, 1}) {
		t.Errorf("pruned clones %v, want [1 1]", got.Clones)
	}
	if r.st.Made.Pruned != 3 || len(r.st.Made.Runs) != 1 || r.st.Made.Runs[0].Name != "retrain" {
		t.Errorf("record %+v, want 3 pruned and one retrain run", r.st.Made)
	}
	h := r.st.History
	if len(h) < 1+5 || h[1].Step != 8 || h[1].Event != "pruned 3 states" || h[len(h)-1].Step != 7+len(h)-1 {
		t.Errorf("history after pruning: %+v", h)
	}
	if ll, err := chmm.LogLikelihood(got, []chmm.Sequence{seq}); err != nil || ll < -float64(len(seq.Obs)) {
		t.Errorf("pruned model: log-likelihood %v, %v", ll, err)
	}
}

// TestFinalGrow: a finalisation budget of one clone per token binds (pruning can free
// none), so with FinalGrow 2 it doubles twice (1 → 2 → 4 clones per token on average),
// each round's runs and the doubling are recorded, and the map keeps more states; with
// FinalGrow 0 the budget stays.
func TestFinalGrow(t *testing.T) {
	for _, grow := range []int{0, 2} {
		cfg := tinyConfig(t)
		cfg.FinalClones, cfg.FinalGrow = 1, grow
		dir := t.TempDir()
		rep, err := Run(context.Background(), dir, cfg, progressOut())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rep.Training.Runs {
			names = append(names, r.Name)
		}
		want := []string{"finalise", "retrain"}
		if grow == 2 {
			want = append(want, "finalise (2× budget)", "retrain (2× budget)", "finalise (4× budget)", "retrain (4× budget)")
		}
		if rep.Training.GrowRounds != grow || !slices.Equal(names, want) {
			t.Errorf("FinalGrow %d: %d rounds, runs %q; want %d, %q", grow, rep.Training.GrowRounds, names, grow, want)
		}
		k := rep.NumTokens
		if grow == 0 && rep.NumStates != 1+k || grow == 2 && rep.NumStates <= 1+2*k {
			t.Errorf("FinalGrow %d: %d states for %d tokens", grow, rep.NumStates, k)
		}
		res, err := LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		for _, r := range phaseRows(res.History, PhaseFinal) {
			if strings.HasPrefix(r.Event, "budget doubled") {
				events = append(events, r.Event)
			}
		}
		if len(events) != grow {
			t.Errorf("FinalGrow %d: history events %q, want %d doublings", grow, events, grow)
		}
	}
}
