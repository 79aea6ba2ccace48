// Package pipeline learns a cognitive map from pixels: the three-phase gradCSCG training
// of paper Sec. 3.6 (Algorithm 1) on a grid world whose places show MNIST (or
// Fashion-MNIST) images, with durable, resumable run directories and the evaluation of
// spec/evaluation.md on a held-out episode with test-split images.
//
// # Phases
//
//  1. Warm-up (vqvae.Warmup): the VQ-VAE alone on the frames of the training episodes
//     (train-split images), unsupervised — no label is used anywhere in the default
//     pipeline (Config.SupervisedWarmup adds the reference's classification loss to the
//     warm-up, for comparison only).
//     Then, optionally (Config.Recenter, default on), the codebook is re-seeded by
//     k-means++ and Lloyd iterations on the warmed-up encoder's latents, and token
//     compaction (Sec. 3.8) keeps the codes the encoder emits on the training frames and
//     relabels them 0..K'−1 (the VQ-VAE is rebuilt with K' codes; Result.Codes maps
//     back). Clone budgets: uniform (Config.Clones per token) or proportional to each
//     token's share of the training frames (BudgetShare). The per-class "room" budget of
//     the paper needs labels and is not offered here.
//
//  2. Joint (Joint.Step, one compiled graph per step): B chunks of T steps, frames
//     [B·T,28,28,1] through the VQ-VAE, log ρ reshaped [B,T,K'], the soft-emission
//     forward pass of pkg/hmmgraph (While loops with the exact forward–backward
//     gradient), and
//
//     L = L_rec + β·L_commit + λ_t·(−(1/|B|) Σ_b ℓ^s_b/T_b) + α_div·(log K' − H(ρ̄))
//
//     with padded frames masked out of every term and λ_t = λ·min(1, t/T_anneal)
//     (Sec. 3.6). The VQ-VAE is trained here. Learning rates: two Adam optimizers on
//     disjoint scopes fed by one gradient pass — 3e-4 for /vqvae and 100× for /hmm
//     (π, Θ) — rather than the Θ = 100·Θ_raw reparametrisation, so that the saved HMM
//     logits are the model's logits. The EMA codebook update (and dead-code revival)
//     runs in the same graph after the losses have read the codebook. Every frame of a
//     joint minibatch is shifted by a random offset of up to Config.Jitter pixels (2)
//     in each direction (dataset.Jitter; label-free augmentation, see below).
//
//  3. Finalisation: encoder frozen, hard tokens of the full training episodes,
//     chmm.TrainGradient full batch (exact forward–backward gradient, Adam, optional
//     transition entropy, optional clone splitting at plateaus), ended by the
//     label-free plateau rule of Config.FinalTol (1e-3 nats per step over
//     FinalPatience iterations; at most FinalIters). By default
//     (FinalBudget = BudgetShare) the clones are re-allocated in proportion to each
//     token's share of the training frames under the final encoder (FinalClones per
//     token on average) and the HMM starts afresh; FinalFromJoint continues from the
//     joint phase's (π, Θ) as the paper does. Why: on aliased (seed 1, full size) the
//     joint phase made each place's token consistent — H(token | class) on the
//     training frames fell from 0.78 to 0.17 nats — by merging two digit classes into
//     one token (perplexity 4 → 2.9), so that token covers 8 places while its phase-1
//     budget had 5 clones; the paper's finalisation then reached recall 0.58, the
//     re-budgeted one recall 1. (With seed 2 the joint phase instead sorted the digits
//     by class: H(class | token) 0.76 → 0.05 nats, perplexity 4.)
//
//     Then pruning (Config.FinalPrune = 0.001): the Viterbi paths of the training
//     episodes are decoded, every clone visited in fewer than 0.1% of the steps is
//     removed (chmm.Prune; each token keeps its most visited clone) and the smaller
//     model trains for FinalPruneIters (300) more iterations. Why: the budget leaves
//     spare clones, and a spare clone that explained a few misread training frames
//     keeps a confident row toward an arbitrary place. On held-out images the
//     read-out sends misreads through it again, and the evaluation's projected map
//     (a maximum over the clones of a place) reads its row as the place's edge: in
//     the two_rooms run of seed 1 every one of the 37 wrong action outcomes came
//     from a clone visited 1–3 times in the 10,000 held-out steps.
//
// # Joint phase defaults
//
// DefaultConfig departs from the paper's Table 1 in five places, each measured on the
// four MNIST benchmarks (MLP VQ-VAE, seed 1, held-out evaluation; H = H(token | place)
// in nats, "collapse" = the hard tokens fell to one code and the loss became NaN):
//
//	joint phase                              aliased    corridors  room         two_rooms
//	paper τ=1, α_div=0.1, guard 0.75, 300 it.  F1 1.00    F1 0.98    F1 0.52 H1.40 F1 0.45 H1.31
//	τ=1, α_div=0.1, no guard, 1500 it.          –          F1 1.00 H0.14 F1 1.00 H0.14 collapse
//	τ=1, α_div=1,   no guard, 1500 it.          –          –          F1 1.00 H0.49 collapse
//	τ=0.2, α_div=0.1, no guard, 1500 it.        –          –          F1 1.00 H0.37 collapse
//	τ=0.2, α_div=1, no guard, 1500 it.          F1 1.00 H0.18 F1 1.00 H0.26 F1 1.00 H0.43 F1 1.00 H0.47
//	  action accuracy                            1.00       1.00       0.90         0.90
//	τ=0.2, α_div=1 → 0.1                        F1 1.00 H0.18 F1 1.00 H0.18 F1 1.00 H0.32 F1 1.00 H0.40
//	  action accuracy                            1.00       1.00       0.99         0.92
//	  + jitter 2 pixels, pruning (default)       F1 1.00 H0.10 F1 1.00 H0.08 F1 1.00 H0.26 F1 1.00 H0.30
//	  action accuracy                            1.00       1.00       0.99         0.98
//
// (room's last two rows use the label-free share budget, 6 clones per token on average;
// "α_div = 1 → 0.1": 1 for the first half of the joint phase, then linear to 0.1.) Each
// cell is one run of `gradcscg train --env E --arch mlp --seed 1` with the row's
// settings as flags (--tau, --alpha-div, --alpha-div-end 0 for a constant α_div,
// --collapse-frac, --joint-iters, --jitter 0 and --final-prune 0 for the rows before
// the last); the first row is results/archive/paper-joint-300, the last two are in
// results/archive/no-jitter and results/images.
// Why: the collapse guard at 0.75 of the best perplexity read every merge of two classes
// into one token — how the joint phase makes a place's token consistent — as collapse,
// rolled the perception back and throttled λ to 1/32. Without it, the HMM term can
// reach its trivial optimum, one token for every frame (NLL 0). At τ = 1 the soft
// posteriors stay broad even when the hard tokens have collapsed, so the diversity
// penalty, computed on the mean soft posterior, does not see the collapse; at τ = 0.2 the
// posteriors are nearly hard, and with α_div = λ = 1 the two terms together are
// log K − I(token; context) up to the HMM's approximation — a merge that destroys
// predictable information costs more than it gains. The price: style splits of a class
// are neutral under that objective and survive, so H(token | place) stayed at 0.2–0.5
// nats (the map is recovered through clones all the same). Once the HMM predicts the
// tokens well, collapse no longer pays, so the second half of the joint phase lowers
// α_div to the paper's 0.1, which lets splits merge: H(token | place) falls to 0.18–0.40
// and room's action accuracy rises from 0.90 to 0.99.
//
// Jitter (Config.Jitter = 2). After the rows above, H(token | place) of the training
// frames was 0.003–0.04 nats but that of the held-out test images 0.18–0.40: the
// encoder had learnt the tokens of the 8,000 train-split images, each seen about 190
// times in the joint phase, rather than of their classes. Shifting every joint-phase
// frame by up to 2 pixels (seed 1, `--jitter 2` against `--jitter 0`) lowered the
// held-out H(token | place) from 0.18 to 0.10 (aliased), 0.18 to 0.08 (corridors), 0.32
// to 0.26 (room) and 0.40 to 0.30 (two_rooms), map F1 ≥ 0.997. Up to 3 pixels made
// merging classes too cheap: room's map fell to F1 0.96 and two_rooms collapsed to one
// token.
//
// # Anti-collapse
//
// The joint objective has a trivial optimum, every frame on one token (NLL 0), and the
// joint phase is kept away from it by design:
//
//   - Every term is finite by construction. The diversity penalty computes ρ̄ in log
//     space (vqvae.DiversityPenalty): averaging exp(log ρ) made an unused code's ρ̄ a
//     float32 denormal near collapse, whose 1/ρ̄ overflowed and turned the encoder
//     gradient into NaN while the loss was still finite — the cause of the divergences
//     of room (conv, seed 1, iteration 1331) and of the MLP ablations.
//   - A step that would write a non-finite value is not applied (Joint.Step,
//     StepMetrics.Applied): every variable keeps its value, and the history says so.
//   - Config.CollapseLevel (0.25): when the smoothed (0.9) hard-token perplexity of the
//     joint batches falls below 1 + 0.25·(P₀ − 1), P₀ the perplexity after the warm-up,
//     or three steps in a row are not applied, the run rolls back to its last healthy
//     checkpoint — all of it, VQ-VAE, HMM and both Adam states, at most CheckpointEvery
//     iterations back, so no progress of the HMM is silently discarded — doubles α_div,
//     halves the VQ-VAE's learning rate, re-seeds codes unused on 4,096 training frames
//     (vqvae.ReviveCodes) and continues. A checkpoint is healthy if its smoothed
//     perplexity was above 1 + 0.5·(P₀ − 1) and no step since the previous one was
//     skipped. Merging two classes into one token, how the joint phase makes a place's
//     token consistent, lowers the perplexity far less (aliased 4 → 2.9, where the
//     threshold is 1.75). Each intervention is in the state, the loss history (Figure 6
//     marks it) and the report (joint_interventions, joint_intervention_log).
//
// The reference-like guard (Config.CollapseFrac, off by default) restores only the
// perception from the snapshot of the best smoothed perplexity and throttles λ; it read
// legitimate merges as collapse.
//
// # Run directory
//
//	config.json     Config, every field written (rerunning with a different one is
//	                refused, naming the fields one per line)
//	state.gob       the commit record: phase, joint cursor, anti-collapse state, loss
//	                history, seconds per phase, and the SHA-256 of config.json and of
//	                every model file below; framed by a header and its own SHA-256
//	history.jsonl   one Record per line: step, phase, rec, commit, nll_per_step, div,
//	                lambda, perplexity, seconds (and event)
//	warmup-NNNNNN.ckpt  VQ-VAE checkpoint of phase 1 after step N (warmup.ckpt in
//	                directories written before digests)
//	joint-NNNNNN.ckpt  the last joint checkpoint (VQ-VAE store with /hmm and both Adams)
//	                and the last healthy one; -rN marks the branch after the N-th rollback
//	vqvae.ckpt, chmm.model   the final model
//	report.json     evaluate.Report (trainer "joint", seconds per phase, extras)
//	.lock           flock of the process that writes the directory (rundir.go)
//
// A checkpoint file is written first (atomically, under a new name) and then state.gob
// (atomically); the previous checkpoint is removed only after that, so a run killed at
// any point resumes from a consistent state. Every file is checked against the state's
// digest before it is read: an edited config.json, a checkpoint or model copied from
// another run, a damaged or missing file is an error, and a finished run is reported
// only if its model loads (TestRunDirectoryCannotLie). The joint minibatch of iteration
// t is a function of (seed, t), and the checkpoint holds the Adam moments and the graph
// RNG, so a resumed run repeats an uninterrupted one step for step
// (TestResumeMatchesUninterrupted).
// The finalisation and the evaluation are short and restart from their beginning.
//
// # Data and evaluation
//
// Training episodes come from gridworld (Env.TrainingEpisodes) with one fresh
// train-split image per visit; the held-out episode (Config.EvalSteps steps) is a fresh
// walk with test-split images. Evaluate encodes it with the frozen encoder and decodes it
// with Viterbi — by default (Config.Decode = DecodeSoft) with the soft emissions log ρ
// (chmm.ViterbiE), which lets the map's context outvote an uncertain token; with
// DecodeHard on the hard tokens (chmm.Viterbi), as the paper — and scores the path with
// evaluate.Evaluate; the other read-out's headline metrics go to the report's extras.
// Reevaluate re-scores a finished run in place. The report's extras also hold
// H(token | place), H(token | class) and H(class | token) of the training
// frames after the warm-up and after the joint phase (true places and classes are used
// for these measurements only).
//
// # Backend
//
// Every graph runs on hmmgraph.NewBackend: GOMLX_BACKEND when set (the go backend
// always gets ops_sequential: the soft forward pass uses While loops whose bodies hold
// matmuls, which deadlock under its default parallel executor; XLA needs a PJRT plugin),
// else go:ops_sequential. The report's backend lists every backend the run used.
package pipeline
