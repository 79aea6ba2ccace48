package experiment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
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
	// DoublingStopTol once a training's splitting rounds are spent). Given, it holds
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
	// DoublingIters) in full, and the hard ones follow the last; the gradient trainer's
	// stop on a plateau as usual. The budget fields and GrowRounds are then unused.
	// DefaultSymbolic: DefaultDoublings.
	Doublings int `json:"doublings,omitempty"`
	// MaxStates bounds the states of a budget grown by splitting: the visited clones
	// are not split when that would pass it (0: MaxDoublingStates, also the most).
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
	// iteration). DefaultSymbolic: chmm.DefaultChunkAbove.
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
	// clone (the default; on tiled seed 3 and cscg_empty seed 6 the targeted splits
	// were folded back and the maps stayed merged, README "Bigger worlds"). Not with
	// SplitShare.
	SplitSurprised bool `json:"split_surprised,omitempty"`

	// Checkpoint, if not empty, is a file where a budget grown by splitting is saved
	// after every split, and within a round's training every five minutes
	// (trainingSaveEvery), and from which a run of the same experiment resumes: an
	// interrupted run goes on from its last save, to the same map. The caller removes
	// it once the results are saved. Not part of the experiment.
	Checkpoint string `json:"-"`
}

// DoublingIters is the soft EM iterations per training when the budget grows by
// splitting (Symbolic.Doublings): every training runs them all, since a model just
// split sits where EM's first iterations barely move.
const DoublingIters = 300

// DoublingStopTol is the gradient trainer's least gain in ℓ/T (nats per step) that
// keeps a training going once its splitting rounds are spent, when the budget grows
// by splitting and Symbolic.Tol is 0 (chmm.GradConfig.StopTol). At the small losses
// of a big map, 1e-4 ended each training while it still gained: tiled stalled near
// 0.01 bits per step with it, round after round (with this, at 0.005 and places still
// merged: README, "Bigger worlds"). The splits within a training still come at 1e-4's
// plateaus: with 1e-5 there, two_rooms seed 5 split less, fitted later and grew 321
// states instead of 93.
const DoublingStopTol = 1e-5

// DefaultFoldAlike is DefaultSymbolic's FoldAlike for the gradient trainer. After a
// split both copies of a clone that needed none keep their share of its visits, and
// nothing in the likelihood draws them apart, so the map holds such places twice and
// the next split doubles them again (tiled, after six splits: 311 clones kept, in 213
// classes of alike clones). The bound hardly matters there: 0.02 to 0.2 gave 215 to
// 210 classes. EM's maps are not folded: EM lets one copy of a place take it over.
const DefaultFoldAlike = 0.05

// DefaultFoldCost is DefaultSymbolic's FoldCost for the gradient trainer. Folded only
// where alike however far ahead, tiled seed 1's map held its places several times
// over and was split on to 1,336 states, still merged; with 0.5 it was recovered
// with 267. A fold allowed to double the bits per step instead undid each split
// (tiled seed 1: 25, 50, 25 clones).
const DefaultFoldCost = 0.5

// MaxDoublingStates bounds a budget grown by splitting (Symbolic.MaxStates): about
// 6 GB of training memory on 150,000 steps.
const MaxDoublingStates = 2048

// DefaultDoublings is DefaultSymbolic's Doublings: enough splits for 2^16 places per
// token, so MaxDoublingStates or the fit is what stops.
const DefaultDoublings = 16

// DefaultGrowRounds is FixedBudget's GrowRounds: a budget that binds may double
// three times, to 8× the reference one (a custom room's 10 clones per class to 80).
// A map that fits its training walks, or whose tokens leave clones unused, is
// trained once, as with a fixed budget.
const DefaultGrowRounds = 3

// DefaultSymbolic is the experiment of trainer on e at its reference size
// (gridworld.Defaults: walks, clone budget, pseudocount, else chmm.DefaultEMConfig's),
// a held-out walk as long as a training walk, the trainer's iterations, seed 1. Both
// trainers grow the budget by splitting from one clone per token (DefaultDoublings,
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
		Restarts: 1, Pseudocount: pc, ViterbiIters: chmm.DefaultEMConfig().ViterbiIters, Doublings: DefaultDoublings,
		ChunkAbove: chmm.DefaultChunkAbove}
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
// (DefaultGrowRounds) where it binds. s is returned unchanged unless it grows by
// splitting.
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
	s.Doublings, s.Restarts, s.GrowRounds, s.FoldCost = 0, restarts, DefaultGrowRounds, 0
	s.UntilFit = s.Trainer == TrainerGradient
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
	add(s.MaxStates >= 0 && s.MaxStates <= MaxDoublingStates, "max_states=%d (need 0..%d)", s.MaxStates, MaxDoublingStates)
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
		if run.Model, run.History, record, before, err = trainByDoubling(s, env, len(tokens.Classes), train, progressOut); err != nil {
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

// trainByDoubling trains s's map with a budget that grows by splitting
// (Symbolic.Doublings) and returns it, the history of every training and of the hard
// phase kept, one after another on one clock, the record (of the last training, every
// round's in Rounds) and the seconds trained before a resume from s.Checkpoint (0 if
// none).
func trainByDoubling(s Symbolic, env *gridworld.Env, numTokens int, train []chmm.Sequence, progressOut io.Writer) (*chmm.Model, *chmm.History, *evaluate.Training, float64, error) {
	ones := make([]int, numTokens)
	for k := range ones {
		ones[k] = 1
	}
	m := SymbolicInit(ones, env.NumActions(), s.Seed, s.Init)
	src := rand.NewPCG(s.Seed, 99)
	rng := rand.New(src)
	foldedAll, first := 0, 0
	splitFrom := 0.0 // the bits per step of the map the last split started from (FoldCost)
	var h *chmm.History
	var rounds []evaluate.BudgetRound
	all, t0 := &chmm.History{}, time.Now()
	var resume *chmm.GradState // first's training in progress (gradient)
	var resumeEM *chmm.EMState // (EM)
	if s.Checkpoint != "" {
		c, err := loadCheckpoint(s.Checkpoint, s)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		if c != nil {
			if err := src.UnmarshalBinary(c.SplitRNG); err != nil {
				return nil, nil, nil, 0, fmt.Errorf("checkpoint %s: %w", s.Checkpoint, err)
			}
			m, all, foldedAll, first, splitFrom, rounds = c.Model, c.History, c.Folded, c.Round, c.SplitFrom, c.Rounds
			elapsed, within := c.Elapsed, ""
			if resume, resumeEM = c.Training, c.EMTraining; resume != nil { // the experiment's config says which
				elapsed += resume.Seconds
				within = fmt.Sprintf(" (its training at iteration %d)", resume.Iter)
			} else if resumeEM != nil {
				elapsed += resumeEM.Seconds
				within = fmt.Sprintf(" (its training at iteration %d)", resumeEM.Iter)
			}
			t0 = t0.Add(-time.Duration(elapsed * float64(time.Second)))
			if progressOut != nil {
				fmt.Fprintf(progressOut, "resuming from %s: budget round %d%s, %d states, %.0f s trained before\n",
					s.Checkpoint, c.Round, within, m.N(), elapsed)
			}
		}
	}
	before := time.Since(t0).Seconds()
	t := s.doublingTraining()
	for round := first; ; round++ {
		at := time.Since(t0).Seconds()
		tr := t
		if s.Checkpoint != "" {
			// Save the training every trainingSaveEvery: a checkpoint of this round
			// (its start, m, and everything before it) with the training's state.
			if resume != nil {
				at -= resume.Seconds
			} else if resumeEM != nil {
				at -= resumeEM.Seconds
			}
			start, atRound, round := m.Clone(), at, round
			save := func(iter int, set func(*doublingCheckpoint)) error {
				c, err := newCheckpoint(s, round, start, all, foldedAll, atRound, src, splitFrom, rounds)
				if err == nil {
					set(c)
					err = saveCheckpoint(s.Checkpoint, c)
				}
				if err == nil && trainingHook != nil {
					err = trainingHook(round, iter)
				}
				if err != nil {
					return fmt.Errorf("checkpoint in round %d, at iteration %d: %w", round, iter, err)
				}
				return nil
			}
			tr.SaveEvery = trainingSaveEvery
			if s.Trainer == TrainerGradient {
				tr.Resume = resume
				tr.Save = func(g *chmm.GradState) error { return save(g.Iter, func(c *doublingCheckpoint) { c.Training = g }) }
			} else {
				tr.ResumeEM = resumeEM
				tr.SaveEM = func(e *chmm.EMState) error { return save(e.Iter, func(c *doublingCheckpoint) { c.EMTraining = e }) }
			}
		}
		resume, resumeEM = nil, nil
		if progressOut != nil {
			chunks := ""
			if s.Trainer == TrainerGradient && (chmm.GradConfig{}).ChunkIfCostly(m, train, t.ChunkAbove).ChunkLen > 0 {
				chunks = fmt.Sprintf(", read in random chunks (%d × %d steps per iteration)", chmm.ChunkBatch, chmm.ChunkLen)
			}
			fmt.Fprintf(progressOut, "%s: %d places, %d edges, %d tokens, %d states; %d×%d training steps%s; trainer %s, budget round %d\n",
				env.Name, env.NumPlaces(), len(env.Edges()), m.K(), m.N(), s.Episodes, s.Steps, chunks, s.Trainer, round)
		}
		var err error
		if m, h, _, err = TrainSymbolic(m, train, tr, progressOut); err != nil {
			return nil, nil, nil, 0, err
		}
		appendHistory(all, h, at)
		d, err := chmm.Diagnose(m, train, nil, 0)
		if err != nil {
			return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
		}
		rd := evaluate.BudgetRound{Iterations: len(h.LogLik), Stop: h.Stop, ClonesAdded: h.ClonesAdded(),
			Clones: d.Clones, Used: d.UsedClones, TrainBits: d.TrainBits}
		// The clones the training walks' Viterbi paths visit are kept and split: by
		// EM, any visit; by the gradient trainer, whose softmax maps lend a few visits
		// to many clones, at least chmm.UsedShare of their token's (the clones
		// Diagnose counts as used; on tiled it kept 612 clones of which 291 were used).
		minShare := 0.0
		if s.Trainer == TrainerGradient {
			minShare = chmm.UsedShare
		}
		var keep []bool
		var kept int
		var refused string // what dropping more would have cost
		if s.Trainer == TrainerGradient && s.DropCost > 0 {
			if keep, kept, minShare, refused, err = keepCheaply(m, train, d, s.DropCost, s.DropFloor); err != nil {
				return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
			}
		} else {
			keep, kept = chmm.KeepVisited(m, d.Visits, minShare)
		}
		// Alike clones are folded on a copy: the map returned, if this is the last
		// round, is the trained one.
		folded, nFolded, depth := m, 0, 0
		var foldTries string // what folding fewer moves ahead would have cost
		if s.FoldCost > 0 && splitFrom > d.TrainBits {
			rise := s.FoldCost * (splitFrom - d.TrainBits)
			if folded, nFolded, depth, foldTries, err = foldCheaply(m, train, d, keep, s.FoldAlike, rise); err != nil {
				return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
			}
			kept -= nFolded
		} else if s.FoldAlike > 0 {
			folded = m.Clone()
			nFolded = chmm.FoldAlike(folded, keep, d.Visits, s.FoldAlike)
			kept -= nFolded
		}
		// EM's hard phase, run on a copy after every training: the last training's
		// hard phase, and a probe: a right map of a few hundred states keeps more than
		// FitBits from the pseudocount, and its hard phase tells it.
		var hm *chmm.Model // the copy after its hard phase (hh), run at seconds hAt
		var hh *chmm.History
		hAt, hardBits := 0.0, math.NaN()
		if s.Trainer == TrainerEM && s.ViterbiIters > 0 {
			hAt = time.Since(t0).Seconds()
			th := t
			th.Iters, th.ViterbiIters = -1, s.ViterbiIters
			if hm, hh, _, err = TrainSymbolic(m.Clone(), train, th, progressOut); err != nil {
				return nil, nil, nil, 0, err
			}
			if d.TrainBits > FitBits {
				hd, err := chmm.Diagnose(hm, train, nil, 0)
				if err != nil {
					return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
				}
				hardBits = hd.TrainBits
			}
		}
		why, merged := s.splitStop(d, hardBits, round, kept)
		if why != "" {
			if progressOut != nil {
				fmt.Fprintf(progressOut, "budget round %d: %.4f bits/step on the training walks, %d of %d clones used: %s\n",
					round, d.TrainBits, d.UsedClones, d.Clones, why)
			}
			if hm != nil { // the map is the copy after its hard phase
				m = hm
				appendHistory(all, hh, hAt)
			}
			rd.Outcome = why
			rec := SymbolicTraining(m, train, 1, h)
			rec.Doublings, rec.Folded, rec.Rounds = round, foldedAll, append(rounds, rd)
			if hh != nil {
				rec.Runs = append(rec.Runs, evaluate.TrainerRun{Name: "hard", Iterations: len(hh.LogLik), Stop: hh.Stop})
			}
			return m, all, rec, before, nil
		}
		foldedAll += nFolded
		rd.Kept, rd.Folded, rd.FoldDepth, rd.Outcome = kept, nFolded, depth, "split"
		rounds = append(rounds, rd)
		if m, _, err = chmm.Prune(folded, keep); err != nil {
			return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
		}
		if s.FoldCost > 0 {
			splitFrom = 0
			if ll, err := chmm.LogLikelihood(m, train); err == nil {
				splitFrom = -ll / float64(d.Steps) / math.Ln2
			} else if !errors.Is(err, chmm.ErrZeroProbability) {
				return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
			}
		}
		var split []bool // nil: every kept clone
		splitWhat := ""
		if s.SplitShare > 0 {
			var nsplit int
			if split, nsplit, err = splitMask(m, train, s.SplitShare); err != nil {
				return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
			}
			splitWhat = fmt.Sprintf(", the %d of them with %g%% of their token's visits or more", nsplit, 100*s.SplitShare)
		}
		if merged && s.SplitSurprised {
			surprised, n, err := chmm.SurprisedStates(m, train, 0)
			if err != nil {
				return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
			}
			if n > 0 { // none: the folded map is not surprised, so split every kept clone
				split = surprised
				splitWhat = fmt.Sprintf(", the %d of them a surprise follows", n)
			}
		}
		if m, err = chmm.SplitSome(m, split, 0.1, rng); err != nil {
			return nil, nil, nil, 0, fmt.Errorf("sizing the budget: %w", err)
		}
		if progressOut != nil {
			probe := ""
			if !math.IsNaN(hardBits) {
				probe = fmt.Sprintf(" (%.4f after a hard phase)", hardBits)
			}
			alike := ""
			switch {
			case nFolded > 0 && depth > 0:
				alike = fmt.Sprintf(" (%d alike %s ahead folded into others)", nFolded, movesAhead(depth))
			case nFolded > 0:
				alike = fmt.Sprintf(" (%d alike clones folded into others)", nFolded)
			}
			if foldTries != "" {
				alike += fmt.Sprintf(" (folding those alike %s)", foldTries)
			}
			if s.Trainer == TrainerGradient && minShare != chmm.UsedShare {
				alike = fmt.Sprintf(" with %g%% of their token's visits or more%s", 100*minShare, alike)
			}
			if refused != "" {
				alike += fmt.Sprintf(" (dropping %s)", refused)
			}
			if merged {
				probe = fmt.Sprintf(" (fits, but %.3f%% of its steps surprise it beyond localising)", 100*d.LateSurprises())
			}
			fmt.Fprintf(progressOut, "budget round %d: %.4f bits/step on the training walks%s, %d of %d clones used: the %d its paths visit%s%s split in two\n",
				round, d.TrainBits, probe, d.UsedClones, d.Clones, kept, alike, splitWhat)
		}
		if s.Checkpoint != "" {
			c, err := newCheckpoint(s, round+1, m, all, foldedAll, time.Since(t0).Seconds(), src, splitFrom, rounds)
			if err == nil {
				err = saveCheckpoint(s.Checkpoint, c)
			}
			if err == nil && checkpointHook != nil {
				err = checkpointHook(round + 1)
			}
			if err != nil {
				return nil, nil, nil, 0, fmt.Errorf("checkpoint after split %d: %w", round+1, err)
			}
		}
	}
}

// doublingTraining is how a budget grown by splitting trains after each split: one
// start, no hard phase within it, a gradient training stopping on DoublingStopTol
// unless s.Tol is set, an EM one running in full (DoublingIters unless s.Iters).
func (s Symbolic) doublingTraining() Training {
	t := s.Training()
	t.ViterbiIters, t.Restarts, t.UntilFit = 0, 1, false
	if s.Trainer == TrainerGradient && s.Tol == 0 {
		t.StopTol = DoublingStopTol
	}
	if s.Trainer == TrainerEM {
		t.Full = true
		if s.Iters == 0 {
			t.Iters = DoublingIters
		}
	}
	return t
}

// DropShares are the shares of their token's visits under which keepCheaply tries
// dropping a gradient map's clones, largest first: chmm.UsedShare, then less.
var DropShares = []float64{chmm.UsedShare, chmm.UsedShare / 2, chmm.UsedShare / 5, chmm.UsedShare / 10, chmm.UsedShare / 20}

// DefaultDropCost is DefaultSymbolic's DropCost for the gradient trainer. A token at
// many places gives each of its clones a small share of its visits: big_room's
// interior token is at 64 places, 1.6% each, less where a place has two clones. On
// big_room (seed 1, after 6 splits: 0.0341 bits per step, 174 clones visited)
// dropping the clones under 1% of their token's visits kept 109 and cost 0.578 bits
// per step; under 0.2%, 164 and 0.0350. On tiled (16 places per token; seed 3 after
// 5 splits, 0.0234) 1% kept 280 of 372 and cost 0.0437; 0.2%, 365 and 0.0236. The
// next training had to win that back, and on big_room did not.
const DefaultDropCost = 0.05

// keepCheaply returns the clones of m (trained, diagnosed by d on train) to keep
// before a split, their number and the share of their token's visits under which the
// others were dropped: the largest of DropShares whose dropping raises the bits per
// step on train by at most the fraction cost of them or floor, whichever is more (and
// one bit per walk, for where walks start), else every visited clone (share 0). It
// also says what the larger shares would have cost.
func keepCheaply(m *chmm.Model, train []chmm.Sequence, d *chmm.Diagnosis, cost, floor float64) ([]bool, int, float64, string, error) {
	steps := float64(d.Steps)
	var tries []string
	for _, share := range DropShares {
		keep, kept := chmm.KeepVisited(m, d.Visits, share)
		pm, _, err := chmm.Prune(m, keep)
		if err != nil || pm.Validate() != nil { // a token or a row left with nothing: too much dropped
			tries = append(tries, fmt.Sprintf("under %g%% leaves a token or a row empty", 100*share))
			continue
		}
		ll, err := chmm.LogLikelihood(pm, train)
		if err != nil && !errors.Is(err, chmm.ErrZeroProbability) {
			return nil, 0, 0, "", err
		}
		if err == nil && dropAffordable(d.TrainBits, -ll/steps/math.Ln2, cost, floor, d.Walks, d.Steps) {
			return keep, kept, share, strings.Join(tries, ", "), nil
		}
		if err != nil {
			tries = append(tries, fmt.Sprintf("under %g%% makes a walk impossible", 100*share))
		} else {
			tries = append(tries, fmt.Sprintf("under %g%% costs %.4f bits/step", 100*share, -ll/steps/math.Ln2))
		}
	}
	keep, kept := chmm.KeepVisited(m, d.Visits, 0)
	return keep, kept, 0, strings.Join(tries, ", "), nil
}

// foldCheaply folds, on a copy of m (trained, diagnosed by d on train), the clones
// kept (keep, updated) that are alike within tv (chmm.FoldAlikeWithin) at the fewest
// refinements, from 1 up, after which the map pruned to keep costs at most rise bits
// per step more than m on train (what keep drops counts too), else until stable. It
// returns the copy, the clones folded, the refinements (0: until stable) and what
// fewer would have cost.
func foldCheaply(m *chmm.Model, train []chmm.Sequence, d *chmm.Diagnosis, keep []bool, tv, rise float64) (*chmm.Model, int, int, string, error) {
	var tries []string
	for depth := 1; ; depth++ {
		k := slices.Clone(keep)
		f := m.Clone()
		n, stable := chmm.FoldAlikeWithin(f, k, d.Visits, tv, depth)
		if stable {
			copy(keep, k)
			return f, n, 0, strings.Join(tries, ", "), nil
		}
		pm, _, err := chmm.Prune(f, k)
		if err != nil {
			return nil, 0, 0, "", err
		}
		ll, err := chmm.LogLikelihood(pm, train)
		if err != nil && !errors.Is(err, chmm.ErrZeroProbability) {
			return nil, 0, 0, "", err
		}
		after := math.Inf(1)
		if err == nil {
			after = -ll / float64(d.Steps) / math.Ln2
		}
		if after <= d.TrainBits+rise {
			copy(keep, k)
			return f, n, depth, strings.Join(tries, ", "), nil
		}
		tries = append(tries, fmt.Sprintf("%s ahead, %d, costs %.4f bits/step", movesAhead(depth), n, after))
	}
}

// movesAhead is "1 move" or "n moves".
func movesAhead(n int) string {
	if n == 1 {
		return "1 move"
	}
	return fmt.Sprintf("%d moves", n)
}

// splitMask marks the clones of m (kept, before a split) with at least share of their
// token's visits along train's Viterbi paths, and counts them.
func splitMask(m *chmm.Model, train []chmm.Sequence, share float64) ([]bool, int, error) {
	visits, err := chmm.ViterbiVisits(m, train, 0)
	if err != nil {
		return nil, 0, err
	}
	split, n := chmm.KeepVisited(m, visits, share)
	return split, n, nil
}

// dropAffordable says whether a drop that takes the training walks' cost from before
// to after bits per step (walks of steps in all) costs at most the fraction cost of
// before or floor bits per step, whichever is more, and one bit per walk: a dropped
// clone may have been where some walks start.
func dropAffordable(before, after, cost, floor float64, walks, steps int) bool {
	return after <= before+max(cost*before, floor)+float64(walks)/float64(steps)
}

// checkpointHook, if set (tests), runs after each checkpoint is saved; an error
// stops the run there, as an interruption would. trainingHook does the same for the
// checkpoints saved within a round's training, before iteration iter.
var (
	checkpointHook func(round int) error
	trainingHook   func(round, iter int) error
)

// trainingSaveEvery is how often a budget grown by splitting saves its training in
// progress to Symbolic.Checkpoint: a training of a few hundred states over 200,000
// steps takes hours (four_rooms), and a save holds the round's start and the model
// with the trainer's state (the gradient trainer's: the best parameters and Adam's two
// moments, 91 MB for four_rooms' 711 states; EM's: the previous iteration's
// parameters). Tests set it to 0 (every iteration).
var trainingSaveEvery = 5 * time.Minute

// splitStop says why a budget grown by splitting stops after round (kept clones would
// be split; hardBits is the training walks' cost after EM's hard phase on a copy, NaN
// when none ran), or "" to split on; merged says that a gradient map fits its walks
// but is surprised all along them (chmm.Diagnosis.LateSurprises above
// chmm.ExactSurprises): it still merges places and is split on.
func (s Symbolic) splitStop(d *chmm.Diagnosis, hardBits float64, round, kept int) (why string, merged bool) {
	merged = s.Trainer == TrainerGradient && d.TrainBits <= FitBits && d.LateSurprises() > chmm.ExactSurprises
	switch {
	case d.TrainBits <= FitBits && !merged:
		why = "the map fits its training walks"
	case hardBits <= FitBits:
		why = fmt.Sprintf("after its hard phase (%.4f bits/step) the map fits its training walks", hardBits)
	case round == s.Doublings:
		why = fmt.Sprintf("%d split(s) done", round)
	case 2*kept+1 > s.maxStates():
		why = fmt.Sprintf("splitting would pass %d states", s.maxStates())
	}
	return why, merged
}

// maxStates is s.MaxStates, or MaxDoublingStates.
func (s Symbolic) maxStates() int {
	if s.MaxStates > 0 {
		return s.MaxStates
	}
	return MaxDoublingStates
}

// appendHistory appends h, which started at seconds at, to all.
func appendHistory(all, h *chmm.History, at float64) {
	all.Phase = append(all.Phase, h.Phase...)
	all.Iter = append(all.Iter, h.Iter...)
	all.LogLik = append(all.LogLik, h.LogLik...)
	all.Entropy = append(all.Entropy, h.Entropy...)
	for _, sec := range h.Seconds {
		all.Seconds = append(all.Seconds, at+sec)
	}
	all.Splits = append(all.Splits, h.Splits...)
	all.Stop, all.BestIter = h.Stop, h.BestIter
}

// growBudget returns the tokens of m whose budgets bind (Symbolic.GrowRounds): none when
// m predicts its training walks (at most FitBits bits per step, the starts' bar: the
// verdict's 0.02 let a map with merged places stop growing), else the
// tokens that use every clone.
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
