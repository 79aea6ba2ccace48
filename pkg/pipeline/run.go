package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/compute"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
)

// Files of a run directory.
const (
	ConfigFile  = "config.json"   // the run's Config
	StateFile   = "state.gob"     // phase, joint cursor, history: the commit record of every checkpoint
	HistoryFile = "history.jsonl" // one Record per line (derived from the state at each commit)
	WarmupFile  = "warmup.ckpt"   // VQ-VAE checkpoint of phase 1 in legacy run directories (now warmup-NNNNNN.ckpt)
	VQVAEFile   = "vqvae.ckpt"    // final VQ-VAE (compacted codebook; its store also holds /hmm)
	CHMMFile    = "chmm.model"    // final cloned HMM (chmm format)
	ReportFile  = "report.json"   // evaluation on the held-out episode
)

// Phases in order.
const (
	PhaseWarmup = "warmup"
	PhaseJoint  = "joint"
	PhaseFinal  = "final"
	PhaseRefine = "refine"
	PhaseEval   = "evaluate"
	PhaseDone   = "done"
)

// ErrStopped is returned when Config.StopAfterJoint ends a run early; running again resumes it.
var ErrStopped = errors.New("pipeline: run stopped early (Config.StopAfterJoint); run again to resume")

// Run trains, resumes or loads the run in dir with cfg and returns its evaluation:
//
//   - a new directory gets config.json and runs all phases;
//   - an interrupted run (context cancelled, process killed, Config.StopAfterJoint)
//     continues from its last checkpoint: the warm-up from its last saved step, the
//     joint phase from its last commit (every Config.Joint.CheckpointEvery iterations), the
//     finalisation from its last finished training or split round, or from its
//     training in progress, and the evaluation from its start;
//   - a finished run is loaded, not retrained.
//
// A directory whose config.json differs from cfg (StopAfterJoint aside) is refused.
// The graphs run on hmmgraph.NewBackend (GOMLX_BACKEND, else the go backend); the
// report records every backend the run used. Progress lines with ETA go to progress
// when it is not nil.
func Run(ctx context.Context, dir string, cfg Config, progressOut io.Writer) (*evaluate.Report, error) {
	return run(ctx, dir, cfg, progressOut, nil)
}

// run is Run with the hooks h (nil outside tests).
func run(ctx context.Context, dir string, cfg Config, progressOut io.Writer, h *hooks) (*evaluate.Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backend, label, err := hmmgraph.NewBackend()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		if _, err := os.Stat(filepath.Join(dir, ConfigFile)); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("pipeline: %s holds a run (phase %s) but no %s: restore it, or start a new run directory", dir, st.Phase, ConfigFile)
		}
	}
	if err := checkOrWriteConfig(dir, cfg); err != nil {
		return nil, err
	}
	if err := checkIdentity(dir, st); err != nil {
		return nil, err
	}
	if st.Phase == PhaseDone {
		res, err := LoadRun(dir)
		if err != nil {
			return nil, fmt.Errorf("%w\n(the run is marked finished but its files do not load; start a new run directory)", err)
		}
		if note := res.BackendNote(); note != "" && progressOut != nil {
			fmt.Fprintln(progressOut, note)
		}
		return res.Report, nil
	}
	if st.Phase == PhaseJoint {
		if st.JointIter > cfg.Joint.Iters {
			return nil, fmt.Errorf("pipeline: %s: the state is at joint iteration %d of %d", dir, st.JointIter, cfg.Joint.Iters)
		}
		if want := fmt.Sprintf("joint-%06d", st.JointIter); !strings.HasPrefix(st.Checkpoint, want) {
			return nil, fmt.Errorf("pipeline: %s: the state is at joint iteration %d but names checkpoint %q", dir, st.JointIter, st.Checkpoint)
		}
	}
	if st.legacy() {
		if err := adoptLegacy(dir, st, cfg); err != nil {
			return nil, err
		}
	}
	if progressOut != nil {
		fmt.Fprintf(progressOut, "run directory %s, backend %s\n", dir, label)
		if last := st.lastBackend(); last != "" && last != label {
			fmt.Fprintf(progressOut, "note: resuming on %s a run that last ran on %s; its phases' backends are recorded in the report (sums on another backend differ to rounding, so the result is not the one an uninterrupted run would give)\n", label, last)
		}
	}
	s := &session{ctx: ctx, cfg: cfg, out: progressOut, backend: backend, label: label, hooks: h}
	ck := &checkpoint{dir: dir, st: st}
	st.recordSession(label, chmm.KernelSet())
	if s.d, err = loadData(cfg); err != nil {
		return nil, err
	}
	return s.phases(ck)
}

// session is what the phases of one Run call read and none writes: the configuration,
// the data, where progress goes (nil: nowhere), the backend of the graphs and the test
// hooks.
type session struct {
	ctx     context.Context
	cfg     Config
	d       *data
	out     io.Writer
	backend compute.Backend
	label   string // the backend's label (hmmgraph.NewBackend)
	hooks   *hooks // nil outside tests
}

// phases runs the phases from the checkpoint's to the end. Each hands its result to
// the next: the joint model to the joint phase and on to the finalisation, the map to
// the evaluation; a phase that finds none (an earlier call made it) loads it from the
// checkpoint.
func (s *session) phases(ck *checkpoint) (*evaluate.Report, error) {
	var j *Joint
	var fin *finalMap
	var err error
	if ck.st.Phase == PhaseWarmup {
		ck.st.ranOn(PhaseWarmup, s.label)
		if j, err = warmup(s, ck); err != nil {
			return nil, err
		}
	}
	if ck.st.Phase == PhaseJoint {
		ck.st.ranOn(PhaseJoint, s.label)
		if j, err = trainJoint(s, ck, j); err != nil {
			return nil, err
		}
	}
	if ck.st.Phase == PhaseFinal {
		ck.st.ranOn(PhaseFinal, s.label)
		if fin, err = finalise(s, ck, j); err != nil {
			return nil, err
		}
	}
	if ck.st.Phase == PhaseRefine {
		if fin, err = refine(s, ck, fin); err != nil {
			return nil, err
		}
	}
	if ck.st.Phase == PhaseEval {
		ck.st.ranOn(PhaseEval, s.label)
		return evaluation(s, ck, fin)
	}
	return nil, fmt.Errorf("pipeline: %s: phase %q did not finish", ck.dir, ck.st.Phase)
}

// hooks are where tests and studies watch or steer a run; nil outside them.
type hooks struct {
	// afterJointStep runs after every joint step (iter, 1-based), before the step is
	// recorded and monitored: it may change the model (force a collapse) or the metrics.
	afterJointStep func(j *Joint, iter int, met *StepMetrics) error
	// saveAlways makes the finalisation save its training in progress before every
	// iteration instead of every finalSaveEvery.
	saveAlways bool
	// finalSaved runs after each such save, with the name of the file saved
	// (final-em-train-RR-IIIIII.gob, final-grad-train-RR-D-IIIIII.gob); an error stops
	// the run there, as an interruption would.
	finalSaved func(name string) error
	// patience, if positive, replaces SplitPatience in the EM finalisation;
	// splitMinSteps, if positive, SplitMinSteps.
	patience, splitMinSteps int
	// legacyEM begins an EM finalisation as one begun before the segmented E-step
	// (finalEMState.Segments 0, Pieces GOMAXPROCS).
	legacyEM bool
	// preStops begins an EM finalisation as one begun before finalEMState.Patience
	// (Patience 0), with the segmented E-step.
	preStops bool
	// noEarlyMiss begins an EM finalisation as one begun before finalEMState.EarlyMiss.
	noEarlyMiss bool
	// splitAll begins an EM finalisation as one begun before finalEMState.Selective:
	// every split splits every kept clone.
	splitAll bool
	// dropPairs begins an EM finalisation as one begun before finalEMState.FoldPairs:
	// copies under chmm.UsedShare are dropped even where together they hold it.
	dropPairs bool
	// missMargin, if positive, MissMargin.
	missMargin float64
	// emRound sees each EM finalisation round's trained map and its confusion matrix
	// before it is split.
	emRound func(round int, m *chmm.Model, conf [][]float64) error
	// refineAnyway makes the refinement read both maps' verdicts (the finalisation's
	// and the refined one) as resolved; refineDrop reads the refined map's as not.
	refineAnyway, refineDrop bool
	// refineSaved runs after each commit of the refinement (n counts them from 1 in
	// this Run call); an error stops the run there, as an interruption would.
	refineSaved func(n int) error
}
