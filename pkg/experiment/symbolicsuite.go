package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// SymbolicSuites are the environments of each symbolic reproduction suite.
var SymbolicSuites = map[string][]string{
	// Paper Section 5.1: the four benchmarks and the three Figure 3 demonstrations.
	"symbolic": {"aliased", "corridors", "room", "two_rooms", "square", "uniform_interior", "three_rooms"},
	// The original CSCG's Figure 2 cases (George et al. 2021).
	"cscg": {"cscg_rectangular", "cscg_empty", "cscg_stitched", "cscg_maze5", "cscg_cliques"},
	// Bigger worlds: 100 to 365 places, 16 to 64 places per class.
	"bigger": {"big_room", "tiled", "four_rooms"},
}

// SymbolicSuite is a grid of symbolic experiments (RunSymbolic with each environment's
// defaults): Envs × Trainers × seeds 1..Seeds, one JSON report per run in
// Out/<Name>/<env>_<trainer>_seed<N>.json and the table in Out/<Name>.md (or in
// Tables). A run whose report exists is read, not re-run (unless Force), if its
// training walks are the suite's (readSuiteReport; else it is re-run, or left out of
// a Collect with a line in the log); a run
// interrupted goes on from its last split (Symbolic.Checkpoint:
// <env>_<trainer>_seed<N>.ckpt beside the report, removed once it is written).
type SymbolicSuite struct {
	Name     string   // a key of SymbolicSuites
	Envs     []string // a subset of the suite's environments (nil: all of them)
	Trainers []string // "gradient", "em" (nil: both)
	Seeds    int      // seeds 1..Seeds; at least 1
	Restarts int      // 0 grows each budget by splitting (DefaultSymbolic); N ≥ 1 trains the reference budget from N starts (Symbolic.FixedBudget)
	// Steps, if > 0, is the length of every training walk and of the held-out walk
	// instead of the environment's reference data size (0). Its reports end in
	// _steps<Steps> and its table is <Name>_steps<Steps>.md, beside the defaults'.
	Steps    int
	Out      string    // results root ("": results)
	Tables   string    // where the table goes ("": Out)
	Force    bool      // re-run runs whose report exists
	Collect  bool      // train nothing: tabulate the reports that exist
	Progress io.Writer // each run's training progress (nil: none)
}

// RunSymbolicSuite runs (or collects) the suite and writes its table, which covers
// every report of the whole suite in Out, so a run of a subset (Envs, Trainers) adds
// rows instead of replacing the table. It returns the table's markdown and path; one
// line per run goes to log (nil: none).
func RunSymbolicSuite(s SymbolicSuite, log io.Writer) (table, path string, err error) {
	all, ok := SymbolicSuites[s.Name]
	if !ok {
		return "", "", fmt.Errorf("suite %q: must be symbolic, cscg or bigger", s.Name)
	}
	envs, trs := s.Envs, s.Trainers
	if len(envs) == 0 {
		envs = all
	}
	for _, e := range envs {
		if _, err := gridworld.Named(e); err != nil {
			return "", "", err
		}
	}
	if len(trs) == 0 {
		trs = []string{"gradient", "em"}
	}
	for _, tr := range trs {
		if tr != "gradient" && tr != "em" {
			return "", "", &FieldError{"trainer", fmt.Sprintf("%q", tr), "must be gradient or em"}
		}
	}
	if s.Seeds < 1 {
		return "", "", &FieldError{"Seeds", s.Seeds, "need at least 1"}
	}
	restarts := s.Restarts
	if restarts < 0 {
		return "", "", &FieldError{"Restarts", s.Restarts, "need at least 0"}
	}
	if s.Steps < 0 || s.Steps == 1 || s.Steps > maxSuiteSteps {
		return "", "", &FieldError{"Steps", s.Steps, fmt.Sprintf("need 0 (the reference) or 2..%d", maxSuiteSteps)}
	}
	suffix := "" // of the reports and the table
	if s.Steps > 0 {
		suffix = fmt.Sprintf("_steps%d", s.Steps)
	}
	root := s.Out
	if root == "" {
		root = "results"
	}
	dir := filepath.Join(root, s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	total := len(envs) * len(trs) * s.Seeds
	groups := map[string][]*evaluate.Report{}
	var order []string
	done := 0
	t0 := time.Now()
	for _, env := range envs {
		for _, tr := range trs {
			key := env + "/" + tr
			order = append(order, key)
			for seed := 1; seed <= s.Seeds; seed++ {
				path := suiteReportPath(dir, env, tr, seed, suffix)
				var rep *evaluate.Report
				if !s.Force {
					r, err := readSuiteReport(path, env, s.Steps)
					switch {
					case err == nil:
						rep = r
					case errors.Is(err, fs.ErrNotExist):
					case s.Collect:
						logf(log, "left out %s: %v\n", path, err)
					default:
						logf(log, "re-running %s: %v\n", path, err)
					}
				}
				if rep == nil && s.Collect {
					continue
				}
				if rep == nil {
					ckpt := strings.TrimSuffix(path, ".json") + ".ckpt"
					if s.Force { // a re-run starts over
						if err := RemoveCheckpoint(ckpt); err != nil {
							return "", "", err
						}
					}
					if rep, err = symbolicSuiteRun(env, tr, seed, restarts, s.Steps, ckpt, s.Progress); err != nil {
						return "", "", fmt.Errorf("%s seed %d: %w", key, seed, err)
					}
					if err := rep.WriteJSON(path); err != nil {
						return "", "", err
					}
					if err := RemoveCheckpoint(ckpt); err != nil {
						return "", "", err
					}
				}
				done++
				groups[key] = append(groups[key], rep)
				if !s.Collect {
					logf(log, "[%d/%d] %-16s %-8s seed %d  F1 %.3f  purity %.3f  action %.3f  %.1fs  (elapsed %s)\n",
						done, total, env, tr, seed, rep.ViterbiMap.F1, rep.StatePlacePurity, rep.ActionAccuracy,
						rep.Seconds["total"], time.Since(t0).Round(time.Second))
				}
			}
		}
	}
	order, groups = suiteReports(dir, suffix, s.Steps, all, s.Seeds, order, groups)
	table = symbolicTable(s.Name, s.Steps, order, groups)
	if s.Tables != "" {
		root = s.Tables
	}
	path = filepath.Join(root, s.Name+suffix+".md")
	if err := atomicfile.WriteFile(path, []byte(table)); err != nil {
		return "", "", err
	}
	return table, path, nil
}

// suiteReportPath is where a symbolic suite keeps the report of one run:
// <env>_<trainer>_seed<N><suffix>.json in dir (suffix: "" or _steps<Steps>).
func suiteReportPath(dir, env, trainer string, seed int, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%s_%s_seed%d%s.json", env, trainer, seed, suffix))
}

// readSuiteReport reads a suite's report of env and checks that its training walks
// are the ones the suite asks for: steps each if steps > 0, else the environment's
// reference data size, which may have changed since the report was written.
func readSuiteReport(path, env string, steps int) (*evaluate.Report, error) {
	r, err := evaluate.ReadJSON(path)
	if err != nil || r.Training == nil {
		return r, err
	}
	e, err := gridworld.Named(env)
	if err != nil {
		return nil, err
	}
	d := e.Defaults()
	if steps > 0 {
		d.Steps = steps
	}
	if r.Training.Episodes != d.Episodes || r.Training.Steps != d.Steps {
		return nil, fmt.Errorf("its training walks are %d × %d steps, the suite's %d × %d", r.Training.Episodes, r.Training.Steps, d.Episodes, d.Steps)
	}
	return r, nil
}

// maxSuiteSteps bounds SymbolicSuite.Steps (the symbolic command's --steps bound).
const maxSuiteSteps = 10_000_000

// symbolicSuiteRun is one run of a symbolic suite: the environment's defaults and the
// seed; EM with restarts ≥ 1 trains the reference budget from that many starts; steps
// > 0 is the length of the training and held-out walks.
func symbolicSuiteRun(envName, trainer string, seed, restarts, steps int, checkpoint string, progress io.Writer) (*evaluate.Report, error) {
	env, err := gridworld.Named(envName)
	if err != nil {
		return nil, err
	}
	s, err := DefaultSymbolic(env, trainer)
	if err != nil {
		return nil, err
	}
	s.Seed, s.Init = uint64(seed), InitUniform
	if steps > 0 {
		s.Steps, s.EvalSteps = steps, steps
	}
	if restarts > 0 {
		s = s.FixedBudget(restarts)
	}
	if s.Doublings > 0 { // only a budget grown by splitting has checkpoints
		s.Checkpoint = checkpoint
	}
	run, err := RunSymbolic(s, nil, progress)
	if err != nil {
		return nil, err
	}
	return run.Report, nil
}

// logf writes a line to log unless it is nil.
func logf(log io.Writer, format string, args ...any) {
	if log != nil {
		fmt.Fprintf(log, format, args...)
	}
}

// suiteReports adds to groups (keyed env/trainer, in order) the reports of seeds 1..seeds
// (names ending in suffix) that exist in dir for every environment of the suite and both
// trainers, and returns the combined row order: the suite's environments first, then any
// others already in order.
func suiteReports(dir, suffix string, steps int, envs []string, seeds int, order []string, groups map[string][]*evaluate.Report) ([]string, map[string][]*evaluate.Report) {
	var all []string
	seen := map[string]bool{}
	for _, env := range envs {
		for _, tr := range []string{"gradient", "em"} {
			key := env + "/" + tr
			all, seen[key] = append(all, key), true
			if len(groups[key]) > 0 {
				continue // this invocation ran or read them
			}
			for seed := 1; seed <= seeds; seed++ {
				r, err := readSuiteReport(suiteReportPath(dir, env, tr, seed, suffix), env, steps)
				if err == nil {
					groups[key] = append(groups[key], r)
				}
			}
		}
	}
	for _, key := range order {
		if !seen[key] {
			all = append(all, key)
		}
	}
	return all, groups
}

// resolvedCount is how many of rs the label-free verdict calls resolved ("–" when none
// has a verdict: reports written before it).
func resolvedCount(rs []*evaluate.Report) string {
	n, judged := 0, 0
	for _, r := range rs {
		if r.Diagnosis != nil && r.Diagnosis.Verdict != nil {
			judged++
			if r.Diagnosis.Verdict.Resolved {
				n++
			}
		}
	}
	if judged == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d", n, judged)
}

// symbolicTable renders mean ± s.d. over seeds, one row per environment and trainer.
func symbolicTable(suite string, steps int, order []string, groups map[string][]*evaluate.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Suite %q: held-out symbolic evaluation (mean ± s.d. over seeds)\n\n", suite)
	if steps > 0 {
		fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite %s --steps %d`: every training walk and the held-out walk are %d steps long.", suite, steps, steps)
	} else {
		fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite %s`.", suite)
	}
	b.WriteString(" Viterbi-path map at cutoff f = 0.002; purity is visit-weighted state→place purity.")
	if suite == "bigger" {
		b.WriteString(" The Viterbi-path map keeps a place pair the held-out walk crosses more than f·T times, which no pair of a world with more than about 1/f = 500 edges can reach on a random walk (four_rooms has 654): *projected F1* scores the map read from the transitions at threshold 0.01 instead.")
	}
	b.WriteString("\n\n")
	// The label-free verdict's column, when some report has one (reports written before
	// it have none).
	verdict := false
	for _, rs := range groups {
		verdict = verdict || resolvedCount(rs) != "–"
	}
	vh, vs := "", ""
	if verdict {
		vh, vs = " verdict: resolved |", "---|"
	}
	// Worlds with more edges than the Viterbi-path cutoff can pass (about 1/f = 500) are
	// read from the projected map too.
	projected := suite == "bigger"
	if projected {
		vh, vs = " projected F1 |"+vh, "---|"+vs
	}
	b.WriteString("| env | trainer | seeds | N | map recall | map F1 | state→place purity | clone purity | action acc. |" + vh + " seconds/run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|" + vs + "---|\n")
	for _, key := range order {
		rs := groups[key]
		if len(rs) == 0 {
			continue
		}
		sum := evaluate.Aggregate(rs)
		col := func(metric string, prec int) string { return sum.Format(metric, prec) }
		env, tr, _ := strings.Cut(key, "/")
		vc := ""
		if projected {
			vc = " " + col("projected_map@0.01.f1", 3) + " |"
		}
		if verdict {
			vc += " " + resolvedCount(rs) + " |"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |%s %s |\n", env, tr, len(rs), statesRange(rs),
			col("viterbi_map.recall", 2), col("viterbi_map.f1", 3), col("state_place_purity", 3),
			col("clone_purity", 3), col("action_accuracy", 3), vc, col("seconds.total", 1))
	}
	return b.String()
}

// statesRange is the runs' state count N, or its range where budgets grown from the
// data differ between seeds.
func statesRange(rs []*evaluate.Report) string {
	lo, hi := rs[0].NumStates, rs[0].NumStates
	for _, r := range rs {
		lo, hi = min(lo, r.NumStates), max(hi, r.NumStates)
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
