package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

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
	seed                 uint64
	size, preset         string
	sets                 setFlag
	clonesPerToken       string
	checkpoint           string
	jsonPath, savePath   string
	loadPath             string
	quiet                bool
}

func symbolicFlags(o *symbolicOptions) *flag.FlagSet {
	fs := newFlagSet("symbolic", "--env NAME | --layout FILE [--trainer gradient|em] [--preset NAME] [--set key=value]... [flags]")
	fs.StringVar(&o.env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	fs.StringVar(&o.layout, "layout", "", "custom layout file instead of --env (rows of class ids and # walls, or a graph; format: pkg/gridworld/doc.go)")
	fs.StringVar(&o.trainer, "trainer", "gradient", "training rule: gradient (Adam on π, Θ) or em (Baum–Welch)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed (walks, initialisation, held-out episode)")
	fs.StringVar(&o.size, "size", "full", "full: the environment's reference walks; ci and smoke: one short walk, few iterations (seconds)")
	fs.StringVar(&o.preset, "preset", "", "named settings: fixed-budget (the reference clone budget instead of splitting; '--preset help')")
	fs.Var(&o.sets, "set", "one setting key=value, repeatable, last ('--set help' lists every key with its default and range)")
	fs.StringVar(&o.clonesPerToken, "clones-for", "", "per-class clone budgets, e.g. \"0=20\" (class=clones,...): a budget given, trained as given")
	fs.StringVar(&o.jsonPath, "json", "", "write the evaluation report as JSON to this path")
	fs.StringVar(&o.savePath, "save", "", "write the trained model to this path")
	fs.StringVar(&o.loadPath, "load", "", "evaluate this saved model instead of training one")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "budget grown by splitting: save after every split here and resume from it (removed once the report is written)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	return fs
}

func runSymbolic(args []string) error {
	var o symbolicOptions
	fs := symbolicFlags(&o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if flagGiven(fs, "env") && flagGiven(fs, "layout") {
		return errors.New("--env with --layout: give one environment")
	}
	switch {
	case o.preset == "help" || o.preset == "list":
		writeSymbolicPresets(stdout)
		return nil
	case o.sets.help():
		o.sets = o.sets.without("help")
		s, _, err := symbolicConfig(o)
		if err != nil {
			return err
		}
		writeSymbolicSettings(stdout, s)
		return nil
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
	if o.checkpoint != "" {
		return experiment.RemoveCheckpoint(o.checkpoint)
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
	run, err := symbolicExperiment(o)
	if err != nil {
		return nil, err
	}
	return run.Report, nil
}

// symbolicExperiment runs the symbolic experiment of the flags (experiment.RunSymbolic,
// the notebooks' too; symbolicConfig).
func symbolicExperiment(o symbolicOptions) (*experiment.SymbolicRun, error) {
	s, env, err := symbolicConfig(o)
	if err != nil {
		return nil, err
	}
	tokens := experiment.NewTokens(env)
	n := 1 + len(tokens.Classes) // the states trained first: one clone per token, or the budget
	if s.Doublings == 0 {
		n = 1
		for _, c := range s.Clones(tokens) {
			n += c
		}
	}
	if err := checkMemory(symbolicBytes(s, env, n), fmt.Sprintf("training %d states on %d × %d steps", n, s.Episodes, s.Steps)); err != nil {
		return nil, err
	}
	if s.Doublings > 0 {
		if ns := splitStatesThatFit(s, env, n); ns < experiment.MaxSplitStates {
			if !o.quiet {
				fmt.Fprintf(stderr, "the budget may grow by splitting to %d states, not %d: more would not fit in this machine's memory\n",
					ns, experiment.MaxSplitStates)
			}
			s.MaxStates = ns
		}
	}
	if g := growRoundsThatFit(s, env, n); g < s.GrowRounds {
		if !o.quiet {
			fmt.Fprintf(stderr, "the clone budget may double %d time(s), not %d: %d states would not fit in this machine's memory\n",
				g, s.GrowRounds, 1+(n-1)<<(g+1))
		}
		s.GrowRounds = g
	}
	var m *chmm.Model // a saved map to score instead of training one
	if o.loadPath != "" {
		if m, err = chmm.Load(o.loadPath); err != nil {
			return nil, err
		}
	}
	var out io.Writer = stderr
	if o.quiet {
		out = nil
	}
	run, err := experiment.RunSymbolic(s, m, out)
	if o.savePath != "" && run != nil { // the map, even one that could not be scored
		run.Model.Meta = map[string]string{"env": env.Name, "trainer": o.trainer, "seed": strconv.FormatUint(o.seed, 10)}
		if serr := run.Model.Save(o.savePath); serr != nil {
			return nil, serr
		}
		if err != nil {
			err = fmt.Errorf("%w (the trained map is saved in %s)", err, o.savePath)
		}
	}
	if err != nil {
		if o.loadPath != "" {
			if was := m.Meta["env"]; was != "" && was != env.Name {
				hint := "--env " + was
				if _, nerr := gridworld.Named(was); nerr != nil {
					hint = "--layout with its layout file"
				}
				return nil, fmt.Errorf("%s: %w (the map was trained on %s: give %s)", o.loadPath, err, was, hint)
			}
			return nil, fmt.Errorf("%s: %w", o.loadPath, err)
		}
		return nil, err
	}
	return run, nil
}

// symbolicBytes is the estimated peak memory of training s's map with n states.
func symbolicBytes(s experiment.Symbolic, env *gridworld.Env, n int) float64 {
	steps := s.Episodes * s.Steps
	return chmm.TrainBytes(n, env.NumActions(), max(steps, s.EvalSteps)) + 48*float64(steps+s.EvalSteps)
}

// splitStatesThatFit is the most states, experiment.MaxSplitStates halved until it
// fits in memory (but not below n, the states trained first), to which a budget grown
// by splitting may grow.
func splitStatesThatFit(s experiment.Symbolic, env *gridworld.Env, n int) int {
	ns := experiment.MaxSplitStates
	for ns > n && checkMemory(symbolicBytes(s, env, ns), "") != nil {
		ns /= 2
	}
	return ns
}

// growRoundsThatFit is the most of s.GrowRounds doublings after which the map still
// fits in memory if every token's budget doubled (n states to start with), so that
// growth never starts a round that the machine cannot hold.
func growRoundsThatFit(s experiment.Symbolic, env *gridworld.Env, n int) int {
	g := s.GrowRounds
	for g > 0 && checkMemory(symbolicBytes(s, env, 1+(n-1)<<g), "") != nil {
		g--
	}
	return g
}

// symbolicConfig is the experiment of the flags: the environment's reference settings
// (experiment.DefaultSymbolic), --preset, --size, --clones-for (a budget given:
// experiment.Symbolic.FixedBudget without budget doublings), then every --set
// (experiment.Symbolic.Set), checked by Validate.
func symbolicConfig(o symbolicOptions) (experiment.Symbolic, *gridworld.Env, error) {
	env, err := loadEnv(o.env, o.layout)
	if err != nil {
		return experiment.Symbolic{}, nil, err
	}
	if o.trainer != experiment.TrainerGradient && o.trainer != experiment.TrainerEM {
		return experiment.Symbolic{}, nil, fmt.Errorf("--trainer %q: must be gradient or em", o.trainer)
	}
	s, err := experiment.DefaultSymbolic(env, o.trainer)
	if err != nil {
		return experiment.Symbolic{}, nil, err
	}
	s.Seed, s.Init = o.seed, experiment.InitUniform
	if o.preset != "" {
		p, err := experiment.LookupSymbolicPreset(o.preset)
		if err != nil {
			return experiment.Symbolic{}, nil, fmt.Errorf("--%w", err)
		}
		s = p.Apply(s)
	}
	size, err := experiment.ParseSize(o.size)
	if err != nil {
		return experiment.Symbolic{}, nil, fmt.Errorf("--%w", err)
	}
	s = size.Symbolic(s)
	if o.clonesPerToken != "" {
		s = s.FixedBudget(0)
		s.GrowRounds = 0
		if s.ClonesByClass, err = parseClonesFor(o.clonesPerToken); err != nil {
			return experiment.Symbolic{}, nil, err
		}
		tokens := experiment.NewTokens(env)
		for c := range s.ClonesByClass {
			if _, ok := tokens.Token(c); !ok {
				return experiment.Symbolic{}, nil, fmt.Errorf("--clones-for: class %d does not occur in environment %s", c, env.Name)
			}
		}
	}
	for _, kv := range o.sets {
		if err := s.Set(kv); err != nil {
			return experiment.Symbolic{}, nil, fmt.Errorf("--set %w", err)
		}
	}
	if o.checkpoint != "" && (s.Doublings == 0 || o.loadPath != "") {
		return experiment.Symbolic{}, nil, fmt.Errorf("--checkpoint %s: only a budget grown by splitting is saved as it trains; drop --load, a budget given and split_rounds=0", o.checkpoint)
	}
	s.Checkpoint = o.checkpoint
	if err := s.Validate(); err != nil {
		return experiment.Symbolic{}, nil, err
	}
	return s, env, nil
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
