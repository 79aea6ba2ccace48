//go:build study

package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// TestCompareMapsStudy is a measurement, not a check (skipped unless COMPARE_RUNS
// names finished run directories, separated by spaces): each run's map read without
// labels on its training walks and its held-out episode, through its own confusion
// matrix (none for hard tokens) and through one fitted to it as the reread fits one,
// beside its scores against the true room, a line per run starting "COMPARE". The run
// directories are not touched. Results: results/notes/fashion.md.
//
//	COMPARE_RUNS="runs/room_fashion_seed2 runs/room_fashion_seed2_keep" go test -tags study ./pkg/pipeline -run TestCompareMapsStudy -v
func TestCompareMapsStudy(t *testing.T) {
	dirs := strings.Fields(os.Getenv("COMPARE_RUNS"))
	if len(dirs) == 0 {
		t.Skip("a measurement: set COMPARE_RUNS")
	}
	for _, dir := range dirs {
		res, d, tokens := finishedRun(t, dir)
		train := d.sequences(tokens)
		held, err := NewHeldOut(res.Config, d.env)
		if err != nil {
			t.Fatal(err)
		}
		heldTokens, _, err := res.VQVAE.Encode(held.Images)
		if err != nil {
			t.Fatal(err)
		}
		hs := []chmm.Sequence{{Obs: heldTokens, Actions: held.Episode.Actions}}
		own, err := MapConfusion(res.HMM)
		if err != nil {
			t.Fatal(err)
		}
		start, _ := startConfusion(train, res.HMM.K())
		fit, _, err := chmm.FitConfusion(res.HMM, train, start, chmm.FitConfusionConfig{MaxIters: RereadIters, Tol: RereadTol, Beam: ConfusionBeam})
		if err != nil {
			t.Fatal(err)
		}
		chmm.TrimConfusion(fit, ConfusionMin)
		line := fmt.Sprintf("COMPARE %s states=%d F1=%.3f purity=%.4f", dir, res.HMM.N(), res.Report.ViterbiMap.F1, res.Report.StatePlacePurity)
		for _, r := range []struct {
			name string
			c    [][]float64
		}{{"own", own}, {"fit", fit}} {
			dg, err := chmm.DiagnoseConfused(res.HMM, train, hs, r.c, 0)
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf(" | %s: train=%.4f held=%.4f unexplained=%.5f", r.name, dg.TrainBits, dg.HeldOutBits, dg.Unexplained())
		}
		t.Log(line)
	}
}
