package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// StressConfig is one configuration of the stress suite: architecture, data set and
// the number of seeds (1..Seeds) it runs on every image benchmark.
type StressConfig struct {
	Arch, Dataset string
	Seeds         int
}

// StressConfigs is the stress suite: the four image benchmarks with the default
// configuration, conv and MLP on MNIST over seeds 1–5 and conv on Fashion-MNIST over
// seeds 1–3. Its conv MNIST runs of seeds 1–3 are Table 3's.
var StressConfigs = []StressConfig{
	{"conv", "mnist", 5},
	{"mlp", "mnist", 5},
	{"conv", "fashion", 3},
}

// StressSuite is the joint phase on every image benchmark over many seeds: does any
// run diverge, fail or need the collapse response? Each run lives in Runs/RunName, its
// report is copied to Out/stress/<name>.json (a run that ends in an error leaves
// <name>.failed with the error, a result the table counts) and the table is
// Out/stress.md.
type StressSuite struct {
	Envs     []string  // nil: ImageBenchmarks
	Seeds    int       // > 0: caps every configuration's seeds
	Runs     string    // run directories ("": runs)
	Out      string    // results root ("": results)
	Collect  bool      // train nothing: tabulate reports, failures and finished run directories
	Force    bool      // retry runs whose report or failure exists
	Progress io.Writer // each run's live progress (nil: none)
}

// stressRun is one run of the stress suite: its report, or the error that ended it.
type stressRun struct {
	name string
	rep  *evaluate.Report
	err  string
}

// RunStressSuite runs (or loads) every run, seed by seed so that an interrupted suite
// has covered every configuration, and writes the table: per configuration, failed
// runs, runs with a non-finite step, interventions, map recall and F1. It returns the
// table's markdown and path, and an error counting the failed runs if any failed. One
// line per run goes to log (nil: none); a cancelled ctx returns ErrInterrupted.
func RunStressSuite(ctx context.Context, s StressSuite, log io.Writer) (table, path string, err error) {
	envs := s.Envs
	if len(envs) == 0 {
		envs = ImageBenchmarks
	}
	for _, e := range envs {
		if _, err := pipeline.DefaultConfig(e); err != nil {
			return "", "", err
		}
	}
	runs, out := s.Runs, s.Out
	if runs == "" {
		runs = "runs"
	}
	if out == "" {
		out = "results"
	}
	dir := filepath.Join(out, "stress")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	cfgs := StressConfigs
	if s.Seeds > 0 {
		cfgs = nil
		for _, c := range StressConfigs {
			c.Seeds = min(c.Seeds, s.Seeds)
			cfgs = append(cfgs, c)
		}
	}
	maxSeeds, total := 0, 0
	for _, c := range cfgs {
		maxSeeds = max(maxSeeds, c.Seeds)
		total += c.Seeds * len(envs)
	}
	results := map[string][]stressRun{} // by stressKey
	t0 := time.Now()
	done, failed := 0, 0
	for seed := 1; seed <= maxSeeds; seed++ {
		for _, c := range cfgs {
			if seed > c.Seeds {
				continue
			}
			for _, env := range envs {
				cfg, err := ImageRun(env, c.Dataset, c.Arch, seed)
				if err != nil {
					return "", "", err
				}
				name := RunName(cfg)
				sr, err := s.one(ctx, cfg, name, filepath.Join(runs, name), dir, log)
				if err != nil {
					return "", "", err
				}
				if sr == nil { // Collect, and not run yet
					continue
				}
				key := stressKey(c, env)
				results[key] = append(results[key], *sr)
				done++
				if sr.err != "" {
					failed++
					logf(log, "[%d/%d] %s FAILED: %s (elapsed %s)\n", done, total, name, sr.err, time.Since(t0).Round(time.Second))
					continue
				}
				r := sr.rep
				guard := "guard not recorded"
				if g := r.JointGuard(); g != nil {
					guard = fmt.Sprintf("interventions %d  skipped %d", len(g.Interventions), g.SkippedSteps)
				}
				logf(log, "[%d/%d] %-28s recall %.2f F1 %.3f  %s  %.0fs  (elapsed %s)\n",
					done, total, name, r.ViterbiMap.Recall, r.ViterbiMap.F1, guard, r.Seconds["total"], time.Since(t0).Round(time.Second))
			}
		}
	}
	table = stressTable(cfgs, envs, results, total)
	path = filepath.Join(out, "stress.md")
	if err := atomicfile.WriteFile(path, []byte(table)); err != nil {
		return "", "", err
	}
	if failed > 0 {
		return table, path, fmt.Errorf("%d of %d runs failed (listed under the table)", failed, done)
	}
	return table, path, nil
}

func stressKey(c StressConfig, env string) string { return c.Arch + "/" + c.Dataset + "/" + env }

// one loads or trains one run. A run that ends in an error (anything but an
// interrupt) is a result: its error is written to <dir>/<name>.failed. With Collect
// nothing is trained: a finished run directory's report is taken, and it returns nil
// for a run with neither report, failure nor finished directory.
func (s StressSuite) one(ctx context.Context, cfg pipeline.Config, name, runDir, dir string, log io.Writer) (*stressRun, error) {
	jsonPath, failPath := filepath.Join(dir, name+".json"), filepath.Join(dir, name+".failed")
	if !s.Force {
		r, err := evaluate.ReadJSON(jsonPath)
		switch {
		case err == nil:
			return &stressRun{name: name, rep: r}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		if b, err := inputfile.ReadFile(failPath, jsonLimit); err == nil {
			return &stressRun{name: name, err: strings.TrimSpace(string(b))}, nil
		}
	}
	if s.Collect { // a finished run directory counts; nothing is trained
		res, err := pipeline.LoadRun(runDir)
		if err != nil {
			return nil, nil
		}
		if err := res.Report.WriteJSON(jsonPath); err != nil {
			return nil, err
		}
		return &stressRun{name: name, rep: res.Report}, nil
	}
	logf(log, "%s\n", name)
	rep, err := pipeline.Run(ctx, runDir, cfg, s.Progress)
	if errors.Is(err, context.Canceled) {
		return nil, ErrInterrupted
	}
	if err != nil {
		msg := err.Error()
		if werr := atomicfile.WriteFile(failPath, []byte(msg+"\n")); werr != nil {
			return nil, werr
		}
		return &stressRun{name: name, err: msg}, nil
	}
	if err := rep.WriteJSON(jsonPath); err != nil {
		return nil, err
	}
	os.Remove(failPath) // a retried run (Force) that now succeeds
	return &stressRun{name: name, rep: rep}, nil
}

// stressTable renders the stress suite: one row per configuration and environment.
func stressTable(cfgs []StressConfig, envs []string, results map[string][]stressRun, total int) string {
	var b strings.Builder
	b.WriteString("# Stress suite: the joint phase on every image benchmark, many seeds\n\n")
	b.WriteString("Generated by `gradcscg reproduce --suite stress` (`make reproduce-stress`). Default configuration of each run " +
		"(full size, unsupervised, joint training). *Failed*: runs that ended in an error (no map). *Non-finite*: runs in " +
		"which at least one joint step was not applied because it produced a non-finite value. *Interventions*: " +
		"anti-collapse rollbacks over all runs of the row (most in one run). Recall and F1 of the Viterbi-path map on the " +
		"held-out episode, mean ± s.d. and minimum over the runs that finished.\n\n")
	b.WriteString("| arch | dataset | env | runs | failed | non-finite | interventions | map recall | map F1 | min F1 | H(token\\|place) | minutes/run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var all, fails, nonfinite, interventions, unrecorded int
	var failures []string
	for _, c := range cfgs {
		for _, env := range envs {
			rs := results[stressKey(c, env)]
			if len(rs) == 0 {
				continue
			}
			var ok []*evaluate.Report
			nf, iv, ivMax, fl, unknown := 0, 0, 0, 0, 0
			for _, r := range rs {
				if r.err != "" {
					fl++
					failures = append(failures, r.name+": "+r.err)
					if strings.Contains(r.err, "non-finite") {
						nf++
					}
					continue
				}
				ok = append(ok, r.rep)
				g := r.rep.JointGuard()
				if g == nil { // a report from before interventions were recorded
					unknown++
					continue
				}
				iv += len(g.Interventions)
				ivMax = max(ivMax, len(g.Interventions))
				if g.SkippedSteps > 0 {
					nf++
				}
			}
			all += len(rs)
			fails += fl
			nonfinite += nf
			interventions += iv
			ivs := fmt.Sprintf("%d (max %d)", iv, ivMax)
			if unknown > 0 {
				ivs += fmt.Sprintf(", %d run(s) without a record", unknown)
				unrecorded += unknown
			}
			row := fmt.Sprintf("| %s | %s | %s | %d | %d | %d | %s |", c.Arch, c.Dataset, env, len(rs), fl, nf, ivs)
			if len(ok) == 0 {
				b.WriteString(row + " – | – | – | – | – |\n")
				continue
			}
			s := evaluate.Aggregate(ok)
			minF1 := math.Inf(1)
			for _, r := range ok {
				minF1 = math.Min(minF1, r.ViterbiMap.F1)
			}
			mins := s.Get("seconds.total")
			fmt.Fprintf(&b, "%s %s | %s | %.3f | %s | %.1f ± %.1f |\n", row, s.Format("viterbi_map.recall", 2),
				s.Format("viterbi_map.f1", 3), minF1, s.Format("h_token_given_place", 3), mins.Mean/60, mins.SD/60)
		}
	}
	fmt.Fprintf(&b, "\n%d of %d runs done: %d failed, %d with a non-finite step, %d interventions in all", all, total, fails, nonfinite, interventions)
	if unrecorded > 0 {
		fmt.Fprintf(&b, " (%d report(s) predate the record of interventions and non-finite steps)", unrecorded)
	}
	b.WriteString(".\n")
	if len(failures) > 0 {
		b.WriteString("\nRuns that failed:\n\n- " + strings.Join(failures, "\n- ") + "\n")
	}
	return b.String()
}
