package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// HeldOut is a run's held-out evaluation episode (Sec. 3.9): a fresh walk of
// Config.Eval.Steps steps, each showing a fresh test-split image, both drawn from the
// run's seed. Evaluate scores it; the figures and the notebooks re-create it with
// NewHeldOut, so every read-out of a run is of the same episode.
type HeldOut struct {
	Env     *gridworld.Env
	Episode gridworld.Episode // true places g_t, classes, actions
	Bank    *dataset.Bank     // the test split
	Frames  []int             // Bank index of the image shown at each step
	Images  []float32         // [T·Side·Side], values in [0, 1]
	Side    int               // images are Side×Side
}

// NewHeldOut draws the held-out episode of cfg in env.
func NewHeldOut(cfg Config, env *gridworld.Env) (*HeldOut, error) {
	bank, err := dataset.LoadBank(cfg.Dataset, dataset.Test, env.ClassesUsed())
	if err != nil {
		return nil, err
	}
	if err := bank.CheckSide(cfg.VQVAE.Side, "vqvae.side"); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	h := &HeldOut{Env: env, Bank: bank, Side: bank.Rows()}
	h.Episode = env.Walk(gridworld.NewRand(cfg.Seed^0xe7a1_5eed), cfg.Eval.Steps)
	h.Frames = bank.Frames(rand.New(rand.NewPCG(cfg.Seed, 0x7e57)), h.Episode.Obs)
	h.Images = bank.Floats(h.Frames, nil)
	return h, nil
}

// Decode encodes the episode's images with vq (hard tokens and soft posteriors log ρ)
// and returns the Viterbi path of hmm with the read-out decode: DecodeSoft (emissions
// log ρ, chmm.LogRho) or DecodeHard (the tokens, chmm.Tokens), decoded by chmm.Decode.
func (h *HeldOut) Decode(vq *vqvae.Model, hmm *chmm.Model, decode string) (tokens []int, logRho [][]float32, states []int, err error) {
	if tokens, logRho, err = vq.Encode(h.Images); err != nil {
		return nil, nil, nil, err
	}
	states, err = h.Viterbi(hmm, tokens, logRho, decode)
	return tokens, logRho, states, err
}

// Viterbi is Decode's read-out for tokens and logRho already encoded: chmm.Decode
// with the emissions of decode. A map that reads its tokens through a confusion
// matrix C (FinalEM, MapConfusion) reads both through it: the hard tokens as
// chmm.Confused, the soft posteriors as log Σ_o C[k][o] ρ_t(o) (ThroughConfusion).
// Its token indices need not be the encoder's: EM may let the clones of a rarely seen
// token stand for places of another (C[k][o] near 1 for o ≠ k).
func (h *HeldOut) Viterbi(hmm *chmm.Model, tokens []int, logRho [][]float32, decode string) ([]int, error) {
	conf, err := MapConfusion(hmm)
	if err != nil {
		return nil, err
	}
	var e chmm.Emissions
	switch {
	case decode == DecodeHard && conf != nil:
		e = chmm.Confused{Tokens: tokens, C: conf}
	case decode == DecodeHard:
		e = chmm.Tokens(tokens)
	case decode == DecodeSoft && conf != nil:
		e = chmm.LogRho(ThroughConfusion(logRho, conf))
	case decode == DecodeSoft:
		e = chmm.LogRho(logRho)
	default:
		return nil, fmt.Errorf("pipeline: read-out %q (want %q or %q)", decode, DecodeSoft, DecodeHard)
	}
	states, _, err := chmm.Decode(hmm, e, h.Episode.Actions)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %s Viterbi on the held-out episode: %w", decode, err)
	}
	return states, nil
}

// ReadOut returns the read-out (DecodeSoft or DecodeHard) that scored the run's report,
// else the config's.
func (r *Result) ReadOut() string {
	if r.Report != nil && r.Report.Decode != "" {
		return r.Report.Decode
	}
	return r.Config.Eval.Decode
}

// MapConfusion returns the confusion matrix C[k][o] that hmm reads its tokens through
// (ConfusionMeta, written by a FinalEM finalisation), or nil.
func MapConfusion(hmm *chmm.Model) ([][]float64, error) {
	raw, ok := hmm.Meta[ConfusionMeta]
	if !ok {
		return nil, nil
	}
	var c [][]float64
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return nil, fmt.Errorf("pipeline: the map's confusion matrix: %w", err)
	}
	if err := chmm.ValidateConfusion(c, hmm.K()); err != nil {
		return nil, fmt.Errorf("pipeline: the map's confusion matrix: %w", err)
	}
	return c, nil
}

// ThroughConfusion returns log ρ'_t(k) = log Σ_o C[k][o] ρ_t(o): the encoder's
// posterior over its codes o read as the map's tokens k (a soft Confused).
func ThroughConfusion(logRho [][]float32, c [][]float64) [][]float32 {
	out := make([][]float32, len(logRho))
	for t, row := range logRho {
		out[t] = make([]float32, len(c))
		for k, ck := range c {
			var p float64
			for o, w := range ck {
				if w > 0 {
					p += w * math.Exp(float64(row[o]))
				}
			}
			out[t][k] = float32(math.Log(p))
		}
	}
	return out
}
