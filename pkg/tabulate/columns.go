package tabulate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// value is one report's cell of a column: numbers rendered by render (nums nil for
// text), or missing ("–").
type value struct {
	nums    []float64
	text    string
	missing bool
	render  func(nums []float64, prec int) string
}

func text(s string) value { return value{text: s} }

var missing = value{missing: true}

// kinds are the kinds of report a column reads.
type kinds uint8

const (
	evalKind kinds = 1 << iota // evaluation reports (evaluate.Report)
	planKind                   // planning reports (experiment.PlanReport)
	anyKind  = evalKind | planKind
)

// column is one entry of the menu (Columns).
type column struct {
	name, header string
	// prec is the default number of decimals of a single-number column; -1: the
	// column's format is fixed (text, or several numbers).
	prec int
	// integer columns print without decimals (but with one as a mean); sum columns
	// (counts) add up in a row over several reports instead of averaging; ident
	// columns describe a group of reports (their distinct values are listed).
	integer, sum, ident bool
	// reads says which reports the column reads (evaluation reports when zero).
	reads kinds
	get   func(r *run) value
}

// num is a single-number value printed with prec decimals, suffix after it.
func num(x float64, suffix string) value {
	return value{nums: []float64{x}, render: func(n []float64, prec int) string { return fmtNum(n[0], prec) + suffix }}
}

// pct is a share printed as a percentage.
func pct(x float64) value {
	return value{nums: []float64{100 * x}, render: func(n []float64, prec int) string { return fmtNum(n[0], prec) + "%" }}
}

// multi is a fixed-format value of several numbers.
func multi(f func(n []float64) string, nums ...float64) value {
	return value{nums: nums, render: func(n []float64, _ int) string { return f(n) }}
}

func fmtNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// thousands prints n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func diag(r *run) *chmm.Diagnosis {
	if r.rep == nil {
		return nil
	}
	return r.rep.Diagnosis
}

func verdictOf(r *run) *chmm.Verdict {
	if d := diag(r); d != nil {
		return d.Verdict
	}
	return nil
}

func training(r *run) *evaluate.Training {
	if r.rep == nil || r.rep.Training == nil {
		return &evaluate.Training{}
	}
	return r.rep.Training
}

// withDiag is a column of the report's diagnosis (missing without one).
func withDiag(f func(d *chmm.Diagnosis) value) func(r *run) value {
	return func(r *run) value {
		if d := diag(r); d != nil {
			return f(d)
		}
		return missing
	}
}

// withMergedDiag is a column of the diagnosis the verdict's merged-places test reads
// (chmm.Diagnosis.MergedReading; missing without a diagnosis), or of the diagnosis
// itself where that test reads none.
func withMergedDiag(f func(d *chmm.Diagnosis) value) func(r *run) value {
	return withDiag(func(d *chmm.Diagnosis) value {
		if r := d.MergedReading(); r != nil {
			return f(r)
		}
		return f(d)
	})
}

// withJoint is a column of the joint phase's record (missing without one).
func withJoint(f func(r *run, j *evaluate.Joint) value) func(r *run) value {
	return func(r *run) value {
		if j := training(r).Joint; j != nil {
			return f(r, j)
		}
		return missing
	}
}

func bold(s string, on bool) string {
	if on {
		return "**" + s + "**"
	}
	return s
}

// verdictText is "resolved", or the verdict's problems (chmm.Verdict.Problems).
func verdictText(v *chmm.Verdict) string {
	if v.Resolved {
		return "resolved"
	}
	if len(v.Problems) == 0 {
		return "not resolved"
	}
	p := make([]string, len(v.Problems))
	for i, x := range v.Problems {
		p[i] = "`" + x + "`"
	}
	return strings.Join(p, ", ")
}

// phaseNames are the headers of the phases of a report's seconds.
var phaseNames = map[string]string{
	"warmup": "warm-up", "joint": "joint", "final": "finalisation", "refine": "refinement", "evaluate": "evaluation",
	"eval": "evaluation", "train": "training", "compact": "compaction",
}

// timeColumn is "min.PHASE" (minutes, one decimal) or "s.PHASE" (seconds, none) of a
// report's seconds; ok false for another name.
func timeColumn(name string) (column, bool) {
	unit, phase, ok := strings.Cut(name, ".")
	if !ok || unit != "min" && unit != "s" || phase == "" {
		return column{}, false
	}
	div, prec, word := 60.0, 1, "minutes"
	if unit == "s" {
		div, prec, word = 1, 0, "seconds"
	}
	header := word
	if phase != "total" {
		header = phase
		if n, ok := phaseNames[phase]; ok {
			header = n
		}
		header += ", " + word
	}
	return column{name: name, header: header, prec: prec, get: func(r *run) value {
		s, ok := r.rep.Seconds[phase]
		if !ok {
			return missing
		}
		return num(s/div, "")
	}}, true
}

// count is a 0/1 count of the reports of a kind, summed over a row's reports.
func count(name, header string, is func(r *run) bool) column {
	return column{name: name, header: header, prec: 0, integer: true, sum: true, get: func(r *run) value {
		if is(r) {
			return num(1, "")
		}
		return num(0, "")
	}}
}

func flagged(r *run) bool { v := verdictOf(r); return v != nil && !v.Resolved }
func judged(r *run) bool  { return verdictOf(r) != nil }

// rolledBack is the number of joint iterations the collapse response rolled back
// (each intervention's iteration less the one it restored); ok false without a record.
func rolledBack(r *run) (n int, ok bool) {
	g := r.rep.JointGuard()
	if g == nil {
		return 0, false
	}
	for _, iv := range g.Interventions {
		n += iv.Iter - iv.RolledBackTo
	}
	return n, true
}

// menu is the fixed menu of columns (Columns lists it).
var menu = []column{
	{name: "label", header: "run", prec: -1, ident: true, reads: anyKind, get: func(r *run) value {
		if r.label != "" {
			return text(r.label)
		}
		return text(r.name())
	}},
	{name: "file", header: "report", prec: -1, ident: true, reads: anyKind, get: func(r *run) value { return text("`" + r.name() + "`") }},
	{name: "env", header: "env", prec: -1, ident: true, reads: anyKind, get: func(r *run) value { return text(r.env()) }},
	{name: "seed", header: "seed", prec: -1, ident: true, get: func(r *run) value { return text(strconv.FormatUint(r.rep.Seed, 10)) }},
	{name: "run", header: "env, seed", prec: -1, ident: true, get: func(r *run) value {
		return text(fmt.Sprintf("%s, %d", r.rep.Env, r.rep.Seed))
	}},
	{name: "dataset", header: "dataset", prec: -1, ident: true, get: func(r *run) value { return text(r.rep.Dataset) }},
	{name: "trainer", header: "trainer", prec: -1, ident: true, get: func(r *run) value { return text(r.rep.Trainer) }},
	{name: "steps", header: "training steps", prec: -1, ident: true, get: func(r *run) value {
		t := training(r)
		switch {
		case t.Steps == 0:
			return missing
		case t.Episodes > 1:
			return text(fmt.Sprintf("%d × %s", t.Episodes, thousands(t.Steps)))
		}
		return text(thousands(t.Steps))
	}},
	{name: "runs", header: "runs", prec: 0, integer: true, sum: true, reads: anyKind, get: func(*run) value { return num(1, "") }},

	{name: "recall", header: "map recall", prec: 3, get: func(r *run) value { return num(r.rep.ViterbiMap.Recall, "") }},
	{name: "precision", header: "map precision", prec: 3, get: func(r *run) value { return num(r.rep.ViterbiMap.Precision, "") }},
	{name: "f1", header: "map F1", prec: 3, get: func(r *run) value { return num(r.rep.ViterbiMap.F1, "") }},
	{name: "map", header: "map recall, F1", prec: -1, get: func(r *run) value {
		s, projected := r.rep.MapScore()
		note := ""
		if projected {
			note = " (projected)"
		}
		return multi(func(n []float64) string {
			return bold(fmtNum(n[0], 3)+", "+fmtNum(n[1], 3)+note, n[0] >= 0.999 && n[1] >= 0.98)
		}, s.Recall, s.F1)
	}},
	{name: "f1pr", header: "map F1 (P, R)", prec: -1, get: func(r *run) value {
		s := r.rep.ViterbiMap
		return multi(func(n []float64) string {
			if f := fmtNum(n[0], 3); f != "1.000" {
				return fmt.Sprintf("%s (%s, %s)", f, fmtNum(n[1], 3), fmtNum(n[2], 3))
			}
			return "1.000"
		}, s.F1, s.Precision, s.Recall)
	}},
	{name: "purity", header: "state→place purity", prec: 3, get: func(r *run) value { return num(r.rep.StatePlacePurity, "") }},
	{name: "clone-purity", header: "clone purity", prec: 3, get: func(r *run) value { return num(r.rep.ClonePurity, "") }},
	{name: "action", header: "action acc.", prec: 3, get: func(r *run) value { return num(r.rep.ActionAccuracy, "") }},
	{name: "readout", header: "other read-out: map F1, purity", prec: -1, get: func(r *run) value {
		o := r.rep.OtherReadout
		if o == nil {
			return missing
		}
		return multi(func(n []float64) string {
			return fmt.Sprintf("%s: %s, %s", o.Decode, fmtNum(n[0], 3), fmtNum(n[1], 3))
		}, o.ViterbiMapF1, o.StatePlacePurity)
	}},

	{name: "h", header: "H(token|place)", prec: 3, get: func(r *run) value { return num(r.rep.HTokenGivenPlace, "") }},
	{name: "codes", header: "codes", prec: 0, integer: true, get: func(r *run) value { return num(float64(r.rep.ActiveCodes), "") }},
	{name: "perplexity", header: "perplexity", prec: 2, get: func(r *run) value { return num(r.rep.Perplexity, "") }},
	{name: "class-purity", header: "token class purity", prec: 3, get: func(r *run) value {
		if r.rep.ClassesShown == 0 { // a report written before it
			return missing
		}
		return num(r.rep.TokenClassPurity, "")
	}},
	{name: "class-perplexity", header: "class perplexity", prec: 2, get: func(r *run) value {
		if r.rep.ClassesShown == 0 {
			return missing
		}
		return num(r.rep.ClassPerplexity, "")
	}},
	{name: "pseudo-classes", header: "pseudo-classes", prec: 0, integer: true, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return float64(f.PseudoClasses), f.Skipped == ""
	})},
	{name: "mixtures", header: "mixtures dropped", prec: 0, integer: true, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return float64(f.Mixtures), f.Skipped == ""
	})},
	{name: "same-effect", header: "one class as two tokens, largest", prec: 4, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return f.SameEffect, f.SameEffect > 0
	})},
	{name: "apart-effect", header: "two classes, smallest", prec: 3, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return f.ApartEffect, f.ApartEffect > 0
	})},
	{name: "mixed", header: "mixture noise, largest dropped", prec: 1, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return f.Mixed, f.Mixtures > 0
	})},
	{name: "unmixed", header: "mixture noise, smallest kept", prec: 0, get: refineNum(func(f *evaluate.Refine) (float64, bool) {
		return f.Unmixed, f.Unmixed > 0
	})},
	{name: "tokens-per-place", header: "tokens per place", prec: 2, get: func(r *run) value { return num(r.rep.TokensPerPlaceMean, "") }},
	{name: "places-per-token", header: "most places per token", prec: 0, integer: true, get: func(r *run) value {
		return num(float64(r.rep.PlacesPerTokenMax), "")
	}},
	{name: "joint-tokens", header: "tokens: active codes, perplexity, H(token|place), most places per token", prec: -1, get: func(r *run) value {
		return multi(func(n []float64) string {
			return fmt.Sprintf("%s, %s, %s, %s", fmtNum(n[0], 0), fmtNum(n[1], 2), fmtNum(n[2], 3), fmtNum(n[3], 0))
		}, float64(r.rep.ActiveCodes), r.rep.Perplexity, r.rep.HTokenGivenPlace, float64(r.rep.PlacesPerTokenMax))
	}},
	{name: "codes-tokens", header: "joint codes → tokens", prec: -1, get: withJoint(func(r *run, j *evaluate.Joint) value {
		joint := len(j.CodesKept) // the joint phase's tokens: its codes, as merged before it
		switch {
		case len(j.TokensMerged) > 0:
			joint = len(j.TokensMerged)
		case len(j.CodesMerged) > 0:
			joint = slices.Max(j.CodesMerged) + 1
		}
		if joint == 0 {
			return missing
		}
		return text(fmt.Sprintf("%d → %d", joint, r.rep.NumTokens))
	})},
	{name: "interventions", header: "interventions", prec: 0, integer: true, get: func(r *run) value {
		if g := r.rep.JointGuard(); g != nil {
			return num(float64(len(g.Interventions)), "")
		}
		return missing
	}},
	{name: "rolled-back", header: "iterations rolled back", prec: 0, integer: true, get: func(r *run) value {
		if n, ok := rolledBack(r); ok {
			return num(float64(n), "")
		}
		return missing
	}},
	{name: "joint-iters", header: "joint iterations", prec: 0, integer: true, get: withJoint(func(_ *run, j *evaluate.Joint) value {
		return num(float64(j.Iters), "")
	})},
	{name: "joint-run", header: "joint iterations run", prec: 0, integer: true, get: withJoint(func(r *run, j *evaluate.Joint) value {
		n, ok := rolledBack(r)
		if !ok {
			return missing
		}
		return num(float64(j.Iters+n), "")
	})},

	{name: "states", header: "states", prec: 0, integer: true, get: func(r *run) value { return num(float64(r.rep.NumStates), "") }},
	{name: "visited", header: "visited states", prec: 0, integer: true, get: func(r *run) value { return num(float64(r.rep.VisitedStates), "") }},
	{name: "used", header: "clones used", prec: 0, integer: true, get: withDiag(func(d *chmm.Diagnosis) value {
		return num(float64(d.UsedClones), "")
	})},
	{name: "states-used", header: "states (used)", prec: -1, get: func(r *run) value {
		d := diag(r)
		if d == nil {
			return missing
		}
		return text(fmt.Sprintf("%d (%d)", r.rep.NumStates, d.UsedClones))
	}},
	{name: "states-used-folded", header: "states (used), folded", prec: -1, get: func(r *run) value {
		d := diag(r)
		if d == nil {
			return missing
		}
		return text(fmt.Sprintf("%d (%d), %d", r.rep.NumStates, d.UsedClones, training(r).Folded))
	}},
	{name: "splits", header: "splits", prec: 0, integer: true, get: func(r *run) value { return num(float64(training(r).Doublings), "") }},
	{name: "doublings", header: "doublings", prec: 0, integer: true, get: func(r *run) value { return num(float64(training(r).GrowRounds), "") }},
	{name: "folded", header: "folded", prec: 0, integer: true, get: func(r *run) value { return num(float64(training(r).Folded), "") }},
	{name: "kept", header: "kept", prec: -1, get: func(r *run) value {
		return text(fmt.Sprintf("%d splits, %d states", training(r).Doublings, r.rep.NumStates))
	}},
	{name: "clones", header: "clones in use of the budget", prec: -1, get: func(r *run) value {
		t := training(r)
		if len(t.Clones) == 0 {
			return missing
		}
		n := 0
		for _, c := range t.Clones {
			n += c
		}
		return text(fmt.Sprintf("%d of %d", n, n+t.Pruned))
	}},
	{name: "grow-check", header: "growth check: clones per token, held-out bits/step", prec: -1, get: func(r *run) value {
		checks := training(r).GrowChecks
		if len(checks) == 0 {
			return missing
		}
		s := make([]string, len(checks))
		for i, c := range checks {
			verdict := "kept"
			if c.Grown {
				verdict = "doubled"
			}
			s[i] = fmt.Sprintf("%d → %d: %s → %s, %s", c.Clones, 2*c.Clones, fmtNum(c.Bits, 3), fmtNum(c.GrownBits, 3), verdict)
		}
		return text(strings.Join(s, "; "))
	}},
	{name: "chosen", header: "settings chosen for the world", prec: -1, get: func(r *run) value {
		if r.rep == nil || len(r.rep.Chosen) == 0 {
			return missing
		}
		s := make([]string, len(r.rep.Chosen))
		for i, c := range r.rep.Chosen {
			s[i], _, _ = strings.Cut(c, ":") // "key=value: why"
		}
		return text(strings.Join(s, " "))
	}},
	{name: "compared", header: "validation bits/step: gradient, EM (kept)", prec: -1, get: func(r *run) value {
		c := training(r).Compared
		if c == nil {
			return missing
		}
		b := func(x float64, kept bool) string {
			s := "∞"
			if x >= 0 {
				s = fmtNum(x, 4)
			}
			if kept {
				s = "**" + s + "**"
			}
			return s
		}
		return text(b(c.GradientBits, c.Kept == "gradient") + ", " + b(c.EMBits, c.Kept == "em"))
	}},
	{name: "final-iters", header: "finalisation iterations", prec: 0, integer: true, get: func(r *run) value {
		n := 0
		for _, run := range training(r).Runs {
			if strings.HasPrefix(run.Name, "finalise") {
				n += run.Iterations
			}
		}
		if n == 0 {
			return missing
		}
		return num(float64(n), "")
	}},
	{name: "held-out", header: "held-out ends, bits/step, after 0, 1, … splits", prec: -1, get: func(r *run) value {
		t := training(r)
		if len(t.HeldOutBits) == 0 {
			return missing
		}
		s := make([]string, len(t.HeldOutBits))
		for i, b := range t.HeldOutBits {
			s[i] = bold(fmtNum(b, 4), i == t.Doublings)
		}
		return text(strings.Join(s, " "))
	}},

	{name: "bits", header: "training / held-out bits per step", prec: -1, get: withDiag(func(d *chmm.Diagnosis) value {
		return multi(func(n []float64) string { return fmtNum(n[0], 4) + " / " + fmtNum(n[1], 4) }, d.TrainBits, d.HeldOutBits)
	})},
	{name: "late", header: "surprised beyond localising", prec: 3, get: withDiag(func(d *chmm.Diagnosis) value { return pct(d.LateSurprises()) })},
	{name: "surprises", header: "steps that surprise the map", prec: 3, get: withMergedDiag(func(d *chmm.Diagnosis) value { return pct(d.Surprises) })},
	{name: "misses", header: "steps the path misses", prec: 3, get: withMergedDiag(func(d *chmm.Diagnosis) value { return pct(d.Misses) })},
	{name: "surprises-misses", header: "surprises / misses", prec: -1, get: withMergedDiag(func(d *chmm.Diagnosis) value {
		return multi(func(n []float64) string { return fmtNum(n[0], 2) + "% / " + fmtNum(n[1], 2) + "%" }, 100*d.Surprises, 100*d.Misses)
	})},
	{name: "after-miss", header: "surprised steps by steps after the last miss", prec: -1, get: withMergedDiag(func(d *chmm.Diagnosis) value {
		if len(d.SurprisesAfterMiss) == 0 {
			return missing
		}
		s := make([]string, len(d.SurprisesAfterMiss))
		for i, v := range d.SurprisesAfterMiss {
			s[i] = strconv.Itoa(v)
		}
		return text(strings.Join(s, " "))
	})},
	{name: "unexplained", header: fmt.Sprintf("surprised > %d steps after a miss, beyond localising", chmm.NoisyAftermath), prec: 3,
		get: withMergedDiag(func(d *chmm.Diagnosis) value { return pct(d.Unexplained()) })},
	{name: "reading", header: "tokens read", prec: -1, get: withDiag(func(d *chmm.Diagnosis) value {
		switch {
		case d.Confused:
			return text("through its C")
		case d.Reread != nil:
			return text("through a fitted C")
		}
		return text("hard")
	})},
	{name: "verdict", header: "verdict", prec: -1, get: func(r *run) value {
		if v := verdictOf(r); v != nil {
			return text(verdictText(v))
		}
		return missing
	}},
	{name: "truth", header: "against the true map", prec: -1, get: func(r *run) value {
		if r.rep.Recovered() {
			return text("recovered")
		}
		return text("failed")
	}},
	count("failed-flagged", "failed, flagged", func(r *run) bool { return judged(r) && !r.rep.Recovered() && flagged(r) }),
	count("failed-passed", "failed, passed", func(r *run) bool { return judged(r) && !r.rep.Recovered() && !flagged(r) }),
	count("good-passed", "good, passed", func(r *run) bool { return judged(r) && r.rep.Recovered() && !flagged(r) }),
	count("good-flagged", "good, flagged", func(r *run) bool { return judged(r) && r.rep.Recovered() && flagged(r) }),

	{name: "plan", header: "success open / mpc (mpc path ratio)", prec: -1, reads: planKind, get: func(r *run) value {
		open, mpc, ratio := math.NaN(), math.NaN(), math.NaN()
		for _, m := range r.plan.Modes {
			switch m.Mode {
			case plan.OpenLoop:
				open = m.SuccessRate
			case plan.MPC:
				mpc = m.SuccessRate
				if m.Successes > 0 {
					ratio = m.PathRatioMean
				}
			}
		}
		return multi(func(n []float64) string {
			return fmt.Sprintf("%s / %s (%s)", fmtNum(n[0], 3), fmtNum(n[1], 3), fmtNum(n[2], 3))
		}, open, mpc, ratio)
	}},
}

// refineNum is a column of the report's refinement record: get's number where it says
// the record has it, missing without a record.
func refineNum(get func(f *evaluate.Refine) (float64, bool)) func(r *run) value {
	return func(r *run) value {
		if r.rep.Training == nil || r.rep.Training.Refine == nil {
			return missing
		}
		if x, ok := get(r.rep.Training.Refine); ok {
			return num(x, "")
		}
		return missing
	}
}
