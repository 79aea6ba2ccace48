package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Clone budgets (paper Sec. 3.8). None of them needs labels.
const (
	// BudgetUniform gives every token Clones clones.
	BudgetUniform = "uniform"
	// BudgetShare distributes Clones·K' clones over the K' compacted tokens in proportion
	// to each token's share of the training frames (at least one clone per token).
	BudgetShare = "share"
	// FinalFromJoint continues the finalisation from the joint phase's HMM.
	FinalFromJoint = "joint"

	// DefaultFinalGrow is DefaultConfig's FinalGrow: the finalisation's budget may
	// double twice. On the MNIST runs of Table 3 and the stress suite, pruning leaves
	// 20–56% of the clones unused, so none of them is checked; on an 8×8 room of 3
	// classes at 20–23 places each it leaves 2%, and one doubling recovers the map.
	DefaultFinalGrow = 2
	// GrowSlack is the share of the finalisation's clones that pruning must leave unused
	// for the budget to count as large enough (Config.FinalGrow).
	GrowSlack = 0.1
	// GrowHoldOut is the end of every training walk that a growth check holds out, and
	// GrowGain the bits per held-out step that twice the budget must save to be kept
	// (Config.FinalGrow).
	GrowHoldOut = 0.1
	GrowGain    = 0.01
)

// Finalisation trainers (Config.FinalTrainer).
const (
	// FinalGradient trains the map by Adam on the hard tokens (the paper), on a budget
	// by token share that may grow (FinalClones, FinalGrow) and is pruned (FinalPrune).
	FinalGradient = "gradient"
	// FinalEM trains the map by EM through a learned token confusion matrix C, from one
	// clone per token split while the held-out end of the training walks improves
	// (FinalDoublings; runner.finaliseEM): a misread token is explained by C instead of
	// by a clone.
	FinalEM = "em"

	// FinalGradientIters and FinalEMIters are the trainers' FinalIters (WithFinalTrainer):
	// Adam iterations, or soft EM iterations per split round. On tiled from MNIST (seed
	// 1) 300 per round, the symbolic splits' experiment.DoublingIters, stopped the splits
	// after 4 with the map merged (F1 0.621); 1000 kept the held-out ends improving to 8
	// splits and recovered it (F1 1.000; README "Bigger worlds").
	FinalGradientIters = 1000
	FinalEMIters       = 1000
	// DefaultFinalDoublings is DefaultConfig's FinalDoublings.
	DefaultFinalDoublings = 12
	// SplitGain is the bits per held-out step that a split round must save for FinalEM
	// to split again. Small: clean EM on tiled gains as little as 0.002 bits per step
	// in a round and more in the next; a map split past its places costs more held out
	// (room, aliased).
	SplitGain = 0.0005
	// SplitPatience is how many split rounds in a row may miss SplitGain before FinalEM
	// stops: on tiled from MNIST (seed 1) a round's held-out ends cost 0.0016 bits per
	// step more than the last, and on the noisy proxy a round that gained 0.002 was
	// followed by one that gained 0.02 (README).
	SplitPatience = 2
	// ConfusionMin drops the entries of the learned confusion matrix below it after
	// every split round (they cost time and explain nothing), and ConfusionBeam is the
	// share of the filtered mass below which a candidate token is skipped at a step
	// (chmm.EMConfig.ConfusionBeam): on a two_rooms map with 4% misreads an E-step
	// takes 1.8× the hard tokens' time, against 10× with no beam, at the same ℓ/T to 4
	// digits (1e-6 drops almost nothing; chmm's BenchmarkConfusedEStep).
	ConfusionMin  = 1e-3
	ConfusionBeam = 1e-4
	// FinalEMPseudocount is FinalEM's pseudocount, the original CSCG's for rooms.
	FinalEMPseudocount = 2e-3
	// ConfusionMeta is the key of the model file's metadata that holds the confusion
	// matrix a FinalEM map reads its tokens through (JSON, [K][K]).
	ConfusionMeta = "confusion"
)

// Read-outs of the held-out episode (Config.Decode).
const (
	DecodeSoft = "soft"
	DecodeHard = "hard"
)

// Config is every hyperparameter of a run (paper Table 1 plus ours). It is written to
// config.json in the run directory; a rerun with a different Config is refused.
// Start from DefaultConfig, whose value each field's comment gives in parentheses
// ("env" where the environment sets it: gridworld.Defaults).
type Config struct {
	Env string `json:"env"` // built-in environment name (gridworld.Named), or the custom layout's name
	// Layout is a custom environment in the gridworld layout format (the file's text, so
	// the run directory is self-contained); empty for built-in environments.
	Layout  string `json:"layout"`
	Dataset string `json:"dataset"` // images shown at the places: "mnist" (default) or "fashion" (dataset.Load)
	Seed    uint64 `json:"seed"`    // walks, images, initialisation, minibatches, held-out episode (1)

	// Data (paper Table 1: episodes × steps).
	Episodes  int `json:"episodes"`   // training episodes (env)
	Steps     int `json:"steps"`      // observations per training episode (env)
	EvalSteps int `json:"eval_steps"` // length of the held-out evaluation episode, test-split images (Steps)

	// VQVAE is the perception (paper Table 1; vqvae.DefaultConfig with K = the number of
	// classes shown, τ = 0.2): K is the codebook size before compaction, after which the
	// model is rebuilt with the K' codes the encoder uses (VQVAEConfig). VQVAE.Classify
	// adds the reference's digit-classification loss (weight ClassWeight on a head over
	// z) to the warm-up; it uses the images' labels and exists only to compare with the
	// reference (off by default).
	VQVAE vqvae.Config `json:"vqvae"`

	// Phase 1: warm-up (VQ-VAE alone on the training episodes' frames, no labels).
	WarmupEpochs int     `json:"warmup_epochs"` // passes over the training frames (4)
	WarmupBatch  int     `json:"warmup_batch"`  // frames per step (128)
	WarmupLR     float64 `json:"warmup_lr"`     // Adam rate (vqvae.DefaultLearningRate)

	// Recenter re-initialises the codebook after warm-up by k-means++ and Lloyd
	// iterations on the warmed-up encoder's latents of (up to RecenterFrames) training
	// frames, before compaction (on). Unsupervised; the EMA codebook otherwise keeps
	// codes seeded from the untrained encoder's latents.
	Recenter       bool `json:"recenter"`
	RecenterFrames int  `json:"recenter_frames"` // (8192)

	// Token compaction and clone budget (Sec. 3.8).
	Clones int    `json:"clones"` // clones per token (uniform), or the mean for BudgetShare (env)
	Budget string `json:"budget"` // BudgetUniform, or BudgetShare where the env budgets per class

	// PretrainIters, if > 0, trains the HMM alone on the warm-up's hard tokens (the
	// finalisation's Adam settings, no clone splitting, at most this many iterations)
	// before the joint phase, which then starts from a map of the walks instead of
	// chmm.New's near-uniform rows. 0: the joint phase starts from chmm.New (the paper).
	PretrainIters int `json:"pretrain_iters"`

	// MergeCodes, if > 0, merges the kept codes that the training walks cannot tell
	// apart (chmm.MergeTokens at z < MergeCodes: the same action-conditioned next and
	// previous tokens) into one token each, at their frames' mean codebook row, and the
	// joint phase's diversity term then keeps the token usage at the merged tokens'
	// shares (KL(ρ̄ ‖ share) instead of log K − H(ρ̄), which asks for uniform usage). Meant
	// for a warm-up with more codes than kinds of place (VQVAE.K, train --codes): a
	// frequent digit spread over many codes becomes one token, and a rare one no longer
	// has to share a code. Two kinds of place with the same neighbours under every action
	// merge too. 0: off (every kept code is a token; the paper).
	MergeCodes float64 `json:"merge_codes"`

	// MergeTokens, if > 0, merges the joint phase's tokens that the training walks
	// cannot tell apart (chmm.MergeTokens at z < MergeTokens) into one token of the map
	// each, before the finalisation. The encoder keeps its codes and reads them through
	// the merge (a token's ρ is the sum of its codes'; vqvae.Model.SetTokens), so no
	// frame changes token but by the merge. Meant for ScaledEmissions, whose joint phase
	// may spread a class over spare codes at random: such codes have the same
	// neighbours. 0: off (the joint phase's tokens are the map's; the paper).
	MergeTokens float64 `json:"merge_tokens,omitempty"`

	// ScaledEmissions, if true, makes the joint phase's HMM term read each frame's soft
	// posterior over the minibatch's mean posterior, ρ_t(k)/ρ̄(k) (the scaled likelihoods
	// of hybrid HMMs), instead of ρ_t(k) (Sec. 3.5). With ρ_t(k), merging two tokens the
	// map cannot yet tell apart raises the term's likelihood; with ρ_t(k)/ρ̄(k) it does
	// not, and a token that holds every frame predicts nothing. false: ρ_t(k) (the paper).
	ScaledEmissions bool `json:"scaled_emissions,omitempty"`

	// Phase 2: joint training (Sec. 3.6, Algorithm 1).
	JointIters int     `json:"joint_iters"` // iterations, each one minibatch of JointBatch chunks (1500)
	ChunkLen   int     `json:"chunk_len"`   // T of a chunk (256)
	JointBatch int     `json:"joint_batch"` // |B| (4)
	Lambda     float64 `json:"lambda"`      // λ, weight of the HMM term (1)
	AnnealFrac float64 `json:"anneal_frac"` // λ rises linearly over T_anneal = AnnealFrac · JointIters (1/4)
	AlphaDiv   float64 `json:"alpha_div"`   // α_div, weight of the diversity penalty (1; the paper 0.1)
	// AlphaDivEnd, if > 0, anneals α_div linearly from AlphaDiv at the middle of the
	// joint phase to AlphaDivEnd at its end (DefaultAlphaDivEnd: conv 0.03, MLP 0.1;
	// 0: α_div stays AlphaDiv).
	AlphaDivEnd float64 `json:"alpha_div_end"`
	// Jitter, if > 0, shifts every joint-phase frame by a random offset in
	// [-Jitter, Jitter]² pixels (label-free augmentation; the training episodes reuse
	// each train-split image many times, and without it the encoder learns those images'
	// tokens rather than their classes'). Default 2; 0: frames as drawn.
	Jitter      int     `json:"jitter"`
	JointLR     float64 `json:"joint_lr"`      // Adam rate of the VQ-VAE (3e-4)
	HMMLRFactor float64 `json:"hmm_lr_factor"` // Adam rate of (π, Θ) = HMMLRFactor · JointLR (100)
	// Anti-collapse: CollapseFrac is the fraction of the best smoothed perplexity below
	// which the perception is rolled back to its best snapshot (the HMM is kept) and λ
	// is multiplied by ThrottleFactor. 0 (the default) disables the safeguard: merging
	// classes into one token lowers the perplexity too, and is how the joint phase makes
	// a place's token consistent.
	CollapseFrac   float64 `json:"collapse_frac"`
	ThrottleFactor float64 `json:"throttle_factor"` // (0.5)
	// GradFrames is the number of each joint iteration's JointBatch·ChunkLen frames whose
	// reconstruction is computed and through which the encoder and decoder get gradients
	// (drawn at random per iteration); the HMM and diversity terms read every frame
	// (Joint.GradFrames). 256 of 1,024 costs 0.42 instead of 0.94 CPU-s per conv
	// iteration. 0 (or ≥ JointBatch·ChunkLen): every frame (the paper). The default
	// depends on the architecture (DefaultGradFrames; WithArch): 256 for conv, every
	// frame for the MLP.
	GradFrames int `json:"grad_frames"`
	// CollapseLevel sets the anti-collapse response: when the smoothed hard-token
	// perplexity of the joint batches falls below 1 + CollapseLevel·(P₀ − 1), P₀ the
	// perplexity of the training tokens after the warm-up, the joint phase rolls back
	// to its last healthy checkpoint (one whose smoothed perplexity was above
	// 1 + 2·CollapseLevel·(P₀ − 1) and after which no step was skipped), doubles α_div,
	// halves the VQ-VAE's learning rate, re-seeds unused codes (vqvae.ReviveCodes) and
	// continues. Three non-finite steps in a row (each skipped, Joint.Step) do the same.
	// Merging classes into one token, which makes a place's token consistent, lowers the
	// perplexity by far less. 0: no collapse detection (non-finite steps still roll back).
	// The default depends on the architecture (DefaultCollapseLevel; WithArch): 0.15 for
	// conv, 0.25 for the MLP.
	CollapseLevel float64 `json:"collapse_level"`
	// MaxInterventions bounds the rollbacks of one run; one more is an error (4).
	MaxInterventions int `json:"max_interventions"`
	// Ablations of the joint phase (off by default): FreezeVQVAE trains only (π, Θ)
	// (the VQ-VAE, codebook included, stays as the warm-up left it); NoLengthNorm drops
	// the 1/T_b length normalisation of the HMM term.
	FreezeVQVAE  bool `json:"freeze_vqvae"`
	NoLengthNorm bool `json:"no_length_norm"`
	// CheckpointEvery is the number of joint iterations between checkpoints (50).
	CheckpointEvery int `json:"checkpoint_every"`
	// StopChurn, if > 0, ends the joint phase on a label-free criterion instead of at
	// JointIters, which becomes a maximum. At every checkpoint the phase re-encodes a
	// fixed sample of ProbeFrames training frames; the churn is the share whose hard
	// token changed since the previous checkpoint. The α_div anneal (AlphaDivEnd) starts
	// at the first checkpoint after λ's ramp with churn ≤ StopChurn (at the latest
	// JointIters/4 before JointIters) and lasts JointIters/4 iterations; the phase ends
	// at the first checkpoint after it with churn ≤ StopChurn. 0: JointIters
	// iterations, the anneal over the second half (a fixed count, as the paper).
	// Off by default: on conv room the churn stays at 5–20% per checkpoint until about
	// iteration 1100 of 1500, so the rule stops no earlier, and its shorter anneal cost
	// seed 2 three collapse responses and H(token | place) 0.339 against 0.141 (README,
	// "Stability and speed").
	StopChurn float64 `json:"stop_churn"`

	// Phase 3: finalisation (encoder frozen, hard tokens, full episodes).
	// FinalTrainer is FinalGradient (default, the paper) or FinalEM. FinalEM starts from
	// one clone per token and ignores FinalBudget, FinalClones, FinalLR, FinalEntropy,
	// FinalPatience, FinalTol, FinalSplits, FinalPrune and FinalGrow.
	FinalTrainer string `json:"final_trainer"`
	// FinalDoublings bounds FinalEM's split rounds (12).
	FinalDoublings int `json:"final_doublings"`
	// FinalBudget is FinalFromJoint (continue from the joint phase's (π, Θ) and clone
	// layout: the paper) or BudgetShare (default): re-allocate FinalClones·K' clones in
	// proportion to each token's share of the training frames under the final encoder
	// and start the HMM afresh. The joint phase tends to make each place's token
	// consistent by merging classes into one token (more aliasing), so a token may cover
	// more places than its phase-1 budget has clones; re-budgeting follows the data
	// without labels.
	FinalBudget   string  `json:"final_budget"`
	FinalClones   int     `json:"final_clones"`   // mean clones per token for BudgetShare (2× the env's budget)
	FinalIters    int     `json:"final_iters"`    // at most this many Adam iterations (1000); FinalEM: soft EM iterations per split round (FinalEMIters)
	FinalLR       float64 `json:"final_lr"`       // Adam rate on the logits (0.1)
	FinalEntropy  float64 `json:"final_entropy"`  // transition-entropy weight η (1e-3)
	FinalPatience int     `json:"final_patience"` // iterations of a plateau (100)
	// FinalTol is the finalisation's label-free stop: a plateau is FinalPatience
	// iterations in which ℓ/T (nats per training step) has not risen by more than
	// FinalTol; at a plateau the trainer splits clones (FinalSplits rounds) and
	// otherwise stops. The same rule ends the pruned model's retraining. Default
	// 1e-3: on the 12 conv runs of Table 3 it stopped after 42–69% of the 1000
	// iterations with the same maps, purity and action accuracy (1e-5, the value
	// before it was a setting, ran every iteration).
	FinalTol    float64 `json:"final_tol"`
	FinalSplits int     `json:"final_splits"` // chmm clone-splitting rounds at plateaus (5)
	// FinalChunkAbove makes a finalisation training read random chunks of the training
	// walks, 16 of 1000 steps per Adam step with the rate falling to a tenth, when one
	// pass over the whole walks would cost more than this many multiply-adds
	// (chmm.GradConfig.ChunkIfCostly: walks of at least 64,000 steps, so never the paper's
	// benchmarks). Default chmm.DefaultChunkAbove; 0: the whole walks at every
	// iteration (as every run before this field).
	FinalChunkAbove float64 `json:"final_chunk_above,omitempty"`
	// FinalPrune, if > 0, removes after finalisation every clone that the Viterbi paths
	// of the training episodes visit fewer than FinalPrune × (training steps) times (each
	// token keeps its most visited clone) and trains the pruned HMM for FinalPruneIters
	// more iterations. Spare clones that absorbed a few misread frames keep arbitrary,
	// confident rows; on held-out images they catch misreads again and their rows
	// become the map's edges. Default 0.001; 0: no pruning.
	FinalPrune      float64 `json:"final_prune"`
	FinalPruneIters int     `json:"final_prune_iters"` // (300)
	// FinalGrow lets the finalisation's budget size itself: while pruning leaves fewer
	// than GrowSlack of the clones unused (the data uses nearly the whole budget) and
	// twice the budget predicts held-out ends of the training walks better (by
	// GrowGain bits per step, trained on the rest), FinalClones doubles and the
	// finalisation starts again from the same tokens, at most FinalGrow times. It needs
	// BudgetShare and FinalPrune > 0. Default 2; 0: a fixed budget.
	FinalGrow int `json:"final_grow"`

	// Decode is the held-out read-out: DecodeSoft (default) runs Viterbi with the frozen
	// encoder's soft emissions log ρ (the emissions the joint phase trained with), so
	// the map's context can outvote an uncertain token; DecodeHard runs Viterbi on the
	// hard tokens, as the paper. The report holds both (the other one's headline in
	// evaluate.Report.OtherReadout).
	Decode string `json:"decode"`

	// StopAfterJoint, if > 0, stops the run (as if interrupted) after that many joint
	// iterations of this call. Not part of the run's identity (not saved).
	StopAfterJoint int `json:"-"`
}

// DefaultConfig returns the configuration of the paper (Table 1) for a built-in
// environment, with the changes below: its episode count and length, K = its number of
// classes, its clone budget, 4 warm-up epochs of batch 128, joint chunks of 4×256 steps
// with λ = 1 annealed over a quarter of the joint iterations, τ = 0.2, α_div = 1 → 0.03 (MLP: 0.1), Adam
// 3e-4 with 100× for (π, Θ), and finalisation with η = 1e-3 at rate 0.1 (the paper: 1e-2) on clones
// re-budgeted by token share, 2× the phase-1 budget on average (FinalBudget).
//
// Four choices differ from the paper, all measured (package documentation,
// "Defaults"): JointIters 1500 (the paper: 2000–5000), the collapse guard off
// (CollapseFrac 0; the paper calls its safeguards optional), τ = 0.2 (the paper: 1) and
// α_div = 1 for the first half of the joint phase, annealed over the second to 0.03 for
// the conv VQ-VAE and to the paper's 0.1 for the MLP (DefaultAlphaDivEnd). With the
// paper's τ and α_div, two_rooms collapsed to one token within 100 joint iterations;
// with these it recovers the map.
//
// A per-class clone budget (room) becomes a label-free budget by token share with the
// same mean (BudgetShare).
func DefaultConfig(env string) (Config, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return Config{}, err
	}
	return ConfigFor(e), nil
}

// ConfigFor is DefaultConfig for any environment, built-in or loaded from a layout
// file (gridworld.LoadLayout): a custom environment is stored in Config.Layout and gets
// gridworld.GenericDefaults' data size and clone budget.
func ConfigFor(e *gridworld.Env) Config {
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
		Env: e.Name, Layout: layout, Dataset: "mnist", Seed: 1,
		Episodes: d.Episodes, Steps: d.Steps, EvalSteps: d.Steps,
		VQVAE:        v,
		WarmupEpochs: 4, WarmupBatch: 128, WarmupLR: vqvae.DefaultLearningRate,
		Recenter: true, RecenterFrames: 8192,
		Clones: clones, Budget: budget,
		JointIters: 1500, ChunkLen: 256, JointBatch: 4,
		Lambda: 1, AnnealFrac: 0.25, AlphaDiv: 1, AlphaDivEnd: DefaultAlphaDivEnd(string(v.Arch)), Jitter: 2,
		JointLR: 3e-4, HMMLRFactor: 100,
		GradFrames: DefaultGradFrames(string(v.Arch)), CollapseLevel: DefaultCollapseLevel(string(v.Arch)), MaxInterventions: 4,
		CollapseFrac: 0, ThrottleFactor: 0.5, CheckpointEvery: 50,
		FinalTrainer: FinalGradient, FinalDoublings: DefaultFinalDoublings,
		FinalBudget: BudgetShare, FinalClones: 2 * d.ClonesPerClass,
		FinalIters: FinalGradientIters, FinalLR: 0.1, FinalEntropy: 1e-3, FinalPatience: 100, FinalTol: 1e-3, FinalSplits: 5, FinalChunkAbove: chmm.DefaultChunkAbove,
		FinalPrune: 0.001, FinalPruneIters: 300, FinalGrow: DefaultFinalGrow,
		Decode: DecodeSoft,
	}
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

// Validate reports every invalid field.
func (c Config) Validate() error {
	var bad []string
	add := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	if _, err := c.Environment(); err != nil {
		bad = append(bad, fmt.Sprintf("env: %v", err))
	}
	add(c.Decode == DecodeSoft || c.Decode == DecodeHard, "decode=%q (want %q or %q)", c.Decode, DecodeSoft, DecodeHard)
	add(c.Dataset == "mnist" || c.Dataset == "fashion", "dataset=%q (want mnist or fashion)", c.Dataset)
	add(c.Episodes >= 1 && c.Episodes <= 1000, "episodes=%d (need 1..1000)", c.Episodes)
	add(c.Steps >= 2 && c.Steps <= 10_000_000, "steps=%d (need 2..10000000)", c.Steps)
	add(c.EvalSteps >= 2 && c.EvalSteps <= 10_000_000, "eval_steps=%d (need 2..10000000)", c.EvalSteps)
	add(c.WarmupEpochs >= 0, "warmup_epochs=%d (need ≥ 0)", c.WarmupEpochs)
	add(c.WarmupBatch >= 1 && c.WarmupBatch <= c.Episodes*c.Steps, "warmup_batch=%d (need 1..episodes·steps)", c.WarmupBatch)
	add(c.WarmupLR > 0 && finite(c.WarmupLR), "warmup_lr=%g (need > 0)", c.WarmupLR)
	add(c.RecenterFrames >= 0, "recenter_frames=%d (need ≥ 0)", c.RecenterFrames)
	add(c.Clones >= 1 && c.Clones <= 2000, "clones=%d (need 1..2000)", c.Clones)
	add(c.Jitter >= 0 && c.Jitter < 28, "jitter=%d (need 0..27 pixels)", c.Jitter)
	add(c.Budget == BudgetUniform || c.Budget == BudgetShare, "budget=%q (want %q or %q)", c.Budget, BudgetUniform, BudgetShare)
	add(c.JointIters >= 0, "joint_iters=%d (need ≥ 0)", c.JointIters)
	add(c.PretrainIters >= 0, "pretrain_iters=%d (need ≥ 0)", c.PretrainIters)
	add(c.MergeCodes >= 0 && c.MergeCodes <= 1e6, "merge_codes=%g (need 0..1e6)", c.MergeCodes)
	add(c.MergeCodes == 0 || c.VQVAE.K <= maxMergeCodes, "merge_codes with vqvae.k=%d (need k ≤ %d: the merge costs k⁴ steps)", c.VQVAE.K, maxMergeCodes)
	add(c.MergeTokens >= 0 && c.MergeTokens <= 1e6, "merge_tokens=%g (need 0..1e6)", c.MergeTokens)
	add(c.MergeTokens == 0 || c.VQVAE.K <= maxMergeCodes, "merge_tokens with vqvae.k=%d (need k ≤ %d: the merge costs k⁴ steps)", c.VQVAE.K, maxMergeCodes)
	add(c.MergeTokens == 0 || c.FinalTrainer == FinalEM || c.FinalBudget == BudgetShare, "merge_tokens with final_budget=%q (want %q: the joint phase's HMM has the unmerged tokens)", c.FinalBudget, BudgetShare)
	add(c.ChunkLen >= 2 && c.ChunkLen <= c.Steps, "chunk_len=%d (need 2..steps)", c.ChunkLen)
	add(c.JointBatch >= 1 && c.JointBatch <= 1024, "joint_batch=%d (need 1..1024)", c.JointBatch)
	add(c.GradFrames >= 0 && c.GradFrames <= 1<<20, "grad_frames=%d (need 0..%d)", c.GradFrames, 1<<20)
	add(c.CollapseLevel >= 0 && c.CollapseLevel < 0.5, "collapse_level=%g (need 0 ≤ level < 0.5)", c.CollapseLevel)
	add(c.MaxInterventions >= 0 && c.MaxInterventions <= 20, "max_interventions=%d (need 0..20)", c.MaxInterventions)
	add(c.Lambda >= 0 && finite(c.Lambda), "lambda=%g (need ≥ 0)", c.Lambda)
	add(c.AnnealFrac >= 0 && c.AnnealFrac <= 1, "anneal_frac=%g (need 0..1)", c.AnnealFrac)
	add(c.AlphaDiv >= 0 && finite(c.AlphaDiv), "alpha_div=%g (need ≥ 0)", c.AlphaDiv)
	add(c.AlphaDivEnd >= 0 && finite(c.AlphaDivEnd), "alpha_div_end=%g (need ≥ 0)", c.AlphaDivEnd)
	add(c.JointLR > 0 && finite(c.JointLR), "joint_lr=%g (need > 0)", c.JointLR)
	add(c.HMMLRFactor > 0 && finite(c.HMMLRFactor), "hmm_lr_factor=%g (need > 0)", c.HMMLRFactor)
	add(c.CollapseFrac >= 0 && c.CollapseFrac < 1, "collapse_frac=%g (need 0 ≤ f < 1)", c.CollapseFrac)
	add(c.ThrottleFactor > 0 && c.ThrottleFactor <= 1, "throttle_factor=%g (need 0 < f ≤ 1)", c.ThrottleFactor)
	add(c.CheckpointEvery >= 1, "checkpoint_every=%d (need ≥ 1)", c.CheckpointEvery)
	add(c.StopChurn >= 0 && c.StopChurn <= 1, "stop_churn=%g (need 0..1)", c.StopChurn)
	add(c.FinalTrainer == FinalGradient || c.FinalTrainer == FinalEM, "final_trainer=%q (want %q or %q)", c.FinalTrainer, FinalGradient, FinalEM)
	add(c.FinalDoublings >= 0 && c.FinalDoublings <= 16, "final_doublings=%d (need 0..16)", c.FinalDoublings)
	add(c.FinalTrainer != FinalEM || c.FinalIters >= 1, "final_iters=%d (final_trainer %q needs ≥ 1)", c.FinalIters, FinalEM)
	add(c.FinalBudget == FinalFromJoint || c.FinalBudget == BudgetShare, "final_budget=%q (want %q or %q)", c.FinalBudget, FinalFromJoint, BudgetShare)
	add((c.FinalClones >= 1 || c.FinalBudget != BudgetShare) && c.FinalClones <= 2000, "final_clones=%d (need 1..2000)", c.FinalClones)
	add(c.FinalGrow >= 0 && c.FinalGrow <= 6, "final_grow=%d (need 0..6)", c.FinalGrow)
	add(c.FinalIters >= 0, "final_iters=%d (need ≥ 0)", c.FinalIters)
	add(c.FinalLR > 0 && finite(c.FinalLR), "final_lr=%g (need > 0)", c.FinalLR)
	add(c.FinalEntropy >= 0 && finite(c.FinalEntropy), "final_entropy=%g (need ≥ 0)", c.FinalEntropy)
	add(c.FinalPatience >= 0, "final_patience=%d (need ≥ 0)", c.FinalPatience)
	add(c.FinalSplits >= 0, "final_splits=%d (need ≥ 0)", c.FinalSplits)
	add(c.FinalTol >= 0 && c.FinalTol <= 1, "final_tol=%g (need 0 ≤ final_tol ≤ 1)", c.FinalTol)
	add(c.FinalChunkAbove >= 0 && !math.IsInf(c.FinalChunkAbove, 0), "final_chunk_above=%g (need a finite number ≥ 0)", c.FinalChunkAbove)
	add(c.FinalPrune >= 0 && c.FinalPrune < 1, "final_prune=%g (need a fraction in [0, 1))", c.FinalPrune)
	add(c.FinalPruneIters >= 0, "final_prune_iters=%d (need ≥ 0)", c.FinalPruneIters)
	add(c.StopAfterJoint >= 0, "StopAfterJoint=%d (need ≥ 0)", c.StopAfterJoint)
	if err := c.VQVAE.Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	add(c.VQVAE.K <= 4096, "vqvae.k=%d (need 2..4096)", c.VQVAE.K)
	if len(bad) > 0 {
		return fmt.Errorf("pipeline: invalid config: %s", strings.Join(bad, "; "))
	}
	return nil
}

// ReadConfig reads a user's configuration file (train --config), rejecting unknown
// fields and invalid values; fields the file lacks take DefaultConfig(env)'s values. A
// run directory's own config.json is read exactly (LoadRun, Run).
func ReadConfig(path string) (Config, error) {
	raw, err := inputfile.ReadFile(path, configLimit)
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: %w", err)
	}
	return parseConfig(raw, path)
}

// parseConfig is ReadConfig of the file's bytes raw (path names it in errors).
func parseConfig(raw []byte, path string) (Config, error) {
	raw, err := nestVQVAE(raw, path, false)
	if err != nil {
		return Config{}, err
	}
	// Fields missing from the file (older versions) take the environment's defaults.
	var probe Config
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Config{}, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	e, err := probe.Environment()
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: %s: env: %w", path, err)
	}
	return decodeOnto(ConfigFor(e), raw, path)
}

// decodeOnto decodes raw over base (unknown fields are errors) and validates the result.
func decodeOnto(base Config, raw []byte, path string) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		return Config{}, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	if err := base.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return base, nil
}

// runConfigAbsent holds the fields that a run directory's config.json may lack, with
// what their absence meant to the version that wrote it: earlier versions left these
// out when zero, or did not have them (all frames' gradients, no collapse response,
// the whole walks at every finalisation step).
// Every other field must be present. An absent field reads as zero, except those of
// runConfigLegacy.
var runConfigAbsent = map[string]bool{
	"layout": true, "alpha_div_end": true, "jitter": true, "freeze_vqvae": true, "no_length_norm": true,
	"final_prune": true, "final_prune_iters": true, "grad_frames": true, "collapse_level": true, "max_interventions": true,
	"final_tol": true, "stop_churn": true, "final_grow": true, "final_trainer": true, "final_doublings": true,
	"final_chunk_above": true, "pretrain_iters": true, "merge_codes": true, "scaled_emissions": true, "merge_tokens": true,
}

// maxMergeCodes is the largest codebook MergeCodes merges: the merge costs about k⁴
// steps (measured: 2 minutes for 256 codes merged down to one, 100,000 steps).
const maxMergeCodes = 128

// runConfigLegacy is what the fields that older versions fixed in code meant when a
// run directory's config.json lacks them: final_tol was 1e-5, and the finalisation
// was the gradient trainer's.
var runConfigLegacy = Config{FinalTol: 1e-5, FinalTrainer: FinalGradient}

// readRunConfig reads the config.json of a run directory exactly as it was written: a
// missing field is not filled from today's defaults (which would resume or describe the
// run with settings it never had) but is an error, or, for the fields of
// runConfigAbsent, what it meant (zero, or runConfigLegacy).
func readRunConfig(path string) (Config, error) {
	raw, err := inputfile.ReadFile(path, configLimit)
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: %w", err)
	}
	return parseRunConfig(raw, path)
}

// parseRunConfig is readRunConfig of the file's bytes raw (path names it in errors).
func parseRunConfig(raw []byte, path string) (Config, error) {
	raw, err := nestVQVAE(raw, path, true)
	if err != nil {
		return Config{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Config{}, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	var missing []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if _, ok := fields[name]; name != "-" && !ok && !runConfigAbsent[name] {
			missing = append(missing, name)
		}
	}
	if v, ok := fields["vqvae"]; ok {
		var vf map[string]json.RawMessage
		if err := json.Unmarshal(v, &vf); err != nil {
			return Config{}, fmt.Errorf("pipeline: %s: vqvae: %v", path, err)
		}
		t := reflect.TypeFor[vqvae.Config]()
		for i := range t.NumField() {
			if name := t.Field(i).Tag.Get("json"); vf[name] == nil {
				missing = append(missing, "vqvae."+name)
			}
		}
	}
	if len(missing) > 0 {
		return Config{}, fmt.Errorf("pipeline: %s lacks field(s) %s: not a run's configuration, or damaged", path, strings.Join(missing, ", "))
	}
	return decodeOnto(runConfigLegacy, raw, path)
}

// legacyVQVAE are the VQ-VAE's fields as configurations before VQVAE was nested wrote
// them, at the top level: the key there and in vqvae.Config's JSON.
var legacyVQVAE = [][2]string{{"k", "k"}, {"d", "d"}, {"f", "f"}, {"arch", "arch"}, {"beta", "beta"}, {"gamma", "gamma"},
	{"eps", "eps"}, {"tau", "tau"}, {"revive", "revive"}, {"supervised_warmup", "classify"}}

// nestVQVAE rewrites a configuration written before Config.VQVAE existed (the VQ-VAE's
// fields at the top level) into today's form: its fields go into "vqvae", with what that
// version fixed in code (vqvae.DefaultConfig's side, codebook initialisation and class
// head) for the rest. A run's configuration (strict) must then have had every one of
// them but supervised_warmup, which it left out when false. A configuration with
// "vqvae" is returned as it is; one with both forms is an error.
func nestVQVAE(raw []byte, path string, strict bool) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	var flat []string
	for _, kv := range legacyVQVAE {
		if _, ok := fields[kv[0]]; ok {
			flat = append(flat, kv[0])
		}
	}
	if len(flat) == 0 {
		return raw, nil
	}
	if _, ok := fields["vqvae"]; ok {
		return nil, fmt.Errorf("pipeline: %s: field(s) %s belong in \"vqvae\"", path, strings.Join(flat, ", "))
	}
	var typed struct { // type errors, with the line of the file
		K, D, F                       int
		Arch                          string
		Beta, Gamma, Eps, Tau, Revive float64
		SupervisedWarmup              bool `json:"supervised_warmup"`
	}
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	var v map[string]json.RawMessage
	if b, err := json.Marshal(vqvae.DefaultConfig(2)); err != nil {
		return nil, err
	} else if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if !strict { // a user's file: what it lacks comes from the environment's defaults
		v = map[string]json.RawMessage{}
	}
	var missing []string
	for _, kv := range legacyVQVAE {
		x, ok := fields[kv[0]]
		switch {
		case ok:
			v[kv[1]] = x
			delete(fields, kv[0])
		case strict && kv[0] != "supervised_warmup":
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("pipeline: %s lacks field(s) %s: not a run's configuration, or damaged", path, strings.Join(missing, ", "))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	fields["vqvae"] = b
	return json.Marshal(fields)
}

// jsonErr adds the line number to a JSON syntax or type error.
func jsonErr(raw []byte, err error) error {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 {
		return err
	}
	line := 1 + bytes.Count(raw[:min(int(off), len(raw))], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// DefaultGradFrames is the default GradFrames of an architecture: 256 for the conv
// VQ-VAE (2.2–2.5× less CPU per joint iteration, every map of Table 3 recovered);
// every frame (0) for the MLP, where the subset saves less (about 1.3×) and costs
// token consistency. Corridors, MLP, full size, seeds 1–3: with every frame
// H(token | place) 0.110, 0.142, 0.142 and map F1 1.000, 1.000, 1.000 in 85, 92 and
// 82 s; with 256 frames 0.227, 0.183, 0.187 and F1 0.889, 0.976, 1.000.
func DefaultGradFrames(arch string) int {
	if arch == string(vqvae.ArchMLP) {
		return 0
	}
	return 256
}

// DefaultCollapseLevel is the default CollapseLevel of an architecture: 0.15 for the
// conv VQ-VAE, 0.25 for the MLP. On conv room, 0.25 fired at perplexities of 2.9–3.1,
// in the middle of legitimate merges, and rolled back 483–1094 iterations; 0.15 fired
// near 2.2 and rolled back 15–38, and H(token | place) over seeds 1–3 fell from 0.193
// to 0.153 (README, "Stability and speed"). A run that never falls below the
// higher level runs identically under either. The MLP never fell below 0.25 in the
// stress suite; its ablation variants that collapse were measured with 0.25.
func DefaultCollapseLevel(arch string) float64 {
	if arch == string(vqvae.ArchMLP) {
		return 0.25
	}
	return 0.15
}

// DefaultAlphaDivEnd is the default AlphaDivEnd of an architecture: 0.03 for the conv
// VQ-VAE, the paper's 0.1 for the MLP. The lower end lets more of a place's codes
// merge late in the joint phase. Conv Table 3, means over seeds 1–3, H(token | place)
// 0.1 → 0.03: two_rooms 0.215 → 0.191, room 0.153 → 0.125, corridors 0.107 → 0.125,
// aliased 0.093 → 0.094, every map at F1 1.000 (README, "From pixels"). The MLP was
// not measured with it.
func DefaultAlphaDivEnd(arch string) float64 {
	if arch == string(vqvae.ArchMLP) {
		return 0.1
	}
	return 0.03
}

// WithArch returns c with the VQ-VAE architecture arch and the settings whose default
// depends on it (GradFrames, CollapseLevel, AlphaDivEnd). Set explicit overrides after it.
func (c Config) WithArch(arch string) Config {
	c.VQVAE.Arch = vqvae.Arch(arch)
	c.GradFrames = DefaultGradFrames(arch)
	c.CollapseLevel = DefaultCollapseLevel(arch)
	c.AlphaDivEnd = DefaultAlphaDivEnd(arch)
	return c
}

// WithFinalTrainer returns c finalised by trainer (FinalGradient or FinalEM) with that
// trainer's FinalIters (1000 Adam iterations, or FinalEMIters EM iterations per split
// round), or c itself if trainer finalises it already (its FinalIters kept, such as
// CISized's 500).
func (c Config) WithFinalTrainer(trainer string) Config {
	if trainer == c.FinalTrainer {
		return c
	}
	c.FinalTrainer = trainer
	c.FinalIters = FinalGradientIters
	if trainer == FinalEM {
		c.FinalIters = FinalEMIters
	}
	return c
}

// CISized returns c reduced to about a minute on two cores, for demos, notebooks and the
// CI map-recovery test: the MLP VQ-VAE (vqvae.ArchMLP, ≈10× faster than the reference
// convolutional one) with its defaults (WithArch), at most 4 episodes of 5,000 steps (held-out episode 5,000 steps),
// 6 warm-up epochs of batch 64, 300 joint iterations of 4 chunks × 128 steps, 500
// finalisation iterations, and pruning at 0.2% of the steps: with 20,000 training steps
// the spare clones that absorbed misread frames collected 20–40 visits, above the
// full-size 0.1% (CI-sized aliased, seeds 1–3: action accuracy 0.95, 0.95, 0.97 at
// 0.1%; 1.00, 0.98, 1.00 at 0.2%). Everything else (losses, rates, budgets) is c's.
func CISized(c Config) Config {
	c = c.WithArch(string(vqvae.ArchMLP))
	c.Episodes = min(c.Episodes, 4)
	c.Steps, c.EvalSteps = 5000, 5000
	c.WarmupEpochs, c.WarmupBatch = 6, 64
	c.RecenterFrames = 4000
	c.JointIters, c.ChunkLen, c.JointBatch, c.CheckpointEvery = 300, 128, 4, 50
	c.FinalIters = 500
	c.FinalPrune = 0.002
	return c
}
