package chmm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// EMConfig configures TrainEM, the original CSCG's Baum–Welch (George et al.
// 2021) followed by Viterbi ("hard") EM.
type EMConfig struct {
	// MaxIters bounds the soft EM iterations (M-steps); 0 means 1000 and a
	// negative value skips soft EM.
	MaxIters int
	// Pseudocount is added to every expected transition count toward a real
	// destination (and to γ_1 for π) in the soft M-step. The original used
	// 2e-3 (rooms), 1e-2 (maze), 2e-2 (stitched rooms), 1.0 (cliques).
	Pseudocount float64
	// Tol: soft EM stops when the per-step log-likelihood ℓ/T improves by no
	// more than Tol over the previous iteration (0: at the first
	// non-increase, as the original).
	Tol float64
	// ViterbiIters bounds the hard-EM iterations run afterwards with
	// pseudocount 0 (they stop early when the Viterbi paths' probability no
	// longer increases).
	ViterbiIters int
	// Workers is the number of goroutines over sequences (<= 0: GOMAXPROCS).
	Workers int
	// FixedPi keeps π as it is (the original CSCG never learns π); otherwise
	// the soft M-step sets π̄ ∝ γ_1 + Pseudocount. The hard phase never
	// changes π (a one-hot π would give held-out episodes zero probability).
	FixedPi bool
	// SplitRounds: when soft EM converges, split the states whose next token
	// is surprising into unused clones of their token and resume soft EM, at
	// most SplitRounds times (see GradConfig.SplitRounds; our addition, 0 is
	// the original's behaviour). EM, like gradient training, can settle with
	// one clone serving two places while another clone of the token idles;
	// with a tight budget (corridors: 5 clones, a class at 5 places) it does
	// so for some seeds.
	SplitRounds int
	SplitMin    float64 // 0: 1e-3
	// SplitTol: a plateau (ℓ/T improving by less than SplitTol per
	// iteration) also triggers a split, since EM can creep for hundreds of
	// iterations without converging. 0: 1e-5.
	SplitTol   float64
	SplitNoise float64 // 0: 0.1
	Seed       uint64  // splits
	// Confusion, if set, reads every observed token o as any token k with
	// C[k][o] > 0, with likelihood C[k][o] (a K×K matrix whose rows sum to 1;
	// see confusion.go): misread tokens are explained by C instead of by clones.
	// nil: hard tokens. It needs ViterbiIters 0 (the hard phase reads hard tokens).
	Confusion [][]float64
	// LearnConfusion re-estimates C after every M-step (over its nonzero
	// entries); History.Confusion holds the result. Confusion is not modified.
	LearnConfusion bool
	// ConfusionBeam drops, at each step, the candidate tokens that hold less than
	// this share of the forward pass's filtered mass (see confusion.go); 0 keeps
	// them all. Must be in [0, 0.5).
	ConfusionBeam float64
	// Segments, if above 1, cuts the sequences into about that many segments (a
	// sequence into a share proportional to its length, none under 1000 steps) whose
	// forward–backward passes run in parallel on Workers goroutines, each starting
	// from the messages its neighbours ended with at the E-step before (segments.go):
	// the E-step's ℓ and counts are those of whole sequences once the messages have
	// settled, and at a fixed point of EM; History's ℓ/T are the segments' sums. 0 or 1:
	// whole sequences, in parallel over sequences (one hard-token sequence: its forward
	// and backward passes side by side).
	Segments int
	// Accelerate runs SQUAREM over the soft phase's EM steps (accel.go): after every two
	// EM steps a jump along them, kept only where EM's penalised objective does not
	// fall. An iteration is still one E-step. false: plain EM.
	Accelerate bool
	// StopGain, if above 0, also ends the soft phase where Tol is checked (every
	// iteration of plain EM, the start of every SQUAREM cycle) once StopWindow E-steps
	// or more have passed since the start, the last split and the last check at which
	// EM's penalised objective per step (ℓ + Pseudocount Σ log T, + Pseudocount Σ log π̄
	// when π is learned, over the steps) had gained StopGain per E-step or more since
	// the check before (GainWatch). It ends as Tol does (a split where SplitRounds
	// allow, else "converged"). 0: Tol's stop alone.
	StopGain   float64
	StopWindow int // 0: 30

	// Check, if set, is called every CheckEvery E-steps (0: 25) of the soft phase, where
	// Tol is checked, with the model and confusion matrix (nil: hard tokens) of the
	// E-step just done and its iteration; it must not change them. true ends the soft
	// phase there as Tol and StopGain do: with a split where SplitRounds allow and one is
	// found, else with History.Stop "stopped by its check". A non-nil error ends
	// training with that error.
	Check      func(m *Model, conf [][]float64, it int) (bool, error)
	CheckEvery int

	// Progress, if set, is called every ProgressEvery iterations (0: 1).
	Progress      func(Progress)
	ProgressEvery int

	// Stop, if set, is called before every soft and hard iteration; a non-nil error
	// ends training with that error (for example a cancelled context's Err), the model
	// holding its last parameters.
	Stop func() error

	// Save, if set, is called with the soft phase's state before an iteration once
	// SaveEvery has passed since the phase started, resumed or last saved (0: before
	// every iteration but the first); a non-nil error ends training with that error.
	// The state is a copy, the callee's to keep.
	Save      func(*EMState) error
	SaveEvery time.Duration
	// Resume, if set, goes on with the soft phase it holds: m takes its parameters
	// and EM continues at its iteration (then the hard phase, if any). seqs and the
	// other fields must be those it was saved with.
	Resume *EMState
}

// EMState is TrainEM's soft phase between two iterations (EMConfig.Save and Resume).
// Resumed from it, TrainEM gives the model, confusion matrix and history it would
// have given uninterrupted, but for the wall-clock seconds.
type EMState struct {
	Iter      int         // the iteration it resumes at
	Model     *Model      // the parameters that iteration starts from
	Confusion [][]float64 // C at that iteration (nil: hard tokens)
	Seconds   float64     // seconds trained before
	History   *History    // of the iterations before
	// The previous iteration's parameters, confusion matrix and ℓ/T (kept when the
	// next one is worse), the splitting rounds done, the iteration of the last, and
	// the splits' generator (rand.PCG).
	PrevTheta, PrevPi []float64
	PrevConf          [][]float64
	PrevLL            float64
	Splits, LastSplit int
	SplitRNG          []byte
	// Under Segments: the messages carried into each segment (segments.go; nil
	// entries where none). Under Accelerate: SQUAREM's state.
	SegAlpha, SegBeta [][]float64
	Accel             *AccelState
	Watch             *GainWatch // under StopGain: its state
	LastCheck         int        // under Check: the iteration of its last call
}

// checkSaved says whether a saved training's model sm and history h can stand in for
// m: both there, sm valid and of m's tokens and actions.
func checkSaved(sm *Model, h *History, m *Model) error {
	if sm == nil || h == nil {
		return fmt.Errorf("state without a model or history")
	}
	if err := sm.Validate(); err != nil {
		return err
	}
	if sm.K() != m.K() || sm.NumActions != m.NumActions {
		return fmt.Errorf("state of %d tokens and %d actions, the model has %d and %d", sm.K(), sm.NumActions, m.K(), m.NumActions)
	}
	return nil
}

// check says whether s can resume an EM training of m on the confusion matrix conf
// (nil: hard tokens).
func (s *EMState) check(m *Model, conf [][]float64) error {
	if err := checkSaved(s.Model, s.History, m); err != nil {
		return err
	}
	if len(s.PrevTheta) != len(s.Model.ThetaLogits) || len(s.PrevPi) != len(s.Model.PiLogits) {
		return fmt.Errorf("previous parameters of %d and %d entries, the state's model has %d and %d",
			len(s.PrevTheta), len(s.PrevPi), len(s.Model.ThetaLogits), len(s.Model.PiLogits))
	}
	if (conf == nil) != (s.Confusion == nil) {
		return fmt.Errorf("state with a confusion matrix %v, this training %v", s.Confusion != nil, conf != nil)
	}
	if conf != nil {
		if err := ValidateConfusion(s.Confusion, m.K()); err != nil {
			return err
		}
		if len(s.PrevConf) != len(s.Confusion) {
			return fmt.Errorf("previous confusion matrix of %d rows, want %d", len(s.PrevConf), len(s.Confusion))
		}
	}
	if s.Iter < 1 || len(s.History.LogLik) != s.Iter {
		return fmt.Errorf("state at iteration %d with %d in its history", s.Iter, len(s.History.LogLik))
	}
	if err := new(rand.PCG).UnmarshalBinary(s.SplitRNG); err != nil {
		return fmt.Errorf("the splits' generator: %w", err)
	}
	return nil
}

// restore sets the segments' messages and SQUAREM's state from s (seg and ac nil where
// this training has none), for the model m and confusion matrix conf it resumes.
func (s *EMState) restore(seg *segmenter, ac *accel, m *Model, conf [][]float64) error {
	if (seg == nil) != (s.SegAlpha == nil) || (ac == nil) != (s.Accel == nil) {
		return fmt.Errorf("state with segments %v and acceleration %v, this training %v and %v",
			s.SegAlpha != nil, s.Accel != nil, seg != nil, ac != nil)
	}
	if seg != nil {
		if err := seg.setMessages(s.SegAlpha, s.SegBeta, m.N()); err != nil {
			return err
		}
	}
	if ac != nil {
		return ac.set(s.Accel, len(ac.flatten(m, conf, nil)))
	}
	return nil
}

// DefaultStopGain is a StopGain for a map trained on long walks: a gain of one nat per
// million steps per E-step.
const DefaultStopGain = 1e-6

// DefaultEMConfig returns the original CSCG's settings for rooms: pseudocount
// 2e-3, π fixed, stop at the first non-increase, up to 1000 soft iterations,
// then up to 100 Viterbi iterations. (Learning π from a few episodes puts
// almost all of its mass on their start states, which gives held-out
// episodes that start elsewhere a near-zero, or after hard EM with
// pseudocount 0 a zero, probability.)
func DefaultEMConfig() EMConfig {
	return EMConfig{MaxIters: 1000, Pseudocount: 2e-3, ViterbiIters: 100, FixedPi: true, SplitRounds: 5}
}

// TrainEM fits m in place by EM on seqs and returns the history.
//
// Soft EM (Baum–Welch): the E-step computes expected transition counts ξ and
// first-state posteriors γ_1 by the block-restricted forward–backward pass
// (cost C_{o_t}·C_{o_{t+1}} per step); the M-step sets, for every action a and
// state i,
//
//	T[a,i,j] = (ξ_a(i,j) + p) / Σ_{j' real} (ξ_a(i,j') + p)   for real j, T[a,i,⊥] = 0,
//	π̄_i ∝ γ_1(i) + p                                          (unless FixedPi),
//
// stored as logits Θ = log T (−Inf for the sink column and exact zeros). A
// row with no counts and p = 0 keeps its previous value. Iteration stops when
// ℓ/T improves by ≤ Tol (the parameters with the higher likelihood are kept)
// or after MaxIters M-steps. With p = 0 the log-likelihood never decreases;
// with p > 0 EM climbs the penalised objective ℓ + p Σ log T (+ p Σ log π̄).
//
// EMConfig's Segments, Accelerate and StopGain change the soft phase's E-step, its
// steps and its stop as they say; the fixed points stay EM's.
//
// Then Viterbi EM: decode every sequence, set T ∝ counts of the decoded
// transitions (pseudocount 0, exact zeros; rows not used by any path keep
// their values), until the paths' probability stops increasing or
// ViterbiIters iterations.
func TrainEM(m *Model, seqs []Sequence, cfg EMConfig) (*History, error) {
	if err := m.Check(seqs); err != nil {
		return nil, err
	}
	if len(seqs) == 0 {
		return nil, fmt.Errorf("chmm: TrainEM: no sequences")
	}
	if cfg.Pseudocount < 0 || math.IsNaN(cfg.Pseudocount) || math.IsInf(cfg.Pseudocount, 0) {
		return nil, fmt.Errorf("chmm: TrainEM: pseudocount %v, want a finite value >= 0", cfg.Pseudocount)
	}
	if math.IsNaN(cfg.Tol) {
		return nil, fmt.Errorf("chmm: TrainEM: Tol is NaN")
	}
	if cfg.Segments < 0 {
		return nil, fmt.Errorf("chmm: TrainEM: Segments %d, want 0 (whole sequences) or more", cfg.Segments)
	}
	if !(cfg.StopGain >= 0 && cfg.StopGain < math.Inf(1)) || cfg.StopWindow < 0 {
		return nil, fmt.Errorf("chmm: TrainEM: StopGain %v and StopWindow %d, want a finite StopGain >= 0 and StopWindow >= 0", cfg.StopGain, cfg.StopWindow)
	}
	if cfg.CheckEvery < 0 {
		return nil, fmt.Errorf("chmm: TrainEM: CheckEvery %d, want 0 (25) or more", cfg.CheckEvery)
	}
	var conf, prevConf [][]float64
	if cfg.Confusion != nil {
		if err := ValidateConfusion(cfg.Confusion, m.K()); err != nil {
			return nil, fmt.Errorf("chmm: TrainEM: %w", err)
		}
		if cfg.ViterbiIters > 0 {
			return nil, fmt.Errorf("chmm: TrainEM: ViterbiIters %d with a confusion matrix: the hard phase reads hard tokens, want 0", cfg.ViterbiIters)
		}
		if !(cfg.ConfusionBeam >= 0 && cfg.ConfusionBeam < 0.5) {
			return nil, fmt.Errorf("chmm: TrainEM: ConfusionBeam %v, want a number in [0, 0.5)", cfg.ConfusionBeam)
		}
		conf, prevConf = cloneRows(cfg.Confusion), cloneRows(cfg.Confusion)
	} else if cfg.LearnConfusion {
		return nil, fmt.Errorf("chmm: TrainEM: LearnConfusion needs a Confusion to start from")
	}
	maxIters := cfg.MaxIters
	if maxIters == 0 {
		maxIters = 1000
	}
	start := time.Now()
	h := &History{Stop: "no iterations", Confusion: conf}
	st := cfg.Resume
	if st != nil {
		if maxIters < 0 {
			return nil, fmt.Errorf("chmm: TrainEM: resuming a soft phase that MaxIters %d skips", cfg.MaxIters)
		}
		if err := st.check(m, conf); err != nil {
			return nil, fmt.Errorf("chmm: TrainEM: resuming: %w", err)
		}
		*m = *st.Model.Clone()
		if conf != nil {
			conf, prevConf = cloneRows(st.Confusion), cloneRows(st.PrevConf)
		}
		h = st.History.clone()
		h.Confusion = conf
		start = start.Add(-time.Duration(st.Seconds * float64(time.Second)))
	}
	newP := func() *params {
		p := newParamsWorkers(m, cfg.Workers)
		p.setConfusion(conf, cfg.ConfusionBeam)
		return p
	}
	steps := 0
	for _, s := range seqs {
		steps += len(s.Obs)
	}
	fsteps := float64(steps)

	if maxIters > 0 {
		p := newP()
		var es eStepper = newEstepper(p, cfg.Workers, len(seqs))
		var seg *segmenter
		if cfg.Segments > 1 {
			seg = newSegmenter(p, seqs, cfg.Segments, cfg.Workers)
			es = seg
		}
		var ac *accel
		if cfg.Accelerate {
			ac = newAccel(!cfg.FixedPi, cfg.LearnConfusion)
		}
		stopWindow := cfg.StopWindow
		if stopWindow == 0 {
			stopWindow = 30
		}
		var watch *GainWatch
		if cfg.StopGain > 0 {
			watch = newGainWatch(0)
		}
		rep := newReporter(cfg.Progress, cfg.ProgressEvery, "em", maxIters)
		prevTheta := make([]float64, len(m.ThetaLogits))
		prevPi := make([]float64, len(m.PiLogits))
		prevLL := math.Inf(-1)
		splits := 0
		splitMin, splitNoise := cfg.SplitMin, cfg.SplitNoise
		if splitMin <= 0 {
			splitMin = 1e-3
		}
		if splitNoise <= 0 {
			splitNoise = 0.1
		}
		splitSrc := rand.NewPCG(cfg.Seed, 0x656d73706c6974)
		splitRng := rand.New(splitSrc)
		splitTol := cfg.SplitTol
		if splitTol <= 0 {
			splitTol = 1e-5
		}
		checkEvery := cfg.CheckEvery
		if checkEvery == 0 {
			checkEvery = 25
		}
		lastSplit, first, lastCheck := 0, 0, 0
		if st != nil {
			copy(prevTheta, st.PrevTheta)
			copy(prevPi, st.PrevPi)
			prevLL, splits, lastSplit, first, lastCheck = st.PrevLL, st.Splits, st.LastSplit, st.Iter, st.LastCheck
			if err := splitSrc.UnmarshalBinary(st.SplitRNG); err != nil {
				return nil, fmt.Errorf("chmm: TrainEM: resuming: %w", err)
			}
			if err := st.restore(seg, ac, m, conf); err != nil {
				return nil, fmt.Errorf("chmm: TrainEM: resuming: %w", err)
			}
			if (watch == nil) != (st.Watch == nil) {
				return nil, fmt.Errorf("chmm: TrainEM: resuming: state with StopGain's average %v, this training %v", st.Watch != nil, watch != nil)
			}
			if watch != nil {
				*watch = *st.Watch
			}
			rep.resumed(first, h.LogLik)
		}
		mstepFn := func(acc *accum) func() {
			return func() {
				mstep(m, acc, cfg.Pseudocount, !cfg.FixedPi, cfg.Workers)
				if cfg.LearnConfusion {
					confusionStep(conf, acc)
				}
			}
		}
		saved := time.Now()
		for it := first; ; it++ {
			if cfg.Stop != nil {
				if err := cfg.Stop(); err != nil {
					return h, err
				}
			}
			if cfg.Save != nil && it > first && time.Since(saved) >= cfg.SaveEvery {
				s := &EMState{Iter: it, Model: m.Clone(), Confusion: cloneRows(conf), Seconds: time.Since(start).Seconds(),
					History: h.clone(), PrevTheta: slices.Clone(prevTheta), PrevPi: slices.Clone(prevPi),
					PrevConf: cloneRows(prevConf), PrevLL: prevLL, Splits: splits, LastSplit: lastSplit, LastCheck: lastCheck}
				if seg != nil {
					s.SegAlpha, s.SegBeta = seg.messages()
				}
				if ac != nil {
					s.Accel = ac.state()
				}
				if watch != nil {
					w := *watch
					s.Watch = &w
				}
				var err error
				if s.SplitRNG, err = splitSrc.MarshalBinary(); err == nil {
					err = cfg.Save(s)
				}
				if err != nil {
					return h, err
				}
				saved = time.Now()
			}
			acc, err := es.run(p, seqs)
			if err != nil && !(ac.jumping() && errors.Is(err, ErrZeroProbability)) {
				return h, fmt.Errorf("chmm: TrainEM: iteration %d: %w", it, err)
			}
			ll, obj := math.Inf(-1), math.Inf(-1)
			if err == nil {
				ll = acc.ll / fsteps
				if ac != nil || watch != nil {
					obj = objective(m, acc.ll, fsteps, cfg.Pseudocount, !cfg.FixedPi)
				}
			}
			h.add("em", it, ll, time.Since(start).Seconds(), math.NaN())
			gain := ll - prevLL
			if ac != nil { // SQUAREM checks at its cycles' starts, by the gain per E-step since the last
				if rejected := ac.rejected(m, conf, obj); rejected || !ac.cycleStart() {
					if it == maxIters {
						h.Stop = "max iterations"
						rep.report(it, ll, true)
						break
					}
					rep.report(it, ll, false)
					if !rejected {
						ac.update(m, conf, obj, it, mstepFn(acc))
					}
					p = newP()
					continue
				}
				gain = ac.gainPerStep(ll, prevLL, it)
			}
			checked := false
			if cfg.Check != nil && it-lastCheck >= checkEvery {
				lastCheck = it
				var err error
				if checked, err = cfg.Check(m, conf, it); err != nil {
					return h, err
				}
			}
			if plateau := gain < splitTol && it-lastSplit > 10; plateau && ll > prevLL && splits < cfg.SplitRounds && it < maxIters {
				if k, _ := splitClones(m, p, acc, fsteps, splitMin, splitNoise, emFreeOcc(fsteps), emFreeOcc(fsteps) > 1, false, splitRng); k > 0 {
					splits++
					lastSplit = it
					h.Splits = append(h.Splits, Split{Iter: it, States: k})
					p = newP()
					prevLL = math.Inf(-1)
					ac.reset(it)
					watch.reset(it)
					rep.report(it, ll, false)
					continue
				}
			}
			stalled := watch != nil && watch.check(obj, it, stopWindow, cfg.StopGain)
			converged := gain <= cfg.Tol || stalled
			if it > 0 && (converged || checked) {
				if ll < prevLL { // keep the better parameters
					copy(m.ThetaLogits, prevTheta)
					copy(m.PiLogits, prevPi)
					for k := range conf {
						copy(conf[k], prevConf[k])
					}
				}
				if splits < cfg.SplitRounds && it < maxIters {
					p = newP()
					if acc, err = es.run(p, seqs); err != nil {
						return h, fmt.Errorf("chmm: TrainEM: iteration %d: %w", it, err)
					}
					if k, _ := splitClones(m, p, acc, fsteps, splitMin, splitNoise, emFreeOcc(fsteps), emFreeOcc(fsteps) > 1, false, splitRng); k > 0 {
						splits++
						lastSplit = it
						h.Splits = append(h.Splits, Split{Iter: it, States: k})
						p = newP()
						prevLL = math.Inf(-1)
						ac.reset(it)
						watch.reset(it)
						continue
					}
				}
				h.Stop = "converged"
				if !converged {
					h.Stop = "stopped by its check"
				}
				rep.report(it, ll, true)
				break
			}
			if it == maxIters {
				h.Stop = "max iterations"
				rep.report(it, ll, true)
				break
			}
			rep.report(it, ll, false)
			prevLL = ll
			copy(prevTheta, m.ThetaLogits)
			copy(prevPi, m.PiLogits)
			for k := range conf {
				copy(prevConf[k], conf[k])
			}
			ac.update(m, conf, obj, it, mstepFn(acc))
			p = newP()
		}
	}
	if cfg.ViterbiIters > 0 {
		if err := viterbiEM(m, seqs, cfg, h, start, fsteps); err != nil {
			return h, err
		}
	}
	return h, nil
}

// mstep sets Θ (and π if learnPi) from expected counts with pseudocount pc
// (see TrainEM). Rows with zero total keep their logits. Rows are cut into ranges
// on workers goroutines (dense.go).
func mstep(m *Model, acc *accum, pc float64, learnPi bool, workers int) {
	n := m.N()
	real := n - 1
	forRanges(len(m.ThetaLogits)/n, n, workers, func(lo, hi int) {
		for r := lo * n; r < hi*n; r += n {
			clearUpper()
			xi := acc.counts[r : r+n]
			tot := pc * float64(real)
			for _, v := range xi[:real] {
				tot += v
			}
			if !(tot > 0) {
				continue
			}
			th := m.ThetaLogits[r : r+n]
			for j, v := range xi[:real] {
				th[j] = math.Log((v + pc) / tot) // log 0 = -Inf: an exact zero
			}
			th[real] = math.Inf(-1)
		}
	})
	if !learnPi {
		return
	}
	tot := pc * float64(real)
	for _, v := range acc.gamma1[:real] {
		tot += v
	}
	if !(tot > 0) {
		return
	}
	for i, v := range acc.gamma1[:real] {
		m.PiLogits[i] = math.Log((v + pc) / tot)
	}
	m.PiLogits[real] = math.Inf(-1)
}

// viterbiEM runs the hard-EM phase of TrainEM.
func viterbiEM(m *Model, seqs []Sequence, cfg EMConfig, h *History, start time.Time, fsteps float64) error {
	rep := newReporter(cfg.Progress, cfg.ProgressEvery, "viterbi", cfg.ViterbiIters)
	n := m.N()
	counts := make([]float64, len(m.ThetaLogits))
	prev := math.Inf(-1)
	for it := 0; ; it++ {
		if cfg.Stop != nil {
			if err := cfg.Stop(); err != nil {
				return err
			}
		}
		paths, logps, err := ViterbiAll(m, seqs, cfg.Workers)
		if err != nil {
			return fmt.Errorf("chmm: TrainEM: viterbi iteration %d: %w", it, err)
		}
		var score float64
		for _, v := range logps {
			score += v
		}
		score /= fsteps
		h.add("viterbi", it, score, time.Since(start).Seconds(), math.NaN())
		if it > 0 && score <= prev {
			h.addStop("viterbi converged")
			rep.report(it, score, true)
			return nil
		}
		if it == cfg.ViterbiIters {
			h.addStop("viterbi max iterations")
			rep.report(it, score, true)
			return nil
		}
		rep.report(it, score, false)
		prev = score
		clear(counts)
		for q, s := range seqs {
			for t, a := range s.Actions {
				counts[(a*n+paths[q][t])*n+paths[q][t+1]]++
			}
		}
		mstep(m, &accum{counts: counts}, 0, false, cfg.Workers)
	}
}

// emFreeOcc is the occupancy below which EM treats a clone as free: the
// pseudocount leaks a little mass to every clone, so "unused" means fewer
// than 0.1% of the steps (at least one visit).
// addStop appends why a phase stopped to h.Stop, replacing "no iterations" when the
// soft phase was skipped (the hard phase alone).
func (h *History) addStop(why string) {
	if h.Stop == "no iterations" {
		h.Stop = why
		return
	}
	h.Stop += "; " + why
}

func emFreeOcc(steps float64) float64 { return max(1, 1e-3*steps) }

func cloneRows(c [][]float64) [][]float64 {
	if c == nil {
		return nil
	}
	out := make([][]float64, len(c))
	for i, r := range c {
		out[i] = append([]float64(nil), r...)
	}
	return out
}
