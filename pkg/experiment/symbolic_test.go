package experiment

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func threeRooms(t *testing.T) (*gridworld.Env, Tokens, []chmm.Sequence) {
	t.Helper()
	env, err := gridworld.Named("three_rooms")
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokens(env)
	var train []chmm.Sequence
	for _, ep := range SymbolicTrainingWalks(env, 1, 1, 2000) {
		train = append(train, tok.Sequence(ep))
	}
	return env, tok, train
}

// TestTokens: token k is the k-th smallest class shown, and a sequence carries them.
func TestTokens(t *testing.T) {
	env, tok, train := threeRooms(t)
	if got := tok.Classes; len(got) != 8 || got[0] != 0 || got[7] != 7 {
		t.Errorf("classes %v", got)
	}
	if _, ok := tok.Token(99); ok {
		t.Error("class 99 has a token")
	}
	ep := SymbolicHeldOutWalk(env, 1, 50)
	s := tok.Sequence(ep)
	for i, c := range ep.Obs {
		if k, _ := tok.Token(c); s.Obs[i] != k || tok.Classes[k] != c {
			t.Fatalf("step %d: class %d → token %d", i, c, s.Obs[i])
		}
	}
	if len(train) != 1 || train[0].Len() != 2000 {
		t.Errorf("training walks: %d", len(train))
	}
}

// TestTrainSymbolicEMKeepsBestRestart: with restarts, the model returned has the
// highest training likelihood of the starts, and it is at least the single start's.
func TestTrainSymbolicEMKeepsBestRestart(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 3
	}
	tr := Training{Trainer: TrainerEM, Seed: 1, Iters: 30, Pseudocount: 1e-3}
	one, _, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Restarts = 3
	best, h, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	llOne, _ := chmm.LogLikelihood(one, train)
	llBest, _ := chmm.LogLikelihood(best, train)
	if llBest < llOne-1e-9 {
		t.Errorf("best of 3 restarts ℓ = %g < the first start's %g", llBest, llOne)
	}
}

// TestTrainSymbolicEMProgress: the soft and the hard (Viterbi) phase of EM each have
// their own progress bar, counted against their own budget.
func TestTrainSymbolicEMProgress(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 3
	}
	var out strings.Builder
	tr := Training{Trainer: TrainerEM, Seed: 1, Iters: 30, Pseudocount: 1e-3, ViterbiIters: 20}
	if _, _, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, &out); err != nil {
		t.Fatal(err)
	}
	soft, hard := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.Contains(l, "/30 ("):
			soft++
		case strings.Contains(l, "/20 ("):
			hard++
		default:
			t.Errorf("line %q is on neither phase's bar", l)
		}
		if strings.Contains(l, "viterbi") && !strings.Contains(l, "/20 (") {
			t.Errorf("Viterbi line %q not counted against the 20 Viterbi iterations", l)
		}
	}
	if soft == 0 || hard == 0 {
		t.Errorf("%d soft-phase and %d hard-phase lines:\n%s", soft, hard, out.String())
	}
	// The hard phase alone (as after each budget round) ends on its own stop.
	out.Reset()
	tr.Iters = -1
	if _, _, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "no iterations") || !strings.Contains(s, "viterbi") {
		t.Errorf("hard phase alone:\n%s", s)
	}
}

// TestTrainSymbolicGradientInPlace: the gradient trainer trains the given model, and
// an unknown trainer is an error naming it.
func TestTrainSymbolicGradientInPlace(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 2
	}
	m := SymbolicInit(clones, env.NumActions(), 1, InitUniform)
	before, _ := chmm.LogLikelihood(m, train)
	got, h, _, err := TrainSymbolic(m, train, Training{Trainer: TrainerGradient, Seed: 1, Iters: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := chmm.LogLikelihood(m, train)
	if got != m || len(h.LogLik) == 0 || !(after > before) {
		t.Errorf("same model %v, %d iterations, ℓ %g → %g", got == m, len(h.LogLik), before, after)
	}
	if _, _, _, err := TrainSymbolic(m, train, Training{Trainer: "sgd"}, nil); err == nil || !strings.Contains(err.Error(), "sgd") {
		t.Errorf("trainer sgd: %v", err)
	}
	if _, _, _, err := TrainSymbolic(m, train, Training{Trainer: TrainerEM, Init: "zeros"}, nil); err == nil || !strings.Contains(err.Error(), "zeros") {
		t.Errorf("init zeros: %v", err)
	}
}

// TestTrainSymbolicGradientRestarts: with restarts the gradient trainer keeps the
// start with the highest training likelihood, at least the first start's.
func TestTrainSymbolicGradientRestarts(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 2
	}
	tr := Training{Trainer: TrainerGradient, Seed: 1, Iters: 40}
	one, _, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Restarts = 3
	best, _, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	llOne, _ := chmm.LogLikelihood(one, train)
	llBest, _ := chmm.LogLikelihood(best, train)
	if llBest < llOne-1e-9 {
		t.Errorf("best of 3 starts ℓ = %g < the first start's %g", llBest, llOne)
	}
}

// TestRunSymbolicGrow: EM (which does not add clones while it trains) from one clone
// per class on aliased is not recovered and is flagged "clones"; with GrowRounds the
// full tokens' budgets double until it is, to a power of 2 of at least 4.
func TestRunSymbolicGrow(t *testing.T) {
	_, s := aliasedSymbolic(t, TrainerEM)
	s = s.FixedBudget(1)
	s.Episodes, s.Steps, s.EvalSteps, s.ClonesPerClass, s.Restarts, s.Iters = 2, 3000, 2000, 1, 1, 200
	s.GrowRounds = 0
	fixed, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := fixed.Report.Diagnosis.Verdict; v.Resolved || !slices.Contains(v.Problems, chmm.ProblemClones) || fixed.Report.ViterbiMap.F1 == 1 {
		t.Errorf("one clone per class: F1 %.3f, verdict %+v", fixed.Report.ViterbiMap.F1, v)
	}
	s.GrowRounds = 4
	grown, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := grown.Report.Training
	if rec.GrowRounds < 2 || grown.Report.ViterbiMap.F1 != 1 || !grown.Report.Diagnosis.Verdict.Resolved {
		t.Errorf("grown: %d rounds, clones %v, F1 %.3f, verdict %s", rec.GrowRounds, rec.Clones, grown.Report.ViterbiMap.F1,
			grown.Report.Diagnosis.Verdict.Text)
	}
	for k, c := range rec.Clones {
		if c < 4 || c&(c-1) != 0 {
			t.Errorf("token %d: %d clones, want a power of 2 of at least 4 (4 places)", k, c)
		}
	}
}

// TestDefaultSymbolicGrows: the default experiment sizes its budget: both trainers
// grow it by splitting from one clone per token (DefaultSplitRounds, one start), and
// FixedBudget gives them the reference budget and the doublings back, with EM's 3
// starts (the best training likelihood) or the gradient trainer's up to 5 (until one
// fits); the smaller sizes, made for speed, do neither.
func TestDefaultSymbolicGrows(t *testing.T) {
	_, g := aliasedSymbolic(t, TrainerGradient)
	_, e := aliasedSymbolic(t, TrainerEM)
	var fixed []Symbolic
	for _, c := range []struct {
		s        Symbolic
		restarts int
		untilFit bool
	}{{g, DefaultGradientRestarts, true}, {e, DefaultEMRestarts, false}} {
		s := c.s
		if s.Doublings != DefaultSplitRounds || s.Restarts != 1 || s.GrowRounds != 0 || s.UntilFit {
			t.Errorf("%s: Doublings %d, Restarts %d, GrowRounds %d, UntilFit %v, want %d, 1, 0, false", s.Trainer,
				s.Doublings, s.Restarts, s.GrowRounds, s.UntilFit, DefaultSplitRounds)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s defaults: %v", s.Trainer, err)
		}
		f := s.FixedBudget(0)
		if f.Doublings != 0 || f.Restarts != c.restarts || f.UntilFit != c.untilFit || f.GrowRounds != DefaultBudgetDoublings || f.ClonesPerClass != s.ClonesPerClass {
			t.Errorf("%s FixedBudget(0): Doublings %d, Restarts %d, UntilFit %v, GrowRounds %d, want 0, %d, %v, %d", s.Trainer,
				f.Doublings, f.Restarts, f.UntilFit, f.GrowRounds, c.restarts, c.untilFit, DefaultBudgetDoublings)
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s FixedBudget(0): %v", s.Trainer, err)
		}
		if r := s.FixedBudget(4).Restarts; r != 4 {
			t.Errorf("%s FixedBudget(4): %d starts", s.Trainer, r)
		}
		if f.FixedBudget(7).Restarts != f.Restarts {
			t.Errorf("%s: FixedBudget of a fixed budget changed it", s.Trainer)
		}
		fixed = append(fixed, f)
	}
	f := fixed[1]
	for _, s := range []Symbolic{g, e, fixed[0], f} {
		for _, z := range []Size{SizeCI, SizeSmoke} {
			if zs := z.Symbolic(s); zs.GrowRounds != 0 || zs.Doublings != 0 || zs.Validate() != nil {
				t.Errorf("%s at size %s: GrowRounds %d, Doublings %d (want 0, 0), Validate %v", s.Trainer, z, zs.GrowRounds, zs.Doublings, zs.Validate())
			}
		}
	}
}

// TestGradientGrowsInPlace: the gradient trainer started from one clone per class on
// aliased adds clones at its plateaus (chmm.GradConfig.GrowClones) until every one of
// the 16 places has its own: 4 clones per token, 12 added, the map recovered, and the
// report says so.
func TestGradientGrowsInPlace(t *testing.T) {
	_, s := aliasedSymbolic(t, TrainerGradient)
	s = s.FixedBudget(0)
	s.Episodes, s.Steps, s.EvalSteps, s.ClonesPerClass = 2, 3000, 2000, 1
	run, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := run.Report.Training
	added := 0
	for _, r := range rec.Runs {
		added += r.ClonesAdded
	}
	if !slices.Equal(rec.Clones, []int{4, 4, 4, 4}) || added != 12 || run.Report.ViterbiMap.F1 != 1 || !run.Report.Diagnosis.Verdict.Resolved {
		t.Errorf("clones %v, %d added, F1 %.3f, verdict %s", rec.Clones, added, run.Report.ViterbiMap.F1, run.Report.Diagnosis.Verdict.Text)
	}
	var table strings.Builder
	if err := run.Report.WriteTable(&table); err != nil || !strings.Contains(table.String(), "12 clone(s) added") {
		t.Errorf("report table (%v) does not say how many clones were added:\n%s", err, table.String())
	}
}

// TestRunSymbolicImpossibleHeldOut: a map with an exact zero that the held-out walk
// needs is returned unscored with an error wrapping chmm.ErrZeroProbability that says
// what to try, so the caller can keep it.
func TestRunSymbolicImpossibleHeldOut(t *testing.T) {
	env, s := aliasedSymbolic(t, TrainerGradient)
	s.Episodes, s.Steps, s.EvalSteps = 1, 200, 500
	m := chmm.New(chmm.UniformClones(4, 2), env.NumActions(), nil)
	n := m.N()
	for i := range n { // from every state, action 0 reaches nothing but the sink (state 0)
		for j := 1; j < n; j++ {
			m.ThetaLogits[i*n+j] = math.Inf(-1)
		}
	}
	run, err := RunSymbolic(s, m, nil)
	if !errors.Is(err, chmm.ErrZeroProbability) || !strings.Contains(err.Error(), "more or longer training walks") {
		t.Fatalf("err = %v", err)
	}
	if run == nil || run.Model != m || run.Report != nil {
		t.Errorf("run %+v: want the map back, unscored", run)
	}
}

// aliasedSymbolic returns the aliased environment and its default symbolic experiment
// with trainer.
func aliasedSymbolic(t *testing.T, trainer string) (*gridworld.Env, Symbolic) {
	t.Helper()
	return namedSymbolic(t, "aliased", trainer)
}

// namedSymbolic returns the built-in environment name and its default symbolic
// experiment with trainer.
func namedSymbolic(t *testing.T, name, trainer string) (*gridworld.Env, Symbolic) {
	t.Helper()
	env, err := gridworld.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DefaultSymbolic(env, trainer)
	if err != nil {
		t.Fatal(err)
	}
	return env, s
}

// TestRunSymbolicDoublings: EM whose budget grows by splitting, from one clone per
// token, recovers aliased (4 places per class) after at least two splits: every
// token ends with an even number of clones (the last split doubled them), and the
// training paths visit at least one clone per place; the settings it cannot use are
// refused. The gradient trainer grows the same way.
func TestRunSymbolicDoublings(t *testing.T) {
	_, s := aliasedSymbolic(t, TrainerEM)
	s.Episodes, s.Steps, s.EvalSteps, s.Restarts, s.GrowRounds, s.Iters = 2, 3000, 2000, 1, 0, 150
	s.ClonesPerClass, s.Doublings = 7, 4 // the budget is not used
	run, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, rec := run.Report, run.Report.Training
	t.Logf("%d splits, clones %v, %d used; %s", rec.Doublings, rec.Clones, rep.Diagnosis.UsedClones, rep.Diagnosis.Verdict.Text)
	if rec.Doublings < 2 || rep.ViterbiMap.F1 != 1 || rep.StatePlacePurity != 1 || !rep.Diagnosis.Verdict.Resolved {
		t.Errorf("%d splits, clones %v: F1 %.3f, purity %.3f, verdict %s", rec.Doublings, rec.Clones, rep.ViterbiMap.F1,
			rep.StatePlacePurity, rep.Diagnosis.Verdict.Text)
	}
	if len(rec.Runs) != 2 || rec.Runs[1].Name != "hard" || rec.Runs[1].Iterations < 1 {
		t.Errorf("runs %+v, want the last training and the hard phase", rec.Runs)
	}
	if want := fmt.Sprintf("; %d workers", runtime.GOMAXPROCS(0)); !strings.HasPrefix(rep.Backend, "HMM kernels ") ||
		!strings.HasSuffix(rep.Backend, want) {
		t.Errorf("backend %q, want the HMM kernels and %q", rep.Backend, want)
	}
	// The history holds every training, then the hard phase, on one clock.
	h := run.History
	if n := len(h.LogLik); n != (rec.Doublings+1)*(s.Iters+1)+rec.Runs[1].Iterations || h.Phase[n-1] != "viterbi" ||
		h.Phase[0] != "em" || !slices.IsSorted(h.Seconds) {
		t.Errorf("history: %d entries (want %d trainings of %d and %d hard), phases %s…%s", n, rec.Doublings+1, s.Iters+1,
			rec.Runs[1].Iterations, h.Phase[0], h.Phase[n-1])
	}
	for k, c := range rec.Clones {
		if c%2 != 0 || c == 7 {
			t.Errorf("token %d: %d clones, want an even number from the splits", k, c)
		}
	}
	if u := rep.Diagnosis.UsedClones; u < run.Env.NumPlaces() {
		t.Errorf("%d clones used for %d places", u, run.Env.NumPlaces())
	}
	for _, bad := range []func(*Symbolic){
		func(s *Symbolic) { s.Restarts = 3 },
		func(s *Symbolic) { s.GrowRounds = 2 },
		func(s *Symbolic) { s.Doublings = 17 },
	} {
		b := s
		bad(&b)
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "doublings") {
			t.Errorf("%+v: Validate %v, want an error naming doublings", b, err)
		}
	}
	g := s
	g.Trainer, g.Iters = TrainerGradient, 0
	grad, err := RunSymbolic(g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, rec = grad.Report, grad.Report.Training
	t.Logf("gradient: %d splits, clones %v, %d used; %s", rec.Doublings, rec.Clones, rep.Diagnosis.UsedClones, rep.Diagnosis.Verdict.Text)
	if rep.ViterbiMap.F1 != 1 || rep.StatePlacePurity != 1 || !rep.Diagnosis.Verdict.Resolved || len(rec.Runs) != 1 {
		t.Errorf("gradient: %d splits, clones %v: F1 %.3f, purity %.3f, verdict %s, runs %+v", rec.Doublings, rec.Clones,
			rep.ViterbiMap.F1, rep.StatePlacePurity, rep.Diagnosis.Verdict.Text, rec.Runs)
	}
}

// TestDoublingsHardProbe: with a large pseudocount the soft map of aliased never
// predicts its training walks within FitBits, so without hard iterations the budget
// is split as often as allowed; with them, the hard phase run on a copy after each
// training shows the map fits, and the splitting stops there with the hard map.
func TestDoublingsHardProbe(t *testing.T) {
	_, s := aliasedSymbolic(t, TrainerEM)
	s.Episodes, s.Steps, s.EvalSteps, s.Iters, s.Pseudocount, s.Doublings = 2, 3000, 2000, 150, 0.2, 5
	runs := map[int]*SymbolicRun{}
	for _, vi := range []int{0, 100} {
		s.ViterbiIters = vi
		run, err := RunSymbolic(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs[vi] = run
		rep := run.Report
		t.Logf("viterbi iters %d: %d splits, %d states, training %.4f bits/step, F1 %.3f", vi, rep.Training.Doublings,
			run.Model.N(), rep.Diagnosis.TrainBits, rep.ViterbiMap.F1)
	}
	soft, hard := runs[0].Report, runs[100].Report
	if soft.Training.Doublings != 5 || soft.Diagnosis.TrainBits <= FitBits {
		t.Errorf("soft only: %d splits, %.4f bits/step; want all 5, above %g", soft.Training.Doublings, soft.Diagnosis.TrainBits, FitBits)
	}
	if hard.Training.Doublings >= 5 || hard.Diagnosis.TrainBits > FitBits || hard.ViterbiMap.F1 != 1 {
		t.Errorf("with the probe: %d splits, %.4f bits/step, F1 %.3f; want fewer than 5, at most %g, 1", hard.Training.Doublings,
			hard.Diagnosis.TrainBits, hard.ViterbiMap.F1, FitBits)
	}
	if r := hard.Training.Runs; len(r) != 2 || r[1].Name != "hard" {
		t.Errorf("with the probe: runs %+v, want the last training and its hard phase", r)
	}
	// Stopped by the limit, the last probe is the hard phase: recorded once, after
	// both trainings in the history (the first probe, discarded, is not).
	s.Doublings = 1
	one, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, h := one.Report.Training, one.History
	if len(rec.Runs) != 2 || rec.Runs[1].Name != "hard" || rec.Doublings != 1 ||
		len(h.LogLik) != 2*(s.Iters+1)+rec.Runs[1].Iterations || h.Phase[len(h.Phase)-1] != "viterbi" {
		t.Errorf("1 split: %d splits, runs %+v, %d history entries (want 2 × %d + the hard phase's)", rec.Doublings, rec.Runs,
			len(h.LogLik), s.Iters+1)
	}
}

// TestKeepVisited: which clones a budget round keeps, by hand. Token 0 has
// clones visited 0, 500, 4, 496 times (1,000 in all); token 1 has 0 and 0.
func TestKeepVisited(t *testing.T) {
	m := chmm.New([]int{4, 2}, 1, nil)
	visits := []int{0, 500, 4, 496, 0, 0, 0} // the separator last
	for _, tc := range []struct {
		share float64
		want  []bool
		kept  int
	}{
		// EM: any visit; token 1 keeps its first clone (no visits at all).
		{0, []bool{false, true, true, true, true, false, true}, 4},
		// The gradient trainer: at least 1% of the token's visits (10): 4 is not.
		{chmm.UsedShare, []bool{false, true, false, true, true, false, true}, 3},
		// A share no clone reaches: each token keeps its most visited clone.
		{0.9, []bool{false, true, false, false, true, false, true}, 2},
	} {
		keep, kept := chmm.KeepVisited(m, visits, tc.share)
		if !slices.Equal(keep, tc.want) || kept != tc.kept {
			t.Errorf("share %g: keep %v (%d), want %v (%d)", tc.share, keep, kept, tc.want, tc.kept)
		}
	}
}

// TestTrainSymbolicGradientTol: Training.Tol is the gradient trainer's least gain
// that counts as progress: with 0.5 nats per step no iteration counts, so it runs
// its patience and splitting rounds and stops (at most (5+1)·100 + 1 iterations),
// far sooner than its default on the same start, which fits. Validate takes 0..1.
func TestTrainSymbolicGradientTol(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 3
	}
	iters := func(tol float64) int {
		m := SymbolicInit(clones, env.NumActions(), 1, InitUniform)
		_, h, _, err := TrainSymbolic(m, train, Training{Trainer: TrainerGradient, Seed: 1, Tol: tol}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(h.LogLik)
	}
	def, coarse := iters(0), iters(0.5)
	t.Logf("iterations: default %d, Tol 0.5 %d", def, coarse)
	if coarse > 601 || coarse >= def {
		t.Errorf("iterations: Tol 0.5 ran %d, the default %d; want at most 601 and fewer", coarse, def)
	}
	_, s := aliasedSymbolic(t, TrainerGradient)
	for _, tol := range []float64{-1e-5, 2} {
		s.Tol = tol
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "tol=") {
			t.Errorf("tol %g: Validate = %v", tol, err)
		}
	}
	s.Tol = 1e-5
	if err := s.Validate(); err != nil || s.Training().Tol != 1e-5 {
		t.Errorf("tol 1e-5: Validate = %v, Training().Tol = %g", err, s.Training().Tol)
	}
}

// TestTrainSymbolicChunks: a gradient training whose pass is costlier than
// ChunkAbove (chmm.GradConfig.ChunkIfCostly) reads random chunks, and its record says
// so; EM never does; DefaultSymbolic sets SplitChunkAbove, and FixedBudget
// chmm.DefaultChunkAbove in its place (a ChunkAbove set otherwise stays).
func TestTrainSymbolicChunks(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokens(env)
	var train []chmm.Sequence
	for _, ep := range SymbolicTrainingWalks(env, 1, 2, chmm.ChunkMinSteps/2) {
		train = append(train, tok.Sequence(ep))
	}
	m := SymbolicInit([]int{2, 2, 2, 2}, env.NumActions(), 1, InitUniform)
	cost := chmm.PassCost(m, train)
	for _, c := range []struct {
		name    string
		trainer string
		above   float64
		want    bool
	}{
		{"costly", TrainerGradient, cost - 1, true},
		{"cheap", TrainerGradient, cost, false},
		{"off", TrainerGradient, 0, false},
		{"EM", TrainerEM, 1, false},
	} {
		_, h, _, err := TrainSymbolic(m.Clone(), train, Training{Trainer: c.trainer, Seed: 1, Iters: 3, ChunkAbove: c.above}, nil)
		if err != nil {
			t.Fatal(err)
		}
		run := SymbolicTraining(m, train, 1, h).Runs[0]
		if got := run.ChunkLen == chmm.ChunkLen && run.Batch == chmm.ChunkBatch && h.ChunkLen == chmm.ChunkLen; got != c.want || (!c.want && run.ChunkLen+run.Batch != 0) {
			t.Errorf("%s: record chunk_len %d batch %d, history %d, want chunks %v", c.name, run.ChunkLen, run.Batch, h.ChunkLen, c.want)
		}
	}
	_, s := aliasedSymbolic(t, TrainerGradient)
	if s.ChunkAbove != SplitChunkAbove || s.Training().ChunkAbove != SplitChunkAbove || SplitChunkAbove != 1e7 {
		t.Errorf("DefaultSymbolic ChunkAbove %g, Training() %g, want %g (1e7)", s.ChunkAbove, s.Training().ChunkAbove, SplitChunkAbove)
	}
	if f := s.FixedBudget(0); f.ChunkAbove != chmm.DefaultChunkAbove {
		t.Errorf("FixedBudget: ChunkAbove %g, want %g", f.ChunkAbove, chmm.DefaultChunkAbove)
	}
	s2 := s
	s2.ChunkAbove = 3e7
	if f := s2.FixedBudget(0); f.ChunkAbove != 3e7 {
		t.Errorf("FixedBudget of ChunkAbove 3e7: %g, want it kept", f.ChunkAbove)
	}
	for _, bad := range []float64{-1, math.Inf(1), math.NaN()} {
		s.ChunkAbove = bad
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "chunk_above=") {
			t.Errorf("chunk_above %g: Validate = %v", bad, err)
		}
	}
}

// TestRunSymbolicFoldAlike: a gradient budget grown by splitting folds alike clones
// before each split (room, one 5,000-step walk, 400 iterations per training: one fold
// before the second split), counts them in its record and its progress lines, and with
// FoldAlike 0 folds none. FoldCost (DefaultFoldCost by default) is off here: the fold is
// FoldAlike's alone.
func TestRunSymbolicFoldAlike(t *testing.T) {
	env, err := gridworld.Named("room")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DefaultSymbolic(env, TrainerGradient)
	if err != nil || s.FoldAlike != DefaultFoldAlike || s.FoldCost != DefaultFoldCost {
		t.Fatalf("DefaultSymbolic: FoldAlike %g, FoldCost %g, want %g, %g (%v)", s.FoldAlike, s.FoldCost, DefaultFoldAlike, DefaultFoldCost, err)
	}
	if em, _ := DefaultSymbolic(env, TrainerEM); em.FoldCost != 0 || s.FixedBudget(0).FoldCost != 0 || SizeSmoke.Symbolic(s).FoldCost != 0 {
		t.Errorf("FoldCost set where no budget is grown by splitting with alike clones folded: EM %g, fixed %g, small %g",
			em.FoldCost, s.FixedBudget(0).FoldCost, SizeSmoke.Symbolic(s).FoldCost)
	}
	s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters, s.FoldCost = 1, 5000, 1000, 2, 400, 0
	var progress strings.Builder
	for _, c := range []struct {
		tv   float64
		fold bool
	}{{DefaultFoldAlike, true}, {0, false}} {
		s.FoldAlike = c.tv
		progress.Reset()
		run, err := RunSymbolic(s, nil, &progress)
		if err != nil {
			t.Fatal(err)
		}
		rec := run.Report.Training
		said := 0
		for _, m := range regexp.MustCompile(`\((\d+) alike clones folded into others\)`).FindAllStringSubmatch(progress.String(), -1) {
			n, _ := strconv.Atoi(m[1])
			said += n
		}
		if (rec.Folded > 0) != c.fold || said != rec.Folded {
			t.Errorf("fold_alike %g: %d folded in the record, %d in the progress lines", c.tv, rec.Folded, said)
		}
	}
	s.FoldAlike = 1
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "fold_alike=") {
		t.Errorf("fold_alike 1: Validate = %v", err)
	}
}

// TestSplitStop: a budget grown by splitting stops when the map fits its walks, after
// EM's hard phase fits them, at the last split or at the state bound; a gradient map
// that fits but is surprised all along its walks (tiled seed 2, F1 0.957: 0.137% of its
// steps) is split on, and an EM map is not held to that.
func TestSplitStop(t *testing.T) {
	_, s := aliasedSymbolic(t, TrainerGradient)
	s.Doublings, s.MaxStates = 8, 100
	merged := &chmm.Diagnosis{TrainBits: 0.0043, Steps: 150000, Walks: 1, Surprises: 0.00137}
	for _, c := range []struct {
		name        string
		trainer     string
		d           *chmm.Diagnosis
		hard        float64
		round, kept int
		want        string
		merged      bool
	}{
		{"fits", TrainerGradient, &chmm.Diagnosis{TrainBits: 0.001, Steps: 150000, Walks: 1}, math.NaN(), 3, 40, "fits", false},
		{"fits but merged", TrainerGradient, merged, math.NaN(), 3, 40, "", true},
		{"merged, last split", TrainerGradient, merged, math.NaN(), 8, 40, "8 split(s) done", true},
		{"EM fits, surprised", TrainerEM, merged, math.NaN(), 3, 40, "fits", false},
		{"EM after its hard phase", TrainerEM, &chmm.Diagnosis{TrainBits: 0.01}, 0.001, 3, 40, "after its hard phase", false},
		{"state bound", TrainerGradient, &chmm.Diagnosis{TrainBits: 0.03}, math.NaN(), 3, 50, "would pass 100 states", false},
		{"split on", TrainerGradient, &chmm.Diagnosis{TrainBits: 0.03}, math.NaN(), 3, 40, "", false},
	} {
		s.Trainer = c.trainer
		why, merged := s.splitStop(c.d, c.hard, c.round, c.kept)
		if merged != c.merged || (c.want == "") != (why == "") || !strings.Contains(why, c.want) {
			t.Errorf("%s: why %q, merged %v; want %q, %v", c.name, why, merged, c.want, c.merged)
		}
	}
}

// TestDoublingCheckpoint: a budget grown by splitting, interrupted after its second
// split and resumed from its checkpoint, ends with the very map, history and record
// of the run that was not interrupted; a checkpoint of another experiment, or one
// that cannot be read, is an error naming the file.
func TestDoublingCheckpoint(t *testing.T) {
	_, s := namedSymbolic(t, "room", TrainerGradient)
	s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2500, 1000, 3, 60
	s.FoldCost = 1 // the bits the last split started from are saved too
	dir := t.TempDir()
	s.Checkpoint = filepath.Join(dir, "whole.ckpt")
	var log strings.Builder
	whole, err := RunSymbolic(s, nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d splits, clones %v, F1 %.3f", whole.Report.Training.Doublings, whole.Report.Training.Clones, whole.Report.ViterbiMap.F1)
	if !strings.Contains(log.String(), "ahead folded into others") {
		t.Errorf("no clones folded by FoldCost:\n%s", log.String())
	}
	if whole.Report.Training.Doublings < 3 {
		t.Fatalf("%d splits: too few to interrupt after the second", whole.Report.Training.Doublings)
	}
	// The record has every round: the iterations of all of them are the history's,
	// each round but the last was split, and the last one's clones are the map's.
	rounds := whole.Report.Training.Rounds
	if len(rounds) != whole.Report.Training.Doublings+1 {
		t.Fatalf("%d rounds recorded for %d splits", len(rounds), whole.Report.Training.Doublings)
	}
	iters := 0
	for i, r := range rounds {
		iters += r.Iterations
		if split := i < len(rounds)-1; (r.Outcome == "split") != split || split && r.Kept == 0 || r.Used > r.Clones {
			t.Errorf("round %d: %+v", i, r)
		}
	}
	if iters != len(whole.History.LogLik) {
		t.Errorf("rounds ran %d iterations, the history has %d", iters, len(whole.History.LogLik))
	}
	if last := rounds[len(rounds)-1]; last.Clones != whole.Model.N()-1 {
		t.Errorf("last round: %d clones, the map has %d states (clones and the sink)", last.Clones, whole.Model.N())
	}
	s.Checkpoint = filepath.Join(dir, "cut.ckpt")
	stop := errors.New("interrupted")
	hooks := &splitHooks{afterSplit: func(round int) error {
		if round == 2 {
			return stop
		}
		return nil
	}}
	_, err = runSymbolic(s, nil, nil, hooks)
	if !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	resumeAlike(t, s, whole, "budget round 2,", nil)

	fixed := s
	fixed.Doublings = 0
	if err := fixed.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("a checkpoint without doublings: Validate = %v", err)
	}
	other := s
	other.Seed = 2
	if _, err := RunSymbolic(other, nil, nil); err == nil || !strings.Contains(err.Error(), s.Checkpoint) ||
		!strings.Contains(err.Error(), "another experiment") {
		t.Errorf("another seed on the checkpoint: %v", err)
	}
	if err := os.WriteFile(s.Checkpoint, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunSymbolic(s, nil, nil); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("a garbled checkpoint: %v", err)
	}
}

// TestDoublingCheckpointWithinTraining: a gradient run interrupted inside a round's
// training, between two of its iterations, resumes from that iteration (not from the
// round's start) and ends with the map, history and record of the run that was not
// interrupted.
func TestDoublingCheckpointWithinTraining(t *testing.T) {
	_, s := namedSymbolic(t, "room", TrainerGradient)
	s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2500, 1000, 2, 60
	dir := t.TempDir()
	whole, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Report.Training.Doublings < 1 {
		t.Fatalf("%d splits: the test needs a second round", whole.Report.Training.Doublings)
	}
	s.Checkpoint = filepath.Join(dir, "cut.ckpt")
	stop := errors.New("interrupted")
	saves := 0
	hooks := &splitHooks{saveAlways: true, afterSave: func(round, iter int) error {
		saves++
		if round == 1 && iter == 17 {
			return stop
		}
		return nil
	}}
	if _, err = runSymbolic(s, nil, nil, hooks); !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	resumeAlike(t, s, whole, "budget round 1 (its training at iteration 17)", &splitHooks{saveAlways: true})
	t.Logf("%d saves before the interruption", saves)
}

// TestDoublingCheckpointWithinEM: EM's budget grown by splitting, stopped inside
// round 1's training and resumed, gives the uninterrupted run's map, history, record
// and scores.
func TestDoublingCheckpointWithinEM(t *testing.T) {
	_, s := namedSymbolic(t, "room", TrainerEM)
	s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 6000, 500, 2, 40
	whole, err := RunSymbolic(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Report.Training.Doublings < 1 {
		t.Fatalf("%d splits: the test needs a second round", whole.Report.Training.Doublings)
	}
	s.Checkpoint = filepath.Join(t.TempDir(), "cut.ckpt")
	stop := errors.New("interrupted")
	hooks := &splitHooks{saveAlways: true, afterSave: func(round, iter int) error {
		if round == 1 && iter == 13 {
			return stop
		}
		return nil
	}}
	if _, err = runSymbolic(s, nil, nil, hooks); !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	// The first save after the resume is the next iteration's: a resume that started
	// the round over would give the same map (EM is deterministic) but save iteration 1.
	first := [2]int{-1, -1}
	hooks.afterSave = func(round, iter int) error {
		if first[0] < 0 {
			first = [2]int{round, iter}
		}
		return nil
	}
	resumeAlike(t, s, whole, "budget round 1 (its training at iteration 13)", hooks)
	if first != [2]int{1, 14} {
		t.Errorf("first save after the resume: round %d, iteration %d; want round 1, iteration 14", first[0], first[1])
	}
}

// resumeAlike resumes s from its checkpoint, with hooks, and checks that the progress
// says where (at) and that the map, history, record and scores are those of whole, the
// run that was not interrupted.
func resumeAlike(t *testing.T, s Symbolic, whole *SymbolicRun, at string, hooks *splitHooks) {
	t.Helper()
	var progress strings.Builder
	resumed, err := runSymbolic(s, nil, &progress, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "resuming from "+s.Checkpoint+": "+at) {
		t.Errorf("progress does not say it resumed at %q:\n%.300s", at, progress.String())
	}
	a, b := whole.Model, resumed.Model
	if !slices.Equal(a.Clones, b.Clones) || !slices.Equal(a.PiLogits, b.PiLogits) || !slices.Equal(a.ThetaLogits, b.ThetaLogits) {
		t.Errorf("resumed map differs: clones %v, want %v", b.Clones, a.Clones)
	}
	if !slices.Equal(whole.History.LogLik, resumed.History.LogLik) || !slices.Equal(whole.History.Phase, resumed.History.Phase) {
		t.Errorf("resumed history: %d entries, want %d", len(resumed.History.LogLik), len(whole.History.LogLik))
	}
	ra, rb := whole.Report.Training, resumed.Report.Training
	if ra.Doublings != rb.Doublings || ra.Folded != rb.Folded || !slices.Equal(ra.Rounds, rb.Rounds) || whole.Report.ViterbiMap != resumed.Report.ViterbiMap {
		t.Errorf("resumed record %+v, map %+v; want %+v, %+v", rb, resumed.Report.ViterbiMap, ra, whole.Report.ViterbiMap)
	}
}

// TestKeepCheaply: on a ring of 8 places where token 0 shows at places 0 and 4 (two
// clones) plus a spare clone nothing enters, a clone that holds few of its token's
// visits but is needed (place 4's, with 0.5% of them as counted here) is kept: dropping
// it at 1% would make the walk impossible, so the share falls to 0.5%, which still
// drops the spare. With place 4's clone at half the visits, 1% drops the spare alone.
func TestKeepCheaply(t *testing.T) {
	const P = 8
	ringTok := []int{0, 1, 2, 3, 0, 4, 5, 6}
	stateOf := []int{0, 3, 4, 5, 1, 6, 7, 8} // token 0: states 0, 1 and the spare 2
	m := chmm.New([]int{3, 1, 1, 1, 1, 1, 1}, 2, nil)
	n := m.N()
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] = math.Inf(-1)
	}
	for a := range 2 {
		m.ThetaLogits[(a*n+n-1)*n+n-1] = 0
		for q := range P {
			next := (q + P + 1 - 2*a) % P
			m.ThetaLogits[(a*n+stateOf[q])*n+stateOf[next]] = 0
		}
		copy(m.ThetaLogits[(a*n+2)*n:(a*n+3)*n], m.ThetaLogits[(a*n+0)*n:(a*n+1)*n]) // the spare leaves as place 0
	}
	rng := rand.New(rand.NewPCG(3, 4))
	walk := chmm.Sequence{Obs: make([]int, 5000), Actions: make([]int, 4999)}
	at := 0
	for i := range walk.Obs {
		walk.Obs[i] = ringTok[at]
		if i < len(walk.Actions) {
			a := rng.IntN(2)
			walk.Actions[i] = a
			at = (at + P + 1 - 2*a) % P
		}
	}
	train := []chmm.Sequence{walk}
	d, err := chmm.Diagnose(m, train, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		place4    int
		wantShare float64
	}{{5, chmm.UsedShare / 2}, {500, chmm.UsedShare}} {
		dd := *d
		dd.Visits = slices.Clone(d.Visits)
		dd.Visits[0], dd.Visits[1], dd.Visits[2] = 1000-c.place4-1, c.place4, 1 // token 0: 1000 visits
		keep, kept, share, refused, err := keepCheaply(m, train, &dd, 0.05, 0)
		if err != nil {
			t.Fatal(err)
		}
		if share != c.wantShare || !keep[0] || !keep[1] || keep[2] || kept != n-2 {
			t.Errorf("place 4's clone at %d of 1000 visits: share %g, keep %v (%d); want %g, all but the spare (%d)",
				c.place4, share, keep, kept, c.wantShare, n-2)
		}
		// Dropping at 1% would lose place 4's only clone, which its neighbours' rows need.
		if want := map[bool]string{true: "under 1% leaves a token or a row empty", false: ""}[c.wantShare < chmm.UsedShare]; refused != want {
			t.Errorf("place 4's clone at %d of 1000 visits: refused %q, want %q", c.place4, refused, want)
		}
	}
	// Along the walk's Viterbi path token 0's two clones hold half its visits each and
	// the spare none: a split at 1% or at 40% splits all but the spare, at 60% only
	// the most visited clone of each token.
	for _, c := range []struct {
		share float64
		both  bool // token 0's two clones split, else one of them
	}{{0.01, true}, {0.4, true}, {0.6, false}} {
		split, ns, err := splitMask(m, train, c.share)
		if err != nil {
			t.Fatal(err)
		}
		want := n - 2
		if !c.both {
			want--
		}
		if ns != want || split[2] || (split[0] && split[1]) != c.both || !(split[0] || split[1]) {
			t.Errorf("split at %g of a token's visits: %v (%d), want %d", c.share, split, ns, want)
		}
	}
}

// TestDropAffordable checks the drop rule's bound by hand: 5% of 0.02 bits per step is
// 0.001, a floor of 0.003 raises it to 0.003, and 4 walks of 40,000 steps add 1e-4.
func TestDropAffordable(t *testing.T) {
	for _, c := range []struct {
		after, floor float64
		want         bool
	}{
		{0.0210, 0, true}, {0.0211, 0, true}, {0.0212, 0, false},
		{0.0230, 0.003, true}, {0.0231, 0.003, true}, {0.0232, 0.003, false},
		{0.0212, 0.0005, false}, // a floor under 5% of the cost changes nothing
	} {
		if got := dropAffordable(0.02, c.after, 0.05, c.floor, 4, 40000); got != c.want {
			t.Errorf("0.02 → %g bits per step, floor %g: affordable %v, want %v", c.after, c.floor, got, c.want)
		}
	}
}
