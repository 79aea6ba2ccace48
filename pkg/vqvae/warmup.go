package vqvae

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/progress"
)

// Frames is a source of training images for Warmup.
type Frames interface {
	// Len is the number of images.
	Len() int
	// Frame writes image i (Side² values in [0,1], row-major) into dst.
	Frame(i int, dst []float32)
}

// LabeledFrames also knows every image's class (needed only with Config.Classify).
type LabeledFrames interface {
	Frames
	Label(i int) int
}

// SliceFrames is a Frames over images held in memory.
type SliceFrames struct {
	Pixels []float32 // Len()·Side² values in [0,1]
	Labels []int     // optional, one per image
	Side   int
}

// Len implements Frames.
func (s SliceFrames) Len() int { return len(s.Pixels) / (s.Side * s.Side) }

// Frame implements Frames.
func (s SliceFrames) Frame(i int, dst []float32) {
	p := s.Side * s.Side
	copy(dst, s.Pixels[i*p:(i+1)*p])
}

// Label implements LabeledFrames.
func (s SliceFrames) Label(i int) int { return s.Labels[i] }

// BankFrames is a LabeledFrames over images of a dataset.Bank: frame i is image
// Index[i] (for example the frames of the training episodes, which repeat images).
type BankFrames struct {
	Bank  *dataset.Bank
	Index []int
}

// Len implements Frames.
func (f BankFrames) Len() int { return len(f.Index) }

// Frame implements Frames.
func (f BankFrames) Frame(i int, dst []float32) { f.Bank.Float(f.Index[i], dst) }

// Label implements LabeledFrames.
func (f BankFrames) Label(i int) int { return f.Bank.Label(f.Index[i]) }

// WarmupConfig configures Warmup (paper Sec. 3.6, phase 1; reference: 4 epochs,
// batch 128, Adam 3e-4).
type WarmupConfig struct {
	Epochs int     // passes over the frames
	Batch  int     // minibatch size; the last partial batch of an epoch is dropped
	LR     float64 // Adam learning rate
	// Checkpoint, if set, is the file the model is saved to (atomically) every
	// CheckpointEvery steps (0: only at the end of each epoch) and at the end.
	Checkpoint      string
	CheckpointEvery int
	// MaxSteps, if > 0, stops after that many steps of this call (the cursor is kept,
	// so a later call continues).
	MaxSteps int
}

// DefaultWarmupConfig is the reference's warm-up: 4 epochs, batch 128, Adam 3e-4.
func DefaultWarmupConfig() WarmupConfig {
	return WarmupConfig{Epochs: 4, Batch: 128, LR: DefaultLearningRate}
}

// WarmupCursor is the position of a warm-up run: the next batch is batch Batch of
// epoch Epoch. It is saved with the model, so a run resumed from a checkpoint
// continues with the same batches.
type WarmupCursor struct {
	Epoch, Batch int
	// BatchSize and Frames identify the run the cursor belongs to.
	BatchSize, Frames int
}

// WarmupCursor returns the model's warm-up position.
func (m *Model) WarmupCursor() WarmupCursor { return m.cursor }

// epochOrder is the deterministic shuffle of epoch e.
func (m *Model) epochOrder(epoch, n int) []int {
	rng := rand.New(rand.NewPCG(m.seed, 0x77a2_0000+uint64(epoch)))
	return rng.Perm(n)
}

// Warmup trains the VQ-VAE alone on frames (unsupervised: reconstruction +
// commitment; with Config.Classify also the reference's classification loss), one
// shuffled pass per epoch. Each step is appended to the model's history. Progress
// lines (rate, ETA, losses) go to progress when it is not nil. A model loaded from a
// warm-up checkpoint continues where the run stopped; calling Warmup again on a
// finished model with more Epochs continues with the next epoch.
func Warmup(m *Model, frames Frames, cfg WarmupConfig, progressOut io.Writer) error {
	n := frames.Len()
	switch {
	case cfg.Epochs < 1:
		return fmt.Errorf("vqvae.Warmup: Epochs=%d (need ≥ 1)", cfg.Epochs)
	case cfg.Batch < 1:
		return fmt.Errorf("vqvae.Warmup: Batch=%d (need ≥ 1)", cfg.Batch)
	case n < cfg.Batch:
		return fmt.Errorf("vqvae.Warmup: %d frames is fewer than one batch of %d", n, cfg.Batch)
	case cfg.CheckpointEvery < 0 || cfg.MaxSteps < 0:
		return errors.New("vqvae.Warmup: CheckpointEvery and MaxSteps must be ≥ 0")
	}
	var labeled LabeledFrames
	if m.cfg.Classify {
		var ok bool
		if labeled, ok = frames.(LabeledFrames); !ok {
			return errors.New("vqvae.Warmup: Config.Classify needs LabeledFrames")
		}
	}
	if err := m.SetLearningRate(cfg.LR); err != nil {
		return fmt.Errorf("vqvae.Warmup: %w", err)
	}
	cur := m.cursor
	if cur.BatchSize == 0 && cur.Epoch == 0 && cur.Batch == 0 {
		cur.BatchSize, cur.Frames = cfg.Batch, n
	}
	if cur.BatchSize != cfg.Batch || cur.Frames != n {
		return fmt.Errorf("vqvae.Warmup: the model's warm-up cursor belongs to a run with batch %d over %d frames, not batch %d over %d",
			cur.BatchSize, cur.Frames, cfg.Batch, n)
	}
	perEpoch := n / cfg.Batch
	total := (cfg.Epochs-cur.Epoch)*perEpoch - cur.Batch
	if cfg.MaxSteps > 0 {
		total = min(total, cfg.MaxSteps)
	}
	if total <= 0 {
		return nil
	}
	var bar *progress.Bar
	if progressOut != nil {
		bar = progress.New(progressOut, "vq-vae warm-up", total).Every(2 * time.Second)
	}
	p := m.cfg.Pixels()
	batch := Batch{Images: make([]float32, cfg.Batch*p)}
	if labeled != nil {
		batch.Labels = make([]int, cfg.Batch)
	}
	save := func() error {
		if cfg.Checkpoint == "" {
			return nil
		}
		return m.Save(cfg.Checkpoint)
	}
	done := 0
	var last Metrics
	for cur.Epoch < cfg.Epochs && done < total {
		order := m.epochOrder(cur.Epoch, n)
		for cur.Batch < perEpoch && done < total {
			idx := order[cur.Batch*cfg.Batch : (cur.Batch+1)*cfg.Batch]
			for j, i := range idx {
				frames.Frame(i, batch.Images[j*p:(j+1)*p])
				if labeled != nil {
					batch.Labels[j] = labeled.Label(i)
				}
			}
			met, err := m.TrainStep(batch)
			if err != nil {
				return fmt.Errorf("vqvae.Warmup: epoch %d batch %d: %w", cur.Epoch, cur.Batch, err)
			}
			last = met
			cur.Batch++
			done++
			m.cursor = cur
			bar.Update(done, "epoch %d rec %.4f commit %.4f ppl %.2f active %d/%d",
				cur.Epoch+1, met.Rec, met.Commit, met.Perplexity, met.Active, m.cfg.K)
			if cfg.CheckpointEvery > 0 && len(m.history)%cfg.CheckpointEvery == 0 {
				if err := save(); err != nil {
					return err
				}
			}
		}
		if cur.Batch == perEpoch {
			cur.Epoch++
			cur.Batch = 0
			m.cursor = cur
			if err := save(); err != nil {
				return err
			}
		}
	}
	if err := save(); err != nil {
		return err
	}
	bar.Done("rec %.4f commit %.4f ppl %.2f active %d/%d", last.Rec, last.Commit, last.Perplexity, last.Active, m.cfg.K)
	return nil
}
