package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/progress"
)

// emRounds is the EM finalisation (FinalEM) in progress: its split rounds
// (chmm.GrowBySplitting) and what they carry from one to the next, all of which its
// checkpoint (finalEMState) holds after each split.
type emRounds struct {
	f        *finaliser
	s        *finalEMState
	seqs     []chmm.Sequence // the training walks
	start    []chmm.Sequence // their first 1 − GrowHoldOut
	train    []chmm.Sequence // start cut into pieces
	held     int             // the steps held out
	src      *rand.PCG       // the splits' generator
	patience int             // rounds without a gain that end the rounds

	conf, bestConf    [][]float64
	best              *chmm.Model
	bestBits          float64
	bestRound, missed int
	resume            *chmm.EMState // the first round's EM in progress, after a resume

	// Under finalEMState.Selective: the pairs of the round's start (finalEMState.Siblings),
	// and, between a round's judge and its split, the clones of the kept map to split and
	// the kept map they mark.
	siblings []int
	split    []bool
	nextFull bool // the split marks every kept clone
	keptMap  *chmm.Model
}

// em is the finalisation by EM through a learned confusion matrix (FinalEM). From one
// clone per token, EM (at most Final.Iters soft iterations a round, pseudocount
// FinalEMPseudocount, chmm.DefaultEMConfig's splits at plateaus, no hard phase) learns
// the map and C[k][o], the chance that a place of token k is read as o, on the first
// 1 − GrowHoldOut of every training walk in seqs. Its E-step runs the walks as GOMAXPROCS
// segments in parallel, each from the messages its neighbours ended with (chmm's
// segmented E-step, exact once they settle); SQUAREM jumps along its EM steps, and a
// round ends once chmm.DefaultStopGain is no longer gained per E-step (a finalisation
// begun before them goes on as it began: pieces, plain EM, Final.Iters a round; see
// finalEMState.Segments). C starts as startConfusion makes it; entries below
// ConfusionMin are dropped after each round. Then the clones holding at least
// chmm.UsedShare of their token's expected visits are kept (and of two copies of a split
// that hold that share only together, the more visited, the other folded into it:
// finalEMState.FoldPairs), and those of them whose copy
// from the last split was kept too are split in two (after round 0, which has no
// copies, every kept clone); a clone whose copy went unused, or that was not split,
// stays one. Where a round that split only some clones gains less than SplitGain, or no
// clone kept both copies, the next round splits every kept clone
// (finalEMState.Selective; a finalisation begun before splits every kept clone every
// round). EM trains on, until the held-out ends of the walks (scored given their
// starts, under C) have missed a gain of SplitGain bits per step over the best so far
// SplitPatience rounds in a row that split every clone, or Final.SplitRounds split
// rounds are done. The map with the cheapest held-out ends is kept, with its C in the
// state's Made.Confusion.
func (f *finaliser) em(seqs []chmm.Sequence, k, numActions int) (*chmm.Model, error) {
	cfg := f.s.cfg
	e := &emRounds{f: f, seqs: seqs, src: rand.NewPCG(cfg.Seed, 0x5b1e), bestBits: math.Inf(1)}
	e.start, e.held = holdOutEnds(seqs)
	rng := rand.New(e.src)
	m, err := e.begin(k, numActions)
	if err != nil {
		return nil, err
	}
	e.train = e.s.trainingWalks(e.start)
	e.patience = e.s.Patience
	if e.patience == 0 { // begun before finalEMState.Patience
		e.patience = legacySplitPatience
	}
	if h := f.s.hooks; h != nil && h.patience > 0 {
		e.patience = h.patience
	}
	g := chmm.GrowBySplitting{Train: e.trainRound, Judge: e.judge, AfterSplit: e.afterSplit, Noise: 0.1, Rand: rng}
	if e.s.Selective {
		g.Choose = e.choose
	}
	if _, _, err := g.Run(e.s.Round, m); err != nil {
		return nil, err
	}
	f.st.Made.Doublings, f.st.Made.Confusion = e.bestRound, e.bestConf
	return e.best, nil
}

// begin returns the map the rounds go on from: round 0's start (one clone per token,
// with startConfusion's C), or where the state's checkpoint left them.
func (e *emRounds) begin(k, numActions int) (*chmm.Model, error) {
	f, cfg := e.f, e.f.s.cfg
	s := f.st.FinalEM
	if s == nil {
		e.s = &finalEMState{Segments: max(1, runtime.GOMAXPROCS(0)), Patience: SplitPatience, EarlyMiss: true, Selective: true, FoldPairs: true}
		if h := f.s.hooks; h != nil && h.legacyEM {
			e.s = &finalEMState{Pieces: runtime.GOMAXPROCS(0)}
		} else if h != nil && h.preStops {
			e.s.Patience, e.s.EarlyMiss, e.s.Selective = 0, false, false
		} else if h != nil && h.noEarlyMiss {
			e.s.EarlyMiss, e.s.Selective = false, false
		} else if h != nil && h.splitAll {
			e.s.Selective = false
		}
		if h := f.s.hooks; h != nil && h.dropPairs {
			e.s.FoldPairs = false
		}
		if !e.s.Selective {
			e.s.FoldPairs = false
		}
		var rare []int
		e.conf, rare = startConfusion(e.seqs, k)
		if len(rare) > 0 && f.s.out != nil {
			fmt.Fprintf(f.s.out, "token(s) %v show on fewer than %d training steps: read as misreads of the others, they hold no place\n", rare, chmm.NoisyStepsPerClone)
		}
		f.st.Made.HeldOutBits, f.st.Made.SplitSome = nil, nil
		return chmm.New(chmm.UniformClones(k, 1), numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1))), nil
	}
	e.s = s
	var m *chmm.Model
	var err error
	if s.Start == "" { // round 0, saved within its EM
		m = chmm.New(chmm.UniformClones(k, 1), numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
	} else if m, err = f.ck.loadModel(s.Start, k, numActions); err != nil {
		return nil, err
	}
	if s.Best != "" {
		if e.best, err = f.ck.loadModel(s.Best, k, numActions); err != nil {
			return nil, err
		}
	}
	if s.RNG != nil {
		if err := e.src.UnmarshalBinary(s.RNG); err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: resuming round %d: %w", s.Round, err)
		}
	}
	e.conf, e.bestConf, e.bestBits, e.bestRound, e.missed, e.siblings = s.Conf, s.BestConf, s.BestBits, s.BestRound, s.Missed, s.Siblings
	within := ""
	if s.Training != "" {
		e.resume = new(chmm.EMState)
		if err := f.ck.loadGob(s.Training, e.resume); err != nil {
			return nil, err
		}
		within = fmt.Sprintf(", within its EM at iteration %d", e.resume.Iter)
	}
	if f.s.out != nil {
		fmt.Fprintf(f.s.out, "finalisation by EM resumed at round %d (%d states)%s\n", s.Round, m.N(), within)
	}
	return m, nil
}

// trainRound trains round's map m by EM through the confusion matrix, which it
// learns and trims (chmm.GrowBySplitting.Train); the training in progress is saved
// every finalSaveEvery.
func (e *emRounds) trainRound(round int, m *chmm.Model) (*chmm.Model, error) {
	f, cfg := e.f, e.f.s.cfg
	ec := e.s.roundEM(cfg, round, cfg.Final.Iters, e.conf)
	ec.Stop = f.s.ctx.Err
	if e.resume == nil {
		e.s.Checks = nil // a round's checks start with it
	}
	if e.s.EarlyMiss {
		ec.Check, ec.CheckEvery = e.missCheck(round), missCheckEvery
	}
	ec.Resume, e.resume = e.resume, nil
	if f.ck.saves() {
		ec.SaveEvery = f.saveEvery()
		ec.Save = func(es *chmm.EMState) error {
			// The round's bookkeeping as it began (round 0's is not in the state yet).
			e.keep(round)
			name := fmt.Sprintf("final-em-train-%02d-%06d.gob", round, es.Iter)
			return f.saveTraining(name, es, func() { e.s.Training, f.st.FinalEM = name, e.s })
		}
	}
	label := fmt.Sprintf("finalise EM, round %d (%d states)", round, m.N())
	var bar *progress.Bar
	if f.s.out != nil {
		bar = progress.New(f.s.out, label, ec.MaxIters).Every(2 * time.Second)
		if ec.Resume != nil {
			bar.From(ec.Resume.Iter)
		}
	}
	ec.Progress = func(p chmm.Progress) { bar.Update(p.Iter, "ℓ/T %.4f", p.LogLik) }
	h, err := chmm.TrainEM(m, e.train, ec)
	if err != nil {
		return nil, fmt.Errorf("pipeline: finalisation: %w", err)
	}
	bar.Finish(len(h.LogLik), "%s (%d clone-splitting rounds)", h.Stop, len(h.Splits))
	f.record(h, label, "")
	e.conf = h.Confusion
	chmm.TrimConfusion(e.conf, ConfusionMin) // h.Confusion is a new matrix every training
	return m, nil
}

// judge scores round's trained map m on the held-out ends of the walks, keeps the best
// so far, and ends the rounds after patience rounds without a gain of SplitGain, after
// Final.SplitRounds, or where another split would leave fewer than SplitMinSteps
// training steps per state (a finalisation begun before that stop, whose state has
// Patience 0, goes on without it); else it keeps the clones with chmm.UsedShare of their token's
// expected visits (chmm.GrowBySplitting.Judge).
func (e *emRounds) judge(round int, m *chmm.Model) (chmm.SplitJudgement, error) {
	f, cfg := e.f, e.f.s.cfg
	bits, err := e.heldOutBits(m, e.conf)
	if err != nil {
		return chmm.SplitJudgement{}, err
	}
	f.st.Made.HeldOutBits = append(f.st.Made.HeldOutBits, bits)
	if h := f.s.hooks; h != nil && h.emRound != nil {
		if err := h.emRound(round, m, e.conf); err != nil {
			return chmm.SplitJudgement{}, err
		}
	}
	// Under Selective a round that split only some clones and missed is no miss yet:
	// the next round splits every kept clone (a chain of alike clones may need all its
	// copies at once), and only a round that split them all counts.
	missed, full := e.bestBits-bits < SplitGain, !e.s.Selective || fullSplit(m, e.siblings)
	if !full {
		f.st.Made.SplitSome = append(f.st.Made.SplitSome, round)
	}
	switch {
	case !missed:
		e.missed = 0
	case full:
		e.missed++
	}
	if bits < e.bestBits {
		e.best, e.bestConf, e.bestBits, e.bestRound = m.Clone(), e.conf, bits, round
	}
	why := ""
	switch {
	case e.missed == e.patience:
		why = fmt.Sprintf("%d round(s) without a gain of %g bits: the map of round %d kept", e.missed, SplitGain, e.bestRound)
	case !e.s.Selective && round == cfg.Final.SplitRounds:
		why = fmt.Sprintf("%d split rounds done: the map of round %d kept", round, e.bestRound)
	}
	visits, err := chmm.ExpectedVisits(m, e.train, e.conf, 0)
	if err != nil {
		return chmm.SplitJudgement{}, fmt.Errorf("pipeline: finalisation: %w", err)
	}
	var pairs []int // nil: chmm.KeepVisited's keep
	if e.s.FoldPairs {
		pairs = e.siblings
	}
	keep, kept, folded := chmm.KeepPairs(m, visits, chmm.UsedShare, pairs)
	nsplit, splits := kept, "split in two"
	e.split, e.nextFull = nil, true
	if e.s.Selective {
		e.split, nsplit = pairsKept(m, keep, e.siblings)
		switch {
		case missed:
			e.split, nsplit = pairsKept(m, keep, nil)
			splits = "no gain from some clones split: every kept clone split in two"
		case nsplit == 0:
			e.split, nsplit = pairsKept(m, keep, nil)
			splits = "no clone kept both copies of its last split: every kept clone split in two"
		case nsplit < kept:
			splits = fmt.Sprintf("the %d that kept both copies of their last split split in two", nsplit)
			e.nextFull = false
		}
		if why == "" && e.nextFull && e.s.FullSplits == cfg.Final.SplitRounds {
			why = fmt.Sprintf("%d splits of every clone done: the map of round %d kept", e.s.FullSplits, e.bestRound)
		}
	}
	if steps, least := stepsOf(e.train), e.minSteps(); why == "" && e.s.Patience != 0 && steps < least*(kept+nsplit+1) {
		why = fmt.Sprintf("the walks' %d steps are fewer than %d per state of another split (%d): the map of round %d kept", steps, least, kept+nsplit+1, e.bestRound)
	}
	if out := f.s.out; out != nil {
		fmt.Fprintf(out, "round %d: %d states, %d used", round, m.N(), kept)
		if folded > 0 {
			fmt.Fprintf(out, " (%d of them the two copies of a split folded into one)", folded)
		}
		fmt.Fprintf(out, "; held-out ends of the training walks %.4f bits/step", bits)
		if why != "" {
			splits = why
		}
		fmt.Fprintf(out, ": %s\n", splits)
	}
	return chmm.SplitJudgement{Stop: why, Keep: keep}, nil
}

// pairsKept marks, on the map m pruned to keep, the clones to split under
// finalEMState.Selective: those whose state s of m has a sibling (the other copy of its
// last split, siblings[s]) that is kept too; every kept clone where siblings is nil
// (round 0, or a first split). A clone whose copy went unused, and a clone not split
// last time, stays as it is: its token's walks did not need a second copy of it. n
// counts the clones marked.
func pairsKept(m *chmm.Model, keep []bool, siblings []int) (split []bool, n int) {
	tokens := m.StateTokens()
	for s, k := range keep {
		if !k {
			continue
		}
		mark := tokens[s] >= 0 && (siblings == nil || (siblings[s] >= 0 && keep[siblings[s]]))
		split = append(split, mark)
		if mark {
			n++
		}
	}
	return split, n
}

// fullSplit says whether the round that trained m started from a split of every clone
// (siblings pair every clone of a token with another) or from one clone per token
// (siblings nil).
func fullSplit(m *chmm.Model, siblings []int) bool {
	if siblings == nil {
		return true
	}
	for s, k := range m.StateTokens() {
		if k >= 0 && siblings[s] < 0 {
			return false
		}
	}
	return true
}

// choose returns the clones of the kept map to split that the judge marked
// (chmm.GrowBySplitting.Choose, under finalEMState.Selective).
func (e *emRounds) choose(round int, kept *chmm.Model) ([]bool, error) {
	if len(e.split) != kept.N() {
		return nil, fmt.Errorf("pipeline: finalisation: round %d: %d clones marked to split, the kept map has %d", round, len(e.split), kept.N())
	}
	e.keptMap = kept
	return e.split, nil
}

// splitSiblings returns, for each state of next (chmm.SplitSome of kept by split, nil:
// every clone), the state its split paired it with, -1 where none: SplitSome puts each
// token's copies after its clones, in the order of the clones split.
func splitSiblings(kept, next *chmm.Model, split []bool) []int {
	sib := make([]int, next.N())
	for i := range sib {
		sib[i] = -1
	}
	for k := range kept.K() {
		from, to, c := kept.FirstState(k), next.FirstState(k), kept.Clones[k]
		j := 0
		for i := range c {
			if split == nil || split[from+i] {
				a, b := to+i, to+c+j
				sib[a], sib[b] = b, a
				j++
			}
		}
	}
	return sib
}

// heldOutBits returns the held-out ends of the walks under m read through conf, in bits
// per step, scored given their starts: −(ℓ(whole walks) − ℓ(starts)) / held-out steps,
// in one forward pass a walk (chmm.ConfusedLogLikelihoodsFrom).
func (e *emRounds) heldOutBits(m *chmm.Model, conf [][]float64) (float64, error) {
	from := make([]int, len(e.seqs))
	for i, q := range e.start {
		from[i] = q.Len()
	}
	lls, err := chmm.ConfusedLogLikelihoodsFrom(m, e.seqs, from, conf, 0)
	if err != nil {
		return 0, fmt.Errorf("pipeline: finalisation: %w", err)
	}
	var nats float64
	for _, l := range lls {
		nats += l
	}
	return -nats / float64(max(1, e.held)) / math.Ln2, nil
}

// missCheck is round's chmm.EMConfig.Check: it scores the held-out ends at the E-step
// just done (kept in the state's Checks) and stops the round's EM where they stand more
// than MissMargin above the bar (the best round's held-out ends less SplitGain) and
// have gained less than SplitGain since the last check at least MissWindow E-steps
// before. EM then splits within the round where its SplitRounds allow and it finds
// states to split (and the window starts afresh), or ends the round, which the judge
// counts as a miss. Before a best round (round 0) it never stops one. It leaves the
// training alone until it stops it.
func (e *emRounds) missCheck(round int) func(*chmm.Model, [][]float64, int) (bool, error) {
	return func(m *chmm.Model, conf [][]float64, it int) (bool, error) {
		bits, err := e.heldOutBits(m, conf)
		if err != nil {
			return false, err
		}
		e.s.Checks = append(e.s.Checks, heldOutCheck{Iter: it, Bits: bits})
		margin := MissMargin
		if h := e.f.s.hooks; h != nil && h.missMargin > 0 {
			margin = h.missMargin
		}
		above := bits - (e.bestBits - SplitGain)
		if math.IsInf(e.bestBits, 1) || !(above > margin) {
			return false, nil
		}
		for i := len(e.s.Checks) - 1; i >= 0; i-- {
			then := e.s.Checks[i]
			if it-then.Iter < MissWindow {
				continue
			}
			if then.Bits-bits >= SplitGain {
				return false, nil
			}
			if out := e.f.s.out; out != nil {
				fmt.Fprintf(out, "round %d, E-step %d: held-out ends %.4f bits/step, %.4f above the bar of round %d, gained %.4f over %d E-steps: a split, or the round ends as a miss\n",
					round, it, bits, above, e.bestRound, then.Bits-bits, it-then.Iter)
			}
			e.s.Checks = nil // after a split, a new window
			return true, nil
		}
		return false, nil
	}
}

// trainingWalks returns the walks' starts as the rounds train on them: whole, or cut
// into Pieces for a finalisation begun before the segmented E-step.
func (s *finalEMState) trainingWalks(start []chmm.Sequence) []chmm.Sequence {
	if s.Segments == 0 {
		return pieces(start, s.Pieces, minPiece)
	}
	return start
}

// roundEM returns the EM configuration of split round round: at most iters soft
// iterations from confusion matrix conf, FinalEMPseudocount, no hard phase, and under
// Segments the segmented E-step, SQUAREM and the stop on chmm.DefaultStopGain.
func (s *finalEMState) roundEM(cfg Config, round, iters int, conf [][]float64) chmm.EMConfig {
	ec := chmm.DefaultEMConfig()
	ec.MaxIters, ec.Tol, ec.Pseudocount, ec.ViterbiIters = iters, -1, FinalEMPseudocount, 0
	if s.Segments > 0 {
		ec.Segments, ec.Accelerate, ec.StopGain = s.Segments, true, chmm.DefaultStopGain
	}
	ec.Seed = cfg.Seed + uint64(round)<<32
	ec.Confusion, ec.LearnConfusion, ec.ConfusionBeam = conf, true, ConfusionBeam
	return ec
}

// minSteps is SplitMinSteps, or the hook's.
func (e *emRounds) minSteps() int {
	if h := e.f.s.hooks; h != nil && h.splitMinSteps > 0 {
		return h.splitMinSteps
	}
	return SplitMinSteps
}

// stepsOf returns the steps of seqs.
func stepsOf(seqs []chmm.Sequence) int {
	n := 0
	for _, q := range seqs {
		n += q.Len()
	}
	return n
}

// keep puts the rounds' bookkeeping as round begins into the checkpoint.
func (e *emRounds) keep(round int) {
	s := e.s
	s.Round, s.Conf, s.BestConf, s.BestBits, s.BestRound, s.Missed = round, e.conf, e.bestConf, e.bestBits, e.bestRound, e.missed
}

// afterSplit commits the checkpoint of round next, with m (its start) and the best map
// saved beside it, so that an interrupted finalisation resumes at that round
// (chmm.GrowBySplitting.AfterSplit). Runs without a directory (studies) keep nothing.
func (e *emRounds) afterSplit(next int, m *chmm.Model) error {
	e.keep(next)
	s, f := e.s, e.f
	if s.Selective {
		e.siblings = splitSiblings(e.keptMap, m, e.split)
		s.Siblings = e.siblings
		if e.nextFull {
			s.FullSplits++
		}
	}
	s.Training = ""
	if !f.ck.saves() {
		return nil
	}
	var err error
	if s.RNG, err = e.src.MarshalBinary(); err != nil {
		return fmt.Errorf("pipeline: finalisation: %w", err)
	}
	// New names each round: the files the last commit names stay until this one lands.
	s.Start = fmt.Sprintf("final-em-start-%02d.model", s.Round)
	bestName := fmt.Sprintf("final-em-best-%02d.model", s.BestRound)
	for _, file := range []struct {
		name string
		m    *chmm.Model
	}{{s.Start, m}, {bestName, e.best}} {
		if file.name == s.Best {
			continue // the best map has not changed
		}
		if err := file.m.Save(f.ck.path(file.name)); err != nil {
			return fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if err := f.ck.record(file.name); err != nil {
			return err
		}
	}
	s.Best = bestName
	f.st.FinalEM = s
	return f.commit()
}

// startConfusion is FinalEM's first confusion matrix: 0.9 on the diagonal and 0.1
// spread evenly over the other tokens. A token that shows on fewer than
// chmm.NoisyStepsPerClone steps of seqs (a code the encoder all but stopped using) is
// read only as itself (C[k][k] = 1, learned no further): its clones are never
// candidates for another token, and its few steps are left to the others' rows as
// misreads (left free, such a row holds no steps of its own to anchor it and can
// become a wildcard read as several tokens). rare lists those tokens.
func startConfusion(seqs []chmm.Sequence, k int) (c [][]float64, rare []int) {
	count := make([]int, k)
	for _, q := range seqs {
		for _, o := range q.Obs {
			count[o]++
		}
	}
	common := 0
	for i := range k {
		if count[i] < chmm.NoisyStepsPerClone {
			rare = append(rare, i)
		} else {
			common++
		}
	}
	c = make([][]float64, k)
	for i := range c {
		c[i] = make([]float64, k)
		if count[i] < chmm.NoisyStepsPerClone || common == 1 {
			c[i][i] = 1
			continue
		}
		for o := range c[i] {
			if o != i {
				c[i][o] = 0.1 / float64(k-1)
			}
		}
		c[i][i] = 0.9
	}
	return c, rare
}

// minPiece is the shortest piece an EM finalisation begun before the segmented E-step
// cuts a training walk into.
const minPiece = 10000

// pieces cuts seqs into at least n sequences where each piece keeps at least min
// steps: the longest sequence is halved until there are n or halving would pass min.
func pieces(seqs []chmm.Sequence, n, min int) []chmm.Sequence {
	out := slices.Clone(seqs)
	for len(out) < n {
		i := 0
		for j, s := range out {
			if s.Len() > out[i].Len() {
				i = j
			}
		}
		s := out[i]
		h := s.Len() / 2
		if h < min {
			break
		}
		a := chmm.Sequence{Obs: s.Obs[:h], Actions: s.Actions[:h-1]}
		b := chmm.Sequence{Obs: s.Obs[h:], Actions: s.Actions[h:]}
		out = slices.Insert(slices.Delete(out, i, i+1), i, a, b)
	}
	return out
}
