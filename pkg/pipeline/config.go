package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Clone budgets (paper Sec. 3.8). None of them needs labels.
const (
	// BudgetUniform gives every token JointConfig.Clones clones.
	BudgetUniform = "uniform"
	// BudgetShare distributes Clones·K' clones over the K' compacted tokens in proportion
	// to each token's share of the training frames (at least one clone per token).
	BudgetShare = "share"
	// FinalFromJoint continues the finalisation from the joint phase's HMM.
	FinalFromJoint = "joint"
)

// Finalisation trainers (FinalConfig.Trainer).
const (
	// FinalGradient trains the map by Adam on the hard tokens (the paper), on a budget
	// by token share that may grow (FinalConfig.BudgetDoublings) and is pruned.
	FinalGradient = "gradient"
	// FinalEM trains the map by EM through a learned token confusion matrix C, from one
	// clone per token split in two while the held-out end of the training walks
	// improves (FinalConfig.SplitRounds), after the first split only the clones that
	// used both copies of their last split: a misread token is explained by C instead
	// of by a clone.
	FinalEM = "em"
)

// Constants of the finalisation.
const (
	// FinalGradientIters and FinalEMIters are the trainers' FinalConfig.Iters
	// (WithFinalTrainer): Adam iterations, or soft EM iterations per split round.
	FinalGradientIters = 1000
	FinalEMIters       = 1000
	// DefaultSplitRounds is DefaultFinal's SplitRounds: FinalEM's split rounds.
	DefaultSplitRounds = 12
	// DefaultBudgetDoublings is DefaultFinal's BudgetDoublings: the gradient
	// finalisation's budget may double twice.
	DefaultBudgetDoublings = 2
	// GrowSlack is the share of the finalisation's clones that pruning must leave unused
	// for a grown budget to count as large enough, unchecked (FinalConfig.BudgetDoublings).
	GrowSlack = 0.1
	// GrowHoldOut is the end of every training walk that a budget check holds out, and
	// GrowGain the bits per held-out step that twice the budget must save to be kept.
	GrowHoldOut = 0.1
	GrowGain    = 0.01
	// SplitGain is the bits per held-out step that a split round must save for FinalEM
	// to count it as progress.
	SplitGain = 0.0005
	// SplitPatience is how many split rounds in a row may miss SplitGain before FinalEM
	// stops. A finalisation begun before finalEMState.Patience (Patience 0) goes on with
	// legacySplitPatience and without the SplitMinSteps stop.
	SplitPatience       = 1
	legacySplitPatience = 2
	// SplitMinSteps is the training steps per state that FinalEM's walks must hold for
	// another split round: it stops where splitting the clones in use would leave fewer.
	SplitMinSteps = 100
	// MissWindow and MissMargin stop a FinalEM split round's EM before it converges
	// where its held-out ends, checked every missCheckEvery E-steps, have gained less
	// than SplitGain over the last MissWindow E-steps while standing more than
	// MissMargin bits per step above the bar (the best round's less SplitGain): it
	// splits within the round if it can, else the round ends as a miss.
	MissWindow     = 100
	MissMargin     = 10 * SplitGain
	missCheckEvery = 50
	// ConfusionMin drops the entries of the learned confusion matrix below it after
	// every split round, and ConfusionBeam is the share of the filtered mass below which
	// a candidate token is skipped at a step (chmm.EMConfig.ConfusionBeam).
	ConfusionMin  = 1e-3
	ConfusionBeam = 1e-4
	// JointMaxStates bounds the joint phase's HMM in a bigger world (WorldSettings): where
	// the world's clone budget would give it more states, joint.clones is set to
	// JointMaxStates over its classes. The joint HMM's dense forward pass costs N² a
	// step, and the EM finalisation of a bigger world builds the map anew from one clone
	// per token, so the joint phase's map only shapes the tokens.
	JointMaxStates = 400
	// FinalEMPseudocount is FinalEM's pseudocount, the original CSCG's for rooms.
	FinalEMPseudocount = 2e-3
	// ConfusionMeta is the key of the model file's metadata that holds the confusion
	// matrix a FinalEM map reads its tokens through (JSON, [K][K]).
	ConfusionMeta = "confusion"
)

// Read-outs of the held-out episode (EvalConfig.Decode).
const (
	DecodeSoft = "soft"
	DecodeHard = "hard"
)

// ConfigVersion is the format of the config.json that this version writes: the
// settings nested by phase. Version 1 (no "version" field) held them flat; ReadConfig
// and run directories read both.
const ConfigVersion = 2

// Config is every setting of a run (paper Table 1 plus ours), nested by phase. It is
// written to config.json in the run directory; a rerun with a different Config is
// refused. Start from DefaultConfig (or ConfigFor), change fields, and let Validate
// check them: each field's comment gives its default and its effect, the struct tags
// its key (the JSON path, e.g. joint.iters) and its allowed range (Keys lists them).
type Config struct {
	// Version is the configuration's format (ConfigVersion); a reader sets it.
	Version int    `json:"version" range:"[2,2]" help:"format of config.json"`
	Env     string `json:"env" help:"built-in environment, or the custom layout's name"`
	// Layout is a custom environment in the gridworld layout format (the file's text, so
	// the run directory is self-contained); empty for built-in environments.
	Layout  string `json:"layout" help:"custom layout (text); empty for a built-in environment"`
	Dataset string `json:"dataset" enum:"mnist|fashion" help:"images shown at the places"`
	// Seed draws the walks, images, initialisation, minibatches and held-out episode (1).
	Seed uint64 `json:"seed" help:"random seed"`
	// Preset names the preset the settings started from (Presets; "" none). A label, not
	// a setting: a run resumes under any preset whose settings equal its own.
	Preset string `json:"preset,omitempty" help:"preset the settings started from (a label)"`

	Data   DataConfig   `json:"data"`
	VQVAE  vqvae.Config `json:"vqvae"`
	Warmup WarmupConfig `json:"warmup"`
	Joint  JointConfig  `json:"joint"`
	Final  FinalConfig  `json:"final"`
	Refine RefineConfig `json:"refine"`
	Eval   EvalConfig   `json:"eval"`

	// StopAfterJoint, if > 0, stops the run (as if interrupted) after that many joint
	// iterations of this call. Not part of the run's identity (not saved).
	StopAfterJoint int `json:"-"`
}

// DataConfig is the training data (paper Table 1: episodes × steps).
type DataConfig struct {
	// Episodes is the number of training walks (the environment's, gridworld.Defaults).
	Episodes int `json:"episodes" range:"[1,1000]" help:"training episodes"`
	// Steps is the observations per training walk (the environment's).
	Steps int `json:"steps" range:"[2,10000000]" help:"observations per training episode"`
}

// WarmupConfig is phase 1: the VQ-VAE alone on the training frames, no labels.
type WarmupConfig struct {
	// Epochs is the passes over the training frames (4); 0: no warm-up.
	Epochs int `json:"epochs" range:"[0,1000]" help:"passes over the training frames (0: none)"`
	// Batch is the frames per step (128); at most episodes × steps.
	Batch int `json:"batch" range:"[1,65536]" help:"frames per warm-up step"`
	// LR is the Adam rate (vqvae.DefaultLearningRate).
	LR float64 `json:"lr" range:"(0,1]" help:"Adam rate of the warm-up"`
	// Recenter re-initialises the codebook after the warm-up by k-means++ and Lloyd
	// iterations on the encoder's latents of RecenterFrames training frames, before
	// compaction (true). false: the codebook the warm-up's EMA left.
	Recenter bool `json:"recenter" help:"re-seed the codebook by k-means on the warmed-up latents"`
	// RecenterFrames is the frames Recenter reads (8192; at least vqvae.k).
	RecenterFrames int `json:"recenter_frames" range:"[0,10000000]" help:"frames the re-seeding reads (at least vqvae.k)"`
	// MergeCodes, if > 0, merges the kept codes that the training walks cannot tell
	// apart (chmm.MergeTokens at z < MergeCodes) into one token each, and the joint
	// phase's diversity term then keeps the merged tokens' shares instead of uniform
	// usage; meant for a codebook larger than the kinds of place (vqvae.k). 0: off.
	MergeCodes float64 `json:"merge_codes" range:"[0,1000000]" help:"merge codes the walks cannot tell apart below this G-test z (0: off)"`
}

// JointConfig is phase 2: the VQ-VAE and the HMM trained together (Sec. 3.6,
// Algorithm 1), and the clone budget the HMM starts with (Sec. 3.8).
type JointConfig struct {
	// Clones is the clones per token (uniform), or their mean (share) (the environment's).
	Clones int `json:"clones" range:"[1,2000]" help:"clones per token (mean for budget share)"`
	// Budget is BudgetUniform, or BudgetShare where the environment budgets per class.
	Budget string `json:"budget" enum:"uniform|share" help:"clone budget: uniform, or by token share"`
	// PretrainIters, if > 0, trains the HMM alone on the warm-up's hard tokens (the
	// finalisation's Adam settings, at most this many iterations) before the joint
	// phase, which then starts from a map of the walks. 0: from chmm.New (the paper).
	PretrainIters int `json:"pretrain_iters" range:"[0,1000000]" help:"HMM iterations on the warm-up's tokens before the joint phase (0: off)"`
	// ScaledEmissions makes the HMM term read each frame's posterior over the
	// minibatch's mean posterior, ρ_t(k)/ρ̄(k), so that merging tokens the map cannot
	// tell apart gains nothing. false: ρ_t(k) (the paper).
	ScaledEmissions bool `json:"scaled_emissions" help:"HMM term reads ρ_t(k)/ρ̄(k) (scaled likelihoods)"`
	// Iters is the joint iterations, each one minibatch of Batch chunks (1500); the
	// most with StopChurn. 0: no joint training.
	Iters int `json:"iters" range:"[0,1000000]" help:"joint iterations (the most with stop_churn)"`
	// ChunkLen is T, the steps of a chunk (256); at most data.steps.
	ChunkLen int `json:"chunk_len" range:"[2,10000000]" help:"steps per chunk (at most data.steps)"`
	// Batch is |B|, the chunks per iteration (4).
	Batch int `json:"batch" range:"[1,1024]" help:"chunks per joint iteration"`
	// Lambda is λ, the weight of the HMM term (1); 0: no HMM term.
	Lambda float64 `json:"lambda" range:"[0,1000]" help:"weight λ of the HMM term"`
	// AnnealFrac makes λ rise linearly over AnnealFrac·Iters iterations (1/4); 0: λ from
	// the start.
	AnnealFrac float64 `json:"anneal_frac" range:"[0,1]" help:"share of the iterations over which λ rises"`
	// AlphaDiv is α_div, the weight of the diversity penalty (1; the paper 0.1); 0: off.
	AlphaDiv float64 `json:"alpha_div" range:"[0,100]" help:"weight α_div of the diversity penalty (0: off)"`
	// AlphaDivEnd, if > 0, anneals α_div linearly from AlphaDiv at the middle of the
	// phase to AlphaDivEnd at its end (DefaultAlphaDivEnd: conv 0.03, MLP 0.1). 0: α_div
	// stays AlphaDiv.
	AlphaDivEnd float64 `json:"alpha_div_end" range:"[0,100]" help:"α_div at the end of the phase (0: no anneal)"`
	// Jitter shifts every frame by a random offset in [-Jitter, Jitter]² pixels
	// (label-free augmentation) (2); 0: frames as drawn.
	Jitter int `json:"jitter" range:"[0,27]" help:"random shift of each frame, in pixels (0: none)"`
	// LR is the Adam rate of the VQ-VAE (3e-4).
	LR float64 `json:"lr" range:"(0,1]" help:"Adam rate of the VQ-VAE"`
	// HMMLRFactor makes the Adam rate of (π, Θ) HMMLRFactor·LR (100).
	HMMLRFactor float64 `json:"hmm_lr_factor" range:"(0,10000]" help:"Adam rate of the HMM over that of the VQ-VAE"`
	// GradFrames is how many of an iteration's Batch·ChunkLen frames, drawn at random,
	// get a reconstruction and encoder/decoder gradients; the HMM and diversity terms
	// read every frame (DefaultGradFrames: conv 256, MLP all). 0: every frame (the paper).
	GradFrames int `json:"grad_frames" range:"[0,1048576]" help:"frames with reconstruction gradients (0: all)"`
	// CollapseFrac, if > 0, rolls the perception back to its best snapshot and
	// multiplies λ by ThrottleFactor when the smoothed perplexity falls below this
	// fraction of its best. 0: off (the default).
	CollapseFrac float64 `json:"collapse_frac" range:"[0,1)" help:"perplexity share of its best that rolls back (0: off)"`
	// ThrottleFactor multiplies λ at a CollapseFrac rollback (0.5).
	ThrottleFactor float64 `json:"throttle_factor" range:"(0,1]" help:"λ factor at a collapse_frac rollback"`
	// CollapseLevel: when the smoothed hard-token perplexity falls below
	// 1 + CollapseLevel·(P₀ − 1), P₀ the warm-up's, the phase rolls back to its last
	// healthy checkpoint, doubles α_div, halves the rate, revives unused codes and goes
	// on (DefaultCollapseLevel: conv 0.15, MLP 0.25). 0: off (non-finite steps still
	// roll back).
	CollapseLevel float64 `json:"collapse_level" range:"[0,0.5)" help:"perplexity level of the collapse response (0: off)"`
	// MaxInterventions bounds the rollbacks of one run; one more is an error (4).
	MaxInterventions int `json:"max_interventions" range:"[0,20]" help:"most rollbacks before the run fails"`
	// FreezeVQVAE trains only (π, Θ): the VQ-VAE stays as the warm-up left it
	// (an ablation; false).
	FreezeVQVAE bool `json:"freeze_vqvae" help:"ablation: train only the HMM"`
	// NoLengthNorm drops the 1/T_b length normalisation of the HMM term (an ablation;
	// false).
	NoLengthNorm bool `json:"no_length_norm" help:"ablation: no 1/T length normalisation"`
	// CheckpointEvery is the joint iterations between checkpoints (50).
	CheckpointEvery int `json:"checkpoint_every" range:"[1,1000000]" help:"joint iterations between checkpoints"`
	// StopChurn, if > 0, ends the phase on a label-free rule, Iters becoming a maximum:
	// the churn is the share of a fixed sample of training frames whose token changed
	// since the previous checkpoint; the α_div anneal starts at the first checkpoint
	// after λ's ramp with churn ≤ StopChurn (at the latest Iters/4 before the end) and
	// lasts Iters/4, and the phase ends at the first checkpoint after it with churn ≤
	// StopChurn. 0: off (Iters iterations, the anneal over the second half).
	StopChurn float64 `json:"stop_churn" range:"[0,1]" help:"token churn that ends the phase (0: off)"`
}

// FinalConfig is phase 3: the map trained on the frozen encoder's hard tokens of the
// whole training walks.
type FinalConfig struct {
	// Trainer is FinalGradient (the paper; default) or FinalEM. FinalEM starts from one
	// clone per token and ignores Budget, Clones, LR, Entropy, Patience, Tol,
	// PlateauSplits, BudgetDoublings and Prune.
	Trainer string `json:"trainer" enum:"gradient|em" help:"finalisation trainer: gradient (Adam) or em (EM through a token confusion matrix)"`
	// MergeTokens, if > 0, merges the joint phase's tokens that the training walks cannot
	// tell apart (chmm.MergeTokens at z < MergeTokens) into one token of the map each;
	// the encoder reads its codes through the merge. 0: off (the paper).
	MergeTokens float64 `json:"merge_tokens" range:"[0,1000000]" help:"merge tokens the walks cannot tell apart below this G-test z (0: off)"`
	// Budget is BudgetShare (re-allocate Clones·K' clones by each token's share of the
	// frames under the final encoder and start the HMM afresh; default) or
	// FinalFromJoint (continue from the joint phase's HMM: the paper).
	Budget string `json:"budget" enum:"share|joint" help:"share: re-budget by token share; joint: keep the joint phase's HMM"`
	// Clones is the mean clones per token for BudgetShare (2× the environment's budget).
	Clones int `json:"clones" range:"[0,2000]" help:"mean clones per token (budget share)"`
	// Iters is the most Adam iterations (FinalGradientIters), or FinalEM's soft EM
	// iterations per split round (FinalEMIters).
	Iters int `json:"iters" range:"[0,1000000]" help:"Adam iterations, or EM iterations per split round"`
	// LR is the Adam rate on the logits (0.1).
	LR float64 `json:"lr" range:"(0,10]" help:"Adam rate of the finalisation"`
	// Entropy is the transition-entropy weight η (1e-3); 0: none.
	Entropy float64 `json:"entropy" range:"[0,100]" help:"transition-entropy weight η"`
	// Patience is the iterations of a plateau (100).
	Patience int `json:"patience" range:"[0,1000000]" help:"iterations of a plateau"`
	// Tol is the label-free stop: a plateau is Patience iterations in which ℓ/T (nats
	// per step) rose by at most Tol; at a plateau the trainer splits clones
	// (PlateauSplits rounds), else stops; the same rule ends the pruned map's
	// retraining (1e-3). 0: only the iteration limit stops.
	Tol float64 `json:"tol" range:"[0,1]" help:"least gain in ℓ/T over a plateau"`
	// PlateauSplits is the gradient trainer's clone-splitting rounds at plateaus (5);
	// 0: none.
	PlateauSplits int `json:"plateau_splits" range:"[0,100]" help:"gradient: clone-splitting rounds at plateaus"`
	// SplitRounds bounds FinalEM's splits of every kept clone (DefaultSplitRounds; the
	// rounds between them that split only the clones that used both copies are not
	// counted); 0: one clone per token.
	SplitRounds int `json:"split_rounds" range:"[0,16]" help:"em: most rounds of splitting every clone in two"`
	// BudgetDoublings lets the gradient finalisation's budget size itself: where twice
	// the budget predicts held-out ends of the training walks better (GrowGain bits per
	// step), Clones doubles and the finalisation starts again, at most this many times
	// (DefaultBudgetDoublings). The first budget is always checked; a doubled one only
	// where pruning leaves fewer than GrowSlack of its clones unused. Needs BudgetShare
	// and Prune > 0. 0: a fixed budget.
	BudgetDoublings int `json:"budget_doublings" range:"[0,6]" help:"gradient: most doublings of the clone budget (0: fixed)"`
	// ChunkAbove makes a training read random chunks of the training walks when one pass
	// over walks of at least chmm.ChunkMinSteps steps would cost more than this many
	// multiply-adds (chmm.DefaultChunkAbove). 0: the whole walks at every iteration.
	ChunkAbove float64 `json:"chunk_above" range:"[0,1e15]" help:"multiply-adds per pass above which training reads chunks (0: never)"`
	// Prune, if > 0, removes after the finalisation every clone that the training
	// walks' Viterbi paths visit fewer than Prune × (training steps) times (each token
	// keeps its most visited clone) and retrains for PruneIters (0.001). 0: no pruning.
	Prune float64 `json:"prune" range:"[0,1)" help:"visit share below which a clone is pruned (0: off)"`
	// PruneIters is the iterations of the pruned map's retraining (300).
	PruneIters int `json:"prune_iters" range:"[0,1000000]" help:"iterations after pruning"`
	// KeepMerged keeps the gradient finalisation's map even where the verdict's test
	// for merged places flags it (read through a confusion matrix fitted to it, more
	// than chmm.NoisyUnexplained of the training steps surprise it where no misread
	// explains them: chmm.Diagnosis.Reread). false (default): such a map is finalised
	// again, from the same tokens, by EM through a learned confusion matrix (FinalEM);
	// EM's map is kept unless it reads as merged too, and then the map that predicts a
	// validation walk better. The report's training.fallback says why, training.compared
	// how the maps compared. FinalEM ignores it.
	KeepMerged bool `json:"keep_merged" help:"gradient: keep a map the verdict reads as merged (default: finalise again by EM; if EM's map reads as merged too, keep the map that predicts a validation walk better)"`
}

// EvalConfig is the evaluation on a held-out episode with test-split images.
type EvalConfig struct {
	// Steps is the held-out episode's length (data.steps).
	Steps int `json:"steps" range:"[2,10000000]" help:"length of the held-out episode"`
	// Decode is the read-out: DecodeSoft (default) runs Viterbi with the encoder's soft
	// emissions log ρ; DecodeHard on the hard tokens (the paper). The report holds both.
	Decode string `json:"decode" enum:"soft|hard" help:"held-out read-out: soft (log ρ) or hard (tokens)"`
}

// DefaultWarmup returns the warm-up's defaults.
func DefaultWarmup() WarmupConfig {
	return WarmupConfig{Epochs: 4, Batch: 128, LR: vqvae.DefaultLearningRate, Recenter: true, RecenterFrames: 8192}
}

// DefaultJoint returns the joint phase's defaults for a VQ-VAE architecture, with
// the clone budget clones per token of kind budget.
func DefaultJoint(arch string, clones int, budget string) JointConfig {
	return JointConfig{
		Clones: clones, Budget: budget,
		Iters: 1500, ChunkLen: 256, Batch: 4,
		Lambda: 1, AnnealFrac: 0.25, AlphaDiv: 1, AlphaDivEnd: DefaultAlphaDivEnd(arch), Jitter: 2,
		LR: 3e-4, HMMLRFactor: 100,
		GradFrames: DefaultGradFrames(arch), CollapseLevel: DefaultCollapseLevel(arch), MaxInterventions: 4,
		ThrottleFactor: 0.5, CheckpointEvery: 50,
	}
}

// DefaultFinal returns the finalisation's defaults, clones per token on average.
func DefaultFinal(clones int) FinalConfig {
	return FinalConfig{
		Trainer: FinalGradient, SplitRounds: DefaultSplitRounds,
		Budget: BudgetShare, Clones: clones,
		Iters: FinalGradientIters, LR: 0.1, Entropy: 1e-3, Patience: 100, Tol: 1e-3, PlateauSplits: 5,
		ChunkAbove: chmm.DefaultChunkAbove,
		Prune:      0.001, PruneIters: 300, BudgetDoublings: DefaultBudgetDoublings,
	}
}

// DefaultConfig returns the configuration of a built-in environment: GenericConfig
// with the settings chosen for its world (WorldSettings).
//
// The generic defaults are the paper's (Table 1) with these changes: the environment's
// data size, K = its number of classes, τ = 0.2 (the paper: 1), its clone budget (a
// per-class budget becomes one by token share with the same mean), 4 warm-up epochs
// of batch 128, 1500 joint iterations of 4 chunks × 256 steps (the paper: 2000–5000)
// with λ = 1 annealed over a quarter of them, α_div = 1 annealed over the second half
// to 0.03 for the conv VQ-VAE and to the paper's 0.1 for the MLP, the collapse guard
// of CollapseFrac off, Adam 3e-4 with 100× for (π, Θ), and a finalisation with
// η = 1e-3 at rate 0.1 (the paper: 1e-2) on clones re-budgeted by token share, twice
// the joint phase's on average. Presets("paper") has the paper's values.
func DefaultConfig(env string) (Config, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return Config{}, err
	}
	return ConfigFor(e), nil
}

// ConfigFor is DefaultConfig for any environment, built-in or loaded from a layout
// file (gridworld.LoadLayout): GenericConfig with the settings chosen for its world
// (WorldSettings). A custom environment is stored in Config.Layout and gets
// gridworld.GenericDefaults' data size and clone budget.
func ConfigFor(e *gridworld.Env) Config {
	c := GenericConfig(e)
	for _, ch := range WorldSettings(e) {
		if err := c.Set(ch.KV()); err != nil {
			panic(fmt.Sprintf("pipeline: world %s's setting %q: %v", c.Env, ch.KV(), err))
		}
	}
	return c
}

// GenericConfig is ConfigFor without the settings chosen for its world (WorldSettings):
// what every environment starts from, and what run names and the printed
// configuration are relative to.
func GenericConfig(e *gridworld.Env) Config {
	d := e.Defaults()
	layout := ""
	if b, err := gridworld.Named(e.Name); err != nil || b.Layout() != e.Layout() {
		layout = e.Layout()
	}
	v := vqvae.DefaultConfig(len(e.ClassesUsed())) // one code per class shown (a layout may skip class ids)
	v.Tau = 0.2
	// A per-class clone budget (room: 20 clones for the interior digit) needs labels; the
	// label-free stand-in distributes the same total over the tokens by their share of
	// the frames (BudgetShare, rounded mean per token).
	clones, budget := d.ClonesPerClass, BudgetUniform
	if len(d.ClonesByClass) > 0 {
		total := 0
		for _, c := range d.Clones(e.NumClasses()) {
			total += c
		}
		clones, budget = max(1, int(math.Round(float64(total)/float64(e.NumClasses())))), BudgetShare
	}
	return Config{
		Version: ConfigVersion, Env: e.Name, Layout: layout, Dataset: "mnist", Seed: 1,
		Data:   DataConfig{Episodes: d.Episodes, Steps: d.Steps},
		VQVAE:  v,
		Warmup: DefaultWarmup(),
		Joint:  DefaultJoint(string(v.Arch), clones, budget),
		Final:  DefaultFinal(2 * d.ClonesPerClass),
		Refine: DefaultRefine(),
		Eval:   EvalConfig{Steps: d.Steps, Decode: DecodeSoft},
	}
}

// A Choice is a setting the pipeline chose for a world (WorldSettings), and why.
type Choice struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// KV returns the choice as a Set argument, "key=value".
func (c Choice) KV() string { return c.Key + "=" + c.Value }

// WorldSettings returns the settings chosen for a pixel run on world e, built-in or
// custom, from its size and the spread of its classes over its places (the world the
// walks are drawn from; no frame's label is read):
//
//   - from gridworld.BiggerPlaces places: scaled emissions (joint.scaled_emissions),
//     the walks' token merge at z 100 (final.merge_tokens) and the EM finalisation
//     (final.trainer=em), which grows the budget by splitting and reads the tokens
//     through a learned confusion matrix;
//   - there, when one class is at more than half of the places: a warm-up of 4 codes
//     per class (vqvae.k) merged by the walks' contexts at z 30 (warmup.merge_codes),
//     since k-means on the warm-up's latents gives that class's frames most codes;
//   - there, when the world's clone budget would give the joint HMM more than
//     JointMaxStates states: JointMaxStates over its classes (joint.clones);
//   - below gridworld.BiggerPlaces places, when one class is at more than half of the
//     places: the EM finalisation alone (final.trainer=em), since the gradient one,
//     reading hard tokens, merges places of the crowded class's token that EM through
//     a learned confusion matrix tells apart.
//
// ConfigFor applies them; a --set or a preset over them wins.
func WorldSettings(e *gridworld.Env) []Choice {
	p := e.NumPlaces()
	n := e.ClassPlaces()
	top := slices.Index(n, slices.Max(n))
	crowded := 2*n[top] > p // one class at more than half of the places
	if p < gridworld.BiggerPlaces {
		if crowded {
			return []Choice{{"final.trainer", "em", fmt.Sprintf("class %d is at %d of the %d places: EM reads the tokens through a learned confusion matrix "+
				"and grows the budget by splitting, where the gradient finalisation merges places of that class", top, n[top], p)}}
		}
		return nil
	}
	big := fmt.Sprintf("%d places (bigger worlds: %d or more)", p, gridworld.BiggerPlaces)
	out := []Choice{
		{"joint.scaled_emissions", "true", big + ": the joint phase holds apart tokens its early map cannot tell apart"},
		{"final.merge_tokens", "100", big + ": tokens the walks cannot tell apart are merged before the finalisation"},
		{"final.trainer", "em", big + ": EM grows the budget by splitting and reads the tokens through a learned confusion matrix"},
	}
	if total, k := jointStates(e), len(e.ClassesUsed()); total > JointMaxStates && k > 0 {
		per := max(1, JointMaxStates/k)
		out = append(out, Choice{"joint.clones", strconv.Itoa(per), fmt.Sprintf("%s: the joint HMM would hold %d states, and its dense forward pass costs N² a step; "+
			"the EM finalisation builds the map anew, so the joint phase gets %d clones per token (%d in all)", big, total, per, per*k)})
	}
	if crowded {
		k := 4 * len(e.ClassesUsed())
		why := fmt.Sprintf("class %d is at %d of the %d places: the warm-up gives its frames most codes", top, n[top], p)
		out = append(out,
			Choice{"vqvae.k", strconv.Itoa(k), why + "; 4 codes per class"},
			Choice{"warmup.merge_codes", "30", why + "; codes the walks cannot tell apart are merged at z 30"})
	}
	return out
}

// jointStates is the states of the joint phase's HMM under e's own clone budget: its
// clones per class over the classes shown.
func jointStates(e *gridworld.Env) int {
	c := e.Defaults().Clones(e.NumClasses())
	total := 0
	for _, id := range e.ClassesUsed() {
		total += c[id]
	}
	return total
}

// WorldChoices returns the WorldSettings of c's environment that c keeps (a
// setting over one of them drops it), to record in the run's report; for a custom
// layout of gridworld.BiggerPlaces places or more, first the data size and clone
// budget sized by the world (gridworld.GenericDefaults).
func (c Config) WorldChoices() []Choice {
	e, err := c.Environment()
	if err != nil {
		return nil
	}
	all := WorldSettings(e)
	if c.Layout != "" && e.NumPlaces() >= gridworld.BiggerPlaces {
		g, why := GenericConfig(e), e.Defaults().Source
		var sized []Choice
		for _, k := range []string{"data.episodes", "data.steps", "joint.clones"} {
			v, _ := g.Get(k)
			sized = append(sized, Choice{k, v, why})
		}
		all = append(sized, all...)
	}
	var out []Choice
	for _, ch := range all {
		if v, ok := c.Get(ch.Key); ok && v == ch.Value {
			out = append(out, ch)
		}
	}
	return out
}

// Environment returns the run's grid world: the built-in Env, or Layout parsed.
func (c Config) Environment() (*gridworld.Env, error) {
	if c.Layout == "" {
		return gridworld.Named(c.Env)
	}
	e, err := gridworld.ParseLayout(c.Env, strings.NewReader(c.Layout))
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	return e, nil
}

// VQVAEConfig returns the VQ-VAE configuration with k codes (c.VQVAE otherwise).
func (c Config) VQVAEConfig(k int) vqvae.Config {
	v := c.VQVAE
	v.K = k
	return v
}

// DefaultGradFrames is the default JointConfig.GradFrames of an architecture: 256
// for the conv VQ-VAE, every frame (0) for the MLP.
func DefaultGradFrames(arch string) int {
	if arch == string(vqvae.ArchMLP) {
		return 0
	}
	return 256
}

// DefaultCollapseLevel is the default JointConfig.CollapseLevel of an architecture:
// 0.15 for the conv VQ-VAE, 0.25 for the MLP.
func DefaultCollapseLevel(arch string) float64 {
	if arch == string(vqvae.ArchMLP) {
		return 0.25
	}
	return 0.15
}

// DefaultAlphaDivEnd is the default JointConfig.AlphaDivEnd of an architecture: 0.03
// for the conv VQ-VAE, the paper's 0.1 for the MLP.
func DefaultAlphaDivEnd(arch string) float64 {
	if arch == string(vqvae.ArchMLP) {
		return 0.1
	}
	return 0.03
}

// WithArch returns c with the VQ-VAE architecture arch and, of the settings whose
// default depends on it (GradFrames, CollapseLevel, AlphaDivEnd), those that hold the
// current architecture's default set to arch's: a setting changed from its default
// (by a preset, a file or Set) is kept.
func (c Config) WithArch(arch string) Config {
	was := string(c.VQVAE.Arch)
	c.VQVAE.Arch = vqvae.Arch(arch)
	j := &c.Joint
	if j.GradFrames == DefaultGradFrames(was) {
		j.GradFrames = DefaultGradFrames(arch)
	}
	if j.CollapseLevel == DefaultCollapseLevel(was) {
		j.CollapseLevel = DefaultCollapseLevel(arch)
	}
	if j.AlphaDivEnd == DefaultAlphaDivEnd(was) {
		j.AlphaDivEnd = DefaultAlphaDivEnd(arch)
	}
	return c
}

// WithFinalTrainer returns c finalised by trainer (FinalGradient or FinalEM) with that
// trainer's Final.Iters (FinalGradientIters or FinalEMIters), or c itself if trainer
// finalises it already (its Final.Iters kept, such as CISized's 500).
func (c Config) WithFinalTrainer(trainer string) Config {
	if trainer == c.Final.Trainer {
		return c
	}
	c.Final.Trainer = trainer
	c.Final.Iters = FinalGradientIters
	if trainer == FinalEM {
		c.Final.Iters = FinalEMIters
	}
	return c
}

// CISized returns c reduced to about a minute on two cores, for demos, notebooks and
// the CI map-recovery test: the MLP VQ-VAE (WithArch), at most 4 episodes of 5,000
// steps (held-out episode 5,000 steps), 6 warm-up epochs of batch 64 re-seeded from
// 4,000 frames, 300 joint iterations of 4 chunks × 128 steps, 500 finalisation
// iterations, pruning at 0.2% of the steps, and neither of the walks' merges
// (Warmup.MergeCodes, Final.MergeTokens). Everything else is c's.
func CISized(c Config) Config {
	c = c.WithArch(string(vqvae.ArchMLP))
	c.Data.Episodes = min(c.Data.Episodes, 4)
	c.Data.Steps, c.Eval.Steps = 5000, 5000
	c.Warmup.Epochs, c.Warmup.Batch = 6, 64
	c.Warmup.RecenterFrames = 4000
	c.Joint.Iters, c.Joint.ChunkLen, c.Joint.Batch, c.Joint.CheckpointEvery = 300, 128, 4, 50
	c.Final.Iters = 500
	c.Final.Prune = 0.002
	c.Warmup.MergeCodes, c.Final.MergeTokens = 0, 0 // their G-tests need full-size walks
	return c
}
