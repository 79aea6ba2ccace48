package notebook

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// HeldOut is a pixel run's held-out episode (paper Sec. 3.9) decoded by its model: the
// walk, the test-split images it showed, their tokens and soft posteriors, and the
// Viterbi path of the read-out the run's report used.
type HeldOut struct {
	Env     *gridworld.Env
	Episode gridworld.Episode // true places g_t, classes, actions
	Side    int               // images are Side×Side
	Images  []float32         // [T·Side·Side], values in [0, 1]
	Tokens  []int             // hard tokens k_t
	LogRho  [][]float32       // [T][K] soft posteriors log ρ_t (Sec. 3.2)
	States  []int             // Viterbi path s*_t (soft or hard emissions, as the report)
}

// reportDecode returns the read-out (pipeline.DecodeSoft or DecodeHard) that scored
// the run's report: its extra["decode"], else the one whose alternative the extras
// hold (reports written before extra["decode"] existed), else the config's.
func reportDecode(res *pipeline.Result) string {
	if d, ok := res.Report.Extra["decode"].(string); ok {
		return d
	}
	if _, ok := res.Report.Extra["soft_decoding"]; ok {
		return pipeline.DecodeHard
	}
	if _, ok := res.Report.Extra["hard_decoding"]; ok {
		return pipeline.DecodeSoft
	}
	return res.Config.Decode
}

// DecodeHeldOut re-creates the held-out episode of a finished pixel run exactly as
// pipeline.Evaluate draws it (same seeds), encodes its images with the frozen VQ-VAE
// and decodes it with Viterbi (Sec. 3.7) on the soft emissions log ρ (pipeline's
// default read-out) or on the hard tokens, whichever scored the run's report. It scores the path again and returns an
// error if the state→place purity or the Viterbi-path map differs from the run's
// report, so a change of pipeline.Evaluate's episode cannot go unnoticed.
func DecodeHeldOut(res *pipeline.Result) (*HeldOut, error) {
	if res == nil || res.VQVAE == nil || res.HMM == nil || res.Report == nil {
		return nil, fmt.Errorf("notebook: DecodeHeldOut needs a loaded run (pipeline.LoadRun)")
	}
	cfg := res.Config
	env, err := cfg.Environment()
	if err != nil {
		return nil, err
	}
	set, err := dataset.Load(cfg.Dataset, dataset.Test)
	if err != nil {
		return nil, err
	}
	bank, err := dataset.NewBank(set)
	if err != nil {
		return nil, err
	}
	if err := bank.Check(env.ClassesUsed()); err != nil {
		return nil, err
	}
	// The streams of pipeline.Evaluate: the walk, then the images.
	h := &HeldOut{Env: env, Side: bank.Rows()}
	h.Episode = env.Walk(gridworld.NewRand(cfg.Seed^0xe7a1_5eed), cfg.EvalSteps)
	idx := bank.Frames(rand.New(rand.NewPCG(cfg.Seed, 0x7e57)), h.Episode.Obs)
	h.Images = bank.Floats(idx, nil)
	if h.Tokens, h.LogRho, err = res.VQVAE.Encode(h.Images); err != nil {
		return nil, err
	}
	if reportDecode(res) == pipeline.DecodeHard {
		h.States, _, err = chmm.Viterbi(res.HMM, chmm.Sequence{Obs: h.Tokens, Actions: h.Episode.Actions})
	} else {
		h.States, _, err = pipeline.SoftViterbi(res.HMM, h.LogRho, h.Episode.Actions)
	}
	if err != nil {
		return nil, fmt.Errorf("notebook: decoding the held-out episode: %w", err)
	}
	rep, err := evaluate.Evaluate(evaluate.Input{Env: env, Places: h.Episode.Places, States: h.States, Tokens: h.Tokens,
		Trans: res.HMM.Transitions(), NumStates: res.HMM.N(), NumTokens: res.HMM.K()}, evaluate.DefaultOptions())
	if err != nil {
		return nil, err
	}
	const tol = 1e-9
	if math.Abs(rep.StatePlacePurity-res.Report.StatePlacePurity) > tol || math.Abs(rep.ViterbiMap.F1-res.Report.ViterbiMap.F1) > tol {
		return nil, fmt.Errorf("notebook: the re-created held-out episode scores purity %.4f, map F1 %.4f; the run's report says %.4f, %.4f: "+
			"pipeline.Evaluate draws its episode differently now (or the run was evaluated by an older version: pipeline.Reevaluate)",
			rep.StatePlacePurity, rep.ViterbiMap.F1, res.Report.StatePlacePurity, res.Report.ViterbiMap.F1)
	}
	return h, nil
}
