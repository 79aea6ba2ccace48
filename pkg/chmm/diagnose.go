package chmm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// Diagnosis is a label-free account of how a model explains walks of its world: it
// reads only tokens and actions, never places. A map that has resolved a world whose
// actions are deterministic predicts each next token almost surely, on walks it was
// not trained on as on its training walks; a map that has not merges places into one
// clone, or has learned its training walks by rote (Judge).
type Diagnosis struct {
	// TrainBits is −log₂ p(tokens | actions) per step on the training walks.
	TrainBits float64 `json:"train_bits"`
	// HeldOutBits is the same on the held-out walks (HeldOutSteps of them; 0: none
	// given). HeldOutZero: a held-out step has probability zero under the model, and
	// HeldOutBits is not defined.
	HeldOutBits  float64 `json:"held_out_bits"`
	HeldOutSteps int     `json:"held_out_steps"`
	HeldOutZero  bool    `json:"held_out_zero,omitempty"`
	// Determinism is the share of the training walks' steps whose Viterbi state i and
	// action a predict the next token: the row T[a,i,:] puts at least
	// DeterministicMass on the clones of one token.
	Determinism float64 `json:"determinism"`
	// FullTokens are the tokens all of whose clones the training walks' Viterbi paths
	// use (each clone at least UsedShare of the token's visits): their budget binds.
	FullTokens []int `json:"full_tokens"`
	// UsedClones of Clones (Σ_k C_k) are used by the training paths, in that sense.
	UsedClones int `json:"used_clones"`
	Clones     int `json:"clones"`
	// Visits are, per state, the steps the training walks' Viterbi paths spend in it
	// (ViterbiVisits; not stored).
	Visits []int `json:"-"`
	// Steps are the training steps, in Walks walks.
	Steps int `json:"steps"`
	Walks int `json:"walks,omitempty"`
	// Misses is the share of the training walks' moves whose next token is not the
	// one their Viterbi state i and action a make most likely (through the confusion
	// matrix, if any), and Surprises the share of their steps after the first whose
	// token had probability below ½ given the steps before (the forward pass's
	// p(o_t | o_<t, a_<t)): the steps the map cannot foresee. A Viterbi path chooses
	// each state knowing what comes next; the forward pass cannot. On a resolved map
	// both count the misreads; a map whose clones stand for several places is
	// surprised where its path, choosing among them by what follows, is not.
	//
	// Judge compares them only for maps read through a confusion matrix (Confused):
	// on hard tokens a Viterbi path routes around misreads through other clones and
	// misses fewer steps than the misreads.
	Confused  bool    `json:"confused,omitempty"`
	Misses    float64 `json:"misses"`
	Surprises float64 `json:"surprises"`
	// SurprisesAfterMiss (maps read through a confusion matrix) counts the surprised
	// steps by how many steps after the last step the Viterbi path missed they come:
	// element d for d steps (0: at a missed step), the last element for
	// len(SurprisesAfterMiss)−1 or more, or no miss before in the walk. A misread
	// surprises the forward pass at once and for a few steps after, until the next
	// tokens place it again; a clone that stands for several places surprises it
	// wherever their futures part, misread or not (Judge: Unexplained).
	SurprisesAfterMiss []int `json:"surprises_after_miss,omitempty"`
	// SplitsPast is the number of split rounds its trainer ran past this map, none of
	// them predicting held-out steps better (set by the caller; 0: none, or not
	// known). Judge then does not advise more clones for a merged map.
	SplitsPast int `json:"splits_past,omitempty"`
	// Reread (a map of noisy hard tokens; set by the caller, nil: none) is the
	// diagnosis of the same map and training walks with the tokens read through a
	// confusion matrix fitted to them, the map held fixed (FitConfusion): a hard-token
	// map absorbs misreads into its clones, and read through that matrix they are
	// misreads again. Judge applies to it the merged-places test of maps read through
	// a confusion matrix (Unexplained).
	Reread *Diagnosis `json:"reread,omitempty"`
	// Verdict is Judge's (set by the caller).
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Thresholds of Diagnose and Verdict.
const (
	DeterministicMass = 0.9  // a row is deterministic when one token's clones hold this much
	UsedShare         = 0.01 // a clone is used with this share of its token's visits
)

// Diagnose computes the Diagnosis of m on its training walks and held-out walks of
// the same world (heldOut may be empty), on workers goroutines (<= 0: GOMAXPROCS).
func Diagnose(m *Model, train, heldOut []Sequence, workers int) (*Diagnosis, error) {
	return DiagnoseConfused(m, train, heldOut, nil, workers)
}

// DiagnoseConfused is Diagnose of a map that reads its tokens through the confusion
// matrix c (EMConfig.Confusion; nil: hard tokens): the likelihoods are under c
// (ConfusedLogLikelihoods) and the paths are Decode's under Confused emissions.
func DiagnoseConfused(m *Model, train, heldOut []Sequence, c [][]float64, workers int) (*Diagnosis, error) {
	d := &Diagnosis{FullTokens: []int{}, Confused: c != nil}
	logLik := LogLikelihood
	if c != nil {
		logLik = func(m *Model, seqs []Sequence) (float64, error) {
			lls, err := ConfusedLogLikelihoods(m, seqs, c, workers)
			var ll float64
			for _, v := range lls {
				ll += v
			}
			return ll, err
		}
	}
	var surprisedAt [][]int
	if c != nil {
		surprisedAt = make([][]int, len(train))
	}
	ll, surprised, err := forwardStats(m, train, c, workers, surprisedAt)
	if err != nil {
		return nil, err
	}
	for _, s := range train {
		d.Steps += s.Len()
	}
	d.Walks = len(train)
	if d.Steps == 0 {
		return nil, errors.New("chmm: Diagnose: no training steps")
	}
	d.TrainBits = bitsPerStep(ll, d.Steps)
	if after := d.Steps - len(train); after > 0 {
		d.Surprises = float64(surprised) / float64(after)
	}
	if len(heldOut) > 0 {
		n := 0
		for _, s := range heldOut {
			n += s.Len()
		}
		hl, err := logLik(m, heldOut)
		switch {
		case errors.Is(err, ErrZeroProbability):
			d.HeldOutZero = true
		case err != nil:
			return nil, err
		case n > 0:
			d.HeldOutBits = bitsPerStep(hl, n)
		}
		d.HeldOutSteps = n
	}
	var paths [][]int
	if c == nil {
		if paths, _, err = ViterbiAll(m, train, workers); err != nil {
			return nil, err
		}
	} else {
		paths = make([][]int, len(train))
		err := parallel(len(train), workerCount(workers, len(train)), func(_, q int) error {
			var err error
			paths[q], _, err = Decode(m, Confused{Tokens: train[q].Obs, C: c}, train[q].Actions)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	n := m.N()
	det, pred := rowPredictions(m.Transitions(), m.StateTokens(), m.K(), c)
	visits, moves, detMoves, missed := walkPaths(det, pred, n, train, paths)
	if moves > 0 {
		d.Determinism = float64(detMoves) / float64(moves)
		d.Misses = float64(missed) / float64(moves)
	}
	if c != nil {
		d.SurprisesAfterMiss = afterMiss(pred, n, train, paths, surprisedAt)
	}
	d.Visits = visits
	first := 0
	for k, c := range m.Clones {
		tok := 0
		for _, v := range visits[first : first+c] {
			tok += v
		}
		used := 0
		for _, v := range visits[first : first+c] {
			if tok > 0 && float64(v) >= UsedShare*float64(tok) {
				used++
			}
		}
		d.UsedClones += used
		d.Clones += c
		if tok > 0 && used == c {
			d.FullTokens = append(d.FullTokens, k)
		}
		first += c
	}
	return d, nil
}

// rowPredictions returns, per (a, i) row of trans (A·N rows of N), whether one
// next token holds DeterministicMass of it and the token most likely seen next
// (read through c; nil: hard tokens).
func rowPredictions(trans []float64, tokOf []int, K int, c [][]float64) (det []bool, pred []int) {
	n := len(tokOf)
	det, pred = make([]bool, len(trans)/n), make([]int, len(trans)/n)
	tok, obs := make([]float64, K), make([]float64, K)
	for r := range det {
		clear(tok)
		for j, p := range trans[r*n : (r+1)*n] {
			if k := tokOf[j]; k >= 0 {
				tok[k] += p
			}
		}
		for _, p := range tok {
			if p >= DeterministicMass {
				det[r] = true
				break
			}
		}
		if c != nil {
			clear(obs)
			for k, p := range tok {
				for o, ck := range c[k] {
					obs[o] += p * ck
				}
			}
		} else {
			copy(obs, tok)
		}
		for o, p := range obs {
			if p > obs[pred[r]] {
				pred[r] = o
			}
		}
	}
	return det, pred
}

// walkPaths counts, along the walks' state paths, the steps in each of the n states
// and the moves: all, those from a deterministic row, and those whose next token is
// not their row's prediction (rowPredictions).
func walkPaths(det []bool, pred []int, n int, walks []Sequence, paths [][]int) (visits []int, moves, detMoves, missed int) {
	visits = make([]int, n)
	for q, path := range paths {
		for t, s := range path {
			visits[s]++
			if t+1 == len(path) {
				continue
			}
			moves++
			r := walks[q].Actions[t]*n + s
			if det[r] {
				detMoves++
			}
			if missedNext(pred, n, walks[q], path, t) {
				missed++
			}
		}
	}
	return visits, moves, detMoves, missed
}

// missedNext says whether walk w's token at t+1 is not the prediction of the row of its
// path's state and action at t (rowPredictions).
func missedNext(pred []int, n int, w Sequence, path []int, t int) bool {
	return w.Obs[t+1] != pred[w.Actions[t]*n+path[t]]
}

// AfterMissBins is len(Diagnosis.SurprisesAfterMiss).
const AfterMissBins = 8

// afterMiss is Diagnosis.SurprisesAfterMiss: surprisedAt[q] are the surprised steps
// of walk q (forwardStats), and a step t ≥ 1 is missed as missedNext says at t−1.
func afterMiss(pred []int, n int, walks []Sequence, paths, surprisedAt [][]int) []int {
	hist := make([]int, AfterMissBins)
	for q, at := range surprisedAt {
		last, next := -1, 0 // the last missed step up to t; the next surprised step
		for t := 1; t < len(paths[q]) && next < len(at); t++ {
			if missedNext(pred, n, walks[q], paths[q], t-1) {
				last = t
			}
			if at[next] != t {
				continue
			}
			next++
			d := AfterMissBins - 1
			if last >= 0 {
				d = min(d, t-last)
			}
			hist[d]++
		}
	}
	return hist
}

// forwardStats returns ℓ of seqs under m (tokens read through c; nil: hard tokens)
// and the steps after the first of each sequence whose token had probability below
// ½ given the steps before (the forward pass's normaliser c_t), from one forward pass.
// With hard tokens a sequence whose probability-space pass underflows is redone in
// log space, as LogLikelihood does. If at is not nil, at[q] receives those steps of
// sequence q, in order.
func forwardStats(m *Model, seqs []Sequence, c [][]float64, workers int, at [][]int) (float64, int, error) {
	if err := m.Check(seqs); err != nil {
		return 0, 0, err
	}
	p := newParams(m)
	fw := p.forward
	if c != nil {
		if err := ValidateConfusion(c, m.K()); err != nil {
			return 0, 0, err
		}
		p.setConfusion(c, 0)
		fw = p.forwardConf
	}
	var lp *logParams
	var once sync.Once
	nw := workerCount(workers, len(seqs))
	work := make([]fbWork, nw)
	lls, count := make([]float64, len(seqs)), make([]int, len(seqs))
	err := parallel(len(seqs), nw, func(w, q int) error {
		ll, step, ok := fw(seqs[q], p.pi, &work[w])
		if ok {
			lls[q] = ll
			for t, ct := range work[w].scale[1:seqs[q].Len()] {
				if ct < 0.5 {
					count[q]++
					if at != nil {
						at[q] = append(at[q], t+1)
					}
				}
			}
			return nil
		}
		if c != nil {
			return zeroProbError(q, step)
		}
		once.Do(func() { lp = newLogParams(m) })
		ll, step, ok = lp.logForwardSteps(seqs[q], func(t int, logC float64) {
			if logC < -math.Ln2 {
				count[q]++
				if at != nil {
					at[q] = append(at[q], t)
				}
			}
		})
		if !ok {
			return zeroProbError(q, step)
		}
		lls[q] = ll
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	var ll float64
	n := 0
	for q := range seqs {
		ll += lls[q]
		n += count[q]
	}
	return ll, n, nil
}

// SurprisedStates marks the states that the Viterbi paths of seqs (ViterbiAll) hold
// one step before each step that surprises m (Diagnosis.Surprises: the forward pass
// gave its token probability below ½), and returns the mask and how many it marks: a
// clone that stands for several places, told apart only by what comes next, is where
// a path stands before the surprise.
func SurprisedStates(m *Model, seqs []Sequence, workers int) ([]bool, int, error) {
	at := make([][]int, len(seqs))
	if _, _, err := forwardStats(m, seqs, nil, workers, at); err != nil {
		return nil, 0, err
	}
	paths, _, err := ViterbiAll(m, seqs, workers)
	if err != nil {
		return nil, 0, err
	}
	mask, n := make([]bool, m.N()), 0
	for q, steps := range at {
		for _, t := range steps {
			if i := paths[q][t-1]; !mask[i] {
				mask[i] = true
				n++
			}
		}
	}
	return mask, n, nil
}

func bitsPerStep(ll float64, steps int) float64 {
	return max(0, -ll/float64(steps)/math.Ln2)
}

// Token kinds of Judge: exact tokens (symbols) or tokens read from images, which a
// resolved map still mispredicts at the encoder's misreading rate.
const (
	ExactTokens = false
	NoisyTokens = true
)

// Verdict is Judge's label-free judgement of a map.
type Verdict struct {
	Resolved bool `json:"resolved"`
	// Problems name what is wrong (ProblemClones, ProblemFit, ProblemData); empty when
	// resolved.
	Problems []string `json:"problems,omitempty"`
	// Text says it in one line for people, with the numbers and what to try.
	Text string `json:"text"`
}

// Problems of a Verdict.
const (
	// ProblemClones: the map cannot predict its own training walks and some token uses
	// every clone it has: give it more clones.
	ProblemClones = "clones"
	// ProblemFit: the map cannot predict its own training walks although every token
	// has spare clones: training stopped on a plateau (more iterations, restarts, EM).
	ProblemFit = "fit"
	// ProblemData: held-out walks are predicted far worse than the training walks (or
	// not at all), or with noisy tokens the clones used have too few training steps
	// (NoisyStepsPerClone): the map learned its walks by rote; give it more or longer
	// walks.
	ProblemData = "data"
	// ProblemPredict (noisy tokens): the map predicts the next token on too few
	// training steps: the map is not resolved, or the encoder misreads too often.
	ProblemPredict = "predict"
	// ProblemMerged: the map needs hindsight to tell which place a clone is. Noisy
	// tokens read through a confusion matrix (the map's own, or for a hard-token map
	// one fitted to it: Reread): it is surprised where no misread explains it
	// (Unexplained above NoisyUnexplained). Exact tokens: it is surprised
	// past what localising at the start of its walks explains (LateSurprises above
	// ExactSurprises).
	ProblemMerged = "merged"
)

// Thresholds of Judge.
//
// Exact tokens: a resolved map of a world with deterministic actions costs almost
// nothing per step on its training walks (the probability kept for unseen moves),
// and at most ExactBits bits per step on a held-out walk. A map trained on little
// data may be right and still cost more on walks it has not seen: the verdict then
// asks for more data. The forward pass of a resolved map is surprised (the token
// seen had probability below ½) only while it localises at the start of a walk; a
// map that merges places is surprised wherever their futures part. LateSurprises
// allows LocaliseSurprises per walk, and above ExactSurprises the map is merged.
//
// Noisy tokens: a misread costs bits whether or not the map is resolved, so the
// verdict reads Determinism instead (resolved: at least NoisyDeterminism), and asks
// for NoisyStepsPerClone training steps per used clone (about 50 per clone and
// action), so that a walk learned by rote is not called resolved. The thresholds
// were calibrated on runs scored against their true maps.
//
// Maps read through a confusion matrix: a misread surprises the forward pass at the
// step its Viterbi path misses and for a few steps after; a merged clone surprises it
// wherever its places' futures part. Unexplained (the share surprised more than
// NoisyAftermath steps after the path's last miss) above NoisyUnexplained means
// merged. A map of hard tokens is read for this test through a confusion matrix
// fitted to it with its transitions held fixed (Reread): its clones absorb the
// misreads, which that matrix reads as misreads again.
const (
	ExactBits          = 0.02
	LocaliseSurprises  = 10   // surprises per walk that localising may explain (exact tokens)
	ExactSurprises     = 3e-4 // LateSurprises above which a map of exact tokens is merged
	NoisyDeterminism   = 0.75
	NoisyStepsPerClone = 200
	NoisyAftermath     = AfterMissBins - 2 // steps after a miss whose surprises misreads may explain: 6
	NoisyUnexplained   = 0.0015            // Unexplained above which a map read through C is merged
)

// LateSurprises is the share of the training steps that surprise the map beyond the
// LocaliseSurprises per walk that localising at its start may explain (0 if none).
func (d *Diagnosis) LateSurprises() float64 {
	if d.Steps == 0 {
		return 0
	}
	surprised := d.Surprises * float64(d.Steps-d.Walks) // Surprises counts the steps after each walk's first
	return max(0, surprised-LocaliseSurprises*float64(d.Walks)) / float64(d.Steps)
}

// Unexplained is the share of the training steps that surprise a map read through a
// confusion matrix more than NoisyAftermath steps after its Viterbi path's last miss
// (SurprisesAfterMiss), beyond the LocaliseSurprises per walk that localising at
// its start may explain: surprises that misreads do not explain.
func (d *Diagnosis) Unexplained() float64 {
	if d.Steps == 0 || len(d.SurprisesAfterMiss) <= NoisyAftermath+1 {
		return 0
	}
	n := 0
	for _, v := range d.SurprisesAfterMiss[NoisyAftermath+1:] {
		n += v
	}
	return max(0, float64(n)-LocaliseSurprises*float64(d.Walks)) / float64(d.Steps)
}

// MergedReading is the diagnosis that Judge's merged-places test reads for noisy
// tokens: d itself for a map read through its confusion matrix (Confused), d.Reread
// for a hard-token map read through a fitted one, nil when there is neither.
func (d *Diagnosis) MergedReading() *Diagnosis {
	if d.Confused {
		return d
	}
	return d.Reread
}

// Judge returns the verdict on the diagnosis for tokens of the given kind.
func (d *Diagnosis) Judge(noisy bool) *Verdict {
	v := &Verdict{}
	held := d.HeldOutBits
	if d.HeldOutSteps == 0 {
		held = d.TrainBits
	}
	full := ""
	if len(d.FullTokens) > 0 {
		full = fmt.Sprintf("; token(s) %s use every clone", intList(d.FullTokens))
	}
	if !noisy {
		fitBad := d.TrainBits > ExactBits
		dataBad := d.HeldOutZero || held > ExactBits && (!fitBad || held > 2*d.TrainBits+0.01)
		switch {
		case fitBad && len(d.FullTokens) > 0:
			v.Problems = append(v.Problems, ProblemClones)
		case fitBad:
			v.Problems = append(v.Problems, ProblemFit)
		}
		if dataBad {
			v.Problems = append(v.Problems, ProblemData)
		}
		if d.LateSurprises() > ExactSurprises {
			v.Problems = append(v.Problems, ProblemMerged)
		}
	} else {
		if d.Determinism < NoisyDeterminism {
			v.Problems = append(v.Problems, ProblemPredict)
		}
		if r := d.MergedReading(); r != nil && r.Unexplained() > NoisyUnexplained {
			v.Problems = append(v.Problems, ProblemMerged)
		}
		if d.UsedClones > 0 && d.Steps < NoisyStepsPerClone*d.UsedClones {
			v.Problems = append(v.Problems, ProblemData)
		}
	}
	v.Resolved = len(v.Problems) == 0
	heldText := "no held-out walk"
	switch {
	case d.HeldOutZero:
		heldText = "a held-out step is impossible under the map"
	case d.HeldOutSteps > 0:
		heldText = fmt.Sprintf("held-out %.4f bits/step", d.HeldOutBits)
	}
	hindsight := ""
	switch {
	case d.Confused:
		hindsight = fmt.Sprintf("; %.2f%% of steps surprise the map, %.2f%% with hindsight, %.2f%% more than %d steps after a miss",
			100*d.Surprises, 100*d.Misses, 100*d.Unexplained(), NoisyAftermath)
	case !noisy && d.Surprises > 0:
		hindsight = fmt.Sprintf("; %.3f%% of steps surprise the map", 100*d.Surprises)
	case d.Reread != nil:
		r := d.Reread
		hindsight = fmt.Sprintf("; read through a fitted confusion matrix, %.2f%% of steps surprise the map, %.2f%% with hindsight, %.2f%% more than %d steps after a miss",
			100*r.Surprises, 100*r.Misses, 100*r.Unexplained(), NoisyAftermath)
	}
	nums := fmt.Sprintf("%s, training %.4f; %.1f%% of steps predict the next token%s; %d of %d clones used%s",
		heldText, d.TrainBits, 100*d.Determinism, hindsight, d.UsedClones, d.Clones, full)
	if v.Resolved {
		v.Text = "resolved (" + nums + ")"
		return v
	}
	var dataAdvice string
	switch {
	case noisy:
		dataAdvice = fmt.Sprintf("more or longer training walks (%d steps for %d used clones: fewer than %d per clone, too few to learn each clone's moves)",
			d.Steps, d.UsedClones, NoisyStepsPerClone)
	case d.Steps > 0:
		dataAdvice = fmt.Sprintf("more or longer training walks, say twice its %d training steps (the map fits its training walks far better than new ones)", d.Steps)
	default:
		dataAdvice = "more or longer training walks (the map fits its training walks far better than new ones)"
	}
	var try []string
	for _, p := range v.Problems {
		try = append(try, map[string]string{
			ProblemClones: "more clones for the full tokens",
			ProblemFit:    "more iterations, restarts or EM (training stopped on a plateau)",
			ProblemData:   dataAdvice,
			ProblemMerged: mergedAdvice(noisy, d.Reread != nil, d.SplitsPast),
			ProblemPredict: fmt.Sprintf("more clones or joint iterations, or a better encoder (the map predicts the next token on fewer than %.0f%% of steps: "+
				"either it is not resolved or the tokens are misread too often)", 100*NoisyDeterminism),
		}[p])
	}
	v.Text = "NOT resolved (" + nums + "): try " + strings.Join(try, "; ")
	return v
}

// mergedAdvice is what Judge suggests for ProblemMerged (reread: judged on
// Diagnosis.Reread, a hard-token map).
func mergedAdvice(noisy, reread bool, splitsPast int) string {
	if !noisy {
		return fmt.Sprintf("EM, restarts or another seed (over %.2f%% of the steps surprise the map beyond localising at the start of its walks: "+
			"some clones stand for several places, told apart only by what comes next)", 100*ExactSurprises)
	}
	why := fmt.Sprintf("over %.2f%% of the steps surprise the map more than %d steps after its Viterbi path last missed, where misreads do not explain them: "+
		"its clones stand for several places, told apart only by what comes next", 100*NoisyUnexplained, NoisyAftermath)
	if reread {
		// A hard-token map's clones also hold its misreads; EM through a learned
		// confusion matrix leaves them to the matrix.
		return "the EM finalisation through a learned confusion matrix, or more clones (read through a confusion matrix fitted to it, " + why + ")"
	}
	if splitsPast == 0 {
		return "more training per split round (EM iterations), more clones (splits) or more data (" + why + ")"
	}
	// Split rounds past the kept map predicted held-out steps worse, so more clones
	// will not help; a seed for the finalisation alone keeps the walk and the encoder.
	return fmt.Sprintf("more or longer training walks, or another seed (a new walk and encoder); more EM iterations per split round if they were fewer than 1000 (%s; "+
		"%d split round(s) past this map predicted held-out steps worse, so more clones will not help)", why, splitsPast)
}

func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
