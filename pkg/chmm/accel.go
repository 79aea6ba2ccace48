package chmm

import (
	"fmt"
	"math"
)

// Accelerated EM (EMConfig.Accelerate): SQUAREM (Varadhan and Roland 2008, step S3)
// over the log-probabilities x of the parameters EM updates — T, π̄ when learned, and
// the nonzero entries of C when learned. A cycle takes two EM steps, x0 → x1 → x2, and
// jumps to
//
//	x' = x0 + 2a r + a² v,   r = x1 − x0,  v = x2 − 2 x1 + x0,  a = clamp(‖r‖/‖v‖, 1, aMax),
//
// renormalised row by row (no entry below e^minLogProb); a = 1 in the first
// accelWarmup E-steps after the start or a split. With a = 1 (x' = x2) the next cycle
// starts at x2 after two E-steps. Otherwise the E-step at x' is the cycle's third:
// where its penalised objective (EM's: ℓ + p Σ log T, + p Σ log π̄ when learned, per
// step) is at least x1's, the M-step from it starts the next cycle; where it is not (or
// x' has zero probability), the next cycle starts at x2. aMax starts at 1, grows
// fourfold when a cycle's a reached it and was kept, and falls fourfold (to no less
// than 1) when such a step is rejected. With exact E-steps the objective thus rises from
// cycle to cycle as under plain EM, and the cycle's fixed points are EM's. Entries that
// are not finite in x0, x1 or x2 (exact zeros) take x2's value.

// accel is SQUAREM's state between two E-steps of TrainEM.
type accel struct {
	phase      int       // the next E-step is at x0 (0), x1 (1) or x' (2)
	start      int       // the iteration of the last E-step at x0
	from       int       // the iteration of the start or the last split (accelWarmup)
	x0, x1, x2 []float64 // the cycle's points (flatten); x1 holds x' at phase 2
	obj1       float64   // the penalised objective at x1
	a, aMax    float64   // the cycle's step and its bound
	learnPi    bool      // the points hold log π̄
	learnConf  bool      // the points hold log C
}

// AccelState is accel's state as EMState saves it (nil: no acceleration).
type AccelState struct {
	Phase, Start  int
	From          int
	X0, X1, X2    []float64
	Obj1, A, AMax float64
}

func newAccel(learnPi, learnConf bool) *accel {
	return &accel{aMax: 1, a: 1, learnPi: learnPi, learnConf: learnConf}
}

func (ac *accel) state() *AccelState {
	return &AccelState{Phase: ac.phase, Start: ac.start, From: ac.from, X0: cloneFloats(ac.x0), X1: cloneFloats(ac.x1), X2: cloneFloats(ac.x2),
		Obj1: ac.obj1, A: ac.a, AMax: ac.aMax}
}

// set restores a saved state for points of size entries.
func (ac *accel) set(s *AccelState, size int) error {
	if s.Phase < 0 || s.Phase > 2 || !(s.AMax >= 1) || !(s.A >= 1) {
		return fmt.Errorf("acceleration state at phase %d with step %v and bound %v", s.Phase, s.A, s.AMax)
	}
	for i, x := range [][]float64{s.X0, s.X1, s.X2} {
		if len(x) != 0 && len(x) != size {
			return fmt.Errorf("acceleration state: point %d of %d entries, want %d", i, len(x), size)
		}
	}
	if (s.Phase >= 1 && len(s.X0) == 0) || (s.Phase == 2 && (len(s.X1) == 0 || len(s.X2) == 0)) {
		return fmt.Errorf("acceleration state at phase %d without its points", s.Phase)
	}
	ac.phase, ac.start, ac.from, ac.obj1, ac.a, ac.aMax = s.Phase, s.Start, s.From, s.Obj1, s.A, s.AMax
	ac.x0, ac.x1, ac.x2 = cloneFloats(s.X0), cloneFloats(s.X1), cloneFloats(s.X2)
	return nil
}

func cloneFloats(x []float64) []float64 {
	if len(x) == 0 {
		return nil
	}
	return append([]float64(nil), x...)
}

// reset starts a new cycle at the model as it is after a split at iteration it, the
// first accelWarmup E-steps plain EM's again.
func (ac *accel) reset(it int) {
	if ac != nil {
		ac.phase, ac.from = 0, it
	}
}

// accelWarmup is the number of E-steps after the start or a split in which cycles
// do not jump: plain EM breaks the symmetry between clones that start alike (New's
// near-uniform start, the two halves of a split clone), where a jump along the first
// steps can carry the parameters to another fixed point.
const accelWarmup = 20

// jumping says whether the next E-step is at an extrapolated point.
func (ac *accel) jumping() bool { return ac != nil && ac.phase == 2 }

// cycleStart says whether the E-step just done started a cycle (at x0).
func (ac *accel) cycleStart() bool { return ac.phase == 0 }

// gainPerStep is the gain from prev, ℓ/T at the last cycle's start, to ll, ℓ/T at this
// one's (iteration it), per E-step in between.
func (ac *accel) gainPerStep(ll, prev float64, it int) float64 {
	return (ll - prev) / float64(max(1, it-ac.start))
}

// objective is EM's penalised objective per step at m, whose ℓ is ll over fsteps steps,
// with pseudocount pc: (ℓ + pc Σ_{a,i,j real} log T[a,i,j] [+ pc Σ_{i real} log π̄_i
// when learnPi]) / fsteps.
func objective(m *Model, ll, fsteps, pc float64, learnPi bool) float64 {
	if pc == 0 {
		return ll / fsteps
	}
	n := m.N()
	var pen float64
	for r := 0; r < len(m.ThetaLogits); r += n {
		pen += rowLogSum(m.ThetaLogits[r : r+n])
	}
	if learnPi {
		pen += rowLogSum(m.PiLogits)
	}
	return (ll + pc*pen) / fsteps
}

// rowLogSum is Σ_{j real} log softmax(row)_j (the sink, last, left out).
func rowLogSum(row []float64) float64 {
	z := logSumExp(row)
	var s float64
	for _, v := range row[:len(row)-1] {
		s += v - z
	}
	return s
}

// rejected says whether the E-step just done at x' (phase 2) fails the guard with
// objective obj; if so it installs x2 in m and conf and the next cycle starts there.
func (ac *accel) rejected(m *Model, conf [][]float64, obj float64) bool {
	if !ac.jumping() || obj >= ac.obj1 {
		return false
	}
	ac.unflatten(ac.x2, m, conf)
	if ac.a >= ac.aMax {
		ac.aMax = max(1, ac.aMax/4)
	}
	ac.phase = 0
	return true
}

// update moves m and conf on after E-step it, whose objective is obj: the M-step
// mstep, then at phase 1 the jump to x'. A nil ac is plain EM: mstep alone.
func (ac *accel) update(m *Model, conf [][]float64, obj float64, it int, mstep func()) {
	if ac == nil {
		mstep()
		return
	}
	switch ac.phase {
	case 0:
		ac.start = it
		ac.x0 = ac.flatten(m, conf, ac.x0)
		mstep()
		ac.phase = 1
	case 1:
		ac.obj1 = obj
		ac.x1 = ac.flatten(m, conf, ac.x1)
		mstep()
		ac.x2 = ac.flatten(m, conf, ac.x2)
		ac.a = 1
		if it-ac.from >= accelWarmup {
			ac.a = ac.step()
		}
		if ac.a == 1 {
			ac.grow()
			ac.phase = 0
			return
		}
		ac.extrapolate()
		ac.unflatten(ac.x1, m, conf)
		ac.phase = 2
	case 2:
		ac.grow()
		mstep()
		ac.phase = 0
	}
}

// grow widens the bound after a kept step that reached it.
func (ac *accel) grow() {
	if ac.a >= ac.aMax {
		ac.aMax *= 4
	}
}

// step is a = clamp(‖r‖/‖v‖, 1, aMax) over the entries finite in all three points.
func (ac *accel) step() float64 {
	var rr, vv float64
	for i, x2 := range ac.x2 {
		x0, x1 := ac.x0[i], ac.x1[i]
		if !finite3(x0, x1, x2) {
			continue
		}
		r, v := x1-x0, x2-2*x1+x0
		rr += r * r
		vv += v * v
	}
	if !(vv > 0) {
		return 1
	}
	return max(1, min(ac.aMax, math.Sqrt(rr/vv)))
}

func finite3(a, b, c float64) bool {
	return !math.IsInf(a, 0) && !math.IsInf(b, 0) && !math.IsInf(c, 0) && !math.IsNaN(a+b+c)
}

// extrapolate sets x1 to x' (not yet renormalised).
func (ac *accel) extrapolate() {
	a := ac.a
	for i, x2 := range ac.x2 {
		x0, x1 := ac.x0[i], ac.x1[i]
		if !finite3(x0, x1, x2) {
			ac.x1[i] = x2
			continue
		}
		r, v := x1-x0, x2-2*x1+x0
		ac.x1[i] = x0 + 2*a*r + a*a*v
	}
}

// flatten writes the parameters into dst (reused when long enough): log T as the
// rows of m.ThetaLogits normalised, then log π̄ when learned, then log C (K×K; −Inf at
// its zeros) when learned.
func (ac *accel) flatten(m *Model, conf [][]float64, dst []float64) []float64 {
	dst = dst[:0]
	n := m.N()
	for r := 0; r < len(m.ThetaLogits); r += n {
		dst = appendLogSoftmax(dst, m.ThetaLogits[r:r+n])
	}
	if ac.learnPi {
		dst = appendLogSoftmax(dst, m.PiLogits)
	}
	if ac.learnConf {
		for _, row := range conf {
			for _, v := range row {
				dst = append(dst, math.Log(v))
			}
		}
	}
	return dst
}

func appendLogSoftmax(dst, row []float64) []float64 {
	z := logSumExp(row)
	for _, v := range row {
		dst = append(dst, v-z)
	}
	return dst
}

// unflatten installs the point x into m and conf, each row renormalised.
func (ac *accel) unflatten(x []float64, m *Model, conf [][]float64) {
	for i, v := range x { // no new exact zeros (nor ones that underflow in a pass)
		if !math.IsInf(v, -1) {
			x[i] = max(v, minLogProb)
		}
	}
	n := m.N()
	i := 0
	for r := 0; r < len(m.ThetaLogits); r += n {
		copy(m.ThetaLogits[r:r+n], x[i:i+n])
		normaliseLogits(m.ThetaLogits[r : r+n])
		i += n
	}
	if ac.learnPi {
		copy(m.PiLogits, x[i:i+n])
		normaliseLogits(m.PiLogits)
		i += n
	}
	if !ac.learnConf {
		return
	}
	for _, row := range conf {
		var s float64
		for o := range row {
			if row[o] = math.Exp(x[i+o]); !math.IsInf(x[i+o], -1) {
				row[o] = max(row[o], 1e-12) // as confusionStep: C keeps its pattern
			}
			s += row[o]
		}
		for o := range row {
			row[o] /= s
		}
		i += len(row)
	}
}

// minLogProb is the least log-probability an extrapolated entry takes.
const minLogProb = -690

// normaliseLogits subtracts the row's log-sum-exp (so that its exponentials sum to 1).
func normaliseLogits(row []float64) {
	z := logSumExp(row)
	for j := range row {
		row[j] -= z
	}
}

// GainWatch is the state behind EMConfig.StopGain, as EMState saves it.
type GainWatch struct {
	From, Last int     // the iteration it started at (the start or a split) and its last check's
	Gained     int     // the iteration of the last check that gained StopGain per E-step or more (From: none)
	Obj        float64 // the objective per step at the last check (NaN: none yet)
}

func newGainWatch(it int) *GainWatch {
	return &GainWatch{From: it, Last: it, Gained: it, Obj: math.NaN()}
}

// reset starts afresh at iteration it (after a split); nil: no-op.
func (w *GainWatch) reset(it int) {
	if w != nil {
		*w = *newGainWatch(it)
	}
}

// check folds in the objective obj per step at iteration it, it − Last E-steps after
// the last check, and says whether window E-steps or more have passed since From and
// since the last check that gained at least gain per E-step.
func (w *GainWatch) check(obj float64, it, window int, gain float64) bool {
	if k := it - w.Last; k > 0 && !math.IsNaN(w.Obj) && (obj-w.Obj)/float64(k) >= gain {
		w.Gained = it
	}
	w.Obj, w.Last = obj, it
	return it-w.Gained >= window
}
