package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// dirDigests returns the SHA-256 of every regular file in dir but the lock.
func dirDigests(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != LockFile {
			d, err := fileDigest(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = d
		}
	}
	return out
}

// reportSansTimes is the report's JSON without its seconds and the branch's source.
func reportSansTimes(t *testing.T, r *evaluate.Report) []byte {
	t.Helper()
	c := *r
	c.Seconds = nil
	if c.Training != nil && c.Training.Joint != nil {
		tr := *c.Training
		j := *tr.Joint
		j.From = ""
		tr.Joint, c.Training = &j, &tr
	}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBranch: a run branched from a finished run's joint phase with another
// finalisation (EM instead of Adam, hard read-out) ends with the same files and report
// as that configuration trained from scratch, records where its joint phase came from,
// leaves the source untouched, and resumes with the same call.
func TestBranch(t *testing.T) {
	cfg := tinyConfig(t)
	src := t.TempDir()
	if _, err := Run(context.Background(), src, cfg, progressOut()); err != nil {
		t.Fatal(err)
	}
	before := dirDigests(t, src)

	em := cfg
	em.Final.Trainer, em.Final.Iters, em.Final.SplitRounds, em.Eval.Decode = FinalEM, 20, 3, DecodeHard
	dst := filepath.Join(t.TempDir(), "branch")
	if err := Branch(dst, src, em); err != nil {
		t.Fatal(err)
	}
	st := mustState(t, dst)
	if st.Phase != PhaseFinal || len(phaseRows(st.History, PhaseFinal)) != 0 || st.Seconds[PhaseFinal] != 0 || len(st.Made.Runs) != 0 {
		t.Fatalf("branched state: phase %s, %d finalisation rows, seconds %v, runs %v: want the state at the joint phase's end",
			st.Phase, len(phaseRows(st.History, PhaseFinal)), st.Seconds, st.Made.Runs)
	}
	rep, err := Run(context.Background(), dst, em, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	want, err := Run(context.Background(), fresh, em, progressOut())
	if err != nil {
		t.Fatal(err)
	}

	abs, _ := filepath.Abs(src)
	if got := rep.Training.Joint.From; got != abs {
		t.Errorf("report's joint phase from %q, want %q", got, abs)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "taken over from "+abs) {
		t.Errorf("report table does not name the source (%v):\n%s", err, table.String())
	}
	if !bytes.Equal(reportSansTimes(t, rep), reportSansTimes(t, want)) {
		t.Errorf("branched report differs from the same configuration trained from scratch:\n%s\n%s", reportSansTimes(t, rep), reportSansTimes(t, want))
	}
	for _, name := range []string{CHMMFile, VQVAEFile} {
		a, _ := os.ReadFile(filepath.Join(dst, name))
		b, _ := os.ReadFile(filepath.Join(fresh, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the same configuration trained from scratch", name)
		}
	}
	sameFinalisation(t, fresh, dst)
	srcRun, err := LoadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	dstRun, err := LoadRun(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []string{PhaseWarmup, PhaseJoint} {
		a, b := phaseRows(srcRun.History, ph), phaseRows(dstRun.History, ph)
		if len(a) == 0 || len(a) != len(b) || a[len(a)-1] != b[len(b)-1] {
			t.Errorf("%s history: %d rows in the source, %d in the branch", ph, len(a), len(b))
		}
	}
	if after := dirDigests(t, src); len(after) != len(before) {
		t.Errorf("source files %v, were %v", after, before)
	} else {
		for name, d := range before {
			if after[name] != d {
				t.Errorf("source file %s changed", name)
			}
		}
	}

	// The same call again resumes (here: loads) the branch.
	if err := Branch(dst, src, em); err != nil {
		t.Fatalf("branching again into the branch: %v", err)
	}
	again, err := Run(context.Background(), dst, em, nil)
	if err != nil || !bytes.Equal(reportSansTimes(t, again), reportSansTimes(t, rep)) {
		t.Errorf("resumed branch: %v", err)
	}
}

// TestBranchRefuses: each misuse is one error naming the problem, and leaves no run
// behind.
func TestBranchRefuses(t *testing.T) {
	cfg := tinyConfig(t)
	src := t.TempDir()
	if _, err := Run(context.Background(), src, cfg, nil); err != nil {
		t.Fatal(err)
	}
	stopped := cfg
	stopped.StopAfterJoint = 3
	unfinished := t.TempDir()
	if _, err := Run(context.Background(), unfinished, stopped, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	damaged := copyDir(t, src)
	ckpt := mustState(t, damaged).Checkpoint
	raw, err := os.ReadFile(filepath.Join(damaged, ckpt))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, ckpt), append(raw, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := Run(context.Background(), other, cfg, nil); err != nil {
		t.Fatal(err)
	}

	seed := cfg
	seed.Seed = 2
	iters := cfg
	iters.Joint.Iters, iters.Final.Trainer = 20, FinalEM
	for _, c := range []struct {
		name     string
		dst, src string
		cfg      Config
		want     string
	}{
		{"another seed", "", src, seed, "seed: 1 in the run, 2 now"},
		{"more joint iterations", "", src, iters, "joint.iters: 16 in the run, 20 now"},
		{"joint phase unfinished", "", unfinished, cfg, "has not finished its joint phase (phase joint"},
		{"damaged checkpoint", "", damaged, cfg, "not the file this run wrote"},
		{"no run", "", t.TempDir(), cfg, "holds no run"},
		{"into another run", other, src, cfg, "already holds a run not branched from"},
		{"into itself", src, src, cfg, "both the source and the new run directory"},
	} {
		dst := c.dst
		if dst == "" {
			dst = filepath.Join(t.TempDir(), "branch")
		}
		err := Branch(dst, c.src, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
			continue
		}
		if c.dst == "" {
			if _, serr := os.Stat(filepath.Join(dst, StateFile)); serr == nil {
				t.Errorf("%s: a state was written", c.name)
			}
		}
	}
}

// TestWithFinalisationOf: the fields a branch may change are the finalisation's and the
// evaluation's; a run that pre-trains reads the finalisation's Adam settings before the
// joint phase, so a branch of it may not change them.
func TestWithFinalisationOf(t *testing.T) {
	a := tinyConfig(t)
	b := a
	b.Final.MergeTokens, b.Final.Trainer, b.Final.SplitRounds, b.Final.Iters, b.Eval.Decode, b.Eval.Steps = 3, FinalEM, 5, 50, DecodeHard, 123
	b.Final.LR, b.Final.Tol = 0.5, 1e-4
	if d := diffFields(withFinalisationOf(a, b), b); len(d) != 0 {
		t.Errorf("finalisation fields refused: %v", d)
	}
	b.Joint.Jitter++
	if d := diffFields(withFinalisationOf(a, b), b); len(d) != 1 || !strings.HasPrefix(d[0], "joint.jitter:") {
		t.Errorf("a joint field changed: %v, want joint.jitter named", d)
	}
	b.Joint.Jitter = a.Joint.Jitter
	a.Joint.PretrainIters, b.Joint.PretrainIters = 10, 10
	if d := diffFields(withFinalisationOf(a, b), b); len(d) != 2 || !strings.HasPrefix(d[0], "final.lr:") || !strings.HasPrefix(d[1], "final.tol:") {
		t.Errorf("pre-training run with other Adam settings: %v, want final.lr and final.tol named", d)
	}
}
