package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func init() {
	register("symbolic", "train a cloned HMM on symbolic random walks (EM or gradient) and score the map", runSymbolic)
	register("envs", "list the built-in environments", runEnvs)
}

// symbolicOptions are the flags of "gradcscg symbolic".
type symbolicOptions struct {
	env, layout, trainer string
	init                 string
	seed                 uint64
	episodes, steps      int
	evalSteps            int
	clones               int
	clonesPerToken       string
	iters                int
	lr                   float64
	pseudocount          float64
	entropy              float64
	restarts             int
	jsonPath, savePath   string
	loadPath             string
	quiet                bool
}

func runSymbolic(args []string) error {
	var o symbolicOptions
	fs := newFlagSet("symbolic", "--env NAME | --layout FILE [--trainer gradient|em] [flags]")
	fs.StringVar(&o.env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	fs.StringVar(&o.layout, "layout", "", "custom layout file (overrides --env; format in README)")
	fs.StringVar(&o.trainer, "trainer", "gradient", "training rule: gradient (Adam on π, Θ) or em (Baum–Welch)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed (walks, initialisation, held-out episode)")
	fs.IntVar(&o.episodes, "episodes", 0, "training episodes (0: the environment's reference count)")
	fs.IntVar(&o.steps, "steps", 0, "steps per training episode (0: the reference length)")
	fs.IntVar(&o.evalSteps, "eval-steps", 0, "steps of the held-out evaluation episode (0: same as --steps)")
	fs.IntVar(&o.clones, "clones", 0, "clones per token (0: the environment's reference budget)")
	fs.StringVar(&o.clonesPerToken, "clones-for", "", "per-class clone budgets overriding --clones, e.g. \"0=20\" (class=clones,...)")
	fs.IntVar(&o.iters, "iters", 0, "maximum training iterations (0: trainer default)")
	fs.Float64Var(&o.lr, "lr", 0, "gradient trainer: Adam learning rate on the logits (0: default)")
	fs.Float64Var(&o.pseudocount, "pseudocount", -1, "EM trainer: pseudocount added to transition counts (<0: environment default)")
	fs.IntVar(&o.restarts, "restarts", 3, "initialisations tried; the one with the highest training likelihood is kept (the gradient trainer: 1 unless given)")
	fs.Float64Var(&o.entropy, "entropy", 0, "gradient trainer: transition-entropy weight η (paper 3.6)")
	fs.StringVar(&o.init, "init", "uniform", "initial transitions: uniform (near-uniform, the reference's) or random (the original CSCG's U(0, 1))")
	fs.StringVar(&o.jsonPath, "json", "", "write the evaluation report as JSON to this path")
	fs.StringVar(&o.savePath, "save", "", "write the trained model to this path")
	fs.StringVar(&o.loadPath, "load", "", "evaluate this saved model instead of training one")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.trainer == "gradient" && !flagGiven(fs, "restarts") {
		o.restarts = 1
	}
	if o.init != experiment.InitUniform && o.init != experiment.InitRandom {
		return fmt.Errorf("--init %q: must be uniform or random", o.init)
	}
	if o.trainer != "gradient" && o.trainer != "em" {
		return fmt.Errorf("--trainer %q: must be gradient or em", o.trainer)
	}
	rep, err := symbolicRun(o)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := rep.WriteJSON(o.jsonPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", o.jsonPath)
	}
	return nil
}

// loadEnv resolves --layout or --env.
func loadEnv(name, layout string) (*gridworld.Env, error) {
	if layout != "" {
		return gridworld.LoadLayout(layout)
	}
	return gridworld.Named(name)
}

// parseClonesFor parses "class=clones,..." into a map.
func parseClonesFor(s string) (map[int]int, error) {
	out := map[int]int{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		kv := strings.SplitN(strings.TrimSpace(part), "=", 2)
		if len(kv) != 2 {
			return nil, fmt.Errorf("--clones-for: %q is not class=clones", part)
		}
		c, err1 := strconv.Atoi(kv[0])
		n, err2 := strconv.Atoi(kv[1])
		if err1 != nil || err2 != nil || c < 0 || !rangeClones.contains(float64(n)) {
			return nil, fmt.Errorf("--clones-for: %q needs a class id ≥ 0 and a clone count that is %s", part, rangeClones)
		}
		out[c] = n
	}
	return out, nil
}

func symbolicRun(o symbolicOptions) (*evaluate.Report, error) {
	out, err := symbolicExperiment(o)
	if err != nil {
		return nil, err
	}
	return out.report, nil
}

// symbolicOutcome is what a symbolic experiment made: the report, the model, the
// held-out walk it scored and the walk's Viterbi path (figures draw the same read-out).
type symbolicOutcome struct {
	report  *evaluate.Report
	model   *chmm.Model
	env     *gridworld.Env
	heldOut gridworld.Episode
	states  []int
	classes []int // token → class
}

// symbolicExperiment trains (or loads) and scores one symbolic model: symbolicRun with
// everything it made.
func symbolicExperiment(o symbolicOptions) (*symbolicOutcome, error) {
	t0 := time.Now()
	env, err := loadEnv(o.env, o.layout)
	if err != nil {
		return nil, err
	}
	def := env.Defaults()
	if o.episodes <= 0 {
		o.episodes = def.Episodes
	}
	if o.steps <= 0 {
		o.steps = def.Steps
	}
	if o.evalSteps <= 0 {
		o.evalSteps = o.steps
	}
	if o.clones <= 0 {
		o.clones = def.ClonesPerClass
	}
	perClass, err := parseClonesFor(o.clonesPerToken)
	if err != nil {
		return nil, err
	}
	if o.clonesPerToken == "" {
		perClass = def.ClonesByClass
	}
	tokens := experiment.NewTokens(env)
	classes := tokens.Classes
	for c := range perClass {
		if _, ok := tokens.Token(c); !ok {
			return nil, fmt.Errorf("--clones-for: class %d does not occur in environment %s", c, env.Name)
		}
	}
	clones := make([]int, len(classes))
	for k, c := range classes {
		clones[k] = o.clones
		if n, ok := perClass[c]; ok {
			clones[k] = n
		}
	}
	n := 1
	for _, c := range clones {
		n += c
	}
	steps := o.episodes * o.steps
	if err := checkMemory(hmmBytes(n, env.NumActions(), max(steps, o.evalSteps))+48*float64(steps+o.evalSteps),
		fmt.Sprintf("training %d states on %d × %d steps", n, o.episodes, o.steps)); err != nil {
		return nil, err
	}

	var train []chmm.Sequence
	for _, ep := range experiment.SymbolicTrainingWalks(env, o.seed, o.episodes, o.steps) {
		train = append(train, tokens.Sequence(ep))
	}
	heldOut := experiment.SymbolicHeldOutWalk(env, o.seed, o.evalSteps)
	test := tokens.Sequence(heldOut)

	var m *chmm.Model
	if o.loadPath != "" {
		if m, err = chmm.Load(o.loadPath); err != nil {
			return nil, err
		}
		if err := m.CheckCompatible(len(classes), env.NumActions()); err != nil {
			return nil, fmt.Errorf("%s does not fit environment %s: %w", o.loadPath, env.Name, err)
		}
	} else {
		m = experiment.SymbolicInit(clones, env.NumActions(), o.seed, o.init)
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "%s: %d places, %d edges, %d tokens, %d states; %d×%d training steps; trainer %s\n",
			env.Name, env.NumPlaces(), len(env.Edges()), m.K(), m.N(), o.episodes, o.steps, o.trainer)
	}
	tTrain := time.Now()
	record := experiment.SymbolicTraining(m, train, experiment.Training{}, nil) // a loaded map's
	if o.loadPath == "" {
		if record, err = trainSymbolic(m, train, o, def); err != nil {
			return nil, err
		}
	}
	trainSec := time.Since(tTrain).Seconds()

	tEval := time.Now()
	states, _, err := chmm.Viterbi(m, test)
	if err != nil {
		return nil, fmt.Errorf("decoding the held-out episode: %w", err)
	}
	rep, err := evaluate.Evaluate(evaluate.Input{
		Env:       env,
		Places:    heldOut.Places,
		States:    states,
		Tokens:    test.Obs,
		Trans:     m.Transitions(),
		NumStates: m.N(),
		NumTokens: m.K(),
	}, evaluate.DefaultOptions())
	if err != nil {
		return nil, err
	}
	// The label-free verdict: the map on its training walks and on the held-out walk's
	// tokens and actions (no places).
	if rep.Diagnosis, err = experiment.DiagnoseSymbolic(m, train, test); err != nil {
		return nil, err
	}
	rep.Env = env.Name
	rep.Dataset = "symbolic"
	rep.Trainer = o.trainer
	rep.Seed = o.seed
	rep.Seconds = map[string]float64{
		"train": trainSec,
		"eval":  time.Since(tEval).Seconds(),
		"total": time.Since(t0).Seconds(),
	}
	rep.Training = record
	if o.savePath != "" {
		m.Meta = map[string]string{"env": env.Name, "trainer": o.trainer, "seed": strconv.FormatUint(o.seed, 10)}
		if err := m.Save(o.savePath); err != nil {
			return nil, err
		}
	}
	return &symbolicOutcome{report: rep, model: m, env: env, heldOut: heldOut, states: states, classes: classes}, nil
}

// trainSymbolic trains m in place with experiment.TrainSymbolic (the trainer of the
// notebooks too) and returns the report's record of it.
func trainSymbolic(m *chmm.Model, train []chmm.Sequence, o symbolicOptions, def gridworld.Defaults) (*evaluate.Training, error) {
	t := experiment.Training{Trainer: o.trainer, Seed: o.seed, Iters: o.iters, LR: o.lr, Entropy: o.entropy,
		ViterbiIters: chmm.DefaultEMConfig().ViterbiIters, Restarts: o.restarts, Init: o.init}
	// The original CSCG's pseudocount for rooms where the environment gives none:
	// hard EM leaves exact zeros, and without it a held-out walk can be unreadable.
	t.Pseudocount = def.Pseudocount
	if t.Pseudocount == 0 {
		t.Pseudocount = chmm.DefaultEMConfig().Pseudocount
	}
	if o.pseudocount >= 0 {
		t.Pseudocount = o.pseudocount
	}
	var out io.Writer = stderr
	if o.quiet {
		out = nil
	}
	best, h, err := experiment.TrainSymbolic(m, train, t, out)
	if err != nil {
		return nil, err
	}
	if best != m {
		*m = *best
	}
	return experiment.SymbolicTraining(m, train, t, h), nil
}

func runEnvs(args []string) error {
	fs := newFlagSet("envs", "(lists the built-in environments; no flags)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-18s %7s %6s %8s %8s  %s\n", "name", "places", "edges", "classes", "actions", "what it is")
	for _, n := range gridworld.Names() {
		e, err := gridworld.Named(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-18s %7d %6d %8d %8d  %s\n", n, e.NumPlaces(), len(e.Edges()), e.NumClasses(), e.NumActions(), gridworld.Summary(n))
	}
	return nil
}
