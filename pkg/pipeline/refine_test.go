package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// reportSans is the report's JSON without its seconds, the branch's source and the
// refinement's record (with refine false: its teaching seconds only).
func reportSans(t *testing.T, r *evaluate.Report, refine bool) []byte {
	t.Helper()
	var c evaluate.Report
	if err := json.Unmarshal(reportSansTimes(t, r), &c); err != nil {
		t.Fatal(err)
	}
	if c.Training != nil && c.Training.Refine != nil {
		if refine {
			c.Training.Refine = nil
		} else {
			for i := range c.Training.Refine.Epochs {
				c.Training.Refine.Epochs[i].Seconds = 0
			}
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refineLeftovers are the refinement's and the finalisation's files left in dir.
func refineLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	a, _ := filepath.Glob(filepath.Join(dir, "refine-*"))
	b, _ := filepath.Glob(filepath.Join(dir, "final-*"))
	return append(a, b...)
}

// TestRefine: a tiny run whose maps' verdicts the hooks read as resolved is refined:
// the report records the pseudo-classes and both teaching epochs, the run's map reads
// the pseudo-classes as its tokens, and no refinement file is left. Runs branched from
// its joint phase and stopped after each of the refinement's commits, or within its
// finalisation, resume to the same report.
func TestRefine(t *testing.T) {
	cfg := tinyConfig(t)
	if cfg.Refine.On || cfg.Refine.Epochs != DefaultRefineEpochs {
		t.Fatalf("refinement %+v, want off with %d epochs by default", cfg.Refine, DefaultRefineEpochs)
	}
	cfg.Refine.On = true
	src := t.TempDir()
	want, err := run(context.Background(), src, cfg, progressOut(), &hooks{refineAnyway: true})
	if err != nil {
		t.Fatal(err)
	}
	rf := want.Training.Refine
	if rf == nil || rf.Skipped != "" || rf.Reverted != "" || len(rf.Epochs) != cfg.Refine.Epochs || rf.PseudoClasses < 2 {
		t.Fatalf("refinement record %+v: want %d epochs and at least 2 pseudo-classes", rf, cfg.Refine.Epochs)
	}
	frames := rf.Unlabelled
	for _, n := range rf.Frames {
		frames += n
	}
	if frames != cfg.Data.Episodes*cfg.Data.Steps || rf.OnLabel < 0 || rf.OnLabel > 1 || rf.Relabelled < 0 {
		t.Errorf("pseudo-classes' frames %v + %d unlabelled = %d of %d; on label %g, relabelled %d",
			rf.Frames, rf.Unlabelled, frames, cfg.Data.Episodes*cfg.Data.Steps, rf.OnLabel, rf.Relabelled)
	}
	res, err := LoadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	if res.HMM.K() != rf.PseudoClasses || res.VQVAE.NumTokens() != rf.PseudoClasses || want.NumTokens != rf.PseudoClasses {
		t.Errorf("map of %d tokens, encoder of %d, report %d: want the %d pseudo-classes", res.HMM.K(), res.VQVAE.NumTokens(), want.NumTokens, rf.PseudoClasses)
	}
	if len(phaseRows(res.History, PhaseRefine)) == 0 || want.Seconds[PhaseRefine] <= 0 || !strings.Contains(runNames(want), "refine finalise") {
		t.Errorf("refinement rows %d, seconds %v, runs %s", len(phaseRows(res.History, PhaseRefine)), want.Seconds, runNames(want))
	}
	var table bytes.Buffer
	if err := want.WriteTable(&table); err != nil || !strings.Contains(table.String(), "pseudo-classes from the map's") {
		t.Errorf("report table lacks the refinement (%v):\n%s", err, table.String())
	}
	if left := refineLeftovers(t, src); len(left) > 0 {
		t.Errorf("files left: %v", left)
	}

	errStop := errors.New("stopped")
	resume := func(name string, hooksFor func(dst string) *hooks) {
		t.Helper()
		dst := filepath.Join(t.TempDir(), "branch")
		if err := Branch(dst, src, cfg); err != nil {
			t.Fatal(err)
		}
		stop := hooksFor(dst)
		stop.refineAnyway = true
		if _, err := run(context.Background(), dst, cfg, nil, stop); !errors.Is(err, errStop) {
			t.Fatalf("%s: %v, want the hook's stop", name, err)
		}
		if st := mustState(t, dst); st.Phase != PhaseRefine {
			t.Fatalf("%s: stopped in phase %s", name, st.Phase)
		}
		got, err := run(context.Background(), dst, cfg, nil, &hooks{refineAnyway: true})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := reportSans(t, got, false), reportSans(t, want, false); !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed report differs:\n%s\n%s", name, a, b)
		}
		if left := refineLeftovers(t, dst); len(left) > 0 {
			t.Errorf("%s: files left: %v", name, left)
		}
	}
	// Commits: the pseudo-classes, each epoch, the codebook fitted again.
	for n := 1; n <= cfg.Refine.Epochs+2; n++ {
		resume(fmt.Sprintf("stopped after commit %d", n), func(string) *hooks {
			return &hooks{refineSaved: func(c int) error {
				if c == n {
					return errStop
				}
				return nil
			}}
		})
	}
	resume("stopped within the refinement's finalisation", func(dst string) *hooks {
		return &hooks{saveAlways: true, finalSaved: func(string) error {
			if st, err := readState(dst); err != nil || st.Phase == PhaseRefine {
				return errStop
			}
			return nil
		}}
	})
}

// runNames lists the report's HMM trainer runs.
func runNames(r *evaluate.Report) string {
	var names []string
	for _, run := range r.Training.Runs {
		names = append(names, run.Name)
	}
	return strings.Join(names, ", ")
}

// TestRefineKeepsTheMapItCannotImprove: a refinement skipped (the finalisation's map
// not resolved) or whose refined map is dropped (read as not resolved) leaves the
// run with the map, encoder and report of the same run without refinement, its record
// aside.
func TestRefineKeepsTheMapItCannotImprove(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Refine.On = true
	src := t.TempDir()
	if _, err := Run(context.Background(), src, cfg, progressOut()); err != nil {
		t.Fatal(err)
	}
	off := cfg
	off.Refine.On = false
	base := filepath.Join(t.TempDir(), "off")
	if err := Branch(base, src, off); err != nil {
		t.Fatal(err)
	}
	want, err := Run(context.Background(), base, off, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.Training.Refine != nil {
		t.Fatalf("refinement off: record %+v", want.Training.Refine)
	}
	for _, c := range []struct {
		name string
		h    *hooks
		dir  string
	}{
		{"as configured", nil, src},
		{"dropped", &hooks{refineAnyway: true, refineDrop: true}, ""},
	} {
		dir := c.dir
		if dir == "" {
			dir = filepath.Join(t.TempDir(), "branch")
			if err := Branch(dir, src, cfg); err != nil {
				t.Fatal(err)
			}
		}
		got, err := run(context.Background(), dir, cfg, nil, c.h)
		if err != nil {
			t.Fatal(err)
		}
		rf := got.Training.Refine
		switch {
		case rf == nil:
			t.Fatalf("%s: no refinement record", c.name)
		case c.h == nil && got.Diagnosis.Verdict.Resolved:
			t.Skipf("the tiny run's map is resolved (%s): the skip is not reached", got.Diagnosis.Verdict.Text)
		case c.h == nil && !strings.Contains(rf.Skipped, "not resolved"):
			t.Errorf("%s: record %+v, want skipped for a map that is not resolved", c.name, rf)
		case c.h != nil && (rf.Skipped != "" || !strings.Contains(rf.Reverted, "not resolved") || len(rf.Epochs) != cfg.Refine.Epochs):
			t.Errorf("%s: record %+v, want the refined map dropped after %d epochs", c.name, rf, cfg.Refine.Epochs)
		}
		if a, b := reportSans(t, got, true), reportSans(t, want, true); !bytes.Equal(a, b) {
			t.Errorf("%s: report differs from the run without refinement:\n%s\n%s", c.name, a, b)
		}
		for _, name := range []string{CHMMFile, VQVAEFile} {
			a, _ := os.ReadFile(filepath.Join(dir, name))
			b, _ := os.ReadFile(filepath.Join(base, name))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs from the run without refinement", c.name, name)
			}
		}
		if left := refineLeftovers(t, dir); len(left) > 0 {
			t.Errorf("%s: files left: %v", c.name, left)
		}
	}
}

// TestRefinable: a map may teach the encoder when resolved or when misread tokens are
// its only problem; any other problem, alone or beside misread tokens, keeps it out.
func TestRefinable(t *testing.T) {
	for _, c := range []struct {
		v    chmm.Verdict
		want bool
	}{
		{chmm.Verdict{Resolved: true}, true},
		{chmm.Verdict{Problems: []string{chmm.ProblemPredict}}, true},
		{chmm.Verdict{Problems: []string{chmm.ProblemMerged}}, false},
		{chmm.Verdict{Problems: []string{chmm.ProblemPredict, chmm.ProblemMerged}}, false},
		{chmm.Verdict{Problems: []string{chmm.ProblemData}}, false},
		{chmm.Verdict{Problems: []string{chmm.ProblemPredict, chmm.ProblemData}}, false},
		{chmm.Verdict{Problems: []string{chmm.ProblemClones}}, false},
		{chmm.Verdict{Problems: []string{chmm.ProblemFit}}, false},
	} {
		if got := refinable(&c.v); got != c.want {
			t.Errorf("refinable(%v) = %v, want %v", c.v.Problems, got, c.want)
		}
	}
}
