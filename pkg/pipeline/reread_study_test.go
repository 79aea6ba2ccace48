//go:build study

package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRereadStudy is a measurement, not a check (skipped unless REREAD_RUNS names
// finished run directories, separated by spaces): each run's map diagnosed as the
// evaluation does it, with the hard-token map's reading through a fitted confusion
// matrix (Diagnosis.Reread), printed beside the report's scores against the true
// room (labels only to score), a line per run starting "REREAD". The run
// directories are not touched. Results: results/notes/verdict.md.
//
//	REREAD_RUNS="runs/room_mnist_seed1 runs/three52_mnist_seed1" go test -tags study ./pkg/pipeline -run TestRereadStudy -v -timeout 3h
func TestRereadStudy(t *testing.T) {
	dirs := strings.Fields(os.Getenv("REREAD_RUNS"))
	if len(dirs) == 0 {
		t.Skip("a measurement: set REREAD_RUNS")
	}
	for _, dir := range dirs {
		res, err := LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		dg, err := Diagnose(res)
		if err != nil {
			t.Fatal(err)
		}
		secs := time.Since(start).Seconds()
		rep := res.Report
		f1 := rep.ViterbiMap.F1
		line := fmt.Sprintf("REREAD %s trainer=%s states=%d F1=%.3f purity=%.4f verdict=%v determinism=%.4f",
			dir, res.Config.Final.Trainer, res.HMM.N(), f1, rep.StatePlacePurity, dg.Verdict.Resolved, dg.Determinism)
		if r := dg.Reread; r != nil {
			line += fmt.Sprintf(" reread: surprises=%.4f misses=%.4f unexplained=%.5f after-miss=%v", r.Surprises, r.Misses, r.Unexplained(), r.SurprisesAfterMiss)
		} else {
			line += fmt.Sprintf(" confused: surprises=%.4f misses=%.4f unexplained=%.5f after-miss=%v", dg.Surprises, dg.Misses, dg.Unexplained(), dg.SurprisesAfterMiss)
		}
		t.Log(line + fmt.Sprintf(" seconds=%.1f", secs))
		t.Log("  " + dg.Verdict.Text)
	}
}
