package notebook

import (
	"fmt"
	"math"

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

// DecodeHeldOut re-creates the held-out episode of a finished pixel run
// (pipeline.NewHeldOut, the episode pipeline.Evaluate scores), encodes its images with
// the frozen VQ-VAE and decodes it with Viterbi (Sec. 3.7) with the read-out that scored
// the run's report (Result.ReadOut). It scores the path again and returns an error if the state→place purity or the Viterbi-path map differs from the run's
// report, so a change of pipeline.Evaluate's episode cannot go unnoticed.
func DecodeHeldOut(res *pipeline.Result) (*HeldOut, error) {
	if res == nil || res.VQVAE == nil || res.HMM == nil || res.Report == nil {
		return nil, fmt.Errorf("notebook: DecodeHeldOut needs a loaded run (pipeline.LoadRun)")
	}
	env, err := res.Config.Environment()
	if err != nil {
		return nil, err
	}
	held, err := pipeline.NewHeldOut(res.Config, env)
	if err != nil {
		return nil, err
	}
	h := &HeldOut{Env: env, Episode: held.Episode, Side: held.Side, Images: held.Images}
	if h.Tokens, h.LogRho, h.States, err = held.Decode(res.VQVAE, res.HMM, res.ReadOut()); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
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
