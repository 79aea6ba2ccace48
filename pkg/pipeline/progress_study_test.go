//go:build study

package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestProgressStudy scores the best map so far of an EM finalisation in progress
// (PROGRESS_RUN=DIR, a run directory whose state holds FinalEM): its
// final-em-best-NN.model read through the state's confusion matrix, with the joint
// phase's last encoder (the state's checkpoint) reading its codes through the state's token map
// (Config.Final.MergeTokens), scored by Evaluate, with the verdict the run would give it
// were it the map kept (its later rounds counted as split past it). A run of many split rounds can then be
// judged before it ends; labels only to score, the run directory is not written.
//
//	PROGRESS_RUN=DIR go test -tags study ./pkg/pipeline -run TestProgressStudy -v
func TestProgressStudy(t *testing.T) {
	dir := os.Getenv("PROGRESS_RUN")
	if dir == "" {
		t.Skip("a measurement: set PROGRESS_RUN=DIR")
	}
	st, cfg, d, m := studyFinalEM(t, dir)
	if st.FinalEM.Best == "" {
		t.Fatalf("%s: no EM finalisation round has finished", dir)
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
	// The verdict as the run's evaluation would give it, were this the map kept.
	made := st.Made
	made.Doublings = st.FinalEM.BestRound
	dg, err := diagnose(d, cfg, m, hmm, &made, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.OtherReadout
	fmt.Printf("verdict: %s (surprises %.2f%%, misses %.2f%%; surprised d steps after a miss %v: unexplained %.4f%%)\n",
		dg.Verdict.Text, 100*dg.Surprises, 100*dg.Misses, dg.SurprisesAfterMiss, 100*dg.Unexplained())
	fmt.Printf("%s (round %d, %.4f bits per step held out), %d states: %s F1 %.3f (P %.3f R %.3f), state→place purity %.3f, action accuracy %.3f; %s F1 %.3f, purity %.3f\n",
		st.FinalEM.Best, st.FinalEM.BestRound, st.FinalEM.BestBits, hmm.N(), rep.Decode, rep.ViterbiMap.F1, rep.ViterbiMap.Precision,
		rep.ViterbiMap.Recall, rep.StatePlacePurity, rep.ActionAccuracy, o.Decode, o.ViterbiMapF1, o.StatePlacePurity)
}

// TestRoundCostStudy times PROFILE_ITERS (default 5) EM iterations of the next split
// round of an EM finalisation in progress (PROFILE_RUN=DIR): the round's start model and
// confusion matrix from the state, the training frames encoded by the joint phase's last
// encoder through the state's token map, EM configured as the finalisation does. Run
// with -test.cpuprofile to see where a round's time goes; the run directory is not
// written.
//
//	PROFILE_RUN=DIR go test -tags study ./pkg/pipeline -run TestRoundCostStudy -v -cpuprofile cpu.out
func TestRoundCostStudy(t *testing.T) {
	dir := os.Getenv("PROFILE_RUN")
	if dir == "" {
		t.Skip("a measurement: set PROFILE_RUN=DIR")
	}
	iters := 5
	if v := os.Getenv("PROFILE_ITERS"); v != "" {
		var err error
		if iters, err = strconv.Atoi(v); err != nil || iters < 1 {
			t.Fatalf("PROFILE_ITERS=%q: want an integer ≥ 1", v)
		}
	}
	st, cfg, d, m := studyFinalEM(t, dir)
	if st.FinalEM.Start == "" {
		t.Fatalf("%s: no EM finalisation round after round 0 has begun", dir)
	}
	tokens, err := d.encodeAll(m)
	if err != nil {
		t.Fatal(err)
	}
	hmm, err := chmm.Load(filepath.Join(dir, st.FinalEM.Start))
	if err != nil {
		t.Fatal(err)
	}
	start, _ := holdOutEnds(d.sequences(tokens))
	train := st.FinalEM.trainingWalks(start)
	ec := st.FinalEM.roundEM(cfg, st.FinalEM.Round, iters, st.FinalEM.Conf)
	began := time.Now()
	h, err := chmm.TrainEM(hmm, train, ec)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(began)
	// TrainEM scores the last M-step's map too: one E-step more than iterations.
	fmt.Printf("%s, round %d, %d states, %d pieces: %d E-steps in %.2f s (%.3f s each), ℓ/T %.4f\n", dir, st.FinalEM.Round,
		hmm.N(), len(train), len(h.LogLik), el.Seconds(), el.Seconds()/float64(len(h.LogLik)), h.LogLik[len(h.LogLik)-1])
}

// studyFinalEM reads a run directory whose EM finalisation has begun: its state, config
// and data, and the joint phase's last encoder reading its codes through the state's
// token map (Config.Final.MergeTokens), as the finalisation reads them.
func studyFinalEM(t *testing.T, dir string) (*runState, Config, *data, *vqvae.Model) {
	t.Helper()
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.FinalEM == nil {
		t.Fatalf("%s: its EM finalisation has not begun", dir)
	}
	cfg, d, load := studyRun(t, dir)
	m := load(st.Checkpoint)
	if st.TokensMerged != nil {
		if err := m.SetTokens(st.TokensMerged); err != nil {
			t.Fatal(err)
		}
	}
	return st, cfg, d, m
}
