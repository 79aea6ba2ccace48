package chmm

import (
	"fmt"
	"math/rand/v2"
)

// GrowBySplitting sizes a map's clone budget by split rounds. From a start (one clone
// per token, say), each round trains the map (Train), then Judge either ends the
// rounds or names the clones to keep; the kept clones are pruned to (Prune), those
// that Choose marks (every kept clone when Choose is nil) are split in two
// (SplitSome, with Noise, drawing from Rand), AfterSplit sees the split map, and the
// next round trains it.
//
// What differs between users is in these functions: the trainer of a round (gradient
// or EM, with or without a confusion matrix), the stop rule (the map fits its training
// walks, or the held-out ends of the walks stopped improving), what is kept and
// folded before a split, and what is saved after it. A user that saves the split map
// in AfterSplit, with Rand's state and its own bookkeeping, resumes by calling Run
// with the next round and that map: the rounds then go on exactly as uninterrupted.
type GrowBySplitting struct {
	// Train trains round's map m and returns the trained map (m itself or another).
	Train func(round int, m *Model) (*Model, error)
	// Judge decides after round's training of m whether the rounds end.
	Judge func(round int, m *Model) (SplitJudgement, error)
	// Choose, if set, marks the clones of kept (the map pruned to Judge's Keep) to
	// split; a nil mask splits every kept clone.
	Choose func(round int, kept *Model) ([]bool, error)
	// AfterSplit, if set, sees the split map that round next starts from.
	AfterSplit func(next int, start *Model) error
	Noise      float64    // SplitSome's noise on the copies' outgoing logits
	Rand       *rand.Rand // the splits' generator
}

// SplitJudgement is GrowBySplitting.Judge's decision after a round's training.
type SplitJudgement struct {
	// Stop, if not empty, ends the rounds and says why.
	Stop string
	// From is the map the split starts from (nil: the trained map), for example a
	// copy of it with alike clones folded (FoldAlike); Keep marks its clones to keep
	// (Prune's keep; len From.N()).
	From *Model
	Keep []bool
}

// Run trains round first from start, and the rounds after it, until Judge stops
// them; it returns the last round's trained map and that round.
func (g GrowBySplitting) Run(first int, start *Model) (*Model, int, error) {
	m := start
	for round := first; ; round++ {
		trained, err := g.Train(round, m)
		if err != nil {
			return nil, round, err
		}
		j, err := g.Judge(round, trained)
		if err != nil {
			return nil, round, err
		}
		if j.Stop != "" {
			return trained, round, nil
		}
		from := j.From
		if from == nil {
			from = trained
		}
		kept, _, err := Prune(from, j.Keep)
		if err != nil {
			return nil, round, fmt.Errorf("chmm: split round %d: %w", round, err)
		}
		var split []bool
		if g.Choose != nil {
			if split, err = g.Choose(round, kept); err != nil {
				return nil, round, err
			}
		}
		if m, err = SplitSome(kept, split, g.Noise, g.Rand); err != nil {
			return nil, round, fmt.Errorf("chmm: split round %d: %w", round, err)
		}
		if g.AfterSplit != nil {
			if err := g.AfterSplit(round+1, m); err != nil {
				return nil, round, err
			}
		}
	}
}
