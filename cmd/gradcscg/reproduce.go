package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
)

func init() {
	register("reproduce", "run a suite of seeds × environments × trainers and write result tables", runReproduce)
}

// suites lists the environments of each reproducible suite.
var suites = map[string][]string{
	// Paper Section 5.1 / issue 2: the four benchmarks and the three Figure 3 demonstrations.
	"symbolic": {"aliased", "corridors", "room", "two_rooms", "square", "uniform_interior", "three_rooms"},
	// The original CSCG's Figure 2 cases (George et al. 2021).
	"cscg": {"cscg_rectangular", "cscg_empty", "cscg_stitched", "cscg_maze5", "cscg_cliques"},
	// Issue 18's bigger worlds: 100 to 365 places, 16 to 64 places per class.
	"bigger": {"big_room", "tiled", "four_rooms"},
}

func runReproduce(args []string) error {
	fset := newFlagSet("reproduce", "[--suite symbolic|cscg|bigger|images|ablation|plan|stress] [--seeds 3] [--out results] [--force]")
	suite := fset.String("suite", "symbolic", "which suite: symbolic (7 environments), cscg (the original CSCG demos), bigger (big_room, tiled, four_rooms: 100-365 places), images (the 4 image benchmarks from pixels: Tables 3, 4), ablation (joint-phase variants on aliased and two_rooms), plan (closed-loop planning with the images suite's maps: plan.md) or stress (the 4 image benchmarks, conv and mlp on MNIST seeds 1-5, conv on Fashion-MNIST seeds 1-3: stress.md)")
	dataset := fset.String("dataset", "mnist", "images and plan suites: mnist or fashion")
	arch := fset.String("arch", "conv", "images and plan suites: VQ-VAE architecture, conv (the reference) or mlp (fast); plan suite also all (both)")
	runs := fset.String("runs", "runs", "images and plan suites: where the run directories live")
	pairs := fset.Int("pairs", 200, "plan suite: random (start, goal) pairs per run")
	variantFlag := fset.String("variant", "default", "plan suite: default, or a way of planning to compare: uniform-noise (--noise auto), soft (--obs soft), no-look (MPC stops on any majority), previous (both of uniform-noise and no-look)")
	seeds := fset.Int("seeds", 3, "seeds 1..n per environment and trainer (stress suite: caps each configuration's seeds, which are 5 or 3 unless given)")
	trainers := fset.String("trainers", "gradient,em", "comma-separated trainers")
	envsFlag := fset.String("envs", "", "comma-separated subset of the suite's environments")
	out := fset.String("out", "results", "output directory: one JSON report per run and <suite>.md")
	force := fset.Bool("force", false, "re-run runs whose report already exists")
	quiet := fset.Bool("quiet", false, "no per-run progress output")
	collect := fset.Bool("collect", false, "train nothing: tabulate the reports that exist")
	restarts := fset.Int("restarts", 3, "symbolic suites, EM: initialisations tried per run (the best training likelihood is kept)")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: need at least 1", *seeds)
	}
	if *suite == "images" || *suite == "ablation" || *suite == "plan" || *suite == "stress" {
		envs := imageBenchmarks
		if *envsFlag != "" {
			envs = strings.Split(*envsFlag, ",")
		}
		if *suite == "stress" {
			capSeeds := 0
			fset.Visit(func(f *flag.Flag) {
				if f.Name == "seeds" {
					capSeeds = *seeds
				}
			})
			return reproduceStress(envs, capSeeds, *runs, *out, *collect, *force, *quiet)
		}
		if *dataset != "mnist" && *dataset != "fashion" {
			return fmt.Errorf("--dataset %q: must be mnist or fashion", *dataset)
		}
		if *suite == "plan" {
			archs := []string{*arch}
			switch *arch {
			case "conv", "mlp":
			case "all":
				archs = []string{"conv", "mlp"}
			default:
				return fmt.Errorf("--arch %q: must be conv, mlp or all", *arch)
			}
			if *pairs < 1 {
				return fmt.Errorf("--pairs %d: need at least 1", *pairs)
			}
			preset, err := experiment.LookupPlanPreset(*variantFlag)
			if err != nil {
				return flagNamed(err, map[string]string{"preset": "--variant"})
			}
			return reproducePlan(envs, *dataset, archs, *seeds, *pairs, *runs, *out, preset, *collect, *force, *quiet)
		}
		if *arch != "conv" && *arch != "mlp" {
			return fmt.Errorf("--arch %q: must be conv or mlp", *arch)
		}
		if *suite == "ablation" {
			if *envsFlag == "" {
				envs = []string{"aliased", "two_rooms"}
			}
			return reproduceAblation(envs, *dataset, *arch, *seeds, *runs, *out, *collect, *quiet)
		}
		return reproduceImages(envs, *dataset, *arch, *seeds, *runs, *out, *collect, *quiet)
	}
	envs, ok := suites[*suite]
	if !ok {
		return fmt.Errorf("--suite %q: must be symbolic, cscg, bigger, images, ablation, plan or stress", *suite)
	}
	if *envsFlag != "" {
		envs = strings.Split(*envsFlag, ",")
	}
	trs := strings.Split(*trainers, ",")
	for _, tr := range trs {
		if tr != "gradient" && tr != "em" {
			return fmt.Errorf("--trainers: %q must be gradient or em", tr)
		}
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: need at least 1", *seeds)
	}
	dir := filepath.Join(*out, *suite)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	total := len(envs) * len(trs) * *seeds
	groups := map[string][]*evaluate.Report{}
	var order []string
	done := 0
	t0 := time.Now()
	for _, env := range envs {
		for _, tr := range trs {
			key := env + "/" + tr
			order = append(order, key)
			for seed := 1; seed <= *seeds; seed++ {
				path := filepath.Join(dir, fmt.Sprintf("%s_%s_seed%d.json", env, tr, seed))
				var rep *evaluate.Report
				if !*force {
					r, err := evaluate.ReadJSON(path)
					switch {
					case err == nil:
						rep = r
					case errors.Is(err, fs.ErrNotExist):
					default:
						fmt.Fprintf(stderr, "re-running %s: %v\n", path, err)
					}
				}
				if rep == nil && *collect {
					continue
				}
				if rep == nil {
					rs := *restarts // EM's; the gradient rows train one start
					if tr != "em" {
						rs = 1
					}
					r, err := symbolicRun(symbolicOptions{env: env, trainer: tr, seed: uint64(seed), pseudocount: -1, restarts: rs, quiet: *quiet})
					if err != nil {
						return fmt.Errorf("%s seed %d: %w", key, seed, err)
					}
					if err := r.WriteJSON(path); err != nil {
						return err
					}
					rep = r
				}
				done++
				if *collect {
					groups[key] = append(groups[key], rep)
					continue
				}
				el := time.Since(t0)
				fmt.Fprintf(stderr, "[%d/%d] %-16s %-8s seed %d  F1 %.3f  purity %.3f  action %.3f  %.1fs  (elapsed %s)\n",
					done, total, env, tr, seed, rep.ViterbiMap.F1, rep.StatePlacePurity, rep.ActionAccuracy,
					rep.Seconds["total"], el.Round(time.Second))
				groups[key] = append(groups[key], rep)
			}
		}
	}
	// The table covers the whole suite: a run of a subset (--envs, --trainers) adds its
	// rows to the reports already in dir instead of replacing the table with them.
	order, groups = suiteReports(dir, suites[*suite], *seeds, order, groups)
	md := symbolicTable(*suite, order, groups)
	path := filepath.Join(*out, *suite+".md")
	if err := writeFileAtomic(path, []byte(md)); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stderr, "table written to %s\n", path)
	return nil
}

// suiteReports adds to groups (keyed env/trainer, in order) the reports of seeds 1..seeds
// that exist in dir for every environment of the suite and both trainers, and returns the
// combined row order: the suite's environments first, then any others already in order.
func suiteReports(dir string, envs []string, seeds int, order []string, groups map[string][]*evaluate.Report) ([]string, map[string][]*evaluate.Report) {
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
				r, err := evaluate.ReadJSON(filepath.Join(dir, fmt.Sprintf("%s_%s_seed%d.json", env, tr, seed)))
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
func symbolicTable(suite string, order []string, groups map[string][]*evaluate.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Suite %q: held-out symbolic evaluation (mean ± s.d. over seeds)\n\n", suite)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite %s`. Viterbi-path map at cutoff f = 0.002; purity is visit-weighted state→place purity.\n\n", suite)
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
		if verdict {
			vc = " " + resolvedCount(rs) + " |"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s |%s %s |\n", env, tr, len(rs), rs[0].NumStates,
			col("viterbi_map.recall", 2), col("viterbi_map.f1", 3), col("state_place_purity", 3),
			col("clone_purity", 3), col("action_accuracy", 3), vc, col("seconds.total", 1))
	}
	return b.String()
}
