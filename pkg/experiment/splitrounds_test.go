package experiment

import (
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// splitRecord is what a symbolic map grown by split rounds ends with: every round's
// record, the map's clones, its history (length and sum of ℓ/T) and its scores.
type splitRecord struct {
	Rounds            []evaluate.BudgetRound
	Doublings, Folded int
	Clones            []int
	Iters             int
	LogLikSum         float64
	TrainBits         float64
	HeldOutBits       float64
	F1                float64
}

// splitCase is the symbolic experiment of a recorded case of TestSplitRoundsAsRecorded.
func splitCase(t *testing.T, name string) Symbolic {
	t.Helper()
	switch name {
	case "em":
		_, s := namedSymbolic(t, "room", TrainerEM)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 6000, 500, 3, 40
		return s
	case "em-fit":
		_, s := namedSymbolic(t, "room", TrainerEM)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 6000, 500, 6, 100
		return s
	case "gradient":
		_, s := namedSymbolic(t, "room", TrainerGradient)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2500, 1000, 3, 60
		return s
	case "gradient-share":
		_, s := namedSymbolic(t, "room", TrainerGradient)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2500, 1000, 3, 60
		s.FoldCost, s.DropCost, s.SplitShare = 0, 0, 0.3
		return s
	case "gradient-maxstates":
		_, s := namedSymbolic(t, "room", TrainerGradient)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2500, 1000, 6, 60
		s.MaxStates = 40
		return s
	case "gradient-surprised":
		_, s := namedSymbolic(t, "aliased", TrainerGradient)
		s.Episodes, s.Steps, s.EvalSteps, s.Doublings, s.Iters = 1, 2000, 500, 3, 60
		s.SplitSurprised = true
		return s
	}
	t.Fatalf("no case %q", name)
	return Symbolic{}
}

// TestSplitRoundsAsRecorded runs symbolic maps grown by split rounds
// (chmm.GrowBySplitting) with both trainers — EM with its hard-phase probe, the
// gradient trainer with alike clones folded by cost, a split-share mask, the state
// bound and the fit as the stop — and compares every round's record, the map's clones,
// the history, the scores and the progress lines of the rounds with what the code gave
// before the split rounds had one home.
//
// The values were recorded by running these cases on commit 7a23539 (where
// symbolicrun.go's trainByDoubling grew the budget) with go1.27.3 and GOEXPERIMENT=simd
// on the project's 2-core amd64 machine (HMM kernels AVX2, 2 workers), printing the
// fields with %#v. Counts and text must match exactly, and the floats too where the HMM
// kernels and the worker count are those of the recording; elsewhere, to a relative
// 1e-6, since the kernels' and the workers' sums differ in rounding.
func TestSplitRoundsAsRecorded(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  splitRecord
		lines []string
	}{
		{"em", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 41, Stop: "max iterations", ClonesAdded: 0, Clones: 10, Used: 10, TrainBits: 0.8109933115829583, Kept: 10, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 41, Stop: "max iterations", ClonesAdded: 0, Clones: 20, Used: 20, TrainBits: 0.5158522465373103, Kept: 20, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 41, Stop: "max iterations", ClonesAdded: 0, Clones: 40, Used: 37, TrainBits: 0.3316692180685289, Kept: 37, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 41, Stop: "max iterations", ClonesAdded: 0, Clones: 74, Used: 58, TrainBits: 0.24063974101585545, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "3 split(s) done"},
		}, Doublings: 3, Folded: 0, Clones: []int{8, 8, 8, 4, 8, 8, 8, 8, 8, 6}, Iters: 171, LogLikSum: -62.34906386385283, TrainBits: 0.23941203420650803, HeldOutBits: 0.28716668985070204, F1: 0.54},
			[]string{
				"budget round 0: 0.8110 bits/step on the training walks (0.8108 after a hard phase), 10 of 10 clones used: the 10 its paths visit split in two",
				"budget round 1: 0.5159 bits/step on the training walks (0.5228 after a hard phase), 20 of 20 clones used: the 20 its paths visit split in two",
				"budget round 2: 0.3317 bits/step on the training walks (0.3369 after a hard phase), 37 of 40 clones used: the 37 its paths visit split in two",
				"budget round 3: 0.2406 bits/step on the training walks, 58 of 74 clones used: 3 split(s) done",
			}},
		{"em-fit", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 10, Used: 10, TrainBits: 0.8109933115829583, Kept: 10, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 20, Used: 20, TrainBits: 0.5126990537562762, Kept: 20, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 40, Used: 37, TrainBits: 0.3212631706129096, Kept: 37, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 74, Used: 47, TrainBits: 0.200903907748787, Kept: 50, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 100, Used: 56, TrainBits: 0.09827302692663852, Kept: 58, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 101, Stop: "max iterations", ClonesAdded: 0, Clones: 116, Used: 69, TrainBits: 0.017170525562664737, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "after its hard phase (0.0006 bits/step) the map fits its training walks"},
		}, Doublings: 5, Folded: 0, Clones: []int{28, 20, 12, 4, 10, 6, 6, 14, 8, 8}, Iters: 612, LogLikSum: -147.84835906142877, TrainBits: 0.0005785214695336014, HeldOutBits: 0.02354039399431993, F1: 0.9565217391304348},
			[]string{
				"budget round 0: 0.8110 bits/step on the training walks (0.8108 after a hard phase), 10 of 10 clones used: the 10 its paths visit split in two",
				"budget round 1: 0.5127 bits/step on the training walks (0.5196 after a hard phase), 20 of 20 clones used: the 20 its paths visit split in two",
				"budget round 2: 0.3213 bits/step on the training walks (0.3278 after a hard phase), 37 of 40 clones used: the 37 its paths visit split in two",
				"budget round 3: 0.2009 bits/step on the training walks (0.2031 after a hard phase), 47 of 74 clones used: the 50 its paths visit split in two",
				"budget round 4: 0.0983 bits/step on the training walks (0.0851 after a hard phase), 56 of 100 clones used: the 58 its paths visit split in two",
				"budget round 5: 0.0172 bits/step on the training walks, 69 of 116 clones used: after its hard phase (0.0006 bits/step) the map fits its training walks",
			}},
		{"gradient", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 10, Used: 10, TrainBits: 0.8437473432692397, Kept: 10, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 20, Used: 19, TrainBits: 0.5438140933696821, Kept: 18, Folded: 1, FoldDepth: 1, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 36, Used: 30, TrainBits: 0.36911921935174513, Kept: 24, Folded: 6, FoldDepth: 1, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 48, Used: 42, TrainBits: 0.2521090346933118, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "3 split(s) done"},
		}, Doublings: 3, Folded: 7, Clones: []int{8, 6, 6, 2, 6, 4, 2, 6, 4, 4}, Iters: 244, LogLikSum: -116.58598118801905, TrainBits: 0.2521090346933118, HeldOutBits: 0.3657316037385917, F1: 0.5904761904761905},
			[]string{
				"budget round 0: 0.8437 bits/step on the training walks, 10 of 10 clones used: the 10 its paths visit split in two",
				"budget round 1: 0.5438 bits/step on the training walks, 19 of 20 clones used: the 18 its paths visit (1 alike 1 move ahead folded into others) split in two",
				"budget round 2: 0.3691 bits/step on the training walks, 30 of 36 clones used: the 24 its paths visit (6 alike 1 move ahead folded into others) split in two",
				"budget round 3: 0.2521 bits/step on the training walks, 42 of 48 clones used: 3 split(s) done",
			}},
		{"gradient-share", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 10, Used: 10, TrainBits: 0.8437473432692397, Kept: 10, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 20, Used: 19, TrainBits: 0.5438140933696821, Kept: 18, Folded: 1, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 35, Used: 33, TrainBits: 0.3829119819946173, Kept: 25, Folded: 8, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 42, Used: 38, TrainBits: 0.2918857005992883, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "3 split(s) done"},
		}, Doublings: 3, Folded: 9, Clones: []int{6, 5, 4, 2, 4, 5, 4, 4, 4, 4}, Iters: 244, LogLikSum: -118.41272345525476, TrainBits: 0.2918857005992883, HeldOutBits: 0.46494817499302626, F1: 0.5384615384615385},
			[]string{
				"budget round 0: 0.8437 bits/step on the training walks, 10 of 10 clones used: the 10 its paths visit, the 10 of them with 30% of their token's visits or more split in two",
				"budget round 1: 0.5438 bits/step on the training walks, 19 of 20 clones used: the 18 its paths visit (1 alike clones folded into others), the 17 of them with 30% of their token's visits or more split in two",
				"budget round 2: 0.3829 bits/step on the training walks, 33 of 35 clones used: the 25 its paths visit (8 alike clones folded into others), the 17 of them with 30% of their token's visits or more split in two",
				"budget round 3: 0.2919 bits/step on the training walks, 38 of 42 clones used: 3 split(s) done",
			}},
		{"gradient-maxstates", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 10, Used: 10, TrainBits: 0.8437473432692397, Kept: 10, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 20, Used: 19, TrainBits: 0.5438140933696821, Kept: 18, Folded: 1, FoldDepth: 1, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 36, Used: 30, TrainBits: 0.36911921935174513, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "splitting would pass 40 states"},
		}, Doublings: 2, Folded: 1, Clones: []int{4, 4, 4, 2, 4, 4, 2, 4, 4, 4}, Iters: 183, LogLikSum: -104.33820913144667, TrainBits: 0.36911921935174513, HeldOutBits: 0.4626351878587391, F1: 0.45833333333333326},
			[]string{
				"budget round 0: 0.8437 bits/step on the training walks, 10 of 10 clones used: the 10 its paths visit split in two",
				"budget round 1: 0.5438 bits/step on the training walks, 19 of 20 clones used: the 18 its paths visit (1 alike 1 move ahead folded into others) split in two",
				"budget round 2: 0.3691 bits/step on the training walks, 30 of 36 clones used: splitting would pass 40 states",
			}},
		{"gradient-surprised", splitRecord{Rounds: []evaluate.BudgetRound{
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 4, Used: 4, TrainBits: 0.5412935082885507, Kept: 4, Folded: 0, FoldDepth: 0, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 8, Used: 8, TrainBits: 0.3382776888714083, Kept: 8, Folded: 0, FoldDepth: 1, Outcome: "split"},
			{Iterations: 61, Stop: "max iterations", ClonesAdded: 0, Clones: 16, Used: 16, TrainBits: 0.004891560434247457, Kept: 0, Folded: 0, FoldDepth: 0, Outcome: "the map fits its training walks"},
		}, Doublings: 2, Folded: 0, Clones: []int{4, 4, 4, 4}, Iters: 183, LogLikSum: -67.90970927795405, TrainBits: 0.004891560434247457, HeldOutBits: 0.02783411902101521, F1: 1},
			[]string{
				"budget round 0: 0.5413 bits/step on the training walks, 4 of 4 clones used: the 4 its paths visit split in two",
				"budget round 1: 0.3383 bits/step on the training walks, 8 of 8 clones used: the 8 its paths visit split in two",
				"budget round 2: 0.0049 bits/step on the training walks, 16 of 16 clones used: the map fits its training walks",
			}},
	} {
		s := splitCase(t, c.name)
		var out strings.Builder
		run, err := RunSymbolic(s, nil, &out)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tr := run.Report.Training
		sum := 0.0
		for _, v := range run.History.LogLik {
			sum += v
		}
		got := splitRecord{Rounds: tr.Rounds, Doublings: tr.Doublings, Folded: tr.Folded, Clones: tr.Clones, Iters: len(run.History.LogLik),
			LogLikSum: sum, TrainBits: run.Report.Diagnosis.TrainBits, HeldOutBits: run.Report.Diagnosis.HeldOutBits, F1: run.Report.ViterbiMap.F1}
		if !sameSplitRecord(got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.name, got, c.want)
		}
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "budget round") {
				lines = append(lines, l)
			}
		}
		if !reflect.DeepEqual(lines, c.lines) {
			t.Errorf("%s: rounds reported\n%s\nwant\n%s", c.name, strings.Join(lines, "\n"), strings.Join(c.lines, "\n"))
		}
	}
}

// sameSplitRecord says whether a and b agree: counts and text exactly, floats to a
// relative 1e-6, or exactly with the HMM kernels and worker count of the recording
// (AVX2, 2 workers).
func sameSplitRecord(a, b splitRecord) bool {
	tol := 1e-6
	if chmm.KernelSet() == "avx2" && runtime.GOMAXPROCS(0) == 2 {
		tol = 0
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= tol*math.Max(math.Abs(x), math.Abs(y)) }
	if len(a.Rounds) != len(b.Rounds) {
		return false
	}
	for i := range a.Rounds {
		ra, rb := a.Rounds[i], b.Rounds[i]
		if !near(ra.TrainBits, rb.TrainBits) {
			return false
		}
		ra.TrainBits = rb.TrainBits
		if ra != rb {
			return false
		}
	}
	return a.Doublings == b.Doublings && a.Folded == b.Folded && reflect.DeepEqual(a.Clones, b.Clones) && a.Iters == b.Iters &&
		near(a.LogLikSum, b.LogLikSum) && near(a.TrainBits, b.TrainBits) && near(a.HeldOutBits, b.HeldOutBits) && near(a.F1, b.F1)
}
