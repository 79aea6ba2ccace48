package experiment

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/progress"
)

// keepBest trains max(1, t.Restarts) starts with train1 — m itself, then models
// drawn from the seed streams (t.Seed, 2 + r<<8) — and returns the one with the
// highest training likelihood (training data only), its history and the number of
// starts trained: with t.UntilFit, the first start that predicts its training walks
// (at most FitBits bits per step) ends the search.
func keepBest(m *chmm.Model, train []chmm.Sequence, t Training, progressOut io.Writer,
	train1 func(mr *chmm.Model, r int, bar func(total int) *progress.Bar) (*chmm.History, error)) (*chmm.Model, *chmm.History, int, error) {
	n := max(1, t.Restarts)
	var best *chmm.Model
	var bestH *chmm.History
	bestLL := math.Inf(-1)
	steps := 0
	for _, q := range train {
		steps += len(q.Obs)
	}
	for r := range n {
		mr := m
		if r > 0 {
			mr = newModel(m.Clones, m.NumActions, rand.New(rand.NewPCG(t.Seed, 2+uint64(r)<<8)), t.Init) // SymbolicInit's stream family
		} else if n > 1 {
			mr = m.Clone()
		}
		bar := func(total int) *progress.Bar {
			if progressOut == nil {
				return nil
			}
			name := t.Trainer
			if t.Trainer == TrainerEM || n > 1 {
				name = fmt.Sprintf("%s start %d/%d", map[string]string{TrainerEM: "EM", TrainerGradient: "gradient"}[t.Trainer], r+1, n)
			}
			return progress.New(progressOut, name, total)
		}
		h, err := train1(mr, r, bar)
		if err != nil {
			return nil, nil, r + 1, err
		}
		if n == 1 {
			return mr, h, 1, nil
		}
		ll, err := chmm.LogLikelihood(mr, train)
		if err != nil {
			return nil, nil, r + 1, err
		}
		if ll > bestLL {
			best, bestH, bestLL = mr, h, ll
		}
		if t.UntilFit && -ll/float64(steps)/math.Ln2 <= FitBits {
			return best, bestH, r + 1, nil
		}
	}
	return best, bestH, n, nil
}

// FitBits is the training walks' cost (bits per step) at or below which a map fits
// them: a start of UntilFit then ends the search, and a budget grown by splitting
// stops growing. It is tighter than the verdict's chmm.ExactBits. A map trained on
// little data can cost more while right; it then merely gets its other starts.
const FitBits = 0.005

// Symbolic trainers (paper Sec. 5.1).
const (
	TrainerGradient = "gradient" // Adam on (π, Θ) (chmm.TrainGradient)
	TrainerEM       = "em"       // the original CSCG's Baum–Welch (chmm.TrainEM)
)

// Training is how TrainSymbolic trains. A zero field means the trainer's default
// (chmm.DefaultGradConfig, chmm.DefaultEMConfig) except where stated.
type Training struct {
	Trainer string // TrainerGradient or TrainerEM
	Seed    uint64 // chunk sampling, clone splits, EM restarts
	Iters   int    // maximum iterations (EM: negative skips the soft phase)
	// Full makes EM's soft phase run all Iters iterations (it stops only if ℓ/T falls
	// by a nat): a model just split sits where EM's first iterations barely move.
	Full bool
	// Gradient: Adam's learning rate, the transition-entropy weight η (paper
	// Sec. 3.6; 0: none), the least gain in ℓ/T that counts as progress (0: the
	// trainer's default) and that gain once its splitting rounds are spent
	// (chmm.GradConfig.StopTol; 0: Tol).
	LR, Entropy, Tol, StopTol float64
	// EM: the pseudocount (0: none), the hard (Viterbi) iterations after Baum–Welch
	// (0: none) and the initialisations tried, the one with the highest training
	// likelihood kept (0 or 1: the given model only). Restart r > 0 starts from
	// chmm.New with the seed stream (Seed, 2 + r<<8).
	Pseudocount  float64
	ViterbiIters int
	Restarts     int
	// UntilFit ends the restarts at the first start whose map predicts its training
	// walks (at most FitBits bits per step): a start that fits
	// needs no other, and one stuck on a plateau gets another start.
	UntilFit bool
	// Init is the start of the EM restarts r > 0 (the first start is the model
	// given): InitUniform (chmm.New, default) or InitRandom (chmm.NewRandom).
	Init string
	// ChunkAbove > 0 makes a gradient training read random chunks of the walks when
	// one pass over them would cost more than ChunkAbove multiply-adds
	// (chmm.GradConfig.ChunkIfCostly). 0: the whole walks at every iteration.
	ChunkAbove float64
	// Save, SaveEvery and Resume make a gradient training of one start resumable
	// between iterations (chmm.GradConfig's fields of those names), SaveEM and
	// ResumeEM an EM training's soft phase (chmm.EMConfig's Save and Resume, every
	// SaveEvery). The other trainer's fields, or more than one start, are an error.
	Save      func(*chmm.GradState) error
	SaveEvery time.Duration
	Resume    *chmm.GradState
	SaveEM    func(*chmm.EMState) error
	ResumeEM  *chmm.EMState
}

// Initialisations of a symbolic model (SymbolicInit).
const (
	InitUniform = "uniform" // chmm.New: near-uniform transitions (the reference's)
	InitRandom  = "random"  // chmm.NewRandom: the original CSCG's T ~ U(0, 1)
)

// TrainSymbolic trains m on train and returns the trained model (m itself for the
// gradient trainer; for EM the best restart, m when it is the first) and the kept
// run's history, and the number of starts trained. Progress bars go to progressOut
// when it is not nil.
func TrainSymbolic(m *chmm.Model, train []chmm.Sequence, t Training, progressOut io.Writer) (*chmm.Model, *chmm.History, int, error) {
	if t.Init != "" && t.Init != InitUniform && t.Init != InitRandom {
		return nil, nil, 0, fmt.Errorf("experiment: init %q: want %q or %q", t.Init, InitUniform, InitRandom)
	}
	workers := runtime.GOMAXPROCS(0)
	grad, em := t.Save != nil || t.Resume != nil, t.SaveEM != nil || t.ResumeEM != nil
	if (grad || em) && (grad && t.Trainer != TrainerGradient || em && t.Trainer != TrainerEM || t.Restarts > 1) {
		return nil, nil, 0, fmt.Errorf("experiment: a %s training of %d starts cannot be saved or resumed between iterations with the other trainer's state, or with more than one start", t.Trainer, max(1, t.Restarts))
	}
	switch t.Trainer {
	case TrainerGradient:
		gc := chmm.DefaultGradConfig()
		gc.Workers, gc.Seed, gc.EntropyWeight = workers, t.Seed, t.Entropy
		if t.Iters > 0 {
			gc.Iters = t.Iters
		}
		if t.LR > 0 {
			gc.LR = t.LR
		}
		if t.Tol > 0 {
			gc.Tol = t.Tol
		}
		gc.StopTol = t.StopTol
		gc = gc.ChunkIfCostly(m, train, t.ChunkAbove)
		gc.Save, gc.SaveEvery, gc.Resume = t.Save, t.SaveEvery, t.Resume
		return keepBest(m, train, t, progressOut, func(mr *chmm.Model, r int, bar func(int) *progress.Bar) (*chmm.History, error) {
			gc.Seed = t.Seed + uint64(r)<<32
			b := bar(gc.Iters)
			if t.Resume != nil {
				b.From(t.Resume.Iter)
			}
			gc.Progress = func(p chmm.Progress) { b.Update(p.Iter, "ll/step %.5f", p.LogLik) }
			h, err := chmm.TrainGradient(mr, train, gc)
			if err == nil {
				b.Finish(len(h.LogLik), "%s (%s)", h.Stop, splitText(h))
			}
			return h, err
		})
	case TrainerEM:
		ec := chmm.DefaultEMConfig()
		ec.Workers, ec.Pseudocount, ec.ViterbiIters = workers, t.Pseudocount, t.ViterbiIters
		if t.Iters != 0 {
			ec.MaxIters = t.Iters
		}
		if t.Full {
			ec.Tol = -1
		}
		ec.Save, ec.SaveEvery, ec.Resume = t.SaveEM, t.SaveEvery, t.ResumeEM
		return keepBest(m, train, t, progressOut, func(mr *chmm.Model, r int, bar func(int) *progress.Bar) (*chmm.History, error) {
			ec.Seed = t.Seed + uint64(r)<<32
			// One bar per phase: the hard (Viterbi) phase counts its own iterations
			// against its own budget (on the soft phase's bar it read 7/4000, ETA 37h).
			b, phase, last := bar(ec.MaxIters), "em", 0
			if ec.MaxIters < 0 { // the hard phase alone
				b, phase = bar(ec.ViterbiIters), "viterbi"
			} else if t.ResumeEM != nil {
				b.From(t.ResumeEM.Iter)
			}
			ec.Progress = func(p chmm.Progress) {
				if p.Phase != phase {
					b.Finish(last, "%s done", phase)
					b, phase = bar(p.Iters), p.Phase
				}
				last = p.Iter
				b.Update(p.Iter, "%s ll/step %.5f", p.Phase, p.LogLik)
			}
			h, err := chmm.TrainEM(mr, train, ec)
			if err == nil {
				b.Finish(last, "%s", h.Stop)
			}
			return h, err
		})
	}
	return nil, nil, 0, fmt.Errorf("experiment: trainer %q: want %q or %q", t.Trainer, TrainerGradient, TrainerEM)
}

// Tokens maps an environment's classes to the tokens of a symbolic run: token k is
// the k-th smallest class the environment shows (gridworld.Env.ClassesUsed).
type Tokens struct {
	Classes []int // token k shows class Classes[k]
	toToken map[int]int
}

// NewTokens returns the token map of env.
func NewTokens(env *gridworld.Env) Tokens {
	t := Tokens{Classes: env.ClassesUsed(), toToken: map[int]int{}}
	for k, c := range t.Classes {
		t.toToken[c] = k
	}
	return t
}

// Token returns the token of class c and whether env shows c.
func (t Tokens) Token(c int) (int, bool) {
	k, ok := t.toToken[c]
	return k, ok
}

// Sequence returns ep's observations as tokens, with its actions.
func (t Tokens) Sequence(ep gridworld.Episode) chmm.Sequence {
	obs := make([]int, len(ep.Obs))
	for i, c := range ep.Obs {
		obs[i] = t.toToken[c]
	}
	return chmm.Sequence{Obs: obs, Actions: ep.Actions}
}

// The seed streams of a symbolic run with seed s — (s, 1) the training walks, (s, 2)
// the initial model, (s, 3) the held-out walk — in one place for the CLI, the suites,
// Figure 3 and the notebooks, so the same settings give the same run everywhere.

// SymbolicTrainingWalks returns the run's training episodes.
func SymbolicTrainingWalks(env *gridworld.Env, seed uint64, episodes, steps int) []gridworld.Episode {
	return env.TrainingEpisodes(rand.New(rand.NewPCG(seed, 1)), episodes, steps)
}

// SymbolicHeldOutWalk returns the run's held-out walk of steps observations.
func SymbolicHeldOutWalk(env *gridworld.Env, seed uint64, steps int) gridworld.Episode {
	return env.Walk(rand.New(rand.NewPCG(seed, 3)), steps)
}

// SymbolicInit returns the run's initial model: init InitUniform ("" too) or
// InitRandom (TrainSymbolic's EM restarts r > 0 draw theirs from (seed, 2 + r<<8)).
func SymbolicInit(clones []int, numActions int, seed uint64, init string) *chmm.Model {
	return newModel(clones, numActions, rand.New(rand.NewPCG(seed, 2)), init)
}

func newModel(clones []int, numActions int, rng *rand.Rand, init string) *chmm.Model {
	if init == InitRandom {
		return chmm.NewRandom(clones, numActions, rng)
	}
	return chmm.New(clones, numActions, rng)
}

// DiagnoseSymbolic is the label-free verdict on a symbolic map: chmm.Diagnose on its
// training walks and the held-out walk's tokens and actions (no places), judged
// for exact tokens.
func DiagnoseSymbolic(m *chmm.Model, train []chmm.Sequence, heldOut chmm.Sequence) (*chmm.Diagnosis, error) {
	d, err := chmm.Diagnose(m, train, []chmm.Sequence{heldOut}, 0)
	if err != nil {
		return nil, fmt.Errorf("diagnosing the map: %w", err)
	}
	d.Verdict = d.Judge(chmm.ExactTokens)
	return d, nil
}

// splitText says how many clone-splitting rounds a gradient run had and how many
// clones they added.
func splitText(h *chmm.History) string {
	grown := h.ClonesAdded()
	if grown == 0 {
		return fmt.Sprintf("%d clone-splitting rounds", len(h.Splits))
	}
	return fmt.Sprintf("%d clone-splitting rounds, %d clones added", len(h.Splits), grown)
}

// SymbolicTraining is the report's record of a symbolic map m trained on train in
// starts starts: the walks, the starts, the clones, and how the kept start's training
// ran (h; nil for a map loaded, not trained).
func SymbolicTraining(m *chmm.Model, train []chmm.Sequence, starts int, h *chmm.History) *evaluate.Training {
	rec := &evaluate.Training{Episodes: len(train), Clones: m.Clones}
	if len(train) > 0 {
		rec.Steps = len(train[0].Obs)
	}
	if h != nil {
		rec.Restarts = max(1, starts)
		rec.Runs = []evaluate.TrainerRun{{Name: "train", Iterations: len(h.LogLik), SplitRounds: len(h.Splits),
			ClonesAdded: h.ClonesAdded(), Stop: h.Stop, ChunkLen: h.ChunkLen, Batch: h.Batch}}
	}
	return rec
}
