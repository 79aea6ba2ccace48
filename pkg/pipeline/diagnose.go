package pipeline

import (
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Diagnose is chmm.Diagnose of a run's map from its own data, without labels: the
// HMM on the hard tokens the final encoder gives the training episodes' frames, and
// on those of the held-out episode's test images (through the map's confusion matrix,
// MapConfusion, if it has one), with its verdict
// (Judge(chmm.NoisyTokens)). The evaluation phase stores it in the report.
func Diagnose(res *Result) (*chmm.Diagnosis, error) {
	d, err := loadData(res.Config)
	if err != nil {
		return nil, err
	}
	var made *evaluate.Training
	if res.Report != nil {
		made = res.Report.Training
	}
	return diagnose(d, res.Config, res.VQVAE, res.HMM, made)
}

// diagnose is Diagnose; made, the run's training record (nil: none), gives the split
// rounds its EM finalisation ran past the map it kept (chmm.Diagnosis.SplitsPast).
func diagnose(d *data, cfg Config, vq *vqvae.Model, hmm *chmm.Model, made *evaluate.Training) (*chmm.Diagnosis, error) {
	tokens, err := d.encodeAll(vq)
	if err != nil {
		return nil, err
	}
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
	dg, err := chmm.DiagnoseConfused(hmm, d.sequences(tokens), []chmm.Sequence{{Obs: heldTokens, Actions: held.Episode.Actions}}, conf, 0)
	if err != nil {
		return nil, err
	}
	if cfg.FinalTrainer == FinalEM && made != nil && len(made.HeldOutBits) > 0 {
		dg.SplitsPast = len(made.HeldOutBits) - 1 - made.Doublings
	}
	dg.Verdict = dg.Judge(chmm.NoisyTokens)
	return dg, nil
}
