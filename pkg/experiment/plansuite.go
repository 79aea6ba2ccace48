package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// DefaultPlanEval is the closed-loop evaluation `gradcscg plan` runs with no flags:
// plan.DefaultEvalConfig (200 pairs, seed 1, localise and demonstrate 20 steps, both
// modes) with the BFS planner at plan.DefaultThreshold, plan.DefaultMinProb for the
// max-product planner, hard emissions and the stationary prior.
func DefaultPlanEval() plan.EvalConfig {
	cfg := plan.DefaultEvalConfig()
	cfg.Plan.Method, cfg.Plan.Threshold, cfg.Plan.MinProb = plan.BFS, plan.DefaultThreshold, plan.DefaultMinProb
	cfg.Filter.Prior = plan.PriorStationary
	return cfg
}

// PlanRun plans with the map of the finished pixel run in dir under cfg and preset:
// the emissions are hard tokens (soft with a Soft preset) and the noise model is
// DefaultNoise's unless the preset names one. Progress goes to progressOut (nil: none).
func PlanRun(dir string, cfg plan.EvalConfig, preset PlanPreset, progressOut io.Writer) (*PlanReport, *PlanSetup, error) {
	res, err := pipeline.LoadRun(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if note := res.BackendNote(); note != "" {
		logf(progressOut, "%s\n", note)
	}
	emissions := "hard"
	if cfg.Filter.Soft || preset.Soft {
		emissions = "soft"
	}
	setup, err := RunPlanSetup(res, dir, emissions, progressOut)
	if err != nil {
		return nil, nil, err
	}
	noise := preset.Apply(&cfg, DefaultNoise(setup, cfg.Filter.Soft))
	rep, err := Plan(setup, cfg, noise, progressOut)
	return rep, setup, err
}

// WritePlanReport writes the report, with every trial, as indented JSON.
func WritePlanReport(path string, rep *PlanReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}

// ReadPlanReport reads a report written by WritePlanReport.
func ReadPlanReport(path string) (*PlanReport, error) {
	b, err := inputfile.ReadFile(path, jsonLimit)
	if err != nil {
		return nil, err
	}
	var rep PlanReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Report == nil || len(rep.Modes) == 0 {
		return nil, fmt.Errorf("%s: not a planning report (no modes)", path)
	}
	return &rep, nil
}

// Flags are the flags of `gradcscg plan` that make p's changes (for tables and
// captions).
func (p PlanPreset) Flags() string {
	var f []string
	if p.Noise != "" {
		f = append(f, "--noise", p.Noise)
	}
	if p.Soft {
		f = append(f, "--obs", "soft")
	}
	if p.ArriveMass > 0 {
		f = append(f, "--arrive-mass", strings.Replace(strconv.FormatFloat(p.ArriveMass, 'g', -1, 64), "e-0", "e-", 1)) // 1e-9
	}
	return strings.Join(f, " ")
}

// planArchs are the VQ-VAE architectures the planning table covers, in row order.
var planArchs = []string{"conv", "mlp"}

// PlanSuite is closed-loop planning with the maps of the image suites: Envs × Archs ×
// seeds 1..Seeds, each finished run Runs/RunName planned as PlanRun does with
// DefaultPlanEval's Pairs pairs and Preset. Reports go to Out/plan/<name>.json
// (Out/plan/<preset>/ for a preset other than the default) and the table to
// Out/[<dataset>_]plan[_<preset>].md.
type PlanSuite struct {
	Envs     []string   // nil: ImageBenchmarks
	Dataset  string     // "mnist" (""), or "fashion"
	Archs    []string   // "conv", "mlp" (nil: conv)
	Seeds    int        // seeds 1..Seeds; at least 1
	Pairs    int        // start/goal pairs per run (0: 200)
	Preset   PlanPreset // a change to the defaults (zero value: the default preset)
	Runs     string     // run directories ("": runs)
	Out      string     // results root ("": results)
	Collect  bool       // plan nothing: tabulate the reports that exist
	Force    bool       // re-plan runs whose report exists
	Progress io.Writer  // each run's live progress (nil: none)
}

// reportDir is where the preset's reports live, relative to the results root.
func (p PlanPreset) reportDir() string {
	if p.Name == "default" {
		return "plan"
	}
	return "plan/" + p.Name
}

// RunPlanSuite plans with every finished run (runs that do not exist are skipped) and
// writes the table, which covers every report of the four benchmarks (and Envs), both
// architectures and seeds 1..Seeds, so a run of a subset does not drop the other rows.
// It returns the table's markdown and path; one line per run goes to log (nil: none).
func RunPlanSuite(s PlanSuite, log io.Writer) (table, path string, err error) {
	if len(s.Envs) == 0 {
		s.Envs = ImageBenchmarks
	}
	if s.Dataset == "" {
		s.Dataset = "mnist"
	}
	if len(s.Archs) == 0 {
		s.Archs = []string{"conv"}
	}
	if s.Pairs == 0 {
		s.Pairs = DefaultPlanEval().Pairs
	}
	if s.Preset.Name == "" {
		s.Preset = PlanPresets[0]
	}
	if s.Runs == "" {
		s.Runs = "runs"
	}
	if s.Out == "" {
		s.Out = "results"
	}
	switch {
	case s.Dataset != "mnist" && s.Dataset != "fashion":
		return "", "", &FieldError{"Dataset", fmt.Sprintf("%q", s.Dataset), "must be mnist or fashion"}
	case s.Seeds < 1:
		return "", "", &FieldError{"Seeds", s.Seeds, "need at least 1"}
	case s.Pairs < 1:
		return "", "", &FieldError{"Pairs", s.Pairs, "need at least 1"}
	}
	for _, a := range s.Archs {
		if !slices.Contains(planArchs, a) {
			return "", "", &FieldError{"Archs", fmt.Sprintf("%q", a), "must be conv or mlp"}
		}
	}
	if _, err := LookupPlanPreset(s.Preset.Name); err != nil {
		return "", "", err
	}
	dir := filepath.Join(s.Out, s.Preset.reportDir())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	name := func(env, arch string, seed int) (string, error) {
		cfg, err := ImageRun(env, s.Dataset, arch, seed)
		return RunName(cfg), err
	}
	if !s.Collect {
		t0 := time.Now()
		total, done := len(s.Envs)*len(s.Archs)*s.Seeds, 0
		for _, env := range s.Envs {
			for _, arch := range s.Archs {
				for seed := 1; seed <= s.Seeds; seed++ {
					done++
					n, err := name(env, arch, seed)
					if err != nil {
						return "", "", err
					}
					jsonPath := filepath.Join(dir, n+".json")
					if !s.Force {
						_, err := ReadPlanReport(jsonPath)
						if err == nil {
							continue // tabulated below
						}
						if !errors.Is(err, fs.ErrNotExist) {
							logf(log, "re-planning %s: %v\n", jsonPath, err)
						}
					}
					runDir := filepath.Join(s.Runs, n)
					if _, err := os.Stat(filepath.Join(runDir, pipeline.ReportFile)); err != nil {
						logf(log, "[%d/%d] %s: skipped, no finished run in %s\n", done, total, n, runDir)
						continue
					}
					cfg := DefaultPlanEval()
					cfg.Pairs = s.Pairs
					rep, _, err := PlanRun(runDir, cfg, s.Preset, s.Progress)
					if err != nil {
						return "", "", fmt.Errorf("%s: %w", n, err)
					}
					if err := WritePlanReport(jsonPath, rep); err != nil {
						return "", "", err
					}
					var modes []string
					for _, m := range rep.Modes {
						modes = append(modes, fmt.Sprintf("%s success %.3f path ratio %.3f", m.Mode, m.SuccessRate, m.PathRatioMean))
					}
					logf(log, "[%d/%d] %-24s %s  %.0fs  (elapsed %s)\n", done, total, n,
						strings.Join(modes, ", "), rep.Seconds, time.Since(t0).Round(time.Second))
				}
			}
		}
	}
	order := slices.Clone(ImageBenchmarks)
	for _, env := range s.Envs {
		if !slices.Contains(order, env) {
			order = append(order, env)
		}
	}
	groups := map[string][]*PlanReport{} // keyed env/arch
	for _, env := range order {
		for _, arch := range planArchs {
			for seed := 1; seed <= s.Seeds; seed++ {
				n, err := name(env, arch, seed)
				if err != nil {
					return "", "", err
				}
				rep, err := ReadPlanReport(filepath.Join(dir, n+".json"))
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return "", "", err
				}
				if rep.Env != env {
					return "", "", fmt.Errorf("%s: a report of environment %q", filepath.Join(dir, n+".json"), rep.Env)
				}
				groups[env+"/"+arch] = append(groups[env+"/"+arch], rep)
			}
		}
	}
	table = planTable(order, s.Dataset, s.Preset, groups)
	base := "plan"
	if s.Preset.Name != "default" {
		base += "_" + s.Preset.Name
	}
	if s.Dataset != "mnist" {
		base = s.Dataset + "_" + base
	}
	path = filepath.Join(s.Out, base+".md")
	if err := atomicfile.WriteFile(path, []byte(table)); err != nil {
		return "", "", err
	}
	return table, path, nil
}

// hasOracle reports whether a mode's trials carry the oracle goal (reports
// written before it existed do not).
func hasOracle(m plan.ModeResult) bool {
	for _, t := range m.Trials {
		if t.OracleMass > 0 {
			return true
		}
	}
	return false
}

// planTable renders the planning reports: one row per env, arch and mode with
// mean ± s.d. over seeds of the per-run success rate and mean path ratio, and the
// mean unreachable and ambiguous pairs per run.
func planTable(envs []string, dataset string, preset PlanPreset, groups map[string][]*PlanReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Closed-loop planning with maps learned from %s pixels (mean ± s.d. over seeds)\n\n", dataset)
	cmd := "gradcscg reproduce --suite plan --arch all"
	if dataset != "mnist" {
		cmd += " --dataset " + dataset
	}
	perRun := ""
	if preset.Name != "default" {
		cmd += " --variant " + preset.Name
		perRun = " " + preset.Flags()
		fmt.Fprintf(&b, "Variant %s: planning with `%s` instead of the defaults.\n\n", preset.Name, preset.Flags())
	}
	var pairs []int // per run, over all reports
	for _, rs := range groups {
		for _, r := range rs {
			if !slices.Contains(pairs, r.Config.Pairs) {
				pairs = append(pairs, r.Config.Pairs)
			}
		}
	}
	np := ""
	if len(pairs) == 1 {
		np = fmt.Sprintf(" %d", pairs[0])
	}
	fmt.Fprintf(&b, "Generated by `%s` (per run: `gradcscg plan --run runs/<env>_%s_seed<N>[_mlp]%s`, reports in %s/): "+
		"*success* is the fraction of the%s random start/goal pairs whose executed plan reached the goal in the true room, "+
		"*path ratio* the executed steps / true shortest path over the successes (mean ± s.d. of the per-run means), "+
		"*unreachable* and *ambiguous* the pairs per run (mean) whose first plan found no path and whose demonstrated goal "+
		"was ambiguous, *oracle misses* the pairs per run (mean) whose demonstration points even a filter that knows the true room "+
		"and the images' token frequencies at another place (– in reports without it); the issue's bar is success ≥ 0.95 and path ratio ≤ 1.1.\n\n", cmd, dataset, perRun, preset.reportDir(), np)
	b.WriteString("| env | arch | mode | seeds | success | path ratio | unreachable | ambiguous | oracle misses |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, env := range envs {
		for _, arch := range planArchs {
			rs := groups[env+"/"+arch]
			if len(rs) == 0 {
				continue
			}
			var modes []string // in the order of the first report
			for _, r := range rs {
				for _, m := range r.Modes {
					if !slices.Contains(modes, string(m.Mode)) {
						modes = append(modes, string(m.Mode))
					}
				}
			}
			for _, mode := range modes {
				var success, ratio, unreachable, ambiguous, misses []float64
				for _, r := range rs {
					for _, m := range r.Modes {
						if string(m.Mode) != mode {
							continue
						}
						success = append(success, m.SuccessRate)
						if m.Successes > 0 { // no path ratio without a success
							ratio = append(ratio, m.PathRatioMean)
						}
						unreachable = append(unreachable, float64(m.Unreachable))
						ambiguous = append(ambiguous, float64(m.Ambiguous))
						if hasOracle(m) {
							misses = append(misses, float64(m.OracleMisses))
						}
					}
				}
				pr := "–"
				if len(ratio) > 0 {
					pr = evaluate.MeanSD(ratio).Format(3)
				}
				om := "–"
				if len(misses) == len(success) {
					om = fmt.Sprintf("%.1f", evaluate.MeanSD(misses).Mean)
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %.1f | %.1f | %s |\n", env, arch, mode, len(success),
					evaluate.MeanSD(success).Format(3), pr, evaluate.MeanSD(unreachable).Mean, evaluate.MeanSD(ambiguous).Mean, om)
			}
		}
	}
	return b.String()
}
