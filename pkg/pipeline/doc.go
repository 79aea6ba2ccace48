// Package pipeline learns a cognitive map from pixels: the three-phase gradCSCG training
// of paper Sec. 3.6 (Algorithm 1) on a grid world whose places show MNIST (or
// Fashion-MNIST) images, with durable, resumable run directories and the evaluation of
// package evaluate on a held-out episode with test-split images.
//
// # Phases
//
//  1. Warm-up (vqvae.Warmup): the VQ-VAE alone on the frames of the training episodes
//     (train-split images), unsupervised — no label is used anywhere in the default
//     pipeline (Config.VQVAE.Classify adds the reference's classification loss to the
//     warm-up, for comparison only).
//     Then, optionally (Config.Recenter, default on), the codebook is re-seeded by
//     k-means++ and Lloyd iterations on the warmed-up encoder's latents, and token
//     compaction (Sec. 3.8) keeps the codes the encoder emits on the training frames and
//     relabels them 0..K'−1 (the VQ-VAE is rebuilt with K' codes; Result.Codes maps
//     back). With Config.MergeCodes (off by default) the kept codes that the walks
//     cannot tell apart (chmm.MergeTokens) become one token each, and the joint phase's
//     diversity term keeps their shares instead of uniform usage. Clone budgets:
//     uniform (Config.Clones per token) or proportional to each token's share of the
//     training frames (BudgetShare). The per-class "room" budget of the paper needs
//     labels and is not offered here.
//
//  2. Joint (Joint.Step, one compiled graph per step): B chunks of T steps, frames
//     [B·T,28,28,1] through the VQ-VAE, log ρ reshaped [B,T,K'], the soft-emission
//     forward pass of pkg/hmmgraph (While loops with the exact forward–backward
//     gradient), and
//
//     L = L_rec + β·L_commit + λ_t·(−(1/|B|) Σ_b ℓ^s_b/T_b) + α_div·(log K' − H(ρ̄))
//
//     with padded frames masked out of every term and λ_t = λ·min(1, t/T_anneal)
//     (Sec. 3.6). With Config.ScaledEmissions (off by default) ℓ^s reads
//     ρ_t(k)/ρ̄(k), ρ̄ the minibatch's mean posterior, instead of ρ_t(k). The VQ-VAE
//     is trained here. Learning rates: two Adam optimizers on disjoint scopes fed by
//     one gradient pass — 3e-4 for /vqvae and 100× for /hmm
//     (π, Θ) — rather than the Θ = 100·Θ_raw reparametrisation, so that the saved HMM
//     logits are the model's logits. The EMA codebook update (and dead-code revival)
//     runs in the same graph after the losses have read the codebook. Every frame of a
//     joint minibatch is shifted by a random offset of up to Config.Jitter pixels (2)
//     in each direction (dataset.Jitter; label-free augmentation).
//
//  3. Finalisation: encoder frozen, hard tokens of the full training episodes
//     (with Config.MergeTokens, off by default, the joint phase's tokens that the walks
//     cannot tell apart first become one token of the map each; the encoder keeps its
//     codes and reads them through the merge, vqvae.Model.SetTokens),
//     chmm.TrainGradient full batch (exact forward–backward gradient, Adam, optional
//     transition entropy, optional clone splitting at plateaus), ended by the
//     label-free plateau rule of Config.FinalTol (1e-3 nats per step over
//     FinalPatience iterations; at most FinalIters). A training whose pass over the
//     walks would cost more than Config.FinalChunkAbove multiply-adds reads random
//     chunks of them instead (chmm.GradConfig.ChunkIfCostly: the bigger worlds, never
//     the paper's benchmarks, whose walks are too short or too cheap). By default
//     (FinalBudget = BudgetShare) the clones are re-allocated in proportion to each
//     token's share of the training frames under the final encoder (FinalClones per
//     token on average) and the HMM starts afresh; FinalFromJoint continues from the
//     joint phase's (π, Θ) as the paper does (the joint phase merges classes into
//     tokens, so a token may cover more places than its phase-1 budget has clones).
//
//     Then pruning (Config.FinalPrune = 0.001): the Viterbi paths of the training
//     episodes are decoded, every clone visited in fewer than 0.1% of the steps is
//     removed (chmm.Prune; each token keeps its most visited clone) and the smaller
//     model trains for FinalPruneIters (300) more iterations: a spare clone that
//     absorbed a few misread training frames keeps a confident row toward an
//     arbitrary place, which the projected map reads as an edge.
//
//     A budget that binds grows (Config.FinalGrow = 2): when pruning leaves fewer than
//     GrowSlack (10%) of the clones unused, the HMM is trained afresh with the budget
//     and with twice as many clones on the first 90% of every training walk and scored
//     on the rest; if twice as many save GrowGain (0.01) bits per held-out step,
//     FinalClones doubles and the finalisation starts again from the same tokens, at
//     most FinalGrow times. Recovered MNIST maps leave 20–56% unused and are never
//     checked; an 8×8 room of 3 classes at 20–23 places each leaves 2%, doubles and is
//     recovered; Fashion-MNIST's room leaves 8%, but its misread tokens predict worse
//     with more clones, and it keeps its budget.
//
//     Config.FinalTrainer = FinalEM replaces all of this: EM through a learned token
//     confusion matrix C (chmm.EMConfig.Confusion; C[k][o] is the chance that a place of
//     token k is read as o), from one clone per token, the clones split in two while
//     the held-out ends of the training walks improve by SplitGain bits per step
//     (runner.finaliseEM). A misread is then explained by C, not by a clone; a token
//     the walks (almost) never show holds no place (startConfusion). The map
//     file carries C (ConfusionMeta); the hard read-out and the diagnosis read the
//     tokens through it.
//
// # Defaults
//
// DefaultConfig departs from the paper's Table 1 where measurements said so: τ = 0.2,
// α_div 1 annealed to 0.03 (MLP: 0.1) over the second half of 1500 joint iterations, the
// perception-only collapse guard off and the collapse response on, frames jittered by
// up to 2 pixels, gradients through 256 of the 1,024 frames of a conv iteration, and a
// finalisation re-budgeted by token share, stopped on a plateau and pruned. The
// measurements are in results/archive/joint-defaults.md and the README.
//
// # Stopping
//
// By default the joint phase runs JointIters iterations. Config.StopChurn (off by
// default) makes that a maximum and ends the phase on a label-free criterion: at every
// checkpoint a fixed sample of ProbeFrames training frames is re-encoded, and the
// churn, the share of them whose hard token changed since the previous checkpoint, is
// recorded (history.jsonl, Figure 6). The first checkpoint after λ's ramp with churn
// ≤ StopChurn starts the α_div anneal, which lasts JointIters/4 iterations; the first
// checkpoint after it with churn ≤ StopChurn ends the phase. The report records the
// iterations run and the anneal's start (evaluate.Joint).
//
// # Anti-collapse
//
// The joint objective has a trivial optimum, every frame on one token (NLL 0), and the
// joint phase is kept away from it by design:
//
//   - Every term is finite by construction. The diversity penalty computes ρ̄ in log
//     space (vqvae.DiversityPenalty): averaging exp(log ρ) made an unused code's ρ̄ a
//     float32 denormal near collapse, whose 1/ρ̄ overflowed and turned the encoder
//     gradient into NaN while the loss was still finite (the divergences the README's
//     "Stability and speed" section describes).
//   - A step that would write a non-finite value is not applied (Joint.Step,
//     StepMetrics.Applied): every variable keeps its value, and the history says so.
//   - Config.CollapseLevel (conv 0.15, MLP 0.25): when the smoothed (0.9) hard-token
//     perplexity of the joint batches falls below 1 + level·(P₀ − 1), P₀ the perplexity
//     after the warm-up, or three steps in a row are not applied, the run rolls back to
//     its last healthy checkpoint — all of it, VQ-VAE, HMM and both Adam states, so no
//     progress of the HMM is silently discarded; the latest checkpoint unless the
//     perplexity had already fallen below the healthy level, then further back —
//     doubles α_div, halves the VQ-VAE's learning rate, re-seeds codes unused on 4,096 training frames
//     (vqvae.ReviveCodes) and continues. A checkpoint is healthy if its smoothed
//     perplexity was above 1 + 2·level·(P₀ − 1) and no step since the previous one was
//     skipped. Merging two classes into one token, how the joint phase makes a place's
//     token consistent, lowers the perplexity far less. Each intervention is in the
//     state, the loss history (Figure 6 marks it) and the report
//     (evaluate.Report.Training.Joint.Guard).
//
// The reference-like guard (Config.CollapseFrac, off by default) restores only the
// perception from the snapshot of the best smoothed perplexity and throttles λ; it read
// legitimate merges as collapse.
//
// # Run directory
//
//	config.json     Config, every field written, the VQ-VAE's under "vqvae" (rerunning
//	                with a different one is refused, naming the fields one per line;
//	                files of earlier versions, with the VQ-VAE's fields at the top
//	                level, read the same)
//	state.gob       the commit record: phase, joint cursor, anti-collapse state, loss
//	                history, seconds per phase, and the SHA-256 of config.json and of
//	                every model file below; framed by a header and its own SHA-256
//	history.jsonl   one Record per line: step, phase, rec, commit, nll_per_step, div,
//	                lambda, perplexity, seconds (and churn, at the checkpoints of a run
//	                with StopChurn, and event)
//	warmup-NNNNNN.ckpt  VQ-VAE checkpoint of phase 1 after step N (warmup.ckpt in
//	                directories written before digests)
//	joint-NNNNNN.ckpt  the last joint checkpoint (VQ-VAE store with /hmm and both Adams)
//	                and the last healthy one; -rN marks the branch after the N-th rollback
//	final-em-start-NN.model, final-em-best-NN.model  the EM finalisation's
//	                checkpoint (FinalEM): round NN's start, and the cheapest map so
//	                far, trained in round NN; removed when the finalisation ends
//	final-grad-RR-S.model  the gradient finalisation's checkpoint: budget round RR's
//	                map after step S (1 trained, 2 pruned and retrained); removed
//	                when it ends
//	final-em-train-RR-IIIIII.gob, final-grad-train-RR-S-IIIIII.gob  the training in
//	                progress before iteration IIIIII (a gob of chmm.EMState or
//	                chmm.GradState); removed when it ends
//	vqvae.ckpt, chmm.model   the final model
//	report.json     evaluate.Report (trainer "joint", seconds per phase, Training)
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
// The EM finalisation (FinalEM, up to an hour on the bigger worlds) commits after every
// split round (the two model files above, with C, the generator and the round's
// counters in state.gob), so it resumes at the next round and ends as an
// uninterrupted one (TestFinalEMResumesIdentically); those files are removed when it
// ends. The gradient finalisation (FinalGradient) commits after each of its trainings
// (the map's, the pruned map's retraining, each budget of a growth check), with its
// round, step and the check's first score in state.gob, and resumes after the last
// one (TestFinalGradResumesIdentically). The training in progress, a round's EM or a
// gradient training, also commits every finalSaveEvery (five minutes) as a gob of its
// chmm.EMState or chmm.GradState (final-em-train-*.gob, final-grad-train-*.gob), and
// resumes at the iteration saved (TestFinalEMResumesWithinRound,
// TestFinalGradResumesWithinTraining); the evaluation cut short starts again.
//
// Branch starts a run directory from another's warm-up and joint phase, for a Config
// that differs only in what the finalisation and the evaluation read: it copies the
// checked checkpoints and the state as it stood when the joint phase ended, records the
// source (Training.Joint.From), and Run then trains the finalisation; the branch ends
// with the files and report of the same Config trained from scratch (TestBranch).
//
// # Data and evaluation
//
// Training episodes come from gridworld (Env.TrainingEpisodes) with one fresh
// train-split image per visit; the held-out episode (Config.EvalSteps steps) is a fresh
// walk with test-split images. Evaluate encodes it with the frozen encoder and decodes it
// with Viterbi (chmm.Decode) — by default (Config.Decode = DecodeSoft) with the soft
// emissions log ρ (chmm.LogRho), which lets the map's context outvote an uncertain
// token; with DecodeHard on the hard tokens (chmm.Tokens), as the paper — and scores the path with
// evaluate.Evaluate; the other read-out's headline metrics go to the report's
// OtherReadout. Reevaluate re-scores a finished run in place. The report's
// Training.Joint also holds H(token | place), H(token | class) and H(class | token) of
// the training frames after the warm-up and after the joint phase (true places and
// classes are used for these measurements only).
//
// # Backend
//
// Every graph runs on hmmgraph.NewBackend: GOMLX_BACKEND when set (the go backend
// always gets a setting under which the While loops of the soft forward pass cannot
// deadlock; XLA needs a PJRT plugin), else go:parallelism=-1 (hmmgraph.GoBackendConfig).
// The report's backend lists every backend the run used.
package pipeline
