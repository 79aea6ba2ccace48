package pipeline

import (
	"fmt"
	"io"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Diagnose is chmm.Diagnose of a run's map from its own data, without labels: the
// HMM on the hard tokens the final encoder gives the training episodes' frames, and
// on those of the held-out episode's test images (through the map's confusion matrix,
// MapConfusion, if it has one), with its verdict
// (Judge(chmm.NoisyTokens)). A map of hard tokens (the gradient finalisation's) is
// also read through a confusion matrix fitted to it (Diagnosis.Reread), so that the
// verdict tells its merged places from the encoder's misreads as it does for a map
// made by EM. The evaluation phase stores it in the report.
func Diagnose(res *Result) (*chmm.Diagnosis, error) {
	d, err := loadData(res.Config)
	if err != nil {
		return nil, err
	}
	var made *evaluate.Training
	if res.Report != nil {
		made = res.Report.Training
	}
	return diagnose(d, res.Config, res.VQVAE, res.HMM, made, nil)
}

// diagnose is Diagnose; made, the run's training record (nil: none), gives the split
// rounds its EM finalisation ran past the map it kept (chmm.Diagnosis.SplitsPast); the
// encoding of the training frames shows a progress line on out (nil: silent).
func diagnose(d *data, cfg Config, vq *vqvae.Model, hmm *chmm.Model, made *evaluate.Training, out io.Writer) (*chmm.Diagnosis, error) {
	var bar *progress.Bar
	if out != nil {
		bar = progress.New(out, "verdict: encode training frames", len(d.allFrames)).Every(2 * time.Second)
	}
	tokens, err := d.encodeFrames(vq, bar)
	if err != nil {
		return nil, err
	}
	bar.Done("")
	held, err := NewHeldOut(cfg, d.env)
	if err != nil {
		return nil, err
	}
	heldTokens, _, err := vq.Encode(held.Images)
	if err != nil {
		return nil, err
	}
	conf, err := MapConfusion(hmm)
	if err != nil {
		return nil, err
	}
	train := d.sequences(tokens)
	dg, err := chmm.DiagnoseConfused(hmm, train, []chmm.Sequence{{Obs: heldTokens, Actions: held.Episode.Actions}}, conf, 0)
	if err != nil {
		return nil, err
	}
	if conf == nil {
		if dg.Reread, err = reread(hmm, train); err != nil {
			return nil, err
		}
	}
	if finalByEM(cfg, made) && made != nil && len(made.HeldOutBits) > 0 {
		dg.SplitsPast = len(made.HeldOutBits) - 1 - made.Doublings
	}
	dg.Verdict = dg.Judge(chmm.NoisyTokens)
	return dg, nil
}

// fitConfusion is the confusion matrix the reread reads hmm through: fitted to the
// walks train with hmm held fixed (chmm.FitConfusion from startConfusion's C, at most
// RereadIters E-steps under ConfusionBeam), entries below ConfusionMin dropped.
func fitConfusion(hmm *chmm.Model, train []chmm.Sequence) ([][]float64, error) {
	start, _ := startConfusion(train, hmm.K())
	c, _, err := chmm.FitConfusion(hmm, train, start, chmm.FitConfusionConfig{MaxIters: RereadIters, Tol: RereadTol, Beam: ConfusionBeam})
	if err != nil {
		return nil, fmt.Errorf("pipeline: verdict: %w", err)
	}
	chmm.TrimConfusion(c, ConfusionMin)
	return c, nil
}

// Rereading a hard-token map: the E-steps of FitConfusion at most and its stop.
const (
	RereadIters = 50
	RereadTol   = 1e-5
)

// reread is the diagnosis of the hard-token map hmm on its training walks train read
// through a confusion matrix fitted to them with the map held fixed
// (chmm.FitConfusion from startConfusion's C, at most RereadIters E-steps under
// ConfusionBeam; entries below ConfusionMin then dropped, as the EM finalisation
// drops them): the misreads that the map's clones absorbed are read as misreads, and
// what still surprises it far from a miss is merged places (Judge).
func reread(hmm *chmm.Model, train []chmm.Sequence) (*chmm.Diagnosis, error) {
	c, err := fitConfusion(hmm, train)
	if err != nil {
		return nil, err
	}
	dg, err := chmm.DiagnoseConfused(hmm, train, nil, c, 0)
	if err != nil {
		return nil, fmt.Errorf("pipeline: verdict: %w", err)
	}
	return dg, nil
}
