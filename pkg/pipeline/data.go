package pipeline

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// data holds the training and evaluation data of a run, all derived from the seed.
type data struct {
	env        *gridworld.Env
	train      *dataset.Bank
	episodes   []gridworld.Episode
	frames     [][]int // frames[e][t]: index into train of the image at step t of episode e
	allFrames  []int   // concatenated frames
	allPlaces  []int
	side       int
	trainTotal int
}

func loadData(cfg Config) (*data, error) {
	env, err := cfg.Environment()
	if err != nil {
		return nil, err
	}
	bank, err := dataset.LoadBank(cfg.Dataset, dataset.Train, env.ClassesUsed())
	if err != nil {
		return nil, err
	}
	if err := bank.CheckSide(cfg.VQVAE.Side, "vqvae.side"); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	d := &data{env: env, train: bank, side: bank.Rows()}
	d.episodes = env.TrainingEpisodes(gridworld.NewRand(cfg.Seed), cfg.Data.Episodes, cfg.Data.Steps)
	imgRNG := rand.New(rand.NewPCG(cfg.Seed, 0x7a1))
	for _, ep := range d.episodes {
		idx := bank.Frames(imgRNG, ep.Obs)
		d.frames = append(d.frames, idx)
		d.allFrames = append(d.allFrames, idx...)
		d.allPlaces = append(d.allPlaces, ep.Places...)
	}
	return d, nil
}

// encodeAll returns the hard token of every training frame under m, in blocks
// (memory stays small).
func (d *data) encodeAll(m *vqvae.Model) ([]int, error) { return d.encodeFrames(m, nil) }

// encodeShown is encodeAll behind a progress line on out (nil: silent) named after
// phase.
func (d *data) encodeShown(m *vqvae.Model, out io.Writer, phase string) ([]int, error) {
	var bar *progress.Bar
	if out != nil {
		bar = progress.New(out, phase+": encode training frames", len(d.allFrames)).Every(2 * time.Second)
	}
	tokens, err := d.encodeFrames(m, bar)
	if err != nil {
		return nil, err
	}
	bar.Done("")
	return tokens, nil
}

// encodeFrames is encodeAll reporting the frames done to bar (nil: silent).
func (d *data) encodeFrames(m *vqvae.Model, bar *progress.Bar) ([]int, error) {
	return encodeBank(m, d.train, d.allFrames, bar)
}

// encodeBank returns the hard token under m of each of bank's images frames, encoded
// in blocks (memory stays small), reporting the frames done to bar (nil: silent).
func encodeBank(m *vqvae.Model, bank *dataset.Bank, frames []int, bar *progress.Bar) ([]int, error) {
	const block = 4096
	var out []int
	var buf []float32
	for s := 0; s < len(frames); s += block {
		buf = bank.Floats(frames[s:min(s+block, len(frames))], buf)
		t, _, err := m.Encode(buf)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
		bar.Update(len(out), "")
	}
	return out, nil
}

// validationWalk is the finalisation's validation walk, read by vq: a fresh walk of
// Config.Eval.Steps steps showing fresh training-split images, both drawn from the
// run's seed on streams of their own (neither the training walks nor the held-out
// episode). Maps of the same tokens are compared on it (finaliser.choose); no label
// is read.
func (d *data) validationWalk(cfg Config, vq *vqvae.Model) (chmm.Sequence, error) {
	ep := d.env.Walk(gridworld.NewRand(cfg.Seed^0x7a11d_a7e), cfg.Eval.Steps)
	frames := d.train.Frames(rand.New(rand.NewPCG(cfg.Seed, 0x7a11d)), ep.Obs)
	tokens, err := encodeBank(vq, d.train, frames, nil)
	if err != nil {
		return chmm.Sequence{}, err
	}
	return chmm.Sequence{Obs: tokens, Actions: ep.Actions}, nil
}

// sequences cuts the training episodes' tokens (in episode order) into sequences.
func (d *data) sequences(tokens []int) []chmm.Sequence {
	seqs := make([]chmm.Sequence, len(d.episodes))
	off := 0
	for e, ep := range d.episodes {
		seqs[e] = chmm.Sequence{Obs: tokens[off : off+ep.Len()], Actions: ep.Actions}
		off += ep.Len()
	}
	return seqs
}

// tokenEntropies measures, for the training frames' hard tokens, H(token | place),
// H(token | class) and H(class | token) (nats). The true places and classes are used
// for these measurements only, never for training.
func (d *data) tokenEntropies(tokens []int) evaluate.TokenEntropies {
	classes := make([]int, len(tokens))
	for i, g := range d.allPlaces {
		classes[i] = d.env.Class[g]
	}
	return evaluate.NewTokenEntropies(tokens, d.allPlaces, classes)
}
