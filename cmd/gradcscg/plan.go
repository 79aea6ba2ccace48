package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

func init() {
	register("plan", "plan with a learned map: localise, reach demonstrated goals in the true environment, score", runPlan)
}

// planOptions are the flags of "gradcscg plan".
type planOptions struct {
	run, model, env, layout string
	pairs                   int
	mode                    string
	seed                    uint64
	jsonPath                string
	localize, demo          int
	planner                 string
	threshold, minProb      float64
	obs, prior              string
	noise, goalMass         float64
	arriveMass              float64
	noiseModel              string // --noise: "rate" (ε = noise), "auto", "learn", "map"; "" not given
	figure                  string
	quiet                   bool
}

// planReport is the JSON written by --json: the closed-loop report and where the map
// came from (experiment.PlanReport).
type planReport = experiment.PlanReport

// defaultPlanOptions returns the defaults of the flags of "gradcscg plan":
// experiment.DefaultPlanEval's.
func defaultPlanOptions() planOptions {
	d := experiment.DefaultPlanEval()
	return planOptions{pairs: d.Pairs, mode: "both", seed: d.Seed, localize: d.LocalizeSteps, demo: d.DemoSteps, planner: "bfs",
		threshold: d.Plan.Threshold, minProb: d.Plan.MinProb, prior: "stationary", goalMass: d.GoalMass, arriveMass: d.ArriveMass}
}

func runPlan(args []string) error {
	o := defaultPlanOptions()
	if err := parseFlags(planFlags(&o), args); err != nil {
		return err
	}
	rep, err := planRun(&o)
	if err != nil {
		return err
	}
	writePlanTable(stdout, rep)
	if o.jsonPath != "" {
		if err := experiment.WritePlanReport(o.jsonPath, rep); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", o.jsonPath)
	}
	return nil
}

// planFlags returns the flag set of "gradcscg plan", which writes into o.
func planFlags(o *planOptions) *flag.FlagSet {
	fs := newFlagSet("plan", "--run DIR | --model FILE (--env NAME | --layout FILE) [--pairs 200] [--mode open|mpc|both] [--seed 1] [--json out.json]")
	fs.StringVar(&o.run, "run", "", "finished pipeline run directory (image observations: held-out images through its frozen VQ-VAE)")
	fs.StringVar(&o.model, "model", "", "symbolic cloned-HMM model file (from 'gradcscg symbolic --save'); needs --env or --layout")
	fs.StringVar(&o.env, "env", "", "built-in environment of --model (see 'gradcscg envs')")
	fs.StringVar(&o.layout, "layout", "", "custom layout file of --model (overrides --env)")
	fs.IntVar(&o.pairs, "pairs", o.pairs, "random (start, goal) pairs")
	fs.StringVar(&o.mode, "mode", o.mode, "execution: open (whole plan blind), mpc (re-filter and re-plan every step) or both")
	fs.Uint64Var(&o.seed, "seed", o.seed, "random seed of the pairs, walks and observations")
	fs.StringVar(&o.jsonPath, "json", "", "write the report (with every trial) as JSON to this path")
	fs.IntVar(&o.localize, "localize", o.localize, "observations of the random walk that localises the agent before planning")
	fs.IntVar(&o.demo, "demo", o.demo, "observations of the demonstration walk that ends at (and defines) the goal place")
	fs.StringVar(&o.planner, "planner", o.planner, "bfs (shortest path over transitions > --threshold) or maxproduct (original CSCG)")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "bfs: smallest transition probability used as an edge")
	fs.Float64Var(&o.minProb, "min-prob", o.minProb, "maxproduct: smallest acceptable path probability")
	fs.StringVar(&o.obs, "obs", "", "emissions of the filter: hard (tokens, with misreading rate --noise) or soft (the encoder's log ρ; image runs only)")
	fs.Func("noise", "hard emissions' misreading: a rate in [0, 1), auto (fitted rate), learn (confusion fitted by EM) or map (an EM map's; default there, else learn)", func(v string) error {
		if v == "auto" || v == "learn" || v == "map" {
			o.noiseModel = v
			return nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("want a number, auto, learn or map")
		}
		o.noiseModel, o.noise = "rate", x
		return nil
	})
	fs.StringVar(&o.prior, "prior", o.prior, "belief before the first observation: stationary, uniform or pi")
	fs.Float64Var(&o.goalMass, "goal-mass", o.goalMass, "belief a demonstration must put on one model place for an unambiguous goal")
	fs.Float64Var(&o.arriveMass, "arrive-mass", o.arriveMass, "mpc: stop only when the belief holds this much on the goal place, else first tell the goal from its rival")
	fs.StringVar(&o.figure, "figure", "", fmt.Sprintf("draw the first %d trials of the last mode (beliefs, walk, goal) to this PNG; needs --run", planFigureTrials))
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	return fs
}

// planFigureTrials is how many trials --figure draws.
const planFigureTrials = 6

// planRun checks the options, loads the map and runs the closed-loop
// evaluation: everything "gradcscg plan" does but print and write it.
func planRun(o *planOptions) (*planReport, error) {
	cfg, err := o.evalConfig()
	if err != nil {
		return nil, err
	}
	setup, err := o.load()
	if err != nil {
		return nil, err
	}
	var out io.Writer = stderr
	if o.quiet {
		out = nil
	}
	noise := o.chooseNoise(setup, cfg.Filter.Soft)
	cfg.Trace = o.figure != ""
	if err := checkPlanSize(setup, cfg); err != nil {
		return nil, err
	}
	rep, err := experiment.Plan(setup, cfg, noise, out)
	if err != nil || o.figure == "" {
		return rep, err
	}
	last := rep.Modes[len(rep.Modes)-1]
	fig, err := figures.PlanTrials(setup.Env, last.Mode, setup.StatePlace, last.Trials[:min(planFigureTrials, len(last.Trials))]...)
	if err != nil {
		return nil, fmt.Errorf("--figure: %w", err)
	}
	if err := fig.Save(o.figure); err != nil {
		return nil, fmt.Errorf("--figure: %w", err)
	}
	fmt.Fprintf(stderr, "figure written to %s\n", o.figure)
	return rep, nil
}

// chooseNoise is the noise model of --noise, or the library's default for setup.
func (o *planOptions) chooseNoise(setup *experiment.PlanSetup, soft bool) string {
	switch o.noiseModel {
	case "auto", "learn", "map":
		return o.noiseModel
	case "rate":
		return experiment.NoiseRate
	}
	return experiment.DefaultNoise(setup, soft) // --noise not given
}

// evalConfig checks the flags and turns them into a plan.EvalConfig.
func (o *planOptions) evalConfig() (plan.EvalConfig, error) {
	cfg := plan.DefaultEvalConfig()
	switch {
	case (o.run == "") == (o.model == ""):
		return cfg, fmt.Errorf("give either --run DIR (image run) or --model FILE with --env NAME (symbolic)")
	case o.model != "" && o.env == "" && o.layout == "":
		return cfg, fmt.Errorf("--model needs --env NAME or --layout FILE")
	case o.run != "" && (o.env != "" || o.layout != ""):
		return cfg, fmt.Errorf("--env and --layout go with --model; a run directory names its environment")
	case o.pairs < 1:
		return cfg, fmt.Errorf("--pairs %d: need at least 1", o.pairs)
	case o.figure != "" && o.run == "":
		return cfg, fmt.Errorf("--figure needs --run DIR: it draws beliefs at the places the run's evaluation assigns to the map's states")
	case o.localize < 1 || o.demo < 1:
		return cfg, fmt.Errorf("--localize %d, --demo %d: walks need at least 1 observation", o.localize, o.demo)
	}
	if o.obs == "" {
		o.obs = "hard"
	}
	switch {
	case o.obs != "hard" && o.obs != "soft":
		return cfg, fmt.Errorf("--obs %q: must be hard or soft", o.obs)
	case o.obs == "soft" && o.model != "":
		return cfg, fmt.Errorf("--obs soft needs an image run (--run); symbols have no soft posterior")
	case o.obs == "soft" && (o.noise != 0 || o.noiseModel == "auto" || o.noiseModel == "learn" || o.noiseModel == "map"):
		return cfg, fmt.Errorf("--noise applies to hard emissions only")
	case !(o.threshold > 0 && o.threshold < 1):
		return cfg, fmt.Errorf("--threshold %v: must be in (0, 1)", o.threshold)
	case !(o.minProb > 0 && o.minProb <= 1):
		return cfg, fmt.Errorf("--min-prob %v: must be in (0, 1]", o.minProb)
	case !(o.noise >= 0 && o.noise < 1):
		return cfg, fmt.Errorf("--noise %v: must be in [0, 1)", o.noise)
	case !(o.goalMass > 0 && o.goalMass <= 1):
		return cfg, fmt.Errorf("--goal-mass %v: must be in (0, 1]", o.goalMass)
	case !(o.arriveMass > 0 && o.arriveMass <= 1):
		return cfg, fmt.Errorf("--arrive-mass %v: must be in (0, 1]", o.arriveMass)
	}
	switch o.mode {
	case "open":
		cfg.Modes = []plan.Mode{plan.OpenLoop}
	case "mpc":
		cfg.Modes = []plan.Mode{plan.MPC}
	case "both":
		cfg.Modes = []plan.Mode{plan.OpenLoop, plan.MPC}
	default:
		return cfg, fmt.Errorf("--mode %q: must be open, mpc or both", o.mode)
	}
	switch o.planner {
	case "bfs":
		cfg.Plan.Method = plan.BFS
	case "maxproduct":
		cfg.Plan.Method = plan.MaxProduct
	default:
		return cfg, fmt.Errorf("--planner %q: must be bfs or maxproduct", o.planner)
	}
	switch o.prior {
	case "stationary":
		cfg.Filter.Prior = plan.PriorStationary
	case "uniform":
		cfg.Filter.Prior = plan.PriorUniform
	case "pi":
		cfg.Filter.Prior = plan.PriorPi
	default:
		return cfg, fmt.Errorf("--prior %q: must be stationary, uniform or pi", o.prior)
	}
	cfg.Pairs, cfg.Seed, cfg.LocalizeSteps, cfg.DemoSteps = o.pairs, o.seed, o.localize, o.demo
	cfg.Plan.Threshold, cfg.Plan.MinProb = o.threshold, o.minProb
	cfg.Filter.Soft, cfg.Filter.Noise = o.obs == "soft", o.noise
	cfg.GoalMass, cfg.ArriveMass = o.goalMass, o.arriveMass
	return cfg, nil
}

// load reads the map, its environment and the agent's observer.
func (o *planOptions) load() (*experiment.PlanSetup, error) {
	if o.model != "" {
		env, err := loadEnv(o.env, o.layout)
		if err != nil {
			return nil, err
		}
		m, err := chmm.Load(o.model)
		if err != nil {
			return nil, err
		}
		return experiment.SymbolicPlanSetup(m, env, o.model)
	}
	res, err := pipeline.LoadRun(o.run)
	if err != nil {
		return nil, fmt.Errorf("--run %s: %w", o.run, err)
	}
	if note := res.BackendNote(); note != "" {
		fmt.Fprintln(stderr, note)
	}
	var out io.Writer = stderr
	if o.quiet {
		out = nil
	}
	return experiment.RunPlanSetup(res, o.run, o.obs, out)
}

// writePlanTable prints the report as a table, one row per mode.
func writePlanTable(w io.Writer, rep *planReport) {
	fmt.Fprintf(w, "map %s (%s; %d states, %d model places)\n", rep.Source, rep.Obs, rep.States, rep.NumPlaces)
	fmt.Fprintf(w, "filter: %s; planner: %s; localise %d, demo %d observations; budget %g·d + %d steps\n",
		rep.Filter, rep.Planner, rep.Config.LocalizeSteps, rep.Config.DemoSteps, rep.Config.BudgetFactor, rep.Config.BudgetExtra)
	fmt.Fprintf(w, "%-12s %-5s %6s %8s %20s %12s %10s %14s\n", "env", "mode", "pairs", "success", "path ratio (mean±sd)", "unreachable", "ambiguous", "oracle misses")
	fmt.Fprintln(w, strings.Repeat("-", 94))
	for _, m := range rep.Modes {
		fmt.Fprintf(w, "%-12s %-5s %6d %8.3f %20s %12d %10d %14d\n", rep.Env, m.Mode, m.Pairs, m.SuccessRate,
			fmt.Sprintf("%.3f ± %.3f", m.PathRatioMean, m.PathRatioSD), m.Unreachable, m.Ambiguous, m.OracleMisses)
	}
	fmt.Fprintln(w, "oracle misses: demonstrations that point a filter knowing the true room and the observations' token frequencies at another place")
}
