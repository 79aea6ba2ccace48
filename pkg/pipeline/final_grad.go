package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/progress"
)

// maxFinalBytes bounds the memory of a finalisation whose budget grows
// (Config.Final.BudgetDoublings, chmm.TrainBytes): about 4,000 states over 4 × 10,000 steps.
const maxFinalBytes = 6e9

// gradient is the gradient finalisation (FinalGradient): it trains the map's HMM on
// seqs, the training walks' hard tokens (share: each token's share of their frames),
// from joint, the joint phase's HMM (FinalFromJoint), or afresh on a budget by token
// share that doubles while twice as many clones predict better
// (Config.Final.BudgetDoublings, growthCheck), then prunes it (Config.Final.Prune).
// Each finished training is a checkpoint (FinalGrad) that an interrupted run resumes
// from.
func (f *finaliser) gradient(seqs []chmm.Sequence, share []float64, joint *chmm.Model) (*chmm.Model, error) {
	cfg := f.s.cfg
	gc := chmm.GradConfig{Iters: cfg.Final.Iters, LR: cfg.Final.LR, EntropyWeight: cfg.Final.Entropy,
		Patience: cfg.Final.Patience, Tol: cfg.Final.Tol, SplitRounds: cfg.Final.PlateauSplits, Seed: cfg.Seed, Workers: 0, Stop: f.s.ctx.Err}
	grow := cfg.Final.Budget == BudgetShare && cfg.Final.Prune > 0 && cfg.Final.Iters > 0
	hmm, s, err := f.resumeGradient(joint)
	if err != nil {
		return nil, err
	}
	for {
		clones := cfg.Final.Clones << s.Round
		suffix := "" // the runs of each round keep their own record (Training.AddRun)
		if s.Round > 0 {
			suffix = fmt.Sprintf(" (%d× budget)", 1<<s.Round)
		}
		if s.Done == 0 {
			if cfg.Final.Budget == BudgetShare {
				hmm = chmm.New(cloneBudget(clones, BudgetShare, share), joint.NumActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
			}
			if cfg.Final.Iters > 0 {
				if err := f.train(hmm, seqs, gc, "finalise"+suffix, s.Event); err != nil {
					return nil, fmt.Errorf("pipeline: finalisation: %w", err)
				}
			}
			s.Done = gradTrained
			if err := f.checkpointGrad(s, hmm); err != nil {
				return nil, err
			}
		}
		if s.Done == gradTrained {
			if cfg.Final.Prune > 0 {
				var err error
				if hmm, err = f.prune(hmm, seqs, gc, "retrain"+suffix); err != nil {
					return nil, err
				}
			}
			s.Done = gradPruned
			if err := f.checkpointGrad(s, hmm); err != nil {
				return nil, err
			}
		}
		f.st.Made.GrowRounds = s.Round
		if !grow || s.Round == cfg.Final.BudgetDoublings {
			break
		}
		doubled, err := f.growthCheck(s, seqs, share, hmm.N(), joint.NumActions, gc)
		if err != nil {
			return nil, err
		}
		if !doubled {
			break
		}
	}
	return hmm, nil
}

// resumeGradient returns the gradient finalisation's checkpoint (a new one, set in the
// state, when there is none: its trainings save themselves) and the map it names
// (joint when none).
func (f *finaliser) resumeGradient(joint *chmm.Model) (*chmm.Model, *finalGradState, error) {
	cfg := f.s.cfg
	s := f.st.FinalGrad
	if s == nil {
		s = &finalGradState{CheckFirst: true, FallBack: true}
		f.st.FinalGrad = s // its trainings save themselves (trainShown)
		return joint, s, nil
	}
	hmm := joint
	if s.Model != "" {
		var err error
		if hmm, err = f.ck.loadModel(s.Model, joint.K(), joint.NumActions); err != nil {
			return nil, nil, err
		}
	}
	if f.s.out != nil {
		done := [...]string{"at its start", "after its training", "after pruning", "after the growth check's first budget"}[s.Done]
		budget := "the joint phase's clones" // FinalFromJoint
		if cfg.Final.Budget == BudgetShare {
			budget = fmt.Sprintf("%d clones per token", cfg.Final.Clones<<s.Round)
		}
		fmt.Fprintf(f.s.out, "finalisation resumed in round %d (%s), %s\n", s.Round, budget, done)
	}
	return hmm, s, nil
}

// growthCheck is Config.Final.BudgetDoublings's check after round s.Round, whose map has n
// states: the first budget is always checked (s.CheckFirst: from pixels, misread tokens
// fill clones that pruning keeps, so the clones left unused do not show a budget that
// is too small), a later one where it binds (pruning left fewer than GrowSlack of its
// clones unused); it doubles if twice the budget predicts the held-out ends of the
// training walks by GrowGain bits per step better (growthBits, each score a
// checkpoint). It returns whether the budget doubled, with the next round's checkpoint
// committed.
func (f *finaliser) growthCheck(s *finalGradState, seqs []chmm.Sequence, share []float64, n, numActions int, gc chmm.GradConfig) (bool, error) {
	cfg, out := f.s.cfg, f.s.out
	clones := cfg.Final.Clones << s.Round
	unused := f.st.Made.Pruned
	budget := n - 1 + unused // the round's states before pruning
	binds := float64(unused) < GrowSlack*float64(budget)
	if !binds && !(s.CheckFirst && s.Round == 0) {
		return false, nil
	}
	steps := stepsOf(seqs)
	why := fmt.Sprintf("the finalisation's budget binds: pruning left %d of %d clones unused (fewer than %.0f%%)", unused, budget, 100*GrowSlack)
	if !binds {
		why = fmt.Sprintf("the finalisation's first budget: pruning left %d of %d clones unused", unused, budget)
	}
	if need := chmm.TrainBytes(1+len(share)*2*clones, numActions, steps); need > maxFinalBytes {
		if out != nil {
			fmt.Fprintf(out, "%s, but twice as many would need %.1f GB (more than %.0f): kept\n", why, need/1e9, maxFinalBytes/1e9)
		}
		return false, nil
	}
	if out != nil {
		fmt.Fprintf(out, "%s; does twice the budget predict the end of the training walks better?\n", why)
	}
	if s.Done == gradPruned {
		bits, err := f.growthBits(seqs, share, clones, numActions, gc)
		if err != nil {
			return false, fmt.Errorf("pipeline: finalisation: growth check: %w", err)
		}
		s.Done, s.Bits = gradChecked, bits
		if err := f.checkpointGrad(s, nil); err != nil { // the map is the pruned one, saved already
			return false, err
		}
	}
	grown, err := f.growthBits(seqs, share, 2*clones, numActions, gc)
	if err != nil {
		return false, fmt.Errorf("pipeline: finalisation: growth check: %w", err)
	}
	check := evaluate.GrowCheck{Clones: clones, Bits: s.Bits, GrownBits: grown, Grown: s.Bits-grown >= GrowGain}
	f.st.Made.GrowChecks = append(f.st.Made.GrowChecks, check)
	if out != nil {
		what := "budget kept"
		if check.Grown {
			what = "budget doubled"
		}
		fmt.Fprintf(out, "held-out end of the training walks: %.4f bits/step with %d clones per token, %.4f with %d: %s\n",
			check.Bits, clones, check.GrownBits, 2*clones, what)
	}
	if !check.Grown {
		return false, nil
	}
	// Event: short, Figure 6 labels it.
	s.Round, s.Done, s.Model, s.Event = s.Round+1, 0, "", fmt.Sprintf("budget ×2: %d/%d unused", unused, budget)
	return true, f.checkpointGrad(s, nil)
}

// checkpointGrad commits s, with m (this round's map after the step just done; nil:
// the map s.Model names is unchanged) saved beside it under a new name, so that an
// interrupted finalisation resumes there. Runs without a directory (studies) keep
// nothing.
func (f *finaliser) checkpointGrad(s *finalGradState, m *chmm.Model) error {
	if !f.ck.saves() {
		return nil
	}
	s.Training = "" // the step's training is done
	if m != nil {
		s.Model = fmt.Sprintf("final-grad-%02d-%d.model", s.Round, s.Done)
		if err := m.Save(f.ck.path(s.Model)); err != nil {
			return fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if err := f.ck.record(s.Model); err != nil {
			return err
		}
	}
	f.st.FinalGrad = s
	return f.commit()
}

// prune removes the clones that the training episodes' Viterbi paths visit fewer than
// FinalPrune × steps times (keeping each token's most visited clone) and trains the
// pruned model for Final.PruneIters iterations (Config.Final.Prune), a run called label.
func (f *finaliser) prune(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label string) (*chmm.Model, error) {
	cfg := f.s.cfg
	visits, err := chmm.ViterbiVisits(hmm, seqs, 0)
	if err != nil {
		return nil, fmt.Errorf("pipeline: pruning: %w", err)
	}
	minVisits := cfg.Final.Prune * float64(stepsOf(seqs))
	keep := make([]bool, hmm.N())
	top := make([]int, hmm.K()) // most visited clone per token
	for s, k := range hmm.StateTokens() {
		if k < 0 {
			continue
		}
		keep[s] = float64(visits[s]) >= minVisits
		if first := hmm.FirstState(k); s == first || visits[s] > visits[top[k]] {
			top[k] = s
		}
	}
	for _, s := range top {
		keep[s] = true
	}
	pruned, _, err := chmm.Prune(hmm, keep)
	if err != nil {
		return nil, fmt.Errorf("pipeline: pruning: %w", err)
	}
	f.st.Made.Pruned = hmm.N() - pruned.N()
	if f.s.out != nil {
		fmt.Fprintf(f.s.out, "pruned %d of %d states (fewer than %.0f Viterbi visits)\n", hmm.N()-pruned.N(), hmm.N(), minVisits)
	}
	if cfg.Final.PruneIters == 0 {
		return pruned, nil
	}
	gc.Iters, gc.SplitRounds = cfg.Final.PruneIters, 0
	if err := f.train(pruned, seqs, gc, label, fmt.Sprintf("pruned %d states", hmm.N()-pruned.N())); err != nil {
		return nil, fmt.Errorf("pipeline: training the pruned model: %w", err)
	}
	return pruned, nil
}

// train trains hmm on seqs with gc behind a progress bar called label and appends its
// iterations to the history as finalisation records (record; event, if set, marks the
// first).
func (f *finaliser) train(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label, event string) error {
	h, err := f.trainShown(hmm, seqs, gc, label)
	if err != nil {
		return err
	}
	f.record(h, label, event)
	return nil
}

// trainShown is trainShown in a checkpointed gradient finalisation: the training saves
// itself as it goes, and the first one after a resume goes on from its save (the step
// it follows, FinalGrad.Done, names the training).
func (f *finaliser) trainShown(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label string) (*chmm.History, error) {
	if s := f.st.FinalGrad; s != nil && f.ck.saves() {
		if s.Training != "" {
			gc.Resume = new(chmm.GradState)
			if err := f.ck.loadGob(s.Training, gc.Resume); err != nil {
				return nil, err
			}
			s.Training = ""
			if f.s.out != nil {
				fmt.Fprintf(f.s.out, "%s resumed at iteration %d\n", label, gc.Resume.Iter)
			}
		}
		gc.SaveEvery = f.saveEvery()
		gc.Save = func(g *chmm.GradState) error {
			name := fmt.Sprintf("final-grad-train-%02d-%d-%06d.gob", s.Round, s.Done, g.Iter)
			return f.saveTraining(name, g, func() { s.Training, f.st.FinalGrad = name, s })
		}
	}
	return trainShown(f.s, hmm, seqs, gc, label)
}

// trainShown trains hmm on seqs with gc (reading chunks where Config.Final.ChunkAbove
// says a pass costs too much; from gc.Resume, if set) behind a progress bar called
// label.
func trainShown(s *session, hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label string) (*chmm.History, error) {
	var bar *progress.Bar
	if s.out != nil {
		bar = progress.New(s.out, label, gc.Iters).Every(2 * time.Second)
		if gc.Resume != nil {
			bar.From(gc.Resume.Iter)
		}
	}
	gc = gc.ChunkIfCostly(hmm, seqs, s.cfg.Final.ChunkAbove)
	// Every iteration reaches the bar, which prints at most every 2 s: a line every
	// few iterations can leave a slow training silent for minutes.
	gc.ProgressEvery = 1
	gc.Progress = func(p chmm.Progress) { bar.Update(p.Iter, "ℓ/T %.4f best %.4f", p.LogLik, p.Best) }
	h, err := chmm.TrainGradient(hmm, seqs, gc)
	if err != nil {
		return nil, err
	}
	bar.Finish(len(h.LogLik), "%s (%d clone-splitting rounds)", h.Stop, len(h.Splits))
	return h, nil
}

// growthBits scores a budget of clones per token (on average) for the growth check of
// Config.Final.BudgetDoublings: the HMM is trained afresh with it on the first 1 − GrowHoldOut of
// every training walk and scored on the rest of it, given the start (−log₂ p(end |
// start) per held-out step; 0 when nothing is held out). Twice the budget is kept if
// it costs at least GrowGain fewer bits per held-out step.
func (f *finaliser) growthBits(seqs []chmm.Sequence, share []float64, clones, numActions int, gc chmm.GradConfig) (float64, error) {
	start, held := holdOutEnds(seqs)
	if held == 0 {
		return 0, nil
	}
	m := chmm.New(cloneBudget(clones, BudgetShare, share), numActions, rand.New(rand.NewPCG(f.s.cfg.Seed, 0xf1a1)))
	if _, err := f.trainShown(m, start, gc, fmt.Sprintf("growth check, %d clones per token", clones)); err != nil {
		return 0, err
	}
	whole, err := chmm.SequenceLogLikelihoods(m, seqs, 0)
	if err != nil {
		return 0, err
	}
	begun, err := chmm.SequenceLogLikelihoods(m, start, 0)
	if err != nil {
		return 0, err
	}
	var nats float64
	for i := range seqs {
		nats += whole[i] - begun[i]
	}
	return -nats / float64(held) / math.Ln2, nil
}
