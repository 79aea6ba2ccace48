package experiment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Symbolic is a symbolic experiment (paper Sec. 5.1, the original CSCG's setting): each
// place emits its class id as a token (Tokens), a cloned HMM learns the map from random
// walks, and Viterbi decodes a held-out walk that is scored against the true map.
// `gradcscg symbolic`, the symbolic suites, Figure 3 and the notebooks run it; the
// same settings give the same report everywhere. A zero field of the last group means
// the trainer's default.
type Symbolic struct {
	Env string `json:"env"` // built-in environment, or the custom layout's name
	// Layout is a custom environment in the gridworld layout format (the file's text);
	// empty for built-in environments.
	Layout    string `json:"layout,omitempty"`
	Trainer   string `json:"trainer"` // TrainerGradient or TrainerEM
	Seed      uint64 `json:"seed"`    // the seed streams of SymbolicTrainingWalks, SymbolicInit, SymbolicHeldOutWalk
	Episodes  int    `json:"episodes"`
	Steps     int    `json:"steps"`      // observations per training walk
	EvalSteps int    `json:"eval_steps"` // observations of the held-out walk
	// ClonesPerClass is the uniform clone budget; ClonesByClass overrides it for some
	// class ids (a hand-set per-observation budget, paper Sec. 5.3).
	ClonesPerClass int         `json:"clones_per_class"`
	ClonesByClass  map[int]int `json:"clones_by_class,omitempty"`
	Iters          int         `json:"iters"`    // maximum iterations (0: the trainer's default)
	Restarts       int         `json:"restarts"` // starts trained, the best training likelihood kept (0 or 1: one)
	// UntilFit makes Restarts a maximum: the first start whose map predicts its training
	// walks (at most FitBits bits per step) ends the search (Training.UntilFit).
	UntilFit bool `json:"until_fit,omitempty"`
	// Pseudocount is EM's pseudocount; ViterbiIters bounds EM's hard (Viterbi)
	// iterations after Baum–Welch (0: none). They use pseudocount 0 and leave exact
	// zeros, which a short held-out walk can hit.
	Pseudocount  float64 `json:"pseudocount"`
	ViterbiIters int     `json:"viterbi_iters"`

	// Init is the initial transitions: InitUniform ("" too) or InitRandom.
	Init string `json:"init,omitempty"`
	// LR is the gradient trainer's Adam rate (0: chmm.DefaultGradConfig's); Entropy its
	// transition-entropy weight η (paper Sec. 3.6; 0: none).
	LR      float64 `json:"lr,omitempty"`
	Entropy float64 `json:"entropy,omitempty"`
	// Tol is the gradient trainer's least gain in ℓ/T (nats per step) that counts as
	// progress within its patience (0: chmm.DefaultGradConfig's 1e-4; with Doublings,
	// SplitRoundStopTol once a training's splitting rounds are spent). Given, it holds
	// throughout.
	Tol float64 `json:"tol,omitempty"`
	// GrowRounds > 0 lets the budget size itself: after training, while the map cannot
	// predict its own training walks (more than FitBits bits per step) and some
	// tokens use every clone they have (chmm.Diagnosis.FullTokens), those tokens'
	// budgets are doubled and the map is trained again from its start, at most
	// GrowRounds times. The budget above is then the starting one. 0: a fixed budget.
	GrowRounds int `json:"grow_rounds,omitempty"`
	// Doublings > 0 sizes the budget by splitting instead (one start): training starts
	// from one clone per token; after each training the clones the training walks'
	// Viterbi paths do not use are dropped (chmm.KeepVisited) and every other is split in
	// two (chmm.SplitAll), and training goes on from there, until the map predicts its
	// training walks (FitBits; for EM, before or after ViterbiIters hard iterations run
	// on a copy), or Doublings times. EM's trainings run Iters soft iterations (0:
	// SplitRoundIters) in full, and the hard ones follow the last; the gradient trainer's
	// stop on a plateau as usual. The budget fields and GrowRounds are then unused.
	// DefaultSymbolic: DefaultSplitRounds.
	Doublings int `json:"doublings,omitempty"`
	// MaxStates bounds the states of a budget grown by splitting: the visited clones
	// are not split when that would pass it (0: MaxSplitStates, also the most).
	MaxStates int `json:"max_states,omitempty"`
	// FoldAlike > 0 folds, before each split of a budget grown by splitting, the kept
	// clones that behave alike (chmm.FoldAlike with this total-variation bound) into
	// one, so that only places still merged are split again. 0: none. DefaultSymbolic:
	// DefaultFoldAlike for the gradient trainer, 0 for EM.
	FoldAlike float64 `json:"fold_alike,omitempty"`
	// FoldCost > 0 folds alike clones compared fewer moves ahead
	// (chmm.FoldAlikeWithin): at the fewest refinements, from 1 up, whose fold gives
	// back at most this fraction of what the last split gained (the bits per step on
	// the training walks from the map it started from to the map trained after it),
	// else as FoldAlike alone. A gradient map's copies of one place are alike a few
	// moves ahead and often differ farther on. 0: FoldAlike alone. DefaultSymbolic:
	// DefaultFoldCost for the gradient trainer, 0 for EM.
	FoldCost float64 `json:"fold_cost,omitempty"`
	// ChunkAbove makes a gradient training read random chunks of walks of at least
	// chmm.ChunkMinSteps steps when one pass over them would cost more than this many
	// multiply-adds (chmm.GradConfig.ChunkIfCostly; 0: the whole walks at every
	// iteration). DefaultSymbolic: SplitChunkAbove for a budget grown by splitting,
	// chmm.DefaultChunkAbove for a fixed one (FixedBudget).
	ChunkAbove float64 `json:"chunk_above,omitempty"`

	// DropCost > 0 bounds what dropping the gradient map's rarely visited clones
	// before a split may cost: the clones under the largest share of their token's
	// visits in DropShares (chmm.UsedShare first) whose dropping raises the training
	// walks' bits per step by at most this fraction (and a bit per walk) are dropped.
	// 0: those under chmm.UsedShare, whatever it costs. DefaultSymbolic:
	// DefaultDropCost for the gradient trainer.
	DropCost float64 `json:"drop_cost,omitempty"`
	// DropFloor is a rise in bits per step that a drop may always cost, whatever
	// DropCost allows (where the map costs little, a fraction of it is too strict to
	// drop anything). 0: none (the default).
	DropFloor float64 `json:"drop_floor,omitempty"`
	// SplitShare > 0 splits, of the clones kept before a split, only those with at least
	// this share of their token's visits along the training walks' Viterbi paths (a
	// clone that holds two places holds more of its token's visits than one that holds
	// a part of one); the others are kept as they are. 0: split every kept clone (the
	// default).
	SplitShare float64 `json:"split_share,omitempty"`
	// SplitSurprised makes a gradient map that fits its training walks but is merged
	// (surprised beyond localising, chmm.ExactSurprises) split, of its kept clones, only
	// those its Viterbi paths hold one step before a surprise (chmm.SurprisedStates,
	// measured after the fold), where every kept clone is split otherwise: the clones
	// that still stand for several places, not the whole map again. false: every kept
	// clone (the default). Not with SplitShare.
	SplitSurprised bool `json:"split_surprised,omitempty"`

	// Checkpoint, if not empty, is a file where a budget grown by splitting is saved
	// after every split, and within a round's training every five minutes
	// (trainingSaveEvery), and from which a run of the same experiment resumes: an
	// interrupted run goes on from its last save, to the same map. The caller removes
	// it once the results are saved. Not part of the experiment.
	Checkpoint string `json:"-"`
}

// SplitRoundIters is the soft EM iterations per training when the budget grows by
// splitting (Symbolic.Doublings): every training runs them all, since a model just
// split sits where EM's first iterations barely move.
const SplitRoundIters = 300

// SplitRoundStopTol is the gradient trainer's least gain in ℓ/T (nats per step) that
// keeps a training going once its own plateau splits are spent, when the budget grows
// by splitting and Symbolic.Tol is 0 (chmm.GradConfig.StopTol). The plateau splits
// within a training still come at chmm.DefaultGradConfig's Tol.
const SplitRoundStopTol = 1e-5

// DefaultFoldAlike is DefaultSymbolic's FoldAlike for the gradient trainer: the
// total-variation bound under which two clones of a token count as alike. After a
// split both copies of a clone that needed none keep their share of its visits, and
// nothing in the likelihood draws them apart; folding them before the next split keeps
// it from doubling them again. EM's maps are not folded (0): EM lets one copy of a
// place take it over.
const DefaultFoldAlike = 0.05

// DefaultFoldCost is DefaultSymbolic's FoldCost for the gradient trainer: a fold
// compared fewer moves ahead may give back at most half of what the last split gained.
// EM's maps are not folded (0).
const DefaultFoldCost = 0.5

// SplitChunkAbove is DefaultSymbolic's ChunkAbove, a tenth of chmm.DefaultChunkAbove:
// the decision is taken once, on the model a training starts from, and a budget grown
// by splitting starts each round small and grows it within the training (its plateau
// splits, chmm.GradConfig.SplitRounds, each adding clones up to twice a token's), so
// a pass at the training's end can cost an order of magnitude more than at its start. A
// fixed budget (FixedBudget) starts at its size, and keeps chmm.DefaultChunkAbove.
const SplitChunkAbove = chmm.DefaultChunkAbove / 10

// MaxSplitStates bounds a budget grown by splitting (Symbolic.MaxStates), and with it
// the training memory, which grows with the states (chmm.TrainBytes).
const MaxSplitStates = 2048

// DefaultSplitRounds is DefaultSymbolic's Doublings: enough splits for 2^16 places per
// token, so MaxSplitStates or the fit is what stops.
const DefaultSplitRounds = 16

// DefaultBudgetDoublings is FixedBudget's GrowRounds: a budget that binds may double
// three times, to 8× the starting one. A map that fits its training walks, or whose
// tokens leave clones unused, is trained once, as with a fixed budget.
const DefaultBudgetDoublings = 3

// DefaultSymbolic is the experiment of trainer on e at its reference size
// (gridworld.Defaults: walks, clone budget, pseudocount, else chmm.DefaultEMConfig's),
// a held-out walk as long as a training walk, the trainer's iterations, seed 1. Both
// trainers grow the budget by splitting from one clone per token (DefaultSplitRounds,
// one start); FixedBudget gives them the reference budget instead. A custom
// environment keeps its layout.
func DefaultSymbolic(e *gridworld.Env, trainer string) (Symbolic, error) {
	if trainer != TrainerGradient && trainer != TrainerEM {
		return Symbolic{}, &FieldError{Field: "Trainer", Value: fmt.Sprintf("%q", trainer), Need: fmt.Sprintf("want %q or %q", TrainerGradient, TrainerEM)}
	}
	d := e.Defaults()
	layout := ""
	if b, err := gridworld.Named(e.Name); err != nil || b.Layout() != e.Layout() {
		layout = e.Layout()
	}
	pc := d.Pseudocount
	if pc == 0 {
		pc = chmm.DefaultEMConfig().Pseudocount
	}
	s := Symbolic{Env: e.Name, Layout: layout, Trainer: trainer, Seed: 1,
		Episodes: d.Episodes, Steps: d.Steps, EvalSteps: d.Steps,
		ClonesPerClass: d.ClonesPerClass, ClonesByClass: d.ClonesByClass,
		Restarts: 1, Pseudocount: pc, ViterbiIters: chmm.DefaultEMConfig().ViterbiIters, Doublings: DefaultSplitRounds,
		ChunkAbove: SplitChunkAbove}
	if trainer == TrainerGradient {
		s.FoldAlike, s.DropCost, s.FoldCost = DefaultFoldAlike, DefaultDropCost, DefaultFoldCost
	}
	return s, nil
}

// DefaultEMRestarts is EM's starts with a fixed budget (FixedBudget): the best
// training likelihood of 3 is kept.
const DefaultEMRestarts = 3

// DefaultGradientRestarts is the gradient trainer's starts with a fixed budget
// (FixedBudget): at most 5, stopping at the first whose map fits (UntilFit).
const DefaultGradientRestarts = 5

// FixedBudget returns s training its budget fields (ClonesPerClass, ClonesByClass)
// instead of growing one by splitting, with restarts starts (0: DefaultEMRestarts for
// EM, which keeps the best training likelihood; DefaultGradientRestarts for the
// gradient trainer, which stops at the first that fits), and a budget that may double
// (DefaultBudgetDoublings) where it binds, and chmm.DefaultChunkAbove for
// SplitChunkAbove. s is returned unchanged unless it grows by splitting.
func (s Symbolic) FixedBudget(restarts int) Symbolic {
	if s.Doublings == 0 {
		return s
	}
	if restarts <= 0 {
		restarts = DefaultEMRestarts
		if s.Trainer == TrainerGradient {
			restarts = DefaultGradientRestarts
		}
	}
	s.Doublings, s.Restarts, s.GrowRounds, s.FoldCost = 0, restarts, DefaultBudgetDoublings, 0
	s.UntilFit = s.Trainer == TrainerGradient
	if s.ChunkAbove == SplitChunkAbove {
		s.ChunkAbove = chmm.DefaultChunkAbove
	}
	return s
}

// Symbolic returns the symbolic experiment s at size z: s itself at full size;
// otherwise one walk of at most 3,000 steps (held out as long), one start, no Viterbi
// iterations, at most 10 clones per class and 200 gradient or 20 EM iterations, in
// seconds: a map may then not be recovered.
func (z Size) Symbolic(s Symbolic) Symbolic {
	if z == SizeFull {
		return s
	}
	s.Episodes, s.Steps, s.EvalSteps = 1, min(s.Steps, 3000), min(s.Steps, 3000)
	s.Restarts, s.ViterbiIters, s.GrowRounds, s.Doublings, s.FoldCost = 1, 0, 0, 0, 0
	s.ClonesPerClass = min(s.ClonesPerClass, 10)
	if len(s.ClonesByClass) > 0 {
		by := make(map[int]int, len(s.ClonesByClass))
		for k, n := range s.ClonesByClass {
			by[k] = min(n, 10)
		}
		s.ClonesByClass = by
	}
	s.Iters = 200
	if s.Trainer == TrainerEM {
		s.Iters = 20
	}
	return s
}

// Environment returns the experiment's grid world: the built-in one, or Layout parsed.
func (s Symbolic) Environment() (*gridworld.Env, error) {
	if s.Layout == "" {
		return gridworld.Named(s.Env)
	}
	e, err := gridworld.ParseLayout(s.Env, strings.NewReader(s.Layout))
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	return e, nil
}

// Clones returns the clone budget of each token of tokens.
func (s Symbolic) Clones(tokens Tokens) []int {
	clones := make([]int, len(tokens.Classes))
	for k, c := range tokens.Classes {
		clones[k] = s.ClonesPerClass
		if n, ok := s.ClonesByClass[c]; ok {
			clones[k] = n
		}
	}
	return clones
}

// Validate reports every invalid field, by its JSON name.
func (s Symbolic) Validate() error {
	var bad []string
	add := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	e, err := s.Environment()
	if err != nil {
		bad = append(bad, fmt.Sprintf("env: %v", err))
	}
	add(s.Trainer == TrainerGradient || s.Trainer == TrainerEM, "trainer=%q (want %q or %q)", s.Trainer, TrainerGradient, TrainerEM)
	add(s.Episodes >= 1, "episodes=%d (need ≥ 1)", s.Episodes)
	add(s.Steps >= 2, "steps=%d (need ≥ 2)", s.Steps)
	add(s.EvalSteps >= 2, "eval_steps=%d (need ≥ 2)", s.EvalSteps)
	add(s.ClonesPerClass >= 1, "clones_per_class=%d (need ≥ 1)", s.ClonesPerClass)
	add(s.Iters >= 0, "iters=%d (need ≥ 0)", s.Iters)
	add(s.Restarts >= 0, "restarts=%d (need ≥ 0)", s.Restarts)
	add(s.ViterbiIters >= 0, "viterbi_iters=%d (need ≥ 0)", s.ViterbiIters)
	add(s.Pseudocount >= 0 && !math.IsInf(s.Pseudocount, 0), "pseudocount=%g (need ≥ 0)", s.Pseudocount)
	add(s.Init == "" || s.Init == InitUniform || s.Init == InitRandom, "init=%q (want %q or %q)", s.Init, InitUniform, InitRandom)
	add(s.LR >= 0 && !math.IsInf(s.LR, 0), "lr=%g (need ≥ 0)", s.LR)
	add(s.Entropy >= 0 && !math.IsInf(s.Entropy, 0), "entropy=%g (need ≥ 0)", s.Entropy)
	add(s.Tol >= 0 && s.Tol <= 1, "tol=%g (need 0 ≤ tol ≤ 1)", s.Tol)
	add(s.GrowRounds >= 0 && s.GrowRounds <= 10, "grow_rounds=%d (need 0..10)", s.GrowRounds)
	add(s.Doublings >= 0 && s.Doublings <= 16, "doublings=%d (need 0..16)", s.Doublings)
	add(s.MaxStates >= 0 && s.MaxStates <= MaxSplitStates, "max_states=%d (need 0..%d)", s.MaxStates, MaxSplitStates)
	add(s.ChunkAbove >= 0 && !math.IsInf(s.ChunkAbove, 0), "chunk_above=%g (need a finite number ≥ 0)", s.ChunkAbove)
	add(s.FoldAlike >= 0 && s.FoldAlike < 1, "fold_alike=%g (need 0 ≤ fold_alike < 1)", s.FoldAlike)
	add(s.FoldCost >= 0 && s.FoldCost <= 1, "fold_cost=%g (need 0 ≤ fold_cost ≤ 1)", s.FoldCost)
	add(s.FoldCost == 0 || (s.Doublings > 0 && s.FoldAlike > 0),
		"fold_cost=%g: only a budget grown by splitting, with fold_alike > 0, folds alike clones", s.FoldCost)
	add(s.DropCost >= 0 && s.DropCost <= 10, "drop_cost=%g (need 0 ≤ drop_cost ≤ 10)", s.DropCost)
	add(s.DropFloor >= 0 && s.DropFloor <= 1, "drop_floor=%g (need 0 ≤ drop_floor ≤ 1)", s.DropFloor)
	add(s.DropFloor == 0 || (s.Trainer == TrainerGradient && s.Doublings > 0 && s.DropCost > 0),
		"drop_floor=%g: only the gradient trainer's budget grown by splitting, with drop_cost > 0, drops by cost", s.DropFloor)
	add(s.SplitShare >= 0 && s.SplitShare < 1, "split_share=%g (need 0 ≤ split_share < 1)", s.SplitShare)
	add(s.SplitShare == 0 || s.Doublings > 0, "split_share=%g: only a budget grown by splitting (doublings > 0) splits", s.SplitShare)
	add(!s.SplitSurprised || (s.Trainer == TrainerGradient && s.Doublings > 0),
		"split_surprised: only the gradient trainer's budget grown by splitting (doublings > 0) splits merged maps")
	add(!s.SplitSurprised || s.SplitShare == 0, "split_surprised and split_share=%g: choose one way to pick the clones split", s.SplitShare)
	add(s.Checkpoint == "" || s.Doublings > 0, "checkpoint %q: only a budget grown by splitting (doublings > 0) has checkpoints", s.Checkpoint)
	if s.Doublings > 0 {
		add(s.Restarts <= 1, "doublings=%d trains one start (restarts=%d)", s.Doublings, s.Restarts)
		add(s.GrowRounds == 0, "doublings=%d and grow_rounds=%d: choose one way to size the budget", s.Doublings, s.GrowRounds)
	}
	classes := map[int]bool{}
	if e != nil {
		for _, k := range e.Class {
			classes[k] = true
		}
	}
	keys := make([]int, 0, len(s.ClonesByClass))
	for k := range s.ClonesByClass {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(s.ClonesByClass[k] >= 1, "clones_by_class[%d]=%d (need ≥ 1)", k, s.ClonesByClass[k])
		add(e == nil || classes[k], "clones_by_class[%d]: the environment shows no class %d", k, k)
	}
	if len(bad) > 0 {
		return fmt.Errorf("experiment: invalid symbolic experiment: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Training is how s trains (TrainSymbolic).
func (s Symbolic) Training() Training {
	return Training{Trainer: s.Trainer, Seed: s.Seed, Iters: s.Iters, LR: s.LR, Entropy: s.Entropy, Tol: s.Tol,
		Pseudocount: s.Pseudocount, ViterbiIters: s.ViterbiIters, Restarts: s.Restarts, UntilFit: s.UntilFit, Init: s.Init,
		ChunkAbove: s.ChunkAbove}
}

// SymbolicRun is a symbolic experiment's map with its held-out walk decoded and scored.
type SymbolicRun struct {
	Config  Symbolic
	Env     *gridworld.Env
	Classes []int // token k shows class Classes[k]
	Model   *chmm.Model
	History *chmm.History // of the start kept; nil for a map not trained here
	Report  *evaluate.Report
	HeldOut gridworld.Episode // the held-out walk (places, classes, actions)
	Tokens  []int             // its tokens
	States  []int             // its Viterbi path s*_1..s*_T
}

// RunSymbolic trains s's map (TrainSymbolic from SymbolicInit on SymbolicTrainingWalks)
// and scores it on the held-out walk: evaluate.Evaluate of its Viterbi path, the
// label-free verdict (DiagnoseSymbolic) and the training record (SymbolicTraining).
// With m not nil, m is scored instead of training one (a saved map). Progress goes
// to progressOut when it is not nil. When the held-out walk is impossible under the
// trained map, the error wraps chmm.ErrZeroProbability and the run is returned too,
// with its Model (and History), unscored.
func RunSymbolic(s Symbolic, m *chmm.Model, progressOut io.Writer) (*SymbolicRun, error) {
	return runSymbolic(s, m, progressOut, nil)
}

// runSymbolic is RunSymbolic with the hooks of a budget grown by split rounds (nil
// outside tests).
func runSymbolic(s Symbolic, m *chmm.Model, progressOut io.Writer, hooks *splitHooks) (*SymbolicRun, error) {
	t0 := time.Now()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	env, err := s.Environment()
	if err != nil {
		return nil, err
	}
	tokens := NewTokens(env)
	run := &SymbolicRun{Config: s, Env: env, Classes: tokens.Classes}
	var train []chmm.Sequence
	for _, ep := range SymbolicTrainingWalks(env, s.Seed, s.Episodes, s.Steps) {
		train = append(train, tokens.Sequence(ep))
	}
	run.HeldOut = SymbolicHeldOutWalk(env, s.Seed, s.EvalSteps)
	test := tokens.Sequence(run.HeldOut)
	run.Tokens = test.Obs

	var record *evaluate.Training
	tTrain := time.Now()
	if m != nil {
		if err := m.CheckCompatible(len(tokens.Classes), env.NumActions()); err != nil {
			return nil, fmt.Errorf("the map does not fit environment %s: %w", env.Name, err)
		}
		run.Model, record = m, SymbolicTraining(m, train, 0, nil)
	} else if s.Doublings > 0 {
		var before float64
		if run.Model, run.History, record, before, err = growBySplitting(s, env, len(tokens.Classes), train, progressOut, hooks); err != nil {
			return nil, err
		}
		shift := -time.Duration(before * float64(time.Second)) // the seconds count those before a resume
		t0, tTrain = t0.Add(shift), tTrain.Add(shift)
	} else {
		clones := s.Clones(tokens)
		t := s.Training()
		for round := 0; ; round++ {
			m := SymbolicInit(clones, env.NumActions(), s.Seed, s.Init)
			if progressOut != nil {
				fmt.Fprintf(progressOut, "%s: %d places, %d edges, %d tokens, %d states; %d×%d training steps; trainer %s\n",
					env.Name, env.NumPlaces(), len(env.Edges()), m.K(), m.N(), s.Episodes, s.Steps, s.Trainer)
			}
			var starts int
			if run.Model, run.History, starts, err = TrainSymbolic(m, train, t, progressOut); err != nil {
				return nil, err
			}
			record = SymbolicTraining(run.Model, train, starts, run.History)
			record.GrowRounds = round
			if round == s.GrowRounds {
				break
			}
			grow, d, err := growBudget(run.Model, train)
			if err != nil {
				return nil, err
			}
			if len(grow) == 0 {
				break
			}
			for _, k := range grow {
				clones[k] *= 2
			}
			if progressOut != nil {
				fmt.Fprintf(progressOut, "grow round %d: training %.4f bits/step and token(s) %v use every clone: their budgets doubled to %v\n",
					round+1, d.TrainBits, grow, clones)
			}
		}
	}
	trainSec := time.Since(tTrain).Seconds()

	tEval := time.Now()
	if run.States, _, err = chmm.Viterbi(run.Model, test); err != nil {
		if errors.Is(err, chmm.ErrZeroProbability) { // the map is kept: the caller may save it
			return run, fmt.Errorf("the map calls a step of its held-out walk impossible (%w): it has exact zeros "+
				"(EM's Viterbi iterations leave them) and has not seen enough of the world; try more or longer "+
				"training walks, or the gradient trainer", err)
		}
		return nil, fmt.Errorf("decoding the held-out walk: %w", err)
	}
	rep, err := evaluate.Evaluate(evaluate.Input{Env: env, Places: run.HeldOut.Places, States: run.States, Tokens: test.Obs,
		Trans: run.Model.Transitions(), NumStates: run.Model.N(), NumTokens: run.Model.K()}, evaluate.DefaultOptions())
	if err != nil {
		return nil, err
	}
	// The label-free verdict: the map on its training walks and on the held-out walk's
	// tokens and actions (no places).
	if rep.Diagnosis, err = DiagnoseSymbolic(run.Model, train, test); err != nil {
		return nil, err
	}
	rep.Env, rep.Dataset, rep.Trainer, rep.Seed = env.Name, "symbolic", s.Trainer, s.Seed
	// What ran it: the trainers' sums depend on the worker count, and the seconds on both.
	rep.Backend = fmt.Sprintf("HMM kernels %s; %d workers", chmm.Kernels(), runtime.GOMAXPROCS(0))
	rep.Training = record
	rep.Seconds = map[string]float64{"train": trainSec, "eval": time.Since(tEval).Seconds(), "total": time.Since(t0).Seconds()}
	run.Report = rep
	return run, nil
}

// DefaultDropCost is DefaultSymbolic's DropCost for the gradient trainer: dropping
// rarely visited clones before a split may raise the training walks' bits per step by
// at most 5% (and a bit per walk). A token at many places gives each of its clones a
// small share of its visits, so a fixed share (chmm.UsedShare) alone would drop clones
// the map needs.
const DefaultDropCost = 0.05

// growBudget returns the tokens of m whose budgets bind (Symbolic.GrowRounds): none when
// m predicts its training walks (at most FitBits bits per step, the starts' bar, not
// the verdict's chmm.ExactBits), else the tokens that use every clone.
func growBudget(m *chmm.Model, train []chmm.Sequence) ([]int, *chmm.Diagnosis, error) {
	d, err := chmm.Diagnose(m, train, nil, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sizing the budget: %w", err)
	}
	if d.TrainBits <= FitBits {
		return nil, d, nil
	}
	return d.FullTokens, d, nil
}
