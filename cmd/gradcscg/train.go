package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

func init() {
	register("train", "learn a map from pixels: VQ-VAE warm-up → joint training → finalisation, then evaluate", runTrain)
}

// trainOptions are the flags of "gradcscg train".
type trainOptions struct {
	env, layout, dataset, run, config, from, jsonPath, size            string
	seed                                                               uint64
	quiet, reevaluate                                                  bool
	set                                                                *flag.FlagSet // to tell which flags were given
	episodes, steps, jointIters, clones, jitter, gradFrames            int
	pretrainIters, codes                                               int
	finalGrow                                                          int
	alphaDiv, alphaDivEnd, collapseFrac, lambda, tau, finalPrune       float64
	collapseLevel, stopChurn, finalChunkAbove, mergeCodes, mergeTokens float64
	decode, budget, arch, finalTrainer                                 string
	finalDoublings, finalIters                                         int
	freeze, noLengthNorm, supervised, scaled                           bool
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
	f.StringVar(&o.from, "from", "", "take the warm-up and joint phase over from this run directory (finished, or past its joint phase) and train the finalisation anew in --run: its settings, with the flags given, of which only the finalisation's and the evaluation's may differ (--merge-tokens, --final-*, --decode); the same command resumes")
	f.StringVar(&o.size, "size", "full", "full: the paper's data size (Table 1); ci: about a minute on two cores, still recovers the benchmark maps (MLP VQ-VAE, 4 × 5,000 steps); smoke: seconds, every phase, no map expected")
	f.IntVar(&o.episodes, "episodes", 0, "training episodes (0: default)")
	f.IntVar(&o.steps, "steps", 0, "steps per training episode (0: default)")
	f.IntVar(&o.jointIters, "joint-iters", -1, "joint-phase iterations, the most with --stop-churn (-1: default)")
	f.IntVar(&o.pretrainIters, "pretrain-iters", -1, "before the joint phase, train the HMM alone on the warm-up's tokens for at most this many Adam iterations (-1: default 0, off: the joint phase starts from a near-uniform HMM, as the paper)")
	f.Float64Var(&o.stopChurn, "stop-churn", -1, "end the joint phase when at most this share of a fixed sample of training frames changed token since the last checkpoint, after the α_div anneal, which starts at the first such checkpoint (-1: default; 0: run --joint-iters iterations)")
	f.IntVar(&o.clones, "clones", 0, "clones per token in the joint phase (0: default)")
	f.Float64Var(&o.alphaDiv, "alpha-div", -1, "diversity-penalty weight α_div (-1: default 1, the paper 0.1; 0 disables it)")
	f.StringVar(&o.arch, "arch", "", "VQ-VAE architecture: conv (the reference, default) or mlp (≈10× faster, weaker)")
	f.Float64Var(&o.collapseFrac, "collapse-frac", -1, "collapse guard: roll the perception back when perplexity falls below this fraction of its best (-1: default 0, off; the reference-like setting is 0.75)")
	f.IntVar(&o.gradFrames, "grad-frames", -1, "frames of each joint iteration that carry reconstruction and encoder/decoder gradients; the HMM term reads all (-1: default 256; 0: all, the paper)")
	f.Float64Var(&o.collapseLevel, "collapse-level", -1, "anti-collapse: roll back to the last healthy checkpoint and strengthen α_div when the token perplexity falls below 1 + level·(P₀ − 1), in [0, 0.5) (-1: default, 0.15 for conv and 0.25 for mlp; 0: off)")
	f.Float64Var(&o.lambda, "lambda", -1, "weight λ of the HMM term in the joint phase (-1: default 1)")
	f.Float64Var(&o.alphaDivEnd, "alpha-div-end", -1, "α_div at the end of the joint phase, reached linearly from --alpha-div after its middle (-1: default, conv 0.03, mlp 0.1; 0: no annealing)")
	f.IntVar(&o.codes, "codes", -1, "codebook size of the warm-up (-1: default, one code per class shown); with --merge-codes, more codes than classes")
	f.Float64Var(&o.mergeTokens, "merge-tokens", -1, "after the joint phase, merge its tokens that the walks cannot tell apart (same next and previous tokens under every action) while a G-test's z is below this; the encoder reads its codes through the merge (-1: default 0, off)")
	f.Float64Var(&o.mergeCodes, "merge-codes", -1, "after the warm-up, merge the codes that the walks cannot tell apart (same next and previous tokens under every action) while a G-test's z is below this, and keep the merged tokens' usage in the joint phase (-1: default 0, off)")
	f.Float64Var(&o.tau, "tau", -1, "temperature τ of the soft posterior log ρ (-1: default 0.2, the paper 1)")
	f.Float64Var(&o.finalPrune, "final-prune", -1, "after finalisation, remove clones visited by fewer than this fraction of the training steps and retrain (-1: default 0.001; 0: off)")
	f.Float64Var(&o.finalChunkAbove, "final-chunk-above", -1, fmt.Sprintf("finalisation: read random chunks of the training walks (%d of %d steps per Adam step) in a training whose pass over walks of at least %d steps would cost more than this many multiply-adds (-1: default %g; 0: the whole walks at every step)",
		chmm.ChunkBatch, chmm.ChunkLen, chmm.ChunkMinSteps, chmm.DefaultChunkAbove))
	f.IntVar(&o.finalGrow, "final-grow", -1, "double the finalisation's clone budget, at most this many times, while pruning leaves fewer than 10% of it unused and twice the clones predict held-out ends of the training walks better (-1: default 2; 0: a fixed budget)")
	f.IntVar(&o.jitter, "jitter", -1, "shift each joint-phase frame by up to this many pixels (label-free augmentation; -1: default)")
	f.StringVar(&o.decode, "decode", "", "held-out read-out: soft (Viterbi on the encoder's log ρ, default) or hard (on tokens)")
	f.StringVar(&o.finalTrainer, "final-trainer", "", "finalisation trainer: gradient (Adam on the hard tokens, the paper; default) or em (EM through a learned token confusion matrix, from one clone per token split while the held-out end of the training walks improves)")
	f.IntVar(&o.finalDoublings, "final-doublings", -1, "--final-trainer em: at most this many split rounds (-1: default 12)")
	f.IntVar(&o.finalIters, "final-iters", -1, "finalisation iterations: at most this many Adam iterations (gradient), or EM iterations per split round (em) (-1: the trainer's default: 1000, or 500 Adam iterations at --size ci)")
	f.StringVar(&o.budget, "final-budget", "", "finalisation clones: share (re-budget by token share, default) or joint (keep the joint phase's)")
	f.BoolVar(&o.freeze, "freeze-vqvae", false, "ablation: keep the VQ-VAE frozen during the joint phase")
	f.BoolVar(&o.noLengthNorm, "no-length-norm", false, "ablation: drop the 1/T length normalisation of the HMM term")
	f.BoolVar(&o.scaled, "scaled-emissions", false, "joint phase: the HMM term reads each frame's soft posterior over the minibatch's mean posterior (scaled likelihoods), so merging tokens the map cannot tell apart gains nothing (default off: the posterior, as the paper)")
	f.BoolVar(&o.supervised, "supervised-warmup", false, "comparison only: add the reference's digit-classification loss to the warm-up (uses labels)")
	f.StringVar(&o.jsonPath, "json", "", "also write the evaluation report as JSON to this path")
	f.BoolVar(&o.reevaluate, "reevaluate", false, "re-score the finished run in --run with the current evaluation (rewrites its report.json)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	if err := parseFlags(f, args); err != nil {
		return err
	}
	o.set = f
	if o.from != "" && (o.run == "" || o.config != "" || o.reevaluate) {
		return fmt.Errorf("--from %s: needs --run NEW_DIR, and neither --config (the settings are the run's) nor --reevaluate", o.from)
	}
	cfg, err := o.pipelineConfig()
	if err != nil {
		return err
	}
	if err := checkMemory(pipeline.EstimateBytes(cfg), fmt.Sprintf("a run of %d × %d steps with up to %d clones per token", cfg.Episodes, cfg.Steps, max(cfg.Clones, cfg.FinalClones))); err != nil {
		return err
	}
	dir := o.run
	if dir == "" {
		dir = filepath.Join("runs", experiment.RunName(cfg))
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
		if o.from != "" {
			if err := pipeline.Branch(dir, o.from, cfg); err != nil {
				return err
			}
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

// pipelineConfig builds the run's configuration: --config, the --from run's, or the
// environment's defaults (reduced by --size ci), then the flags that were given.
func (o *trainOptions) pipelineConfig() (pipeline.Config, error) {
	var cfg pipeline.Config
	if o.from != "" {
		o.config = filepath.Join(o.from, pipeline.ConfigFile)
		if _, err := os.Stat(o.config); err != nil {
			return cfg, fmt.Errorf("--from %s: no run there (%v)", o.from, err)
		}
	}
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
	if o.clones > 0 {
		cfg.Clones = o.clones
	}
	override(&cfg.AlphaDiv, o.alphaDiv)
	if o.decode != "" {
		cfg.Decode = o.decode
	}
	switch {
	case o.arch != "" && o.config != "":
		cfg.VQVAE.Arch = vqvae.Arch(o.arch) // the file's settings stay the user's
	case o.arch != "":
		cfg = cfg.WithArch(o.arch) // before the overrides: it sets arch-dependent defaults
	}
	override(&cfg.JointIters, o.jointIters)
	override(&cfg.PretrainIters, o.pretrainIters)
	if o.codes > 0 { // the flag's range is [2, 4096]; -1 (and a zero value) keep the default
		cfg.VQVAE.K = o.codes
	}
	override(&cfg.MergeCodes, o.mergeCodes)
	override(&cfg.MergeTokens, o.mergeTokens)
	override(&cfg.StopChurn, o.stopChurn)
	override(&cfg.CollapseFrac, o.collapseFrac)
	override(&cfg.GradFrames, o.gradFrames)
	override(&cfg.CollapseLevel, o.collapseLevel)
	override(&cfg.Lambda, o.lambda)
	override(&cfg.VQVAE.Tau, o.tau)
	override(&cfg.AlphaDivEnd, o.alphaDivEnd)
	if o.finalTrainer != "" {
		cfg = cfg.WithFinalTrainer(o.finalTrainer) // and its FinalIters
	}
	override(&cfg.FinalIters, o.finalIters)
	override(&cfg.FinalDoublings, o.finalDoublings)
	override(&cfg.FinalPrune, o.finalPrune)
	override(&cfg.FinalGrow, o.finalGrow)
	override(&cfg.FinalChunkAbove, o.finalChunkAbove)
	override(&cfg.Jitter, o.jitter)
	if o.budget != "" {
		cfg.FinalBudget = o.budget
	}
	cfg.FreezeVQVAE = cfg.FreezeVQVAE || o.freeze
	cfg.NoLengthNorm = cfg.NoLengthNorm || o.noLengthNorm
	cfg.ScaledEmissions = cfg.ScaledEmissions || o.scaled
	cfg.VQVAE.Classify = cfg.VQVAE.Classify || o.supervised
	return cfg, cfg.Validate()
}

// override sets *dst to v unless v is negative (a flag left at its "default" value -1).
func override[T int | float64](dst *T, v T) {
	if v >= 0 {
		*dst = v
	}
}
