package experiment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// trainingSaveEvery is how often a budget grown by split rounds saves its training in
// progress to Symbolic.Checkpoint (with the round's start and everything before it).
const trainingSaveEvery = 5 * time.Minute

// splitHooks are where tests watch and interrupt a budget grown by split rounds; nil
// outside tests.
type splitHooks struct {
	// saveAlways saves the training in progress before every iteration instead of
	// every trainingSaveEvery.
	saveAlways bool
	// afterSplit runs after the checkpoint of each split is saved, with the round it
	// starts; afterSave after each save within round's training, before iteration
	// iter. An error stops the run there, as an interruption would.
	afterSplit func(round int) error
	afterSave  func(round, iter int) error
}

// saveEvery is how often a training in progress is saved.
func (h *splitHooks) saveEvery() time.Duration {
	if h != nil && h.saveAlways {
		return 0
	}
	return trainingSaveEvery
}

// splitRun is a symbolic map whose budget grows by split rounds (Symbolic.Doublings):
// what chmm.GrowBySplitting's rounds carry from one to the next, all of it in the
// checkpoint saved after each split.
type splitRun struct {
	s     Symbolic
	env   *gridworld.Env
	train []chmm.Sequence
	out   io.Writer
	hooks *splitHooks
	t     Training // how each round trains (splitRoundTraining)

	src       *rand.PCG // the splits' generator
	t0        time.Time // the clock of the history (moved back by the seconds before a resume)
	all       *chmm.History
	h         *chmm.History // the last round's training
	rounds    []evaluate.BudgetRound
	foldedAll int
	splitFrom float64 // the bits per step of the map the last split started from (FoldCost)
	// The first round's training in progress after a resume (one of them, by trainer).
	resume   *chmm.GradState
	resumeEM *chmm.EMState

	// The last judged round, for Choose and AfterSplit.
	d                    *chmm.Diagnosis
	kept, nFolded, depth int
	minShare, hardBits   float64
	foldTries, refused   string
	merged               bool
	// When the rounds end: the map kept and its record.
	result *chmm.Model
	rec    *evaluate.Training
}

// growBySplitting trains s's map with a budget that grows by split rounds
// (Symbolic.Doublings, chmm.GrowBySplitting) from one clone per token, and returns it,
// the history of every training and of the hard phase kept, one after another on one
// clock, the record (of the last training, every round's in Rounds) and the seconds
// trained before a resume from s.Checkpoint (0 if none).
func growBySplitting(s Symbolic, env *gridworld.Env, numTokens int, train []chmm.Sequence, progressOut io.Writer, hooks *splitHooks) (*chmm.Model, *chmm.History, *evaluate.Training, float64, error) {
	m := SymbolicInit(chmm.UniformClones(numTokens, 1), env.NumActions(), s.Seed, s.Init)
	r := &splitRun{s: s, env: env, train: train, out: progressOut, hooks: hooks, t: s.splitRoundTraining(),
		src: rand.NewPCG(s.Seed, 99), all: &chmm.History{}, t0: time.Now()}
	first := 0
	if s.Checkpoint != "" {
		c, err := loadCheckpoint(s.Checkpoint, s)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		if c != nil {
			if m, first, err = r.resumeFrom(c); err != nil {
				return nil, nil, nil, 0, err
			}
		}
	}
	before := time.Since(r.t0).Seconds()
	g := chmm.GrowBySplitting{Train: r.trainRound, Judge: r.judge, Choose: r.choose, AfterSplit: r.afterSplit,
		Noise: 0.1, Rand: rand.New(r.src)}
	if _, _, err := g.Run(first, m); err != nil {
		return nil, nil, nil, 0, err
	}
	return r.result, r.all, r.rec, before, nil
}

// resumeFrom takes the rounds up from the checkpoint c and returns the map and the
// round they go on from.
func (r *splitRun) resumeFrom(c *splitCheckpoint) (*chmm.Model, int, error) {
	s := r.s
	if err := r.src.UnmarshalBinary(c.SplitRNG); err != nil {
		return nil, 0, fmt.Errorf("checkpoint %s: %w", s.Checkpoint, err)
	}
	m := c.Model
	r.all, r.foldedAll, r.splitFrom, r.rounds = c.History, c.Folded, c.SplitFrom, c.Rounds
	elapsed, within := c.Elapsed, ""
	if r.resume, r.resumeEM = c.Training, c.EMTraining; r.resume != nil { // the experiment's config says which
		elapsed += r.resume.Seconds
		within = fmt.Sprintf(" (its training at iteration %d)", r.resume.Iter)
	} else if r.resumeEM != nil {
		elapsed += r.resumeEM.Seconds
		within = fmt.Sprintf(" (its training at iteration %d)", r.resumeEM.Iter)
	}
	r.t0 = r.t0.Add(-time.Duration(elapsed * float64(time.Second)))
	if r.out != nil {
		fmt.Fprintf(r.out, "resuming from %s: budget round %d%s, %d states, %.0f s trained before\n",
			s.Checkpoint, c.Round, within, m.N(), elapsed)
	}
	return m, c.Round, nil
}

// trainRound trains round's map m (chmm.GrowBySplitting.Train), saving the training in
// progress to s.Checkpoint.
func (r *splitRun) trainRound(round int, m *chmm.Model) (*chmm.Model, error) {
	s, t := r.s, r.t
	at := time.Since(r.t0).Seconds()
	tr := t
	if s.Checkpoint != "" {
		// Save the training every trainingSaveEvery: a checkpoint of this round
		// (its start, m, and everything before it) with the training's state.
		if r.resume != nil {
			at -= r.resume.Seconds
		} else if r.resumeEM != nil {
			at -= r.resumeEM.Seconds
		}
		start, atRound := m.Clone(), at
		save := func(iter int, set func(*splitCheckpoint)) error {
			c, err := newCheckpoint(s, round, start, r.all, r.foldedAll, atRound, r.src, r.splitFrom, r.rounds)
			if err == nil {
				set(c)
				err = saveCheckpoint(s.Checkpoint, c)
			}
			if err == nil && r.hooks != nil && r.hooks.afterSave != nil {
				err = r.hooks.afterSave(round, iter)
			}
			if err != nil {
				return fmt.Errorf("checkpoint in round %d, at iteration %d: %w", round, iter, err)
			}
			return nil
		}
		tr.SaveEvery = r.hooks.saveEvery()
		if s.Trainer == TrainerGradient {
			tr.Resume = r.resume
			tr.Save = func(g *chmm.GradState) error { return save(g.Iter, func(c *splitCheckpoint) { c.Training = g }) }
		} else {
			tr.ResumeEM = r.resumeEM
			tr.SaveEM = func(e *chmm.EMState) error { return save(e.Iter, func(c *splitCheckpoint) { c.EMTraining = e }) }
		}
	}
	r.resume, r.resumeEM = nil, nil
	if r.out != nil {
		chunks := ""
		if s.Trainer == TrainerGradient && (chmm.GradConfig{}).ChunkIfCostly(m, r.train, t.ChunkAbove).ChunkLen > 0 {
			chunks = fmt.Sprintf(", read in random chunks (%d × %d steps per iteration)", chmm.ChunkBatch, chmm.ChunkLen)
		}
		fmt.Fprintf(r.out, "%s: %d places, %d edges, %d tokens, %d states; %d×%d training steps%s; trainer %s, budget round %d\n",
			r.env.Name, r.env.NumPlaces(), len(r.env.Edges()), m.K(), m.N(), s.Episodes, s.Steps, chunks, s.Trainer, round)
	}
	m, h, _, err := TrainSymbolic(m, r.train, tr, r.out)
	if err != nil {
		return nil, err
	}
	r.h = h
	appendHistory(r.all, h, at)
	return m, nil
}

// judge keeps, folds and judges round's trained map m (chmm.GrowBySplitting.Judge):
// the clones its training walks' Viterbi paths visit are kept (by cost with
// Symbolic.DropCost), alike ones folded on a copy (FoldAlike, FoldCost), EM's hard
// phase probed on another, and splitStop says whether the rounds end.
func (r *splitRun) judge(round int, m *chmm.Model) (chmm.SplitJudgement, error) {
	s, train := r.s, r.train
	d, err := chmm.Diagnose(m, train, nil, 0)
	if err != nil {
		return chmm.SplitJudgement{}, fmt.Errorf("sizing the budget: %w", err)
	}
	h := r.h
	rd := evaluate.BudgetRound{Iterations: len(h.LogLik), Stop: h.Stop, ClonesAdded: h.ClonesAdded(),
		Clones: d.Clones, Used: d.UsedClones, TrainBits: d.TrainBits}
	// The clones the training walks' Viterbi paths visit are kept and split: by EM,
	// any visit; by the gradient trainer, whose softmax maps lend a few visits to many
	// clones, at least chmm.UsedShare of their token's (the clones Diagnose counts as
	// used).
	minShare := 0.0
	if s.Trainer == TrainerGradient {
		minShare = chmm.UsedShare
	}
	var keep []bool
	var kept int
	var refused string // what dropping more would have cost
	if s.Trainer == TrainerGradient && s.DropCost > 0 {
		if keep, kept, minShare, refused, err = keepCheaply(m, train, d, s.DropCost, s.DropFloor); err != nil {
			return chmm.SplitJudgement{}, fmt.Errorf("sizing the budget: %w", err)
		}
	} else {
		keep, kept = chmm.KeepVisited(m, d.Visits, minShare)
	}
	// Alike clones are folded on a copy: the map returned, if this is the last
	// round, is the trained one.
	folded, nFolded, depth := m, 0, 0
	var foldTries string // what folding fewer moves ahead would have cost
	if s.FoldCost > 0 && r.splitFrom > d.TrainBits {
		rise := s.FoldCost * (r.splitFrom - d.TrainBits)
		if folded, nFolded, depth, foldTries, err = foldCheaply(m, train, d, keep, s.FoldAlike, rise); err != nil {
			return chmm.SplitJudgement{}, fmt.Errorf("sizing the budget: %w", err)
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
		hAt = time.Since(r.t0).Seconds()
		th := r.t
		th.Iters, th.ViterbiIters = -1, s.ViterbiIters
		if hm, hh, _, err = TrainSymbolic(m.Clone(), train, th, r.out); err != nil {
			return chmm.SplitJudgement{}, err
		}
		if d.TrainBits > FitBits {
			hd, err := chmm.Diagnose(hm, train, nil, 0)
			if err != nil {
				return chmm.SplitJudgement{}, fmt.Errorf("sizing the budget: %w", err)
			}
			hardBits = hd.TrainBits
		}
	}
	why, merged := s.splitStop(d, hardBits, round, kept)
	if why != "" {
		if r.out != nil {
			fmt.Fprintf(r.out, "budget round %d: %.4f bits/step on the training walks, %d of %d clones used: %s\n",
				round, d.TrainBits, d.UsedClones, d.Clones, why)
		}
		if hm != nil { // the map is the copy after its hard phase
			m = hm
			appendHistory(r.all, hh, hAt)
		}
		rd.Outcome = why
		rec := SymbolicTraining(m, train, 1, h)
		rec.Doublings, rec.Folded, rec.Rounds = round, r.foldedAll, append(r.rounds, rd)
		if hh != nil {
			rec.Runs = append(rec.Runs, evaluate.TrainerRun{Name: "hard", Iterations: len(hh.LogLik), Stop: hh.Stop})
		}
		r.result, r.rec = m, rec
		return chmm.SplitJudgement{Stop: why}, nil
	}
	r.foldedAll += nFolded
	rd.Kept, rd.Folded, rd.FoldDepth, rd.Outcome = kept, nFolded, depth, "split"
	r.rounds = append(r.rounds, rd)
	r.d, r.kept, r.nFolded, r.depth, r.minShare, r.hardBits = d, kept, nFolded, depth, minShare, hardBits
	r.foldTries, r.refused, r.merged = foldTries, refused, merged
	return chmm.SplitJudgement{From: folded, Keep: keep}, nil
}

// choose marks the clones of the kept map m to split (chmm.GrowBySplitting.Choose):
// every one (nil), those with Symbolic.SplitShare of their token's visits, or, of a
// merged gradient map with Symbolic.SplitSurprised, those a surprise follows. With
// Symbolic.FoldCost it measures the bits per step the split starts from.
func (r *splitRun) choose(round int, m *chmm.Model) ([]bool, error) {
	s, train := r.s, r.train
	if s.FoldCost > 0 {
		r.splitFrom = 0
		if ll, err := chmm.LogLikelihood(m, train); err == nil {
			r.splitFrom = -ll / float64(r.d.Steps) / math.Ln2
		} else if !errors.Is(err, chmm.ErrZeroProbability) {
			return nil, fmt.Errorf("sizing the budget: %w", err)
		}
	}
	var split []bool // nil: every kept clone
	splitWhat := ""
	if s.SplitShare > 0 {
		var nsplit int
		var err error
		if split, nsplit, err = splitMask(m, train, s.SplitShare); err != nil {
			return nil, fmt.Errorf("sizing the budget: %w", err)
		}
		splitWhat = fmt.Sprintf(", the %d of them with %g%% of their token's visits or more", nsplit, 100*s.SplitShare)
	}
	if r.merged && s.SplitSurprised {
		surprised, n, err := chmm.SurprisedStates(m, train, 0)
		if err != nil {
			return nil, fmt.Errorf("sizing the budget: %w", err)
		}
		if n > 0 { // none: the folded map is not surprised, so split every kept clone
			split = surprised
			splitWhat = fmt.Sprintf(", the %d of them a surprise follows", n)
		}
	}
	r.report(round, splitWhat)
	return split, nil
}

// report prints what round kept, folded and splits (splitWhat: which of the kept
// clones, "" for all).
func (r *splitRun) report(round int, splitWhat string) {
	if r.out == nil {
		return
	}
	s, d := r.s, r.d
	probe := ""
	if !math.IsNaN(r.hardBits) {
		probe = fmt.Sprintf(" (%.4f after a hard phase)", r.hardBits)
	}
	alike := ""
	switch {
	case r.nFolded > 0 && r.depth > 0:
		alike = fmt.Sprintf(" (%d alike %s ahead folded into others)", r.nFolded, movesAhead(r.depth))
	case r.nFolded > 0:
		alike = fmt.Sprintf(" (%d alike clones folded into others)", r.nFolded)
	}
	if r.foldTries != "" {
		alike += fmt.Sprintf(" (folding those alike %s)", r.foldTries)
	}
	if s.Trainer == TrainerGradient && r.minShare != chmm.UsedShare {
		alike = fmt.Sprintf(" with %g%% of their token's visits or more%s", 100*r.minShare, alike)
	}
	if r.refused != "" {
		alike += fmt.Sprintf(" (dropping %s)", r.refused)
	}
	if r.merged {
		probe = fmt.Sprintf(" (fits, but %.3f%% of its steps surprise it beyond localising)", 100*d.LateSurprises())
	}
	fmt.Fprintf(r.out, "budget round %d: %.4f bits/step on the training walks%s, %d of %d clones used: the %d its paths visit%s%s split in two\n",
		round, d.TrainBits, probe, d.UsedClones, d.Clones, r.kept, alike, splitWhat)
}

// afterSplit saves the checkpoint of the split map that round next starts from
// (chmm.GrowBySplitting.AfterSplit), when s has one.
func (r *splitRun) afterSplit(next int, m *chmm.Model) error {
	s := r.s
	if s.Checkpoint == "" {
		return nil
	}
	c, err := newCheckpoint(s, next, m, r.all, r.foldedAll, time.Since(r.t0).Seconds(), r.src, r.splitFrom, r.rounds)
	if err == nil {
		err = saveCheckpoint(s.Checkpoint, c)
	}
	if err == nil && r.hooks != nil && r.hooks.afterSplit != nil {
		err = r.hooks.afterSplit(next)
	}
	if err != nil {
		return fmt.Errorf("checkpoint after split %d: %w", next, err)
	}
	return nil
}

// splitRoundTraining is how a budget grown by split rounds trains after each split:
// one start, no hard phase within it, a gradient training stopping on SplitRoundStopTol
// unless s.Tol is set, an EM one running in full (SplitRoundIters unless s.Iters).
func (s Symbolic) splitRoundTraining() Training {
	t := s.Training()
	t.ViterbiIters, t.Restarts, t.UntilFit = 0, 1, false
	if s.Trainer == TrainerGradient && s.Tol == 0 {
		t.StopTol = SplitRoundStopTol
	}
	if s.Trainer == TrainerEM {
		t.Full = true
		if s.Iters == 0 {
			t.Iters = SplitRoundIters
		}
	}
	return t
}

// DropShares are the shares of their token's visits under which keepCheaply tries
// dropping a gradient map's clones, largest first: chmm.UsedShare, then less.
var DropShares = []float64{chmm.UsedShare, chmm.UsedShare / 2, chmm.UsedShare / 5, chmm.UsedShare / 10, chmm.UsedShare / 20}

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

// maxStates is s.MaxStates, or MaxSplitStates.
func (s Symbolic) maxStates() int {
	if s.MaxStates > 0 {
		return s.MaxStates
	}
	return MaxSplitStates
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
