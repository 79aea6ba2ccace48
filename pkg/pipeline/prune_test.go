package pipeline

import (
	"math"
	"math/rand/v2"
	"slices"
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
	got, err := r.prune(hmm, []chmm.Sequence{seq}, chmm.GradConfig{LR: 0.1, Seed: 1})
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
