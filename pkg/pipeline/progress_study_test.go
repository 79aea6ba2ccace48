package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// TestProgressStudy scores the best map so far of an EM finalisation in progress
// (PROGRESS_RUN=DIR, a run directory whose state holds FinalEM): its
// final-em-best-NN.model read through the state's confusion matrix, with the joint
// phase's last encoder (the state's checkpoint) reading its codes through the state's token map
// (Config.MergeTokens), scored by Evaluate. A run of many split rounds can then be
// judged before it ends; labels only to score, the run directory is not written.
//
//	PROGRESS_RUN=DIR go test ./pkg/pipeline -run TestProgressStudy -v
func TestProgressStudy(t *testing.T) {
	dir := os.Getenv("PROGRESS_RUN")
	if dir == "" {
		t.Skip("a measurement: set PROGRESS_RUN=DIR")
	}
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.FinalEM == nil || st.FinalEM.Best == "" {
		t.Fatalf("%s: no EM finalisation round has finished", dir)
	}
	cfg, d, load := studyRun(t, dir)
	m := load(st.Checkpoint)
	if st.TokensMerged != nil {
		if err := m.SetTokens(st.TokensMerged); err != nil {
			t.Fatal(err)
		}
	}
	hmm, err := chmm.Load(filepath.Join(dir, st.FinalEM.Best))
	if err != nil {
		t.Fatal(err)
	}
	if st.FinalEM.BestConf != nil {
		b, err := json.Marshal(st.FinalEM.BestConf)
		if err != nil {
			t.Fatal(err)
		}
		hmm.Meta = map[string]string{ConfusionMeta: string(b)}
	}
	rep, err := Evaluate(m, hmm, d.env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.OtherReadout
	fmt.Printf("%s (round %d, %.4f bits per step held out), %d states: %s F1 %.3f (P %.3f R %.3f), state→place purity %.3f, action accuracy %.3f; %s F1 %.3f, purity %.3f\n",
		st.FinalEM.Best, st.FinalEM.BestRound, st.FinalEM.BestBits, hmm.N(), rep.Decode, rep.ViterbiMap.F1, rep.ViterbiMap.Precision,
		rep.ViterbiMap.Recall, rep.StatePlacePurity, rep.ActionAccuracy, o.Decode, o.ViterbiMapF1, o.StatePlacePurity)
}
