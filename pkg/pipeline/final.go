package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// finalSaveEvery is how often the finalisation saves its training in progress (a
// round's EM, or a gradient training), so that an interruption loses at most this
// much of it.
const finalSaveEvery = 5 * time.Minute

// finalMap is what the finalisation hands the evaluation: the frozen encoder (reading
// its codes through the token merge, if any) and the map.
type finalMap struct {
	vq  *vqvae.Model
	hmm *chmm.Model
}

// finaliser is phase 3 in progress: the run's checkpoint, whose finalisation fields it
// keeps, and when the finalisation's seconds not yet committed began.
type finaliser struct {
	s     *session
	ck    *checkpoint
	st    *runState // ck.st
	start time.Time
	// refine marks the refinement's finalisation (refine.go): its seconds and history
	// rows are the refinement's, its runs' names start with "refine ", and its map is
	// saved by the refinement.
	refine bool
	// valid, if set, is the validation walk (tests); nil: data.validationWalk.
	valid *chmm.Sequence
}

// phase is the phase whose seconds and history rows the finaliser records.
func (f *finaliser) phase() string {
	if f.refine {
		return PhaseRefine
	}
	return PhaseFinal
}

// finalise is phase 3: the encoder frozen, the map trained on the training frames'
// hard tokens (merged first with Config.Final.MergeTokens) by the gradient finalisation
// (gradient) or by EM through a confusion matrix (em), saved with the encoder as the
// run's model files. It starts from j, the joint phase's model, or from the state's
// joint checkpoint when j is nil.
func finalise(s *session, ck *checkpoint, j *Joint) (*finalMap, error) {
	cfg := s.cfg
	if j == nil {
		var err error
		if j, err = openJoint(s, ck, ck.st.Checkpoint); err != nil {
			return nil, err
		}
	}
	f := &finaliser{s: s, ck: ck, st: ck.st, start: time.Now()}
	tokens, err := s.d.encodeShown(j.VQ, s.out, "finalisation")
	if err != nil {
		return nil, err
	}
	f.st.joint().End = s.d.tokenEntropies(tokens)
	hmm, err := j.HMM()
	if err != nil {
		return nil, err
	}
	if cfg.Final.MergeTokens > 0 {
		if tokens, err = f.mergeTokens(j.VQ, tokens); err != nil {
			return nil, err
		}
		// The finalisation starts afresh (Validate: BudgetShare or EM); this model only
		// carries the merged tokens and the actions.
		hmm = chmm.New(chmm.UniformClones(j.VQ.NumTokens(), 1), hmm.NumActions, nil)
	}
	share := make([]float64, hmm.K())
	for _, x := range tokens {
		share[x] += 1 / float64(len(tokens))
	}
	seqs := s.d.sequences(tokens)
	if finalByEM(cfg, &f.st.Made) { // an EM fallback resumes as EM
		hmm, err = f.byEM(seqs, hmm.K(), hmm.NumActions, j.VQ, nil)
	} else if hmm, err = f.gradient(seqs, share, hmm); err == nil && f.st.FinalGrad.FallBack && !cfg.Final.KeepMerged {
		hmm, err = f.fallBack(hmm, seqs, j.VQ)
	}
	if err != nil {
		return nil, err
	}
	if err := f.saveMap(j.VQ, hmm); err != nil {
		return nil, err
	}
	return &finalMap{vq: j.VQ, hmm: hmm}, nil
}

// byEM is the EM finalisation of seqs (k tokens, numActions actions), or a fallback's
// EM (begun or resumed): then choose keeps EM's map or the gradient map the state set
// aside (FallbackGrad), grad, or where grad is nil the file fallbackGradFile, with a
// validation walk read by vq.
func (f *finaliser) byEM(seqs []chmm.Sequence, k, numActions int, vq *vqvae.Model, grad *chmm.Model) (*chmm.Model, error) {
	hmm, err := f.em(seqs, k, numActions)
	if err != nil || f.st.FallbackGrad == nil {
		return hmm, err
	}
	if grad == nil {
		if grad, err = f.ck.loadModel(fallbackGradFile, k, numActions); err != nil {
			return nil, err
		}
	}
	return f.choose(grad, hmm, seqs, vq)
}

// fallBack returns the gradient finalisation's map hmm if the verdict's test for
// merged places passes it (read through a confusion matrix fitted to its training
// walks seqs, reread: at most chmm.NoisyUnexplained of the steps surprise it where no
// misread explains them) or the walks are too short to tell (fewer than
// chmm.NoisyStepsPerClone steps per used clone: the verdict asks for more data).
// Else the EM finalisation makes a map from the same walks, and choose keeps EM's map
// or, where it reads as merged too, the one that predicts a validation walk read by vq
// better (Config.Final.KeepMerged keeps hmm without EM). The switch is committed
// before EM begins, with its reason in the state's Made.Fallback and hmm set aside
// (FallbackGrad, fallbackGradFile), so that an interrupted run resumes in EM and
// compares when it ends; the gradient finalisation's runs and growth checks stay in
// the record, its pruning and budget doublings are set aside with hmm.
func (f *finaliser) fallBack(hmm *chmm.Model, seqs []chmm.Sequence, vq *vqvae.Model) (*chmm.Model, error) {
	dg, err := reread(hmm, seqs)
	if err != nil {
		return nil, err
	}
	if p := dg.Judge(chmm.NoisyTokens).Problems; !slices.Contains(p, chmm.ProblemMerged) || slices.Contains(p, chmm.ProblemData) {
		return hmm, nil // passed, or too little data to tell (the verdict asks for more)
	}
	f.st.Made.Fallback = fmt.Sprintf("the gradient finalisation's map (%d states) reads as merged: through a confusion matrix fitted to it, %.2f%% of the training steps surprise it more than %d steps after a miss (more than %.2f%%)",
		hmm.N(), 100*dg.Unexplained(), chmm.NoisyAftermath, 100*chmm.NoisyUnexplained)
	f.st.FallbackGrad = &fallbackGrad{Pruned: f.st.Made.Pruned, GrowRounds: f.st.Made.GrowRounds}
	f.st.Made.Pruned, f.st.Made.GrowRounds = 0, 0
	f.st.FinalGrad = nil
	if f.ck.saves() { // runs without a directory (studies) keep nothing
		if err := hmm.Save(f.ck.path(fallbackGradFile)); err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if err := f.ck.record(fallbackGradFile); err != nil {
			return nil, err
		}
		if err := f.commit(); err != nil {
			return nil, err
		}
	}
	if f.s.out != nil {
		fmt.Fprintf(f.s.out, "finalisation: %s; finalised again by EM through a learned confusion matrix (--set final.keep_merged=true keeps this one)\n", f.st.Made.Fallback)
	}
	return f.byEM(seqs, hmm.K(), hmm.NumActions, vq, hmm)
}

// choose returns the map the fallback keeps of its two maps of the same tokens, grad
// (the gradient finalisation's, which reads as merged) and em (EM's, whose record Made
// holds), without labels. EM's map is kept if the verdict's test for merged places
// passes it, read through its learned confusion matrix (Made.Confusion) on the training
// walks seqs. Otherwise neither map passes, and the one that predicts the validation
// walk (validation, read by vq) better is kept: each read through a confusion matrix
// fitted to it on seqs (as the reread fits one), in bits per step, EM's on a tie. A
// kept grad gets back its record (FallbackGrad) and EM's rounds, confusion matrix and
// doublings leave it. A comparison is the record's Compared (nil where EM's map
// passed); the state's FallbackGrad is cleared.
func (f *finaliser) choose(grad, em *chmm.Model, seqs []chmm.Sequence, vq *vqvae.Model) (*chmm.Model, error) {
	dg, err := chmm.DiagnoseConfused(em, seqs, nil, f.st.Made.Confusion, 0)
	if err != nil {
		return nil, fmt.Errorf("pipeline: finalisation: %w", err)
	}
	if !slices.Contains(dg.Judge(chmm.NoisyTokens).Problems, chmm.ProblemMerged) {
		f.st.FallbackGrad = nil
		if f.s.out != nil {
			fmt.Fprintf(f.s.out, "finalisation: EM's map passes the test for merged places (%.2f%% of the training steps surprise it more than %d steps after a miss): it is kept\n",
				100*dg.Unexplained(), chmm.NoisyAftermath)
		}
		return em, nil
	}
	valid, err := f.validation(vq)
	if err != nil {
		return nil, err
	}
	gb, err := validationBits(grad, seqs, valid)
	if err != nil {
		return nil, err
	}
	eb, err := validationBits(em, seqs, valid)
	if err != nil {
		return nil, err
	}
	c := &evaluate.MapChoice{Steps: valid.Len(), GradientBits: gb, EMBits: eb, Kept: FinalEM}
	kept := em
	if gb >= 0 && (eb < 0 || gb < eb) {
		c.Kept, kept = FinalGradient, grad
		made := &f.st.Made
		if g := f.st.FallbackGrad; g != nil {
			made.Pruned, made.GrowRounds = g.Pruned, g.GrowRounds
		}
		made.Confusion, made.HeldOutBits, made.Doublings = nil, nil, 0
	}
	f.st.Made.Compared, f.st.FallbackGrad = c, nil
	if f.s.out != nil {
		fmt.Fprintf(f.s.out, "finalisation: EM's map reads as merged too; on a %d-step validation walk the gradient map reads %s bits/step, EM's %s: the %s map is kept\n",
			c.Steps, bitsText(gb), bitsText(eb), map[string]string{FinalGradient: "gradient", FinalEM: "EM"}[c.Kept])
	}
	return kept, nil
}

// bitsText is bits per step as validationBits gives them: "%.4f", or "∞" for -1.
func bitsText(b float64) string {
	if b < 0 {
		return "∞"
	}
	return fmt.Sprintf("%.4f", b)
}

// validationBits returns −log₂ p(valid's tokens | its actions) per step under hmm read
// through a confusion matrix fitted to hmm on the training walks seqs (fitConfusion),
// or -1 where hmm gives valid probability 0.
func validationBits(hmm *chmm.Model, seqs []chmm.Sequence, valid chmm.Sequence) (float64, error) {
	c, err := fitConfusion(hmm, seqs)
	if err != nil {
		return 0, err
	}
	ll, err := chmm.ConfusedLogLikelihoods(hmm, []chmm.Sequence{valid}, c, 0)
	if errors.Is(err, chmm.ErrZeroProbability) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pipeline: comparing maps: %w", err)
	}
	return -ll[0] / float64(valid.Len()) / math.Ln2, nil
}

// validation returns the validation walk read by vq (data.validationWalk), or the
// finaliser's valid where a test set one.
func (f *finaliser) validation(vq *vqvae.Model) (chmm.Sequence, error) {
	if f.valid != nil {
		return *f.valid, nil
	}
	return f.s.d.validationWalk(f.s.cfg, vq)
}

// finalByEM tells whether the map of the finalisation of cfg with record made is (or,
// resumed, goes on to be) EM's: FinalEM, or a gradient finalisation that fell back
// (made.Fallback) and did not keep its own map when the two were compared
// (made.Compared).
func finalByEM(cfg Config, made *evaluate.Training) bool {
	return cfg.Final.Trainer == FinalEM || made != nil && made.Fallback != "" && (made.Compared == nil || made.Compared.Kept == FinalEM)
}

// saveMap saves the map hmm (with its confusion matrix, if the finalisation learned
// one) and the encoder vq as the run's model files, and commits the phase's end (the
// next phase is the refinement when Config.Refine is on and this is not its
// finalisation, else the evaluation): its checkpoint and the files it named are gone.
func (f *finaliser) saveMap(vq *vqvae.Model, hmm *chmm.Model) error {
	cfg := f.s.cfg
	conf := f.st.Made.Confusion
	hmm.Meta = map[string]string{"env": cfg.Env, "dataset": cfg.Dataset, "trainer": "joint", "seed": fmt.Sprint(cfg.Seed)}
	if conf != nil {
		b, err := json.Marshal(conf)
		if err != nil {
			return err
		}
		hmm.Meta[ConfusionMeta] = string(b)
	}
	if err := hmm.Save(f.ck.path(CHMMFile)); err != nil {
		return err
	}
	if err := vq.Save(f.ck.path(VQVAEFile)); err != nil {
		return err
	}
	for _, name := range []string{CHMMFile, VQVAEFile} {
		if err := f.ck.record(name); err != nil {
			return err
		}
	}
	f.st.Seconds[f.phase()] += time.Since(f.start).Seconds()
	f.st.Phase = PhaseEval
	if f.s.cfg.Refine.On && !f.refine {
		f.st.Phase = PhaseRefine
	}
	f.st.FinalEM, f.st.FinalGrad = nil, nil
	f.forget()
	if err := f.ck.commit(); err != nil {
		return err
	}
	f.removeStray()
	return nil
}

// mergeTokens merges the joint phase's tokens that the training walks cannot tell
// apart (Config.Final.MergeTokens, chmm.MergeTokens) into the map's tokens: the final
// encoder vq reads its codes through the merge (vqvae.Model.SetTokens), and the
// training frames' tokens (the joint phase's) are returned as the map's. The merge is
// recorded in the state (TokensMerged).
func (f *finaliser) mergeTokens(vq *vqvae.Model, tokens []int) ([]int, error) {
	s := f.s
	group, n, err := chmm.MergeTokens(s.d.sequences(tokens), vq.NumTokens(), s.d.env.NumActions(), s.cfg.Final.MergeTokens)
	if err != nil {
		return nil, fmt.Errorf("pipeline: merging tokens: %w", err)
	}
	if n < 2 {
		return nil, fmt.Errorf("pipeline: final.merge_tokens=%g merges all %d tokens into one: the walks tell none apart at that bar; lower it", s.cfg.Final.MergeTokens, vq.NumTokens())
	}
	if err := vq.SetTokens(group); err != nil {
		return nil, err
	}
	merged := make([]int, len(tokens))
	for i, k := range tokens {
		merged[i] = group[k]
	}
	f.st.TokensMerged = group
	if s.out != nil {
		fmt.Fprintf(s.out, "finalisation: %d tokens merged into %d by what the walks show around them (z < %g)\n", len(group), n, s.cfg.Final.MergeTokens)
	}
	return merged, nil
}

// record appends a finalisation training's iterations to the history as
// finalisation records, numbered after the last one (event, if set, marks the first),
// and the run to the state's record of how the map is made.
func (f *finaliser) record(h *chmm.History, label, event string) {
	st := f.st
	if f.refine {
		label = "refine " + label
	}
	st.Made.AddRun(evaluate.TrainerRun{Name: label, Iterations: len(h.LogLik), SplitRounds: len(h.Splits), Stop: h.Stop,
		ChunkLen: h.ChunkLen, Batch: h.Batch})
	n := 0 // the phase's finalisation iterations recorded so far
	for _, rec := range st.History {
		if rec.Phase == f.phase() {
			n = rec.Step
		}
	}
	for i := range h.LogLik {
		rec := Record{Step: n + i + 1, Phase: f.phase(), NLLPerStep: -h.LogLik[i], Seconds: h.Seconds[i]}
		if i == 0 {
			rec.Event = event
		}
		st.History = append(st.History, rec)
	}
}

// saveEvery is how often the finalisation saves its training in progress.
func (f *finaliser) saveEvery() time.Duration {
	if h := f.s.hooks; h != nil && h.saveAlways {
		return 0
	}
	return finalSaveEvery
}

// saveTraining commits v, a training in progress, as a gob in the new file name, which
// set names in the state's finalisation checkpoint.
func (f *finaliser) saveTraining(name string, v any, set func()) error {
	if err := f.ck.saveGob(name, v); err != nil {
		return err
	}
	set()
	if err := f.commit(); err != nil {
		return err
	}
	if h := f.s.hooks; h != nil && h.finalSaved != nil {
		return h.finalSaved(name)
	}
	return nil
}

// commit commits a finalisation checkpoint (FinalEM or FinalGrad, its files recorded)
// with the finalisation's seconds so far, and removes the checkpoint files it no longer
// names.
func (f *finaliser) commit() error {
	f.forget()
	f.st.Seconds[f.phase()] += time.Since(f.start).Seconds()
	f.start = time.Now()
	if err := f.ck.commit(); err != nil {
		return err
	}
	f.removeStray()
	return nil
}

// finalFiles are the model files the state's finalisation checkpoint names.
func (st *runState) finalFiles() []string {
	var names []string
	if st.FinalEM != nil {
		for _, name := range []string{st.FinalEM.Start, st.FinalEM.Best, st.FinalEM.Training} {
			if name != "" {
				names = append(names, name)
			}
		}
	}
	if st.FallbackGrad != nil {
		names = append(names, fallbackGradFile)
	}
	if g := st.FinalGrad; g != nil {
		for _, name := range []string{g.Model, g.Training} {
			if name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// forget drops the finalisation checkpoints' files from the state's digests except
// those its checkpoint names.
func (f *finaliser) forget() {
	keep := f.st.finalFiles()
	for name := range f.st.Files {
		if isFinalFile(name) && !slices.Contains(keep, name) {
			delete(f.st.Files, name)
		}
	}
}

// removeStray removes the finalisation checkpoints' files (isFinalFile) that the
// committed state no longer names.
func (f *finaliser) removeStray() {
	names, _ := filepath.Glob(f.ck.path("final-*"))
	for _, p := range names {
		if !isFinalFile(filepath.Base(p)) {
			continue
		}
		if _, ok := f.st.Files[filepath.Base(p)]; !ok {
			os.Remove(p)
		}
	}
}

// isFinalFile: a finalisation checkpoint's file (final-em-*.model, final-grad-*.model,
// and the trainings in progress, final-*-train-*.gob).
func isFinalFile(name string) bool {
	model, _ := filepath.Match("final-*.model", name)
	train, _ := filepath.Match("final-*-train-*.gob", name)
	return model || train
}

// holdOutEnds returns the first 1 − GrowHoldOut of every walk (at least 2 steps) and
// the number of steps left out.
func holdOutEnds(seqs []chmm.Sequence) (start []chmm.Sequence, held int) {
	start = make([]chmm.Sequence, len(seqs))
	for i, s := range seqs {
		n := max(2, s.Len()-int(GrowHoldOut*float64(s.Len())))
		start[i] = chmm.Sequence{Obs: s.Obs[:n], Actions: s.Actions[:n-1]}
		held += s.Len() - n
	}
	return start, held
}
