package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// planArchs are the VQ-VAE architectures the planning table covers, in row order.
var planArchs = []string{"conv", "mlp"}

// presetFlags are the flags of "gradcscg plan" that make preset p's changes (for the
// tables; TestPresetFlags checks they plan the same).
func presetFlags(p experiment.PlanPreset) string {
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

// reproducePlan scores closed-loop planning with the maps of the images suite: for
// every env × seed × arch it reads <out>/plan/<name>.json or, unless collect, plans
// with the finished run directory <runs>/<name> exactly as "gradcscg plan --run
// <runs>/<name> --pairs <pairs>" does (with the preset's changes) and writes that
// report; runs that do not exist are skipped. It then writes <out>/plan.md (mean ± s.d. over seeds, one row per env,
// arch and mode). Like the symbolic suite, the table covers every report in
// <out>/plan of the four benchmarks (and envs), both architectures and seeds
// 1..seeds, so a run of a subset does not drop the other rows. A preset other than
// the default keeps its reports in <out>/plan/<preset> and its table in
// <out>/plan_<preset>.md.
func reproducePlan(envs []string, dataset string, archs []string, seeds, pairs int, runs, out string, preset experiment.PlanPreset, collect, force, quiet bool) error {
	dir := filepath.Join(out, reportDir(preset))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := func(env, arch string, seed int) (string, error) {
		cfg, err := pipeline.DefaultConfig(env)
		if err != nil {
			return "", err
		}
		cfg.Dataset, cfg.Seed = dataset, uint64(seed)
		cfg = cfg.WithArch(arch)
		return runName(cfg), nil
	}
	if !collect {
		t0 := time.Now()
		total, done := len(envs)*len(archs)*seeds, 0
		for _, env := range envs {
			for _, arch := range archs {
				for seed := 1; seed <= seeds; seed++ {
					done++
					n, err := name(env, arch, seed)
					if err != nil {
						return err
					}
					jsonPath := filepath.Join(dir, n+".json")
					if !force {
						_, err := readPlanJSON(jsonPath)
						if err == nil {
							continue // tabulated below
						}
						if !errors.Is(err, fs.ErrNotExist) {
							fmt.Fprintf(stderr, "re-planning %s: %v\n", jsonPath, err)
						}
					}
					runDir := filepath.Join(runs, n)
					if _, err := os.Stat(filepath.Join(runDir, pipeline.ReportFile)); err != nil {
						fmt.Fprintf(stderr, "[%d/%d] %s: skipped, no finished run in %s\n", done, total, n, runDir)
						continue
					}
					o := defaultPlanOptions()
					o.run, o.pairs, o.quiet, o.preset = runDir, pairs, quiet, preset
					rep, err := planRun(&o)
					if err != nil {
						return fmt.Errorf("%s: %w", n, err)
					}
					if err := writePlanJSON(jsonPath, rep); err != nil {
						return err
					}
					var modes []string
					for _, m := range rep.Modes {
						modes = append(modes, fmt.Sprintf("%s success %.3f path ratio %.3f", m.Mode, m.SuccessRate, m.PathRatioMean))
					}
					fmt.Fprintf(stderr, "[%d/%d] %-24s %s  %.0fs  (elapsed %s)\n", done, total, n,
						strings.Join(modes, ", "), rep.Seconds, time.Since(t0).Round(time.Second))
				}
			}
		}
	}
	order := slices.Clone(imageBenchmarks)
	for _, env := range envs {
		if !slices.Contains(order, env) {
			order = append(order, env)
		}
	}
	groups := map[string][]*planReport{} // keyed env/arch
	for _, env := range order {
		for _, arch := range planArchs {
			for seed := 1; seed <= seeds; seed++ {
				n, err := name(env, arch, seed)
				if err != nil {
					return err
				}
				rep, err := readPlanJSON(filepath.Join(dir, n+".json"))
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				if rep.Env != env {
					return fmt.Errorf("%s: a report of environment %q", filepath.Join(dir, n+".json"), rep.Env)
				}
				groups[env+"/"+arch] = append(groups[env+"/"+arch], rep)
			}
		}
	}
	md := planTable(order, dataset, preset, groups)
	base := "plan"
	if preset.Name != "default" {
		base += "_" + preset.Name
	}
	path := filepath.Join(out, base+".md")
	if dataset != "mnist" {
		path = filepath.Join(out, dataset+"_"+base+".md")
	}
	if err := writeFileAtomic(path, []byte(md)); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stderr, "table written to %s\n", path)
	return nil
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

// reportDir is where the preset's reports live, relative to the output directory.
func reportDir(p experiment.PlanPreset) string {
	if p.Name == "default" {
		return "plan"
	}
	return "plan/" + p.Name
}

// planTable renders the planning reports: one row per env, arch and mode with
// mean ± s.d. over seeds of the per-run success rate and mean path ratio, and the
// mean unreachable and ambiguous pairs per run.
func planTable(envs []string, dataset string, preset experiment.PlanPreset, groups map[string][]*planReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Closed-loop planning with maps learned from %s pixels (mean ± s.d. over seeds)\n\n", dataset)
	cmd := "gradcscg reproduce --suite plan --arch all"
	if dataset != "mnist" {
		cmd += " --dataset " + dataset
	}
	perRun := ""
	if preset.Name != "default" {
		cmd += " --variant " + preset.Name
		perRun = " " + presetFlags(preset)
		fmt.Fprintf(&b, "Variant %s: planning with `%s` instead of the defaults.\n\n", preset.Name, presetFlags(preset))
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
		"and the images' token frequencies at another place (– in reports without it); the issue's bar is success ≥ 0.95 and path ratio ≤ 1.1.\n\n", cmd, dataset, perRun, reportDir(preset), np)
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
