package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

func init() {
	register("train", "learn a map from pixels: VQ-VAE warm-up → joint training → finalisation, then evaluate", runTrain)
}

// trainOptions are the flags of "gradcscg train".
type trainOptions struct {
	env, layout, dataset, run, config, jsonPath, size            string
	seed                                                         uint64
	quiet, reevaluate                                            bool
	set                                                          *flag.FlagSet // to tell which flags were given
	episodes, steps, jointIters, clones, jitter, gradFrames      int
	alphaDiv, alphaDivEnd, collapseFrac, lambda, tau, finalPrune float64
	collapseLevel                                                float64
	decode, budget, arch                                         string
	freeze, noLengthNorm, supervised                             bool
}

func runTrain(args []string) error {
	var o trainOptions
	f := newFlagSet("train", "--env NAME | --layout FILE [--dataset mnist|fashion] [--seed 1] [--run DIR] [flags]")
	f.StringVar(&o.env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	f.StringVar(&o.layout, "layout", "", "custom layout file (overrides --env; format in README)")
	f.StringVar(&o.dataset, "dataset", "mnist", "images shown at the places: mnist or fashion")
	f.Uint64Var(&o.seed, "seed", 1, "random seed (walks, images, initialisation, held-out episode)")
	f.StringVar(&o.run, "run", "", "run directory (default runs/<env>_<dataset>_seed<N>); an unfinished run resumes, a finished one is loaded")
	f.StringVar(&o.config, "config", "", "start from this config.json instead of the environment's defaults")
	f.StringVar(&o.size, "size", "full", "full: the paper's data size (Table 1); ci: about a minute on two cores, still recovers the benchmark maps (MLP VQ-VAE, 4 × 5,000 steps); smoke: seconds, every phase, no map expected")
	f.IntVar(&o.episodes, "episodes", 0, "training episodes (0: default)")
	f.IntVar(&o.steps, "steps", 0, "steps per training episode (0: default)")
	f.IntVar(&o.jointIters, "joint-iters", -1, "joint-phase iterations (-1: default)")
	f.IntVar(&o.clones, "clones", 0, "clones per token in the joint phase (0: default)")
	f.Float64Var(&o.alphaDiv, "alpha-div", -1, "diversity-penalty weight α_div (-1: default 1, the paper 0.1; 0 disables it)")
	f.StringVar(&o.arch, "arch", "", "VQ-VAE architecture: conv (the reference, default) or mlp (≈10× faster, weaker)")
	f.Float64Var(&o.collapseFrac, "collapse-frac", -1, "collapse guard: roll the perception back when perplexity falls below this fraction of its best (-1: default 0, off; the reference-like setting is 0.75)")
	f.IntVar(&o.gradFrames, "grad-frames", -1, "frames of each joint iteration that carry reconstruction and encoder/decoder gradients; the HMM term reads all (-1: default 256; 0: all, the paper)")
	f.Float64Var(&o.collapseLevel, "collapse-level", -1, "anti-collapse: roll back to the last healthy checkpoint and strengthen α_div when the token perplexity falls below 1 + level·(P₀ − 1), in [0, 0.5) (-1: default 0.25; 0: off)")
	f.Float64Var(&o.lambda, "lambda", -1, "weight λ of the HMM term in the joint phase (-1: default 1)")
	f.Float64Var(&o.alphaDivEnd, "alpha-div-end", -1, "α_div at the end of the joint phase, reached linearly from --alpha-div after its middle (-1: default 0.1; 0: no annealing)")
	f.Float64Var(&o.tau, "tau", -1, "temperature τ of the soft posterior log ρ (-1: default 0.2, the paper 1)")
	f.Float64Var(&o.finalPrune, "final-prune", -1, "after finalisation, remove clones visited by fewer than this fraction of the training steps and retrain (-1: default 0.001; 0: off)")
	f.IntVar(&o.jitter, "jitter", -1, "shift each joint-phase frame by up to this many pixels (label-free augmentation; -1: default)")
	f.StringVar(&o.decode, "decode", "", "held-out read-out: soft (Viterbi on the encoder's log ρ, default) or hard (on tokens)")
	f.StringVar(&o.budget, "final-budget", "", "finalisation clones: share (re-budget by token share, default) or joint (keep the joint phase's)")
	f.BoolVar(&o.freeze, "freeze-vqvae", false, "ablation: keep the VQ-VAE frozen during the joint phase")
	f.BoolVar(&o.noLengthNorm, "no-length-norm", false, "ablation: drop the 1/T length normalisation of the HMM term")
	f.BoolVar(&o.supervised, "supervised-warmup", false, "comparison only: add the reference's digit-classification loss to the warm-up (uses labels)")
	f.StringVar(&o.jsonPath, "json", "", "also write the evaluation report as JSON to this path")
	f.BoolVar(&o.reevaluate, "reevaluate", false, "re-score the finished run in --run with the current evaluation (rewrites its report.json)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	if err := parseFlags(f, args); err != nil {
		return err
	}
	o.set = f
	cfg, err := o.pipelineConfig()
	if err != nil {
		return err
	}
	if err := checkMemory(trainBytes(cfg), fmt.Sprintf("a run of %d × %d steps with up to %d clones per token", cfg.Episodes, cfg.Steps, max(cfg.Clones, cfg.FinalClones))); err != nil {
		return err
	}
	dir := o.run
	if dir == "" {
		dir = filepath.Join("runs", runName(cfg))
	}
	var rep *evaluate.Report
	if o.reevaluate {
		if rep, err = pipeline.Reevaluate(dir); err != nil {
			return err
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var progress io.Writer = stderr
		if o.quiet {
			progress = nil
		}
		rep, err = pipeline.Run(ctx, dir, cfg, progress)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: the run resumes from its last checkpoint when the same command is run again")
		}
		if err != nil {
			return err
		}
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

// given reports whether flag name was on the command line.
func (o *trainOptions) given(name string) bool { return flagGiven(o.set, name) }

// pipelineConfig builds the run's configuration: --config or the environment's
// defaults (reduced by --size ci), then the flags that were given.
func (o *trainOptions) pipelineConfig() (pipeline.Config, error) {
	var cfg pipeline.Config
	switch {
	case o.config != "":
		c, err := pipeline.ReadConfig(o.config)
		if err != nil {
			return cfg, err
		}
		cfg = c
	case o.layout != "":
		env, err := loadEnv("", o.layout)
		if err != nil {
			return cfg, err
		}
		cfg = pipeline.ConfigFor(env)
	default:
		c, err := pipeline.DefaultConfig(o.env)
		if err != nil {
			return cfg, err
		}
		cfg = c
	}
	size, err := experiment.ParseSize(o.size)
	if err != nil {
		return cfg, fmt.Errorf("--%w", err)
	}
	cfg = size.Pipeline(cfg)
	if o.config == "" || o.given("dataset") {
		cfg.Dataset = o.dataset
	}
	if o.config == "" || o.given("seed") {
		cfg.Seed = o.seed
	}
	if o.episodes > 0 {
		cfg.Episodes = o.episodes
	}
	if o.steps > 0 {
		cfg.Steps, cfg.EvalSteps = o.steps, o.steps
		cfg.ChunkLen = min(cfg.ChunkLen, o.steps)
	}
	override(&cfg.JointIters, o.jointIters)
	if o.clones > 0 {
		cfg.Clones = o.clones
	}
	override(&cfg.AlphaDiv, o.alphaDiv)
	if o.decode != "" {
		cfg.Decode = o.decode
	}
	switch {
	case o.arch != "" && o.config != "":
		cfg.Arch = o.arch // the file's settings stay the user's
	case o.arch != "":
		cfg = cfg.WithArch(o.arch) // before the overrides: it sets arch-dependent defaults
	}
	override(&cfg.CollapseFrac, o.collapseFrac)
	override(&cfg.GradFrames, o.gradFrames)
	override(&cfg.CollapseLevel, o.collapseLevel)
	override(&cfg.Lambda, o.lambda)
	override(&cfg.Tau, o.tau)
	override(&cfg.AlphaDivEnd, o.alphaDivEnd)
	override(&cfg.FinalPrune, o.finalPrune)
	override(&cfg.Jitter, o.jitter)
	if o.budget != "" {
		cfg.FinalBudget = o.budget
	}
	cfg.FreezeVQVAE = cfg.FreezeVQVAE || o.freeze
	cfg.NoLengthNorm = cfg.NoLengthNorm || o.noLengthNorm
	cfg.SupervisedWarmup = cfg.SupervisedWarmup || o.supervised
	return cfg, cfg.Validate()
}

// trainBytes estimates the peak memory of a pipeline run: the finalisation's HMM (K
// tokens × the larger clone budget, every training step) and the joint batch's
// activations (a generous 1 MB per frame for the conv VQ-VAE's forward and backward).
func trainBytes(cfg pipeline.Config) float64 {
	n := 1 + cfg.K*max(cfg.Clones, cfg.FinalClones)
	steps := cfg.Episodes * cfg.Steps
	return hmmBytes(n, 4, steps) + 48*float64(steps) + 1e6*float64(cfg.JointBatch*cfg.ChunkLen)
}

// override sets *dst to v unless v is negative (a flag left at its "default" value -1).
func override[T int | float64](dst *T, v T) {
	if v >= 0 {
		*dst = v
	}
}

// runName is the default run directory name of cfg: <env>_<dataset>_seed<N>, with
// "_<arch>" for a VQ-VAE other than conv, "_ci" or "_smoke" for a run of that size (experiment.Size)
// and a suffix per ablation or per joint-phase setting that differs from the defaults.
func runName(cfg pipeline.Config) string {
	name := fmt.Sprintf("%s_%s_seed%d", cfg.Env, cfg.Dataset, cfg.Seed)
	if cfg.Arch != "conv" {
		name += "_" + cfg.Arch
	}
	d, err := pipeline.DefaultConfig(cfg.Env)
	known := err == nil
	d = d.WithArch(cfg.Arch)
	for _, z := range []experiment.Size{experiment.SizeCI, experiment.SizeSmoke} {
		if r := z.Pipeline(d); known && cfg.Steps == r.Steps && cfg.Episodes == r.Episodes {
			name += "_" + string(z)
			d = r
			break
		}
	}
	if cfg.FreezeVQVAE {
		name += "_frozen"
	}
	if cfg.NoLengthNorm {
		name += "_nolennorm"
	}
	if cfg.AlphaDiv == 0 {
		name += "_nodiv"
	}
	// Joint-phase weights that differ from a built-in environment's defaults name
	// themselves.
	if known {
		if cfg.AlphaDiv != 0 && cfg.AlphaDiv != d.AlphaDiv {
			name += fmt.Sprintf("_div%g", cfg.AlphaDiv)
		}
		if cfg.AlphaDivEnd != d.AlphaDivEnd {
			name += fmt.Sprintf("_divend%g", cfg.AlphaDivEnd)
		}
		if cfg.Tau != d.Tau {
			name += fmt.Sprintf("_tau%g", cfg.Tau)
		}
		if cfg.Jitter != d.Jitter {
			name += fmt.Sprintf("_jitter%d", cfg.Jitter)
		}
		if cfg.FinalPrune != d.FinalPrune {
			name += fmt.Sprintf("_prune%g", cfg.FinalPrune)
		}
		if cfg.GradFrames != d.GradFrames {
			name += fmt.Sprintf("_grad%d", cfg.GradFrames)
		}
		if cfg.CollapseLevel != d.CollapseLevel {
			name += fmt.Sprintf("_cl%g", cfg.CollapseLevel)
		}
	}
	if cfg.SupervisedWarmup {
		name += "_supervised"
	}
	return name
}

// imageBenchmarks are the four image benchmarks of paper Section 5.2 (Tables 3, 4).
var imageBenchmarks = []string{"aliased", "corridors", "room", "two_rooms"}

// paperTable3 holds the paper's Table 3 (image observations): perplexity, clone purity,
// state→place purity, action accuracy, map recall, map F1.
var paperTable3 = map[string][6]float64{
	"aliased":   {4.00, 0.98, 0.98, 1.00, 1.00, 1.00},
	"corridors": {5.71, 0.86, 0.98, 1.00, 1.00, 0.98},
	"room":      {6.56, 0.83, 0.95, 0.97, 1.00, 0.98},
	"two_rooms": {9.46, 0.88, 0.98, 0.99, 1.00, 1.00},
}

// paperTable4 holds the paper's Table 4: projected P, F1 (threshold 0.01), Viterbi-path
// P, R, F1 (cutoff 0.002).
var paperTable4 = map[string][5]float64{
	"aliased":   {0.44, 0.62, 1.00, 1.00, 1.00},
	"corridors": {0.24, 0.39, 0.95, 1.00, 0.98},
	"room":      {0.27, 0.42, 0.95, 1.00, 0.98},
	"two_rooms": {0.16, 0.27, 1.00, 1.00, 1.00},
}

// reproduceImages runs (or loads) the image benchmarks × seeds with the paper's
// configuration in runs/<env>_<dataset>_seed<N>, copies each report to
// <out>/images/, and writes <out>/table3.md and <out>/table4.md (mean ± s.d. beside the
// paper's numbers).
func reproduceImages(envs []string, dataset, arch string, seeds int, runs, out string, collect, quiet bool) error {
	dir := filepath.Join(out, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	groups := map[string][]*evaluate.Report{}
	var failed []string
	t0 := time.Now()
	total, done := len(envs)*seeds, 0
	for _, env := range envs {
		for seed := 1; seed <= seeds; seed++ {
			cfg, err := pipeline.DefaultConfig(env)
			if err != nil {
				return err
			}
			cfg.Dataset, cfg.Seed = dataset, uint64(seed)
			cfg = cfg.WithArch(arch)
			name := runName(cfg)
			jsonPath := filepath.Join(dir, name+".json")
			var rep *evaluate.Report
			if collect {
				r, err := evaluate.ReadJSON(jsonPath)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				rep = r
			} else {
				var progress io.Writer = stderr
				if quiet {
					progress = nil
				}
				r, err := pipeline.Run(ctx, filepath.Join(runs, name), cfg, progress)
				if errors.Is(err, context.Canceled) {
					return fmt.Errorf("interrupted: rerun the same command to resume")
				}
				if err != nil {
					// A diverged run is a result: the other runs go on, the tables say so.
					fmt.Fprintf(stderr, "%s: %v\n", name, err)
					failed = append(failed, fmt.Sprintf("%s: %v", name, err))
					continue
				}
				if err := r.WriteJSON(jsonPath); err != nil {
					return err
				}
				rep = r
			}
			done++
			groups[env] = append(groups[env], rep)
			fmt.Fprintf(stderr, "[%d/%d] %-10s seed %d  recall %.2f F1 %.3f  purity %.3f  action %.3f  H(tok|place) %.3f  %.0fs  (elapsed %s)\n",
				done, total, env, seed, rep.ViterbiMap.Recall, rep.ViterbiMap.F1, rep.StatePlacePurity, rep.ActionAccuracy,
				rep.HTokenGivenPlace, rep.Seconds["total"], time.Since(t0).Round(time.Second))
		}
	}
	t3, t4 := imageTables(envs, dataset, arch, groups)
	if len(failed) > 0 {
		t3 += "\nRuns that failed (not in the means above):\n\n- " + strings.Join(failed, "\n- ") + "\n"
	}
	for name, text := range map[string]string{"table3.md": t3, "table4.md": t4} {
		if arch != "conv" {
			name = arch + "_" + name
		}
		if dataset != "mnist" {
			name = dataset + "_" + name
		}
		path := filepath.Join(out, name)
		if err := writeFileAtomic(path, []byte(text)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "table written to %s\n", path)
	}
	fmt.Fprint(stdout, t3, "\n", t4)
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed (listed under the table)", len(failed), total)
	}
	return nil
}

// imageTables renders Tables 3 and 4 of the paper for the reports, with the paper's
// numbers beside ours (ours: mean ± s.d. over seeds, "paper" rows in italics).
func imageTables(envs []string, dataset, arch string, groups map[string][]*evaluate.Report) (t3, t4 string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Table 3: maps from %s pixels, unsupervised, %s VQ-VAE trained jointly (mean ± s.d. over seeds)\n\n", dataset, arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite images --dataset %s --arch %s`. Held-out episode with test-split images; "+
		"Viterbi-path map at cutoff 0.002; purity visit-weighted. The paper's numbers (its Table 3: supervised warm-up, "+
		"evaluation on training images) are in the *paper* rows.\n\n", dataset, arch)
	b.WriteString("| env | seeds | K' | N | perplexity | clone purity | state→place purity | action acc. | map recall | map F1 | H(token\\|place) | interventions | minutes/run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, env := range envs {
		rs := groups[env]
		if len(rs) == 0 {
			continue
		}
		s := evaluate.Aggregate(rs)
		c := func(m string, p int) string { return s.Format(m, p) }
		mins := s.Get("seconds.total")
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f ± %.1f |\n", env, len(rs), rs[0].NumTokens, rs[0].NumStates,
			c("perplexity", 2), c("clone_purity", 3), c("state_place_purity", 3), c("action_accuracy", 3),
			c("viterbi_map.recall", 2), c("viterbi_map.f1", 3), c("h_token_given_place", 3), interventions(rs), mins.Mean/60, mins.SD/60)
		if p, ok := paperTable3[env]; ok && dataset == "mnist" {
			fmt.Fprintf(&b, "| *paper* | | | | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *0.09–0.18* | | *≈60* |\n", p[0], p[1], p[2], p[3], p[4], p[5])
		}
	}
	b.WriteString("\nWall time per phase, minutes per run (mean ± s.d.; compaction and evaluation take seconds):\n\n")
	b.WriteString("| env | warm-up | joint | finalisation | total |\n|---|---|---|---|---|\n")
	for _, env := range envs {
		if rs := groups[env]; len(rs) > 0 {
			s := evaluate.Aggregate(rs)
			m := func(phase string) string {
				st := s.Get("seconds." + phase)
				return fmt.Sprintf("%.1f ± %.1f", st.Mean/60, st.SD/60)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", env, m("warmup"), m("joint"), m("final"), m("total"))
		}
	}
	t3 = b.String()
	b.Reset()
	fmt.Fprintf(&b, "# Table 4: projected vs Viterbi-path map read-out, %s pixels, %s VQ-VAE (mean ± s.d. over seeds)\n\n", dataset, arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite images --dataset %s --arch %s`. Projected graph: every place edge with weight > 0.01; "+
		"Viterbi-path graph: edges traversed in more than 0.2%% of the held-out steps.\n\n", dataset, arch)
	b.WriteString("| env | seeds | projected P | projected F1 | Viterbi-path P | Viterbi-path R | Viterbi-path F1 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, env := range envs {
		rs := groups[env]
		if len(rs) == 0 {
			continue
		}
		s := evaluate.Aggregate(rs)
		c := func(m string) string { return s.Format(m, 2) }
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", env, len(rs),
			c("projected_map@0.01.precision"), c("projected_map@0.01.f1"),
			c("viterbi_map.precision"), c("viterbi_map.recall"), c("viterbi_map.f1"))
		if p, ok := paperTable4[env]; ok && dataset == "mnist" {
			fmt.Fprintf(&b, "| *paper* | | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *%.2f* |\n", p[0], p[1], p[2], p[3], p[4])
		}
	}
	t4 = b.String()
	return t3, t4
}

// interventions is the anti-collapse interventions of the runs in all ("?" for a report
// that predates their record).
func interventions(rs []*evaluate.Report) string {
	n := 0
	for _, r := range rs {
		g := r.JointGuard()
		if g == nil {
			return "?"
		}
		n += len(g.Interventions)
	}
	return strconv.Itoa(n)
}

// ablations are the joint-phase variants of the ablation suite: name and the change.
var ablations = []struct {
	name  string
	apply func(*pipeline.Config)
}{
	{"joint (default)", func(*pipeline.Config) {}},
	{"frozen VQ-VAE", func(c *pipeline.Config) { c.FreezeVQVAE = true }},
	{"no length normalisation", func(c *pipeline.Config) { c.NoLengthNorm = true }},
	{"no diversity penalty", func(c *pipeline.Config) { c.AlphaDiv = 0 }},
	{"paper τ = 1, α_div = 0.1", func(c *pipeline.Config) { c.Tau, c.AlphaDiv = 1, 0.1 }},
	{"no jitter", func(c *pipeline.Config) { c.Jitter = 0 }},
	{"no pruning", func(c *pipeline.Config) { c.FinalPrune = 0 }},
	// The architecture's other setting: every frame for conv (the paper), 256 of
	// 1,024 for the MLP (pipeline.DefaultGradFrames).
	{"other gradient frames (conv: all, MLP: 256)", func(c *pipeline.Config) {
		if c.GradFrames == 0 {
			c.GradFrames = 256
		} else {
			c.GradFrames = 0
		}
	}},
	{"no collapse response", func(c *pipeline.Config) { c.CollapseLevel = 0 }},
}

// reproduceAblation runs (or loads) every ablation variant on envs × seeds with the
// given architecture and writes <out>/ablation.md: what each mechanism of the joint
// phase buys (collapse or not, token consistency, final map). With collect it trains
// nothing and tabulates the finished runs' reports (<runs>/<name>/report.json).
func reproduceAblation(envs []string, dataset, arch string, seeds int, runs, out string, collect, quiet bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var b strings.Builder
	fmt.Fprintf(&b, "# Ablation of the joint phase (%s pixels, %s VQ-VAE)\n\n", dataset, arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite ablation --arch %s --seeds %d`. One row per run; "+
		"held-out evaluation with test-split images. *Interventions*: anti-collapse rollbacks to a healthy checkpoint; "+
		"*perplexity*: codebook perplexity on the held-out frames; F1 and purity from the default (soft) read-out, "+
		"*hard F1* from Viterbi on the hard tokens.\n\n", arch, seeds)
	b.WriteString("| env | variant | seed | K' | interventions | perplexity | H(token\\|place) | map recall | map F1 | hard F1 | state→place purity | action acc. | minutes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	path := filepath.Join(out, "ablation.md")
	if arch != "conv" {
		path = filepath.Join(out, arch+"_ablation.md")
	}
	// The table is rewritten after every run, so an interrupted suite leaves the rows
	// it finished (and says how many are missing).
	total, done := len(envs)*len(ablations)*seeds, 0
	flush := func() error {
		text := b.String()
		if done < total {
			text += fmt.Sprintf("\n%d of %d runs so far; rerun the same command to resume.\n", done, total)
		}
		return writeFileAtomic(path, []byte(text))
	}
	for _, env := range envs {
		for _, ab := range ablations {
			for seed := 1; seed <= seeds; seed++ {
				cfg, err := pipeline.DefaultConfig(env)
				if err != nil {
					return err
				}
				cfg.Dataset, cfg.Seed = dataset, uint64(seed)
				cfg = cfg.WithArch(arch)
				ab.apply(&cfg)
				var progress io.Writer = stderr
				if quiet {
					progress = nil
				}
				name := runName(cfg)
				if collect {
					rep, err := evaluate.ReadJSON(filepath.Join(runs, name, pipeline.ReportFile))
					if errors.Is(err, fs.ErrNotExist) { // not run, or failed
						fmt.Fprintf(&b, "| %s | %s | %d | – | – | – | – | – | – | – | – | – | no report in %s |\n",
							env, ab.name, seed, filepath.Join(runs, name))
						done++
						continue
					}
					if err != nil {
						return err
					}
					b.WriteString(ablationRow(env, ab.name, seed, rep))
					done++
					continue
				}
				fmt.Fprintf(stderr, "%s: %s\n", name, ab.name)
				rep, err := pipeline.Run(ctx, filepath.Join(runs, name), cfg, progress)
				if errors.Is(err, context.Canceled) {
					return fmt.Errorf("interrupted: rerun the same command to resume")
				}
				if err != nil {
					// A variant that diverges is a result of the ablation, not a failure of it.
					fmt.Fprintf(stderr, "%s: %v\n", name, err)
					msg := err.Error()
					if i := strings.Index(msg, " ("); i > 0 {
						msg = msg[:i] // e.g. "pipeline: joint iteration 1103 diverged"
					}
					fmt.Fprintf(&b, "| %s | %s | %d | – | – | – | – | – | – | – | – | – | failed: %s |\n",
						env, ab.name, seed, strings.ReplaceAll(msg, "|", "/"))
					done++
					if err := flush(); err != nil {
						return err
					}
					continue
				}
				b.WriteString(ablationRow(env, ab.name, seed, rep))
				done++
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprint(stdout, b.String())
	fmt.Fprintf(stderr, "table written to %s\n", path)
	return nil
}

// ablationRow is the ablation table's row of one finished run.
func ablationRow(env, variant string, seed int, rep *evaluate.Report) string {
	hardF1 := "–"
	if o := rep.OtherReadout; o != nil && o.Decode == pipeline.DecodeHard {
		hardF1 = fmt.Sprintf("%.3f", o.ViterbiMapF1)
	}
	return fmt.Sprintf("| %s | %s | %d | %d | %v | %.2f | %.3f | %.2f | %.3f | %s | %.3f | %.3f | %.1f |\n",
		env, variant, seed, rep.NumTokens, interventions([]*evaluate.Report{rep}), rep.Perplexity, rep.HTokenGivenPlace,
		rep.ViterbiMap.Recall, rep.ViterbiMap.F1, hardF1, rep.StatePlacePurity, rep.ActionAccuracy, rep.Seconds["total"]/60)
}
