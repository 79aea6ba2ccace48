package pipeline

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// refineState is the refinement's progress (runState.Refine), so that a refinement
// resumed from it continues as the uninterrupted one would.
type refineState struct {
	Labels string // gob file of refineLabels
	Model  string // the taught encoder's checkpoint after Epochs epochs (its codebook fitted again with Fitted)
	Epochs int    // teaching epochs done
	Fitted bool   // the codebook is fitted again: the refinement's finalisation runs
	// First is the run's record (runState.Made) as the finalisation left it: the
	// record again if the refined map is dropped.
	First evaluate.Training
	// Record is what the refinement did so far (the report's training.refine).
	Record evaluate.Refine
}

// refineLabels is what the finalisation's map says of the training frames: each
// frame's pseudo-class (vqvae.NoTarget: none) and its token under the finalisation's
// encoder.
type refineLabels struct {
	Label  []int
	Tokens []int
}

// refineFiles are the files the state's refinement names.
func (st *runState) refineFiles() []string {
	var names []string
	if r := st.Refine; r != nil {
		for _, name := range []string{r.Labels, r.Model} {
			if name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// refiner is the refinement in progress.
type refiner struct {
	s       *session
	ck      *checkpoint
	st      *runState // ck.st
	start   time.Time // since the refinement's seconds last committed
	commits int       // in this session
}

// resolved is a verdict's Resolved as the test hooks may read it (refined: of the
// refined map).
func (r *refiner) resolved(v *chmm.Verdict, refined bool) bool {
	h := r.s.hooks
	if h != nil && refined && h.refineDrop {
		return false
	}
	return v.Resolved || (h != nil && h.refineAnyway)
}

// refinable tells whether a finalisation's map with verdict v may teach the encoder:
// a resolved map, or one whose only problem is chmm.ProblemPredict (with noisy tokens
// the map predicts the next token too rarely: either it is not resolved or the encoder
// misreads, which the refinement addresses). A map with any other problem (merged
// places, too few clones, a poor fit, too little data) is not.
func refinable(v *chmm.Verdict) bool {
	return v.Resolved || len(v.Problems) == 1 && v.Problems[0] == chmm.ProblemPredict
}

// refine is the refinement (Config.Refine): the map fin (or the run's model files when
// fin is nil), if its label-free verdict is resolved or names only misread tokens
// (refinable), reads pseudo-classes from the
// training walks; a codebook is fitted to them on the encoder's latents, the encoder
// taught them for Config.Refine.Epochs passes (each a checkpoint), the codebook fitted
// again, and the map finalised again on the new tokens as the finalisation does. The
// refined map replaces fin if its verdict is resolved. It returns the map the
// evaluation scores.
func refine(s *session, ck *checkpoint, fin *finalMap) (*finalMap, error) {
	r := &refiner{s: s, ck: ck, st: ck.st, start: time.Now()}
	r.removeStray()
	if fin == nil {
		var err error
		if fin, err = loadFinalMap(s, ck); err != nil {
			return nil, err
		}
	}
	if r.st.Refine == nil {
		if err := r.begin(fin); err != nil {
			return nil, err
		}
		if r.st.Refine == nil { // skipped
			return fin, nil
		}
	}
	vq, labels, err := r.teach()
	if err != nil {
		return nil, err
	}
	tokens, hmm, f, err := r.finalise(vq, fin.hmm.NumActions)
	if err != nil {
		return nil, err
	}
	return r.keep(fin, &finalMap{vq: vq, hmm: hmm}, labels, tokens, f)
}

// loadFinalMap loads the run's model files.
func loadFinalMap(s *session, ck *checkpoint) (*finalMap, error) {
	if err := ck.verify(CHMMFile); err != nil {
		return nil, err
	}
	hmm, err := chmm.Load(ck.path(CHMMFile))
	if err != nil {
		return nil, err
	}
	vq, err := ck.loadVQ(s.backend, VQVAEFile)
	if err != nil {
		return nil, err
	}
	return &finalMap{vq: vq, hmm: hmm}, nil
}

// commit commits the state with the refinement's seconds so far.
func (r *refiner) commit() error {
	r.st.Seconds[PhaseRefine] += time.Since(r.start).Seconds()
	r.start = time.Now()
	if err := r.ck.commit(); err != nil {
		return err
	}
	r.commits++
	if h := r.s.hooks; h != nil && h.refineSaved != nil {
		return h.refineSaved(r.commits)
	}
	return nil
}

// say writes a progress line.
func (r *refiner) say(format string, args ...any) {
	if r.s.out != nil {
		fmt.Fprintf(r.s.out, "refinement: "+format+"\n", args...)
	}
}

// skip ends the refinement without refining the map, for reason.
func (r *refiner) skip(tokens int, reason string) error {
	r.say("skipped: %s", reason)
	r.st.Made.Refine = &evaluate.Refine{Skipped: reason, Tokens: tokens}
	r.st.Phase = PhaseEval
	return r.commit()
}

// begin reads the pseudo-classes from fin and starts the taught encoder: fin's
// networks with a codebook fitted to the pseudo-classes on their latents (from the
// pseudo-classes' mean latents). Both are saved and the
// state's refinement committed; a map whose verdict is not resolved, or that shows
// fewer than two pseudo-classes, is not refined (skip).
func (r *refiner) begin(fin *finalMap) error {
	s, d, cfg := r.s, r.s.d, r.s.cfg
	k := fin.hmm.K()
	dg, err := diagnose(d, cfg, fin.vq, fin.hmm, &r.st.Made, s.out)
	if err != nil {
		return fmt.Errorf("pipeline: refinement: diagnosing the map: %w", err)
	}
	if !r.resolved(dg.Verdict, false) && !refinable(dg.Verdict) {
		return r.skip(k, "the finalisation's map is not resolved (its label-free verdict names more than misread tokens), so its states are no places to read classes from")
	}
	tokens, err := d.encodeShown(fin.vq, s.out, "refinement")
	if err != nil {
		return err
	}
	states, err := d.decodeWalks(fin.hmm, tokens)
	if err != nil {
		return fmt.Errorf("pipeline: refinement: %w", err)
	}
	pc, err := pseudoClasses(states, fin.hmm.N(), d.side*d.side, func(i int, dst []float32) { d.train.Float(d.allFrames[i], dst) },
		RefineMinVisits, RefineBar)
	if err != nil {
		return fmt.Errorf("pipeline: refinement: %w", err)
	}
	if len(pc.Groups) < 2 {
		return r.skip(k, fmt.Sprintf("the map's states show %d pseudo-class(es), need 2", len(pc.Groups)))
	}
	apart := pc.Apart
	if math.IsInf(apart, 0) {
		apart = 0
	}
	rec := evaluate.Refine{Tokens: k, PseudoClasses: len(pc.Groups), Frames: pc.Frames, Seeded: pc.Seeded,
		Merged: pc.Merged, Apart: apart, Mixtures: pc.Mixtures, Mixed: pc.Mixed, LeftOut: len(pc.LeftOut), Unlabelled: pc.Unlabelled}
	if !math.IsInf(pc.Unmixed, 0) {
		rec.Unmixed = pc.Unmixed
	}
	rec.SameEffect = pc.SameEffect
	if !math.IsInf(pc.ApartEffect, 0) {
		rec.ApartEffect = pc.ApartEffect
	}
	r.say("the map's %d tokens show %d pseudo-classes (states merged up to %.2f, groups apart from %.2f, %d mixture(s) of them dropped; %d frames unlabelled)",
		k, len(pc.Groups), pc.Merged, apart, pc.Mixtures, pc.Unlabelled)
	zs, err := d.latents(fin.vq)
	if err != nil {
		return err
	}
	rows, sizes := labelMeans(zs, pc.Label, len(pc.Groups))
	rows = fitCodebook(zs, rows, pc.Label, cfg.VQVAE.Tau)
	rec.StartOnLabel = onLabel(zs, rows, pc.Label)
	r.say("a codebook fitted to them on the encoder's latents puts %.2f%% of the labelled frames on their pseudo-class", 100*rec.StartOnLabel)
	vq, err := taughtModel(fin.vq, rows, sizes, cfg.Seed)
	if err != nil {
		return fmt.Errorf("pipeline: refinement: %w", err)
	}
	if err := vq.SetLearningRate(cfg.Warmup.LR); err != nil {
		return err
	}
	const labelsFile = "refine-labels.gob"
	if err := r.ck.saveGob(labelsFile, refineLabels{Label: pc.Label, Tokens: tokens}); err != nil {
		return err
	}
	name := fmt.Sprintf("refine-model-%03d.ckpt", 0)
	if err := r.saveModel(vq, name); err != nil {
		return err
	}
	first, err := cloneTraining(r.st.Made)
	if err != nil {
		return err
	}
	r.st.Refine = &refineState{Labels: labelsFile, Model: name, First: first, Record: rec}
	return r.commit()
}

// cloneTraining returns a deep copy of t.
func cloneTraining(t evaluate.Training) (evaluate.Training, error) {
	var buf bytes.Buffer
	var c evaluate.Training
	if err := gob.NewEncoder(&buf).Encode(t); err != nil {
		return c, fmt.Errorf("pipeline: state: %w", err)
	}
	if err := gob.NewDecoder(&buf).Decode(&c); err != nil {
		return c, fmt.Errorf("pipeline: state: %w", err)
	}
	return c, nil
}

// saveModel saves vq as the run-directory file name and records it.
func (r *refiner) saveModel(vq *vqvae.Model, name string) error {
	if err := vq.Save(r.ck.path(name)); err != nil {
		return err
	}
	return r.ck.record(name)
}

// replaceModel saves vq as name in place of the state's refinement model, commits,
// and removes the previous file.
func (r *refiner) replaceModel(vq *vqvae.Model, name string) error {
	old := r.st.Refine.Model
	if err := r.saveModel(vq, name); err != nil {
		return err
	}
	r.st.Refine.Model = name
	if old != name {
		delete(r.st.Files, old)
	}
	if err := r.commit(); err != nil {
		return err
	}
	if old != name {
		_ = os.Remove(r.ck.path(old))
	}
	return nil
}

// teach trains the taught encoder for the epochs left (its codebook fixed), each a
// checkpoint, then fits the codebook to the pseudo-classes on its latents again
// (fitCodebook) if that puts more of the labelled frames on their pseudo-class (a
// checkpoint too), and returns it with the labels.
func (r *refiner) teach() (*vqvae.Model, *refineLabels, error) {
	rs, cfg := r.st.Refine, r.s.cfg
	var labels refineLabels
	if err := r.ck.loadGob(rs.Labels, &labels); err != nil {
		return nil, nil, err
	}
	vq, err := r.ck.loadVQ(r.s.backend, rs.Model)
	if err != nil {
		return nil, nil, err
	}
	for rs.Epochs < cfg.Refine.Epochs && !rs.Fitted {
		ep, err := r.epoch(vq, labels.Label, rs.Epochs)
		if err != nil {
			return nil, nil, err
		}
		rs.Record.Epochs = append(rs.Record.Epochs, ep)
		rs.Epochs++
		r.say("epoch %d of %d: reconstruction %.4f, cross-entropy %.4f, %.1f%% of the labelled frames on their pseudo-class",
			rs.Epochs, cfg.Refine.Epochs, ep.Rec, ep.CE, 100*ep.Accuracy)
		if err := r.replaceModel(vq, fmt.Sprintf("refine-model-%03d.ckpt", rs.Epochs)); err != nil {
			return nil, nil, err
		}
	}
	if !rs.Fitted {
		zs, err := r.s.d.latents(vq)
		if err != nil {
			return nil, nil, err
		}
		_, sizes := labelMeans(zs, labels.Label, rs.Record.PseudoClasses)
		rows := fitCodebook(zs, vq.Codebook(), labels.Label, r.s.cfg.VQVAE.Tau)
		taught, fitted := onLabel(zs, vq.Codebook(), labels.Label), onLabel(zs, rows, labels.Label)
		if rs.Record.Refitted = fitted > taught; rs.Record.Refitted {
			if err := vq.SetCodebook(rows, sizes); err != nil {
				return nil, nil, err
			}
		}
		r.say("codebook: %.2f%% of the labelled frames on their pseudo-class as taught, %.2f%% fitted again: %s",
			100*taught, 100*fitted, map[bool]string{true: "refitted", false: "kept"}[rs.Record.Refitted])
		rs.Fitted = true
		if err := r.replaceModel(vq, "refine-model-fitted.ckpt"); err != nil {
			return nil, nil, err
		}
	}
	return vq, &labels, nil
}

// epoch is one teaching pass (number ep, from 0) over the training frames in an order
// drawn from the seed and ep, in batches of Config.Warmup.Batch frames (the last,
// partial batch left out), each frame shifted as the joint phase shifts them
// (Config.Joint.Jitter) and taught its pseudo-class (vqvae.Model.TeachStep).
func (r *refiner) epoch(vq *vqvae.Model, label []int, ep int) (evaluate.TeachEpoch, error) {
	cfg, d := r.s.cfg, r.s.d
	start := time.Now()
	n := len(d.allFrames)
	batch := min(cfg.Warmup.Batch, n)
	steps := n / batch
	perm := rand.New(rand.NewPCG(cfg.Seed, 0x7eac_0000+uint64(ep))).Perm(n)
	var bar *progress.Bar
	if r.s.out != nil {
		bar = progress.New(r.s.out, fmt.Sprintf("refinement: teach epoch %d", ep+1), steps).Every(2 * time.Second)
	}
	var sum evaluate.TeachEpoch
	idx, tg := make([]int, batch), make([]int, batch)
	var imgs []float32
	for step := range steps {
		if err := r.s.ctx.Err(); err != nil {
			return sum, err
		}
		for i, f := range perm[step*batch : (step+1)*batch] {
			idx[i], tg[i] = d.allFrames[f], label[f]
		}
		imgs = d.train.Floats(idx, imgs)
		dataset.Jitter(rand.New(rand.NewPCG(cfg.Seed, 0x7eac_0001_0000_0000+uint64(ep)<<24+uint64(step))), imgs, d.side, cfg.Joint.Jitter)
		met, err := vq.TeachStep(imgs, tg, cfg.Refine.Weight)
		if err != nil {
			return sum, fmt.Errorf("pipeline: refinement: %w", err)
		}
		if !finite(met.Loss) {
			return sum, fmt.Errorf("pipeline: refinement: teach epoch %d, step %d: the loss is %g; lower refine.weight or warmup.lr", ep+1, step+1, met.Loss)
		}
		sum.Rec += met.Rec / float64(steps)
		sum.CE += met.CE / float64(steps)
		sum.Accuracy += met.Accuracy / float64(steps)
		bar.Update(step+1, "cross-entropy %.3f", met.CE)
	}
	bar.Done("")
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// finalise finalises a map on vq's tokens of the training frames as the finalisation
// does (its trainer, budget and checkpoints), as the refinement's.
func (r *refiner) finalise(vq *vqvae.Model, numActions int) ([]int, *chmm.Model, *finaliser, error) {
	s, d := r.s, r.s.d
	tokens, err := d.encodeShown(vq, s.out, "refinement")
	if err != nil {
		return nil, nil, nil, err
	}
	k := vq.NumTokens()
	share := make([]float64, k)
	for _, x := range tokens {
		share[x] += 1 / float64(len(tokens))
	}
	r.st.Seconds[PhaseRefine] += time.Since(r.start).Seconds() // the finaliser counts from here
	f := &finaliser{s: s, ck: r.ck, st: r.st, start: time.Now(), refine: true}
	var hmm *chmm.Model
	if finalByEM(s.cfg, &r.st.Made) {
		hmm, err = f.em(d.sequences(tokens), k, numActions)
	} else {
		hmm, err = f.gradient(d.sequences(tokens), share, chmm.New(chmm.UniformClones(k, 1), numActions, nil))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	r.start = f.start
	return tokens, hmm, f, nil
}

// keep scores the refined map without labels and keeps it, as the run's model files,
// if its verdict is resolved; otherwise fin stays the run's map and its record is the
// finalisation's. Either way the refinement's record is the report's and its files go.
func (r *refiner) keep(fin, refined *finalMap, labels *refineLabels, tokens []int, f *finaliser) (*finalMap, error) {
	s, st, rs := r.s, r.st, r.st.Refine
	rec := rs.Record
	rec.OnLabel, rec.Relabelled = relabelStats(labels, tokens)
	rec.Entropy = s.d.tokenEntropies(tokens)
	dg, err := diagnose(s.d, s.cfg, refined.vq, refined.hmm, &st.Made, s.out)
	if err != nil {
		return nil, fmt.Errorf("pipeline: refinement: diagnosing the refined map: %w", err)
	}
	files := st.refineFiles()
	st.Refine = nil
	for _, name := range files {
		delete(st.Files, name)
	}
	keep := fin
	if r.resolved(dg.Verdict, true) {
		r.say("the refined map (%d tokens, %d states) is resolved and replaces the finalisation's", refined.hmm.K(), refined.hmm.N())
		st.Made.Refine = &rec
		f.start = r.start
		if err := f.saveMap(refined.vq, refined.hmm); err != nil {
			return nil, err
		}
		keep = refined
	} else {
		rec.Reverted = "its label-free verdict is not resolved: " + dg.Verdict.Text
		r.say("the refined map is dropped: %s", rec.Reverted)
		st.Made = rs.First
		st.Made.Refine = &rec
		st.FinalEM, st.FinalGrad = nil, nil
		st.Phase = PhaseEval
		f.forget()
		if err := r.commit(); err != nil {
			return nil, err
		}
		f.removeStray()
	}
	r.removeStray()
	return keep, nil
}

// removeStray removes the refinement's files (refine-*) that the committed state does
// not name: those of an earlier step that a stop left behind, and all of them once the
// refinement has ended.
func (r *refiner) removeStray() {
	names, _ := filepath.Glob(r.ck.path("refine-*"))
	for _, p := range names {
		if _, ok := r.st.Files[filepath.Base(p)]; !ok {
			_ = os.Remove(p)
		}
	}
}
