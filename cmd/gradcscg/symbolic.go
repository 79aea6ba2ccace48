package main

import (
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
	tol                  float64
	chunkAbove           float64
	foldAlike            float64
	dropCost             float64
	dropFloor            float64
	splitShare           float64
	splitSurprised       bool
	foldCost             float64
	checkpoint           string
	restarts             int
	grow                 int
	doublings            int
	viterbiIters         int
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
	fs.IntVar(&o.clones, "clones", 0, "clones per token, a budget trained as given (0: none; the budget grows by splitting, or is the environment's reference budget with --doublings 0)")
	fs.StringVar(&o.clonesPerToken, "clones-for", "", "per-class clone budgets overriding --clones, e.g. \"0=20\" (class=clones,...)")
	fs.IntVar(&o.iters, "iters", 0, "maximum training iterations (0: trainer default)")
	fs.Float64Var(&o.lr, "lr", 0, "gradient trainer: Adam learning rate on the logits (0: default)")
	fs.Float64Var(&o.pseudocount, "pseudocount", -1, "EM trainer: pseudocount added to transition counts (<0: environment default)")
	fs.IntVar(&o.restarts, "restarts", 0, "initialisations tried: EM keeps the one with the highest training likelihood; the gradient trainer stops at the first whose map predicts its training walks (at most 0.005 bits/step), else keeps the best (0: 1 while the budget grows by splitting; with a budget given, EM 3, gradient up to 5). More than 1 trains the reference budget (see --doublings)")
	fs.Float64Var(&o.entropy, "entropy", 0, "gradient trainer: transition-entropy weight η (paper 3.6)")
	fs.Float64Var(&o.tol, "tol", 0, "gradient trainer: the least gain in log-likelihood per step (nats) that counts as progress before a plateau ends a training (0: 1e-4, and 1e-5 once a training's own clone splits are spent when the budget grows by splitting; given, it holds throughout)")
	fs.Float64Var(&o.chunkAbove, "chunk-above", -1, fmt.Sprintf("gradient trainer: read random chunks of the walks (%d of %d steps per iteration) in a training whose pass over walks of at least %d steps would cost more than this many multiply-adds (-1: %g; 0: the whole walks at every iteration)",
		chmm.ChunkBatch, chmm.ChunkLen, chmm.ChunkMinSteps, chmm.DefaultChunkAbove))
	fs.Float64Var(&o.foldAlike, "fold-alike", -1, "gradient trainer, budget grown by splitting: before each split, fold the kept clones whose moves agree within this total variation into one, so that only places still merged are split again (-1: 0.05; 0: none)")
	fs.Float64Var(&o.dropCost, "drop-cost", -1, "gradient trainer, budget grown by splitting: before each split, drop the clones under the largest share of their token's visits (1%, 0.5%, 0.2%, 0.1%, 0.05%) whose dropping raises the training walks' bits per step by at most this fraction, else keep every visited clone (-1: 0.05; 0: drop those under 1% whatever it costs)")
	fs.Float64Var(&o.dropFloor, "drop-floor", 0, "gradient trainer, budget grown by splitting: a rise in the training walks' bits per step that a drop before a split may always cost, whatever --drop-cost allows (0: none)")
	fs.Float64Var(&o.foldCost, "fold-cost", -1, "budget grown by splitting, with --fold-alike: before each split after the first, fold the clones alike for the fewest moves ahead (1, 2, …) whose folding gives back at most this fraction of what the last split gained in the training walks' bits per step, else those alike however far ahead (-1: 0.5 for the gradient trainer where alike clones are folded, else 0; 0: only those alike however far ahead, as --fold-alike alone)")
	fs.BoolVar(&o.splitSurprised, "split-surprised", false, "gradient trainer, budget grown by splitting: when the map fits its training walks but is surprised beyond localising (merged), split only the kept clones its Viterbi paths hold one step before a surprise, not every kept clone")
	fs.Float64Var(&o.splitShare, "split-share", 0, "budget grown by splitting: split only the kept clones with at least this share of their token's visits along the training walks' Viterbi paths, keeping the others as they are (0: split every kept clone)")
	fs.IntVar(&o.grow, "grow", -1, "let the clone budget size itself: while the map cannot predict its own training walks, double the budget of every token that uses all its clones and train again, at most this many times (-1: 3, or 0 when --clones or --clones-for sets the budget; 0: the budget as given)")
	fs.IntVar(&o.doublings, "doublings", -1, "grow the budget by splitting: start from one clone per token and, while the map cannot predict its own training walks (for EM, before or after a hard phase run on a copy), keep the clones its training paths use (EM: any visit; gradient: at least 1% of their token's visits, or less as --drop-cost says), split each in two and train on, at most this many times (one start; -1: 16, or 0 when --clones, --clones-for, --grow or --restarts >1 is given; 0: the reference budget, which may double as --grow says, from 3 starts for EM, up to 5 for the gradient trainer)")
	fs.IntVar(&o.viterbiIters, "viterbi-iters", -1, "EM trainer: hard (Viterbi) iterations after Baum–Welch, as the original CSCG refines its maps; they leave exact zeros, so a map can lose its way on walks that cross where its training walks did not (-1: 100; 0: none)")
	fs.StringVar(&o.init, "init", "uniform", "initial transitions: uniform (near-uniform, the reference's) or random (the original CSCG's U(0, 1))")
	fs.StringVar(&o.jsonPath, "json", "", "write the evaluation report as JSON to this path")
	fs.StringVar(&o.savePath, "save", "", "write the trained model to this path")
	fs.StringVar(&o.loadPath, "load", "", "evaluate this saved model instead of training one")
	fs.StringVar(&o.checkpoint, "checkpoint", "", "budget grown by splitting: save the run to this file after every split, and resume from it when it exists (the same command goes on from its last split, to the same map); removed once the report is written")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.init != experiment.InitUniform && o.init != experiment.InitRandom {
		return fmt.Errorf("--init %q: must be uniform or random", o.init)
	}
	if o.trainer != "gradient" && o.trainer != "em" {
		return fmt.Errorf("--trainer %q: must be gradient or em", o.trainer)
	}
	if o.doublings > 0 {
		switch {
		case o.restarts > 1:
			return fmt.Errorf("--doublings %d: trains one start, not --restarts %d", o.doublings, o.restarts)
		case o.clones > 0 || o.clonesPerToken != "" || o.grow > 0:
			return fmt.Errorf("--doublings %d: the budget grows from one clone per token; drop --clones, --clones-for and --grow", o.doublings)
		}
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
		if ns := splitStatesThatFit(s, env, n); ns < experiment.MaxDoublingStates {
			if !o.quiet {
				fmt.Fprintf(stderr, "the budget may grow by splitting to %d states, not %d: more would not fit in this machine's memory\n",
					ns, experiment.MaxDoublingStates)
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

// splitStatesThatFit is the most states, experiment.MaxDoublingStates halved until it
// fits in memory (but not below n, the states trained first), to which a budget grown
// by splitting may grow.
func splitStatesThatFit(s experiment.Symbolic, env *gridworld.Env, n int) int {
	ns := experiment.MaxDoublingStates
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
// (experiment.DefaultSymbolic), then every flag given. A budget given (--clones,
// --clones-for) is kept as it is, unless --grow says otherwise; with it (or --grow,
// --restarts >1, --doublings 0) that budget is trained instead of one grown by splitting.
func symbolicConfig(o symbolicOptions) (experiment.Symbolic, *gridworld.Env, error) {
	env, err := loadEnv(o.env, o.layout)
	if err != nil {
		return experiment.Symbolic{}, nil, err
	}
	s, err := experiment.DefaultSymbolic(env, o.trainer)
	if err != nil {
		return experiment.Symbolic{}, nil, err
	}
	s.Seed, s.Init = o.seed, o.init
	if o.doublings == 0 || o.doublings < 0 && (o.restarts > 1 || o.clones > 0 || o.clonesPerToken != "" || o.grow >= 0) {
		s = s.FixedBudget(o.restarts) // a budget of its own, not grown by splitting
	}
	if o.restarts > 0 {
		s.Restarts = o.restarts
	}
	s.Iters, s.LR, s.Entropy, s.Tol = o.iters, o.lr, o.entropy, o.tol
	switch {
	case o.doublings > 0:
		s.Doublings, s.GrowRounds, s.Restarts = o.doublings, 0, 1
	case o.grow >= 0:
		s.GrowRounds = o.grow
	case o.clones > 0 || o.clonesPerToken != "":
		s.GrowRounds = 0
	}
	if o.episodes > 0 {
		s.Episodes = o.episodes
	}
	if o.steps > 0 {
		s.Steps, s.EvalSteps = o.steps, o.steps
	}
	if o.evalSteps > 0 {
		s.EvalSteps = o.evalSteps
	}
	if o.clones > 0 {
		s.ClonesPerClass = o.clones
	}
	if o.pseudocount >= 0 {
		s.Pseudocount = o.pseudocount
	}
	if o.viterbiIters >= 0 {
		s.ViterbiIters = o.viterbiIters
	}
	if o.chunkAbove >= 0 {
		s.ChunkAbove = o.chunkAbove
	}
	if o.foldAlike >= 0 {
		s.FoldAlike = o.foldAlike
	}
	if o.dropCost >= 0 {
		s.DropCost = o.dropCost
	}
	s.DropFloor = o.dropFloor
	s.SplitShare = o.splitShare
	s.SplitSurprised = o.splitSurprised
	switch {
	case o.foldCost >= 0:
		s.FoldCost = o.foldCost
	case s.FoldAlike == 0: // a fixed budget (FixedBudget) has none already
		s.FoldCost = 0 // the default folds by depth only where alike clones are folded before splits
	}
	if o.checkpoint != "" && (s.Doublings == 0 || o.loadPath != "") {
		return experiment.Symbolic{}, nil, fmt.Errorf("--checkpoint %s: only a budget grown by splitting is saved as it trains; drop --load, --clones, --clones-for, --grow, --restarts above 1 and --doublings 0", o.checkpoint)
	}
	s.Checkpoint = o.checkpoint
	if o.clonesPerToken != "" {
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
