//go:build study

package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
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
		line += fmt.Sprintf(" seconds=%.1f", secs)
		if dg.Reread != nil { // the reread alone, again: wall and CPU seconds
			d, err := loadData(res.Config)
			if err != nil {
				t.Fatal(err)
			}
			tokens, err := d.encodeAll(res.VQVAE)
			if err != nil {
				t.Fatal(err)
			}
			cpu0, wall0 := cpuSeconds(), time.Now()
			if _, err := reread(res.HMM, d.sequences(tokens)); err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf(" reread-seconds=%.2f reread-cpu-seconds=%.2f", time.Since(wall0).Seconds(), cpuSeconds()-cpu0)
			train := d.sequences(tokens)
			start, _ := startConfusion(train, res.HMM.K())
			c, lls, err := chmm.FitConfusion(res.HMM, train, start, chmm.FitConfusionConfig{MaxIters: RereadIters, Tol: RereadTol, Beam: ConfusionBeam})
			if err != nil {
				t.Fatal(err)
			}
			diag := 0.0
			for k := range c {
				diag += c[k][k] / float64(len(c))
			}
			line += fmt.Sprintf(" fit: %d E-steps, ℓ/T %.4f → %.4f, mean C[k][k] %.4f", len(lls)-1, lls[0], lls[len(lls)-1], diag)
			// The same fit run to RereadIters E-steps whatever its gains: how much the
			// verdict's reading depends on where the fit stops.
			c, lls, err = chmm.FitConfusion(res.HMM, train, start, chmm.FitConfusionConfig{MaxIters: RereadIters, Tol: 1e-300, Beam: ConfusionBeam})
			if err != nil {
				t.Fatal(err)
			}
			chmm.TrimConfusion(c, ConfusionMin)
			long, err := chmm.DiagnoseConfused(res.HMM, train, nil, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf("; fit to %d E-steps: ℓ/T %.5f, unexplained %.5f, after-miss %v", len(lls)-1, lls[len(lls)-1], long.Unexplained(), long.SurprisesAfterMiss)
		}
		t.Log(line)
		t.Log("  " + dg.Verdict.Text)
	}
}
