package chmm

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// GradConfig configures TrainGradient. A zero field takes the default noted
// in its comment; DefaultGradConfig is the recommended starting point (it
// also turns on early stopping and clone splitting, which the zero value
// leaves off).
type GradConfig struct {
	Iters    int     // maximum Adam steps (0: 2000)
	LR       float64 // Adam learning rate on the logits (0: 0.1)
	FinalLR  float64 // cosine decay of the rate from LR to FinalLR over Iters (0: constant LR)
	ChunkLen int     // 0: full episodes (full batch); else random chunks of ChunkLen steps (the best parameters scored on all sequences every 50 iterations are kept)
	Batch    int     // chunks per step when ChunkLen > 0 (0: 8)

	// EntropyWeight η adds η·Σ_{a,i} w_{a,i} H(T[a,i,·]) to the loss, with
	// w_{a,i} the posterior fraction of steps leaving state i by action a
	// (treated as a constant): the expected per-step transition entropy,
	// on the same per-step scale as the NLL. Rows of never-visited states
	// weigh 0. It sharpens rows (paper 3.6, transition-entropy term). 0: off.
	EntropyWeight float64

	FixedPi bool // keep π fixed (learn Θ only)

	// Early stopping (Keras-style min_delta): stop when ℓ/T has not risen
	// more than Tol above its reference for Patience iterations; the
	// reference moves only on such gains. 0: never stop early. With chunks
	// the criterion uses an exponential moving average (0.9) of the chunks'
	// ℓ/T.
	Patience int
	Tol      float64
	// StopTol, if positive, replaces Tol once the splitting rounds are spent: the
	// plateau that ends training must then gain less than StopTol for Patience
	// iterations. A small StopTol lets a big map keep descending where a gain below
	// Tol still adds up, while the splits still come at Tol's plateaus. 0: Tol.
	StopTol float64

	// Clone splitting (our addition; neither the paper nor the original CSCG
	// has it). At a plateau (Patience), instead of stopping, up to
	// SplitRounds times: every state i whose next token is surprising, i.e.
	//
	//	−Σ_a Σ_k ξ_a(i, clones(k)) log T[a, i, clones(k)] / T  >  SplitMin
	//
	// (nats per step of the data; token level, so that duplicate clones of
	// one place cost nothing), is split into an unused clone of its token
	// (fewer than one expected visit): every source row divides its
	// probability of i between the two with a random share, and the copy's
	// outgoing rows are i's plus N(0, SplitNoise²) logit noise. The split
	// leaves the likelihood unchanged up to the noise; gradient descent then
	// specialises the copies. This undoes merges of two places into one
	// clone, a local optimum that gradient training (and EM) cannot leave
	// otherwise, since an unused clone gets no gradient. Adam's moments
	// restart after a split. 0: no splitting.
	SplitRounds int
	SplitMin    float64 // 0: 1e-3
	SplitNoise  float64 // 0: 0.1
	// FoldDuplicates lets a split whose token has no unused clone free one, as EM's
	// splits do: two clones of the token that behave alike (one place held twice) are
	// folded into one, and the surprising state is split into the freed clone. Without
	// it a trainer whose full token holds a place twice stops there (DefaultGradConfig:
	// on; false, the zero value, for callers that set every field).
	FoldDuplicates bool
	// GrowClones lets a split whose token has no unused clone, and none to free by
	// folding, add one to the token (the model grows by a state, which changes
	// nothing until the split): a clone budget too small for the data sizes itself
	// at the plateaus instead of stopping there (DefaultGradConfig: on). History's
	// splits count the clones added.
	GrowClones bool

	Beta1, Beta2, Eps float64 // Adam (0: 0.9, 0.999, 1e-8)

	Seed    uint64 // chunk sampling and splits; results are deterministic for (Seed, Workers)
	Workers int    // goroutines over sequences/chunks (<= 0: GOMAXPROCS)

	Progress      func(Progress) // called every ProgressEvery iterations (0: 10)
	ProgressEvery int

	// Stop, if set, is called before every iteration; a non-nil error ends training
	// with that error (for example a cancelled context's Err), the model holding the
	// best parameters so far.
	Stop func() error

	// Save, if set, is called with the training's state before an iteration once
	// SaveEvery has passed since the training started, resumed or last saved (0: before
	// every iteration but the first); a non-nil error ends training with that error, as
	// Stop's does. The state is a copy, the callee's to keep.
	Save      func(*GradState) error
	SaveEvery time.Duration
	// Resume, if set, goes on with the training it holds: m takes its parameters and
	// training continues at its iteration. seqs and the other fields must be those it
	// was saved with (Workers included, for the same result to the last bit).
	Resume *GradState
}

// GradState is a gradient training between two iterations (GradConfig.Save and
// Resume). Resumed from it, TrainGradient gives the model and history it would have
// given uninterrupted, but for the wall-clock seconds.
type GradState struct {
	Iter    int      // the iteration it resumes at
	Model   *Model   // the parameters that iteration starts from (clones as splits grew them)
	Seconds float64  // seconds trained before
	History *History // of the iterations before

	AdamPi, AdamTheta AdamState
	// BestPi and BestTheta are the best parameters so far, of ℓ/T Best (−Inf: none yet).
	BestPi, BestTheta []float64
	Best              float64
	// Ref, Crit and SinceBest are early stopping's reference, criterion (NaN: none
	// yet) and iterations without a gain; Splits the splitting rounds done, Spent
	// whether none is left.
	Ref, Crit        float64
	SinceBest        int
	Splits           int
	Spent            bool
	SplitRNG, Chunks []byte // the splits' and the chunks' generators (rand.PCG)
}

// AdamState is the Adam moments of one parameter vector.
type AdamState struct {
	M, V       []float64
	T          int
	Pow1, Pow2 float64
}

// DefaultGradConfig returns the gradient trainer's defaults: full batch, LR 0.1,
// at most 2000 iterations, patience 100 with Tol 1e-4, up to 5 clone-splitting
// rounds, folding duplicates and growing clones on.
func DefaultGradConfig() GradConfig {
	return GradConfig{Iters: 2000, LR: 0.1, Patience: 100, Tol: 1e-4, SplitRounds: 5, FoldDuplicates: true, GrowClones: true}
}

// How a gradient training reads long walks (GradConfig.ChunkIfCostly): every Adam
// step reads ChunkBatch random chunks of ChunkLen steps (16,000 steps: a
// 150,000-step walk is read 9 times more cheaply), walks of at least ChunkMinSteps
// steps only, and its rate falls from LR to LR/10 (cosine over Iters) so that late
// steps settle rather than follow the chunks' noise.
const (
	ChunkLen      = 1000
	ChunkBatch    = 16
	ChunkMinSteps = 4 * ChunkLen * ChunkBatch
)

// DefaultChunkAbove is the pass cost (PassCost, multiply-adds) above which the
// symbolic experiments and the pixel finalisation read chunks (ChunkIfCostly).
const DefaultChunkAbove = 1e8

// ChunkIfCostly returns c set to read random chunks (ChunkLen, ChunkBatch, FinalLR a
// tenth of LR) when one pass of m over seqs would cost more than above multiply-adds
// (PassCost) and seqs hold at least ChunkMinSteps steps; otherwise, or with above ≤ 0,
// c as it is.
func (c GradConfig) ChunkIfCostly(m *Model, seqs []Sequence, above float64) GradConfig {
	if above <= 0 {
		return c
	}
	steps := 0
	for _, q := range seqs {
		steps += len(q.Obs)
	}
	if steps < ChunkMinSteps || PassCost(m, seqs) <= above {
		return c
	}
	lr := c.LR
	if lr == 0 {
		lr = DefaultGradConfig().LR
	}
	c.ChunkLen, c.Batch, c.FinalLR = ChunkLen, ChunkBatch, lr/10
	return c
}

func (c *GradConfig) fill() error {
	if c.Iters == 0 {
		c.Iters = 2000
	}
	if c.LR == 0 {
		c.LR = 0.1
	}
	if c.Batch == 0 {
		c.Batch = 8
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	if c.SplitMin == 0 {
		c.SplitMin = 1e-3
	}
	if c.SplitNoise == 0 {
		c.SplitNoise = 0.1
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10
	}
	switch {
	case c.Iters < 0:
		return fmt.Errorf("Iters = %d, want >= 0", c.Iters)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("LR = %v, want a finite value > 0", c.LR)
	case c.FinalLR < 0 || math.IsNaN(c.FinalLR) || math.IsInf(c.FinalLR, 0):
		return fmt.Errorf("FinalLR = %v, want a finite value >= 0", c.FinalLR)
	case c.ChunkLen < 0:
		return fmt.Errorf("ChunkLen = %d, want >= 0", c.ChunkLen)
	case c.ChunkLen == 1:
		return fmt.Errorf("ChunkLen = 1 has no transitions, want 0 or >= 2")
	case c.Batch < 0:
		return fmt.Errorf("Batch = %d, want >= 1", c.Batch)
	case c.EntropyWeight < 0 || math.IsNaN(c.EntropyWeight) || math.IsInf(c.EntropyWeight, 0):
		return fmt.Errorf("EntropyWeight = %v, want a finite value >= 0", c.EntropyWeight)
	case c.SplitRounds < 0 || !(c.SplitMin > 0) || !(c.SplitNoise > 0) || math.IsInf(c.SplitNoise, 0):
		return fmt.Errorf("SplitRounds = %d, SplitMin = %v, SplitNoise = %v: want >= 0, > 0, finite > 0", c.SplitRounds, c.SplitMin, c.SplitNoise)
	case c.Patience < 0:
		return fmt.Errorf("Patience = %d, want >= 0", c.Patience)
	case math.IsNaN(c.Tol):
		return fmt.Errorf("Tol is NaN")
	case math.IsNaN(c.StopTol):
		return fmt.Errorf("StopTol is NaN")
	case !(c.Beta1 > 0 && c.Beta1 < 1) || !(c.Beta2 > 0 && c.Beta2 < 1) || !(c.Eps > 0):
		return fmt.Errorf("Adam β1 = %v, β2 = %v, ε = %v: want β in (0, 1), ε > 0", c.Beta1, c.Beta2, c.Eps)
	}
	return nil
}

// TrainGradient fits m in place by Adam on the logits (π, Θ) and returns the
// history. The loss of one step is
//
//	L = −ℓ/T + η Σ_{a,i} w_{a,i} H(T[a,i,·])
//
// with ℓ the log-likelihood of the step's data (all sequences, or Batch random
// chunks of ChunkLen steps), T its number of observations, and the exact
// gradient of ℓ from forward–backward (see Gradient). The parameters with the best
// ℓ/T are kept at the end (History.BestIter): in full-batch mode of every iterate,
// with chunks of the iterates every chunkKeepEvery iterations and the last, scored
// on all sequences.
func TrainGradient(m *Model, seqs []Sequence, cfg GradConfig) (*History, error) {
	if err := m.Check(seqs); err != nil {
		return nil, err
	}
	if len(seqs) == 0 {
		return nil, fmt.Errorf("chmm: TrainGradient: no sequences")
	}
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("chmm: TrainGradient: %w", err)
	}
	start := time.Now()
	h := &History{}
	st := cfg.Resume
	if st != nil {
		if err := st.check(m, cfg.ChunkLen > 0); err != nil {
			return nil, fmt.Errorf("chmm: TrainGradient: resuming: %w", err)
		}
		*m = *st.Model.Clone()
		h = st.History.clone()
		start = start.Add(-time.Duration(st.Seconds * float64(time.Second)))
	}
	n := m.N()
	full := cfg.ChunkLen == 0
	batch := seqs
	var sampler *chunkSampler
	nseq := len(seqs)
	if !full {
		sampler = newChunkSampler(seqs, cfg.ChunkLen, cfg.Seed)
		batch = make([]Sequence, cfg.Batch)
		nseq = cfg.Batch
		h.ChunkLen, h.Batch = cfg.ChunkLen, cfg.Batch
	}
	splitSrc := rand.NewPCG(cfg.Seed, 0x73706c6974)
	p := newParamsWorkers(m, cfg.Workers)
	es := newEstepper(p, cfg.Workers, nseq)
	adamPi := newAdam(len(m.PiLogits), cfg)
	adamTheta := newAdam(len(m.ThetaLogits), cfg)
	gPi := make([]float64, n)
	gTheta := make([]float64, len(m.ThetaLogits))
	bestPi := append([]float64(nil), m.PiLogits...)
	bestTheta := append([]float64(nil), m.ThetaLogits...)
	best, ref, crit, sinceBest := math.Inf(-1), math.Inf(-1), math.NaN(), 0
	keep := func(it int, ll float64) { // the best parameters so far
		if ll > best {
			best = ll
			h.BestIter = it
			copy(bestPi, m.PiLogits)
			copy(bestTheta, m.ThetaLogits)
		}
	}
	restore := func() {
		if best > math.Inf(-1) {
			copy(m.PiLogits, bestPi)
			copy(m.ThetaLogits, bestTheta)
		}
	}
	total := 0
	for _, q := range seqs {
		total += len(q.Obs)
	}
	keepAll := func(it int) error { // chunks: the current parameters scored on all sequences
		ll, err := LogLikelihood(m, seqs)
		if err != nil {
			return fmt.Errorf("chmm: TrainGradient: iteration %d: %w", it, err)
		}
		keep(it, ll/float64(total))
		return nil
	}
	rep := newReporter(cfg.Progress, cfg.ProgressEvery, "gradient", cfg.Iters)
	splits := 0
	spent := cfg.SplitRounds == 0 // no split left to try: StopTol's phase
	splitRng := rand.New(splitSrc)
	h.Stop = "max iterations"
	first := 0
	if st != nil {
		if err := st.restore(adamPi, adamTheta, splitSrc, sampler); err != nil {
			return nil, fmt.Errorf("chmm: TrainGradient: resuming: %w", err)
		}
		bestPi, bestTheta = append([]float64(nil), st.BestPi...), append([]float64(nil), st.BestTheta...)
		best, ref, crit, sinceBest, splits, spent = st.Best, st.Ref, st.Crit, st.SinceBest, st.Splits, st.Spent
		first = st.Iter
		rep.resumed(first, h.LogLik)
	}
	saved := time.Now()
	last := 0 // the iteration of the parameters m holds when the loop ends
	for it := first; ; it++ {
		if cfg.Stop != nil {
			if err := cfg.Stop(); err != nil {
				restore()
				return h, err
			}
		}
		if cfg.Save != nil && it > first && time.Since(saved) >= cfg.SaveEvery {
			s := &GradState{Iter: it, Model: m.Clone(), Seconds: time.Since(start).Seconds(), History: h.clone(),
				AdamPi: adamPi.state(), AdamTheta: adamTheta.state(),
				BestPi: append([]float64(nil), bestPi...), BestTheta: append([]float64(nil), bestTheta...), Best: best,
				Ref: ref, Crit: crit, SinceBest: sinceBest, Splits: splits, Spent: spent}
			err := s.marshalRNG(splitSrc, sampler)
			if err == nil {
				err = cfg.Save(s)
			}
			if err != nil {
				restore()
				return h, err
			}
			saved = time.Now()
		}
		if !full {
			if it%chunkKeepEvery == 0 {
				if err := keepAll(it); err != nil {
					restore()
					return h, err
				}
			}
			sampler.sample(batch)
		}
		acc, err := es.run(p, batch)
		if err != nil {
			restore()
			return h, fmt.Errorf("chmm: TrainGradient: iteration %d: %w", it, err)
		}
		steps := float64(acc.steps)
		ll := acc.ll / steps
		p.gradient(acc, gPi, gTheta)
		ent := entropyGrad(p, acc.counts, steps, cfg.EntropyWeight, gTheta)
		h.add("gradient", it, ll, time.Since(start).Seconds(), ent)

		// Early stopping on ℓ/T (smoothed for chunks).
		if full {
			crit = ll
		} else if math.IsNaN(crit) {
			crit = ll
		} else {
			crit = 0.9*crit + 0.1*ll
		}
		tol := cfg.Tol
		if spent && cfg.StopTol > 0 {
			tol = cfg.StopTol
		}
		if crit > ref+tol { // Keras-style min_delta: ref moves only on real gains
			ref, sinceBest = crit, 0
		} else {
			sinceBest++
		}
		if full {
			keep(it, ll)
		}
		last = it
		if it == cfg.Iters {
			rep.report(it, ll, true)
			break
		}
		if cfg.Patience > 0 && sinceBest >= cfg.Patience && !spent {
			splits++
			spent = splits >= cfg.SplitRounds
			k, grown := splitClones(m, p, acc, steps, cfg.SplitMin, cfg.SplitNoise, 1, cfg.FoldDuplicates, cfg.GrowClones, splitRng)
			h.Splits = append(h.Splits, Split{Iter: it, States: k, Grown: grown})
			if k == 0 {
				spent = true
				if cfg.StopTol > 0 { // nothing to split: the plateau is judged again at StopTol
					sinceBest, ref = 0, math.Inf(-1)
				}
			} else {
				adamPi = newAdam(len(m.PiLogits), cfg)
				adamTheta = newAdam(len(m.ThetaLogits), cfg)
				p = newParamsWorkers(m, cfg.Workers)
				if grown > 0 { // a bigger model: new buffers, and the best so far is this one
					n = m.N()
					gPi, gTheta = make([]float64, n), make([]float64, len(m.ThetaLogits))
					es = newEstepper(p, cfg.Workers, nseq)
					bestPi = append([]float64(nil), m.PiLogits...)
					bestTheta = append([]float64(nil), m.ThetaLogits...)
					best = ll
					if !full { // score the grown model on all sequences
						best = math.Inf(-1)
						if err := keepAll(it); err != nil {
							return h, err
						}
					}
				}
				sinceBest, ref = 0, math.Inf(-1)
				rep.report(it, ll, false)
				continue
			}
		}
		if cfg.Patience > 0 && sinceBest >= cfg.Patience {
			h.Stop = "patience"
			rep.report(it, ll, true)
			break
		}
		rep.report(it, ll, false)

		// Descend L = −ℓ/T + η·Σ w H: entropyGrad folded the entropy term
		// into gTheta so that the loss gradient is −gTheta/T.
		lr := cfg.LR
		if cfg.FinalLR > 0 && cfg.Iters > 0 {
			lr = cfg.FinalLR + 0.5*(cfg.LR-cfg.FinalLR)*(1+math.Cos(math.Pi*float64(it)/float64(cfg.Iters)))
		}
		if !cfg.FixedPi {
			adamPi.step(m.PiLogits, gPi, -1/steps, lr)
		}
		adamTheta.step(m.ThetaLogits, gTheta, -1/steps, lr)
		p = newParamsWorkers(m, cfg.Workers)
	}
	if !full {
		if err := keepAll(last); err != nil {
			restore()
			return h, err
		}
	}
	restore()
	return h, nil
}

// chunkKeepEvery is how often (in iterations) a training on chunks scores its
// parameters on all sequences to keep the best: a chunked training can end worse
// than it started.
const chunkKeepEvery = 50

// entropyGrad folds the gradient of the entropy term into g (which holds
// ∂ℓ/∂Θ and is later scaled by −1/T): g += −T·η·∂(Σ w H)/∂Θ, with
// w_{a,i} = n_a(i)/T, n_a(i) = Σ_j ξ_a(i,j), and
//
//	∂H(T[a,i,·])/∂Θ[a,i,j] = −T_j (log T_j + H)    (0 where T_j = 0).
//
// It returns Σ_{a,i} w_{a,i} H(T[a,i,·]) (nats per step).
func entropyGrad(p *params, counts []float64, steps, eta float64, g []float64) float64 {
	n := p.n
	rows := make([]float64, len(p.trans)/n) // each row's w·H, summed in row order below
	forRanges(len(rows), n, p.workers, func(lo, hi int) {
		for ri := lo; ri < hi; ri++ {
			r := ri * n
			var nai float64
			for _, v := range counts[r : r+n] {
				nai += v
			}
			if nai == 0 {
				continue
			}
			row := p.trans[r : r+n]
			var hrow float64
			for _, t := range row {
				if t > 0 {
					hrow -= t * math.Log(t)
				}
			}
			rows[ri] = nai / steps * hrow
			if eta == 0 {
				continue
			}
			// −T·η·w·∂H/∂Θ_j = T·η·w·T_j(log T_j + H) = η·n_a(i)·T_j(log T_j + H).
			c := eta * nai
			gr := g[r : r+n]
			for j, t := range row {
				if t > 0 {
					gr[j] += c * t * (math.Log(t) + hrow)
				}
			}
		}
	})
	var total float64
	for _, v := range rows {
		total += v
	}
	return total
}

// adam is the Adam optimiser state of one parameter vector.
type adam struct {
	m, v        []float64
	b1, b2, eps float64
	t           int
	pow1, pow2  float64
	workers     int // goroutines of a step (dense.go; <= 0: GOMAXPROCS)
}

func newAdam(n int, c GradConfig) *adam {
	return &adam{m: make([]float64, n), v: make([]float64, n), b1: c.Beta1, b2: c.Beta2, eps: c.Eps, pow1: 1, pow2: 1, workers: c.Workers}
}

// state is a copy of a's moments.
func (a *adam) state() AdamState {
	return AdamState{M: append([]float64(nil), a.m...), V: append([]float64(nil), a.v...), T: a.t, Pow1: a.pow1, Pow2: a.pow2}
}

// set gives a the moments s, of a's length (GradState.check).
func (a *adam) set(s AdamState) {
	copy(a.m, s.M)
	copy(a.v, s.V)
	a.t, a.pow1, a.pow2 = s.T, s.Pow1, s.Pow2
}

// check says whether s can resume a training of m, with chunks or not: the same
// tokens and actions, a valid model, every saved vector of its size, and readable
// generators.
func (s *GradState) check(m *Model, chunks bool) error {
	if err := checkSaved(s.Model, s.History, m); err != nil {
		return err
	}
	if len(s.BestPi) != len(s.Model.PiLogits) || len(s.BestTheta) != len(s.Model.ThetaLogits) {
		return fmt.Errorf("best parameters of %d and %d entries, the state's model has %d and %d",
			len(s.BestPi), len(s.BestTheta), len(s.Model.PiLogits), len(s.Model.ThetaLogits))
	}
	for _, a := range []struct {
		s AdamState
		n int
	}{{s.AdamPi, len(s.Model.PiLogits)}, {s.AdamTheta, len(s.Model.ThetaLogits)}} {
		if len(a.s.M) != a.n || len(a.s.V) != a.n {
			return fmt.Errorf("Adam moments of %d and %d parameters, the state's model has %d", len(a.s.M), len(a.s.V), a.n)
		}
	}
	if s.Iter < 1 || len(s.History.LogLik) != s.Iter {
		return fmt.Errorf("state at iteration %d with %d in its history", s.Iter, len(s.History.LogLik))
	}
	if chunks != (s.Chunks != nil) {
		return fmt.Errorf("state of a training with chunks %v, this one with chunks %v", s.Chunks != nil, chunks)
	}
	for _, b := range [][]byte{s.SplitRNG, s.Chunks} {
		if b == nil {
			continue
		}
		if err := new(rand.PCG).UnmarshalBinary(b); err != nil {
			return fmt.Errorf("a generator's state: %w", err)
		}
	}
	return nil
}

// step applies one Adam update to x for the loss gradient scale·g.
// Entries of x at -Inf get zero gradients and stay -Inf.
func (a *adam) step(x, g []float64, scale, lr float64) {
	a.t++
	a.pow1 *= a.b1
	a.pow2 *= a.b2
	c1, c2 := 1/(1-a.pow1), 1/(1-a.pow2)
	forRanges(len(g), 1, a.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := g[i] * scale
			a.m[i] = a.b1*a.m[i] + (1-a.b1)*gi
			a.v[i] = a.b2*a.v[i] + (1-a.b2)*gi*gi
			x[i] -= lr * (a.m[i] * c1) / (math.Sqrt(a.v[i]*c2) + a.eps)
		}
	})
}

// restore gives a resumed training s's Adam moments and generators (sampler nil:
// full batch); s passed check.
func (s *GradState) restore(pi, theta *adam, split *rand.PCG, sampler *chunkSampler) error {
	pi.set(s.AdamPi)
	theta.set(s.AdamTheta)
	if err := split.UnmarshalBinary(s.SplitRNG); err != nil {
		return fmt.Errorf("splits' generator: %w", err)
	}
	if sampler != nil {
		if err := sampler.src.UnmarshalBinary(s.Chunks); err != nil {
			return fmt.Errorf("chunks' generator: %w", err)
		}
	}
	return nil
}

// marshalRNG saves the generators' states in s (sampler nil: full batch).
func (s *GradState) marshalRNG(split *rand.PCG, sampler *chunkSampler) error {
	var err error
	if s.SplitRNG, err = split.MarshalBinary(); err != nil || sampler == nil {
		return err
	}
	s.Chunks, err = sampler.src.MarshalBinary()
	return err
}

// chunkSampler draws random windows of the training sequences.
type chunkSampler struct {
	seqs   []Sequence
	length int
	cum    []int // cumulative number of start positions
	src    *rand.PCG
	rng    *rand.Rand
}

func newChunkSampler(seqs []Sequence, length int, seed uint64) *chunkSampler {
	src := rand.NewPCG(seed, 0x636875e6b)
	s := &chunkSampler{seqs: seqs, length: length, src: src, rng: rand.New(src)}
	tot := 0
	for _, q := range seqs {
		tot += max(1, len(q.Obs)-length+1)
		s.cum = append(s.cum, tot)
	}
	return s
}

// sample fills out with chunks: a start position uniform over all windows of
// all sequences (a sequence shorter than the window is taken whole).
func (s *chunkSampler) sample(out []Sequence) {
	for b := range out {
		u := s.rng.IntN(s.cum[len(s.cum)-1])
		q := 0
		for s.cum[q] <= u {
			q++
		}
		if q > 0 {
			u -= s.cum[q-1]
		}
		seq := s.seqs[q]
		l := min(s.length, len(seq.Obs))
		out[b] = Sequence{Obs: seq.Obs[u : u+l], Actions: seq.Actions[u : u+l-1]}
	}
}

// splitClones splits every state whose transition cost per step exceeds
// minCost into an unused clone of the same token (see GradConfig.SplitRounds)
// (one with fewer than freeOcc expected visits; with fold, when there is none, one
// freed by folding two alike clones: freeDuplicate) and returns the number of
// states split. p and acc describe m at the current
// iterate; costs use the expected counts ξ of acc.
func splitClones(m *Model, p *params, acc *accum, steps, minCost, noise, freeOcc float64, fold, grow bool, rng *rand.Rand) (split, grown int) {
	n := p.n
	// occ: expected visits leaving state i. cost: surprise of the next token,
	// −Σ_a Σ_k ξ_a(i, clones(k)) log T[a, i, clones(k)] (token-level, so that
	// duplicate clones of one place, which share mass, cost nothing).
	occ := make([]float64, n)
	cost := make([]float64, n)
	for r := 0; r < len(p.trans); r += n {
		i := (r / n) % n
		for k, f := range p.first {
			var x, q float64
			for j := f; j < f+p.size[k]; j++ {
				x += acc.counts[r+j]
				q += p.trans[r+j]
			}
			if x > 0 {
				occ[i] += x
				cost[i] -= x * math.Log(q)
			}
		}
	}
	// Candidates by decreasing cost; free clones by increasing occupancy.
	var cand []int
	for i := range n - 1 {
		if cost[i]/steps > minCost {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	used := make([]bool, n)
	var want []int // states with no clone to split into
	for _, i := range cand {
		k := m.Token(i)
		f := p.first[k]
		u, best := -1, freeOcc // a free clone: fewer expected visits than freeOcc
		for c := f; c < f+p.size[k]; c++ {
			if c != i && !used[c] && occ[c] < best {
				u, best = c, occ[c]
			}
		}
		if u < 0 && fold {
			u = freeDuplicate(m, p, k, i, used)
		}
		if u < 0 {
			if !used[i] {
				want = append(want, i)
			}
			continue
		}
		used[i], used[u] = true, true
		splitState(m, i, u, noise, rng)
		split++
	}
	if !grow {
		return split, 0
	}
	// New clones, highest token first: adding to token k moves only the states of
	// the tokens after it, which are done by then.
	slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(b, a) })
	for _, i := range want {
		u := addClone(m, m.Token(i))
		splitState(m, i, u, noise, rng)
		split++
		grown++
	}
	return split, grown
}

// splitState makes u a noisy copy of state i: every source row (and π)
// divides its probability of i between i and u with a random share, and u's
// outgoing rows copy i's plus N(0, noise²) logit noise.
func splitState(m *Model, i, u int, noise float64, rng *rand.Rand) {
	n := m.N()
	share := func(x []float64) {
		w := 0.1 + 0.8*rng.Float64()
		v := x[i]
		x[i] = v + math.Log(w)
		x[u] = v + math.Log1p(-w)
	}
	share(m.PiLogits)
	for r := 0; r < len(m.ThetaLogits); r += n {
		share(m.ThetaLogits[r : r+n])
	}
	for a := range m.NumActions {
		src := m.ThetaLogits[(a*n+i)*n : (a*n+i+1)*n]
		dst := m.ThetaLogits[(a*n+u)*n : (a*n+u+1)*n]
		for j, v := range src {
			dst[j] = v + noise*rng.NormFloat64() // -Inf stays -Inf
		}
	}
}

// freeDuplicate looks, among the clones of token k other than i, for two
// that behave alike: for every action their next-token distributions differ
// by less than 0.05 in total variation (two clones sharing one place). It
// folds the second into the first (its incoming probability and π mass move
// to the first) and returns it, now free; -1 if there is no such pair.
func freeDuplicate(m *Model, p *params, k, i int, used []bool) int {
	n, first, size := p.n, p.first[k], p.size[k]
	next := func(a, c, kk int) float64 {
		var q float64
		r := (a*n + c) * n
		for j := p.first[kk]; j < p.first[kk]+p.size[kk]; j++ {
			q += p.trans[r+j]
		}
		return q
	}
	for c1 := first; c1 < first+size; c1++ {
		for c2 := c1 + 1; c2 < first+size; c2++ {
			if c1 == i || c2 == i || used[c1] || used[c2] {
				continue
			}
			alike := true
			for a := 0; a < m.NumActions && alike; a++ {
				var tv float64
				for kk := range p.first {
					tv += math.Abs(next(a, c1, kk) - next(a, c2, kk))
				}
				alike = tv/2 < 0.05
			}
			if !alike {
				continue
			}
			foldInto(m, c1, c2)
			return c2
		}
	}
	return -1
}
