package pipeline

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// Branched records that a run took its warm-up and joint phase over from another run
// directory (Branch) instead of training them.
type Branched struct {
	From string // the source run directory (absolute path)
}

// withFinalisationOf returns a with the settings that only the finalisation, the
// refinement and the evaluation read taken from b: final.*, refine.* and eval.*.
// final.lr, final.entropy,
// final.patience and final.tol are the pre-training's settings too
// (joint.pretrain_iters), so they stay a's when a pre-trains.
func withFinalisationOf(a, b Config) Config {
	pre := a.Final
	a.Final, a.Refine, a.Eval = b.Final, b.Refine, b.Eval
	if a.Joint.PretrainIters > 0 {
		a.Final.LR, a.Final.Entropy, a.Final.Patience, a.Final.Tol = pre.LR, pre.Entropy, pre.Patience, pre.Tol
	}
	a.Preset, a.StopAfterJoint = b.Preset, b.StopAfterJoint
	return a
}

// Branch starts the run directory dst from the warm-up and joint phase of the finished
// or finalising run in src, for cfg: a configuration that differs from src's only in
// what the finalisation, the refinement and the evaluation read (final.*, refine.* and
// eval.*; not final.lr, final.entropy, final.patience and final.tol of a run that
// pre-trains). Run(dst, cfg) then trains the finalisation as a run of cfg from scratch
// would: the phases before it read none of those fields.
//
// dst gets cfg's config.json, src's warm-up and joint checkpoints (checked against
// src's digests), and src's state as it stood when its joint phase ended: the history,
// seconds and measurements of the phases before the finalisation, and a record of the
// branch (the report's training.joint.from). src is only read, under a shared lock
// where it has a lock file (shareDir), so it may be read-only; it is not changed. A
// dst that already holds the run branched from src is left as it is, so the same call
// resumes it; any other run in dst is an error.
func Branch(dst, src string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	from, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if to, err := filepath.Abs(dst); err == nil && to == from {
		return fmt.Errorf("pipeline: branch: %s is both the source and the new run directory", src)
	}
	if _, err := os.Stat(filepath.Join(src, StateFile)); err != nil { // a special file: readState says so
		return fmt.Errorf("pipeline: branch: %s holds no run (no %s)", src, StateFile)
	}
	if _, err := os.Stat(filepath.Join(dst, StateFile)); err == nil {
		st, err := readState(dst)
		if err != nil {
			return err
		}
		if st.Branch == nil || st.Branch.From != from {
			return fmt.Errorf("pipeline: branch: %s already holds a run not branched from %s; use another directory", dst, from)
		}
		return nil // Run checks the config and resumes it
	}

	unlockSrc, err := shareDir(src)
	if err != nil {
		return err
	}
	defer unlockSrc()
	old, err := readState(src)
	if err != nil {
		return err
	}
	if old.legacy() {
		return fmt.Errorf("pipeline: branch: %s was written before run directories recorded their files' digests, so its checkpoints cannot be checked; a run branches only from a newer one", src)
	}
	if err := checkIdentity(src, old); err != nil {
		return err
	}
	switch old.Phase {
	case PhaseFinal, PhaseRefine, PhaseEval, PhaseDone:
	default:
		return fmt.Errorf("pipeline: branch: %s has not finished its joint phase (phase %s, joint iteration %d): finish it first with its own settings (train --run %s)",
			src, old.Phase, old.JointIter, src)
	}
	oldCfg, err := readRunConfig(filepath.Join(src, ConfigFile))
	if err != nil {
		return err
	}
	if bad := diffFields(withFinalisationOf(oldCfg, cfg), cfg); len(bad) > 0 {
		return fmt.Errorf("pipeline: branch: %s's warm-up and joint phase were trained with other settings than those given:\n  %s\na branch may change only what the finalisation, the refinement and the evaluation read (final.*, refine.*, eval.*)",
			src, strings.Join(bad, "\n  "))
	}

	st, err := jointEnd(old)
	if err != nil {
		return err
	}
	st.Branch = &Branched{From: from}
	files := map[string][]byte{}
	for name := range st.Files {
		raw, err := readVerified(src, old, name)
		if err != nil {
			return err
		}
		files[name] = raw
	}

	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	unlock, err := lockDir(dst)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dst, StateFile)); err == nil { // written since the check above
		return fmt.Errorf("pipeline: branch: %s already holds a run; use another directory", dst)
	}
	for name, raw := range files {
		if err := writeAtomic(filepath.Join(dst, name), raw); err != nil {
			return err
		}
	}
	if err := checkOrWriteConfig(dst, cfg); err != nil {
		return err
	}
	return (&checkpoint{dir: dst, st: st}).commit() // the state last: until it is written, dst holds no run
}

// jointEnd returns a copy of st, the state of a run past its joint phase, as it stood
// when the joint phase ended: the finalisation's and the evaluation's history rows,
// seconds, checkpoints, files and measurements dropped. The identity is left empty
// (the new run's commit records its own config's).
func jointEnd(st *runState) (*runState, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, fmt.Errorf("pipeline: state: %w", err)
	}
	var c runState
	if err := gob.NewDecoder(&buf).Decode(&c); err != nil {
		return nil, fmt.Errorf("pipeline: state: %w", err)
	}
	c.Phase, c.Identity = PhaseFinal, ""
	c.FinalEM, c.FinalGrad, c.TokensMerged, c.Refine = nil, nil, nil, nil
	c.History = c.History[:0]
	for _, rec := range st.History {
		if rec.Phase != PhaseFinal && rec.Phase != PhaseRefine && rec.Phase != PhaseEval {
			c.History = append(c.History, rec)
		}
	}
	delete(c.Seconds, PhaseFinal)
	delete(c.Seconds, PhaseRefine)
	delete(c.Seconds, PhaseEval)
	// Made: the joint phase's record and the pre-training's run, as the phases before
	// the finalisation left them.
	made := evaluate.Training{Joint: c.Made.Joint}
	for _, run := range c.Made.Runs {
		if run.Name == "pretrain" {
			made.Runs = append(made.Runs, run)
		}
	}
	c.Made = made
	// Files: the checkpoints the finalisation starts from (the joint phase's last) and
	// the warm-up's and the last healthy one, where the source still records them.
	if _, ok := c.Files[c.Checkpoint]; !ok || c.Checkpoint == "" {
		return nil, fmt.Errorf("pipeline: branch: the source's state records no joint checkpoint (%q)", c.Checkpoint)
	}
	for name := range c.Files {
		if name != c.Checkpoint && name != c.Warmup && name != c.Healthy {
			delete(c.Files, name)
		}
	}
	return &c, nil
}
