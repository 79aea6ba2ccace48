// Package pipeline learns a cognitive map from pixels: the three-phase gradCSCG training
// of paper Sec. 3.6 (Algorithm 1) on a grid world whose places show MNIST or
// Fashion-MNIST images, in a durable, resumable run directory, and its evaluation on a
// held-out episode with test-split images (package evaluate).
//
// # Inputs and outputs
//
// Run(ctx, dir, cfg, progress) takes a Config (DefaultConfig, ConfigFor, which lay
// the settings WorldSettings chooses for the world; Validate checks every field) and a run directory, trains or resumes the run there, and returns
// its evaluate.Report. LoadRun loads a finished run as a Result (the frozen encoder, the
// map, the kept codes, the report, the loss history); Reevaluate scores one again;
// Branch starts a run from another's warm-up and joint phase; Evaluate, NewHeldOut and
// Diagnose score a map on the held-out episode and the training frames. Training reads
// no label: places and classes enter only the measurements.
//
// # Phases
//
// Each phase is a function of the run's configuration, data and checkpoint, and hands
// its result to the next (the joint model, then the map):
//
//  1. Warm-up (warmup.go): the VQ-VAE alone on the training frames; then token
//     compaction (the codes the encoder emits on them, relabelled 0..K'−1, merged
//     where the walks cannot tell them apart with Config.Warmup.MergeCodes), the
//     clone budget (Config.Joint.Budget), an optional HMM pre-training
//     (Config.Joint.PretrainIters), and the joint model.
//  2. Joint (jointphase.go; the step in joint.go): encoder, codebook and HMM trained
//     together on chunks of the walks, minimising
//     L = L_rec + β·L_commit + λ_t·(−ℓ^s/T) + α_div·(log K' − H(ρ̄)),
//     with the anti-collapse guard (Config.Joint.CollapseLevel rolls back to the
//     last healthy checkpoint; Config.Joint.CollapseFrac is the reference-like guard)
//     and the optional label-free stop (Config.Joint.StopChurn).
//  3. Finalisation (final.go): the encoder frozen, the map trained on the training
//     walks' hard tokens (merged first with Config.Final.MergeTokens), by gradient
//     (final_grad.go: a budget by token share that doubles while twice as many
//     clones predict the walks' held-out ends better, then pruning) or by EM through a learned token confusion matrix (final_em.go: split
//     rounds of chmm.GrowBySplitting, stopped by the held-out ends of the walks). A
//     gradient map that the verdict reads as merged is finalised again by EM; EM's map
//     is kept unless it reads as merged too, and then the map that predicts a
//     validation walk better (final.go: fallBack, choose; Config.Final.KeepMerged keeps
//     the gradient map without EM).
//  4. Refinement (refine.go; Config.Refine, off by default): the map teaches the
//     encoder the pseudo-classes it reads from the training walks (pseudo.go; no
//     labels), and the map is finalised again on the new tokens as in 3. A map is
//     refined if resolved or only its tokens misread; an unresolved result is dropped.
//  5. Evaluation (evaluation.go): Viterbi on the held-out episode with the soft or
//     hard read-out (Config.Eval.Decode), scored by evaluate.Evaluate, with the
//     label-free diagnosis (chmm.Diagnosis and its verdict; a hard-token map is also
//     read through a confusion matrix fitted to it, Diagnosis.Reread).
//
// # Run directory
//
//	config.json     the Config, every field written; a run given another is refused
//	state.gob       the commit record: phase, cursors, the guard's state, the loss
//	                history, seconds per phase and the SHA-256 of config.json and of
//	                every file below; framed by a header with its own SHA-256
//	history.jsonl   one Record per line, derived from the state at each commit
//	warmup-NNNNNN.ckpt  the warm-up's VQ-VAE after step N
//	joint-NNNNNN.ckpt   the joint model (VQ-VAE store with /hmm and both Adam states)
//	                at iteration N, and the last healthy one; -rK marks the branch
//	                after the K-th rollback
//	final-em-start-NN.model, final-em-best-NN.model  the EM finalisation's round NN
//	                start and the cheapest map so far
//	final-grad-RR-S.model  the gradient finalisation's budget round RR after step S
//	final-em-train-RR-IIIIII.gob, final-grad-train-RR-S-IIIIII.gob  a training in
//	                progress before iteration I (chmm.EMState, chmm.GradState)
//	refine-labels.gob, refine-model-NNN.ckpt, refine-model-fitted.ckpt  the
//	                refinement's pseudo-labels and its encoder after N epochs (and
//	                with its codebook fitted again)
//	vqvae.ckpt, chmm.model  the final encoder and map (with its confusion matrix,
//	                ConfusionMeta, when it has one)
//	report.json     the evaluate.Report
//	.lock           the flock of the process that writes the directory
//
// Invariants: a file is written under a new name (atomically), its digest recorded in
// the state, then the state committed (atomically); a file the previous state named
// goes only after that. Every file is checked against its digest before it is read,
// so an edited config, a file copied from another run or a damaged one is an error.
// The finalisation's files exist only while it runs; one process at a time writes.
//
// # Resume
//
// Run on a directory that holds an unfinished run resumes it where its state says: the
// warm-up after its last saved chunk, the joint phase at its last commit (every
// Config.Joint.CheckpointEvery iterations, with the Adam moments and the graph's
// generator; an iteration's minibatch is a function of the seed and the iteration),
// the finalisation after its last training or split round or within one (saved every
// few minutes), the refinement after its last epoch or within its finalisation, the
// evaluation from its start. A resumed run ends with the files and report of an
// uninterrupted one, seconds aside (with other HMM kernels, to rounding; the report
// lists each run's kernels and backends). A finished run is loaded, not retrained.
//
// # Shipped runs
//
// Export copies a finished run's final artefacts — config.json, report.json,
// history.jsonl, chmm.model and the final VQ-VAE without optimizer state
// (vqvae.weights) — with a manifest of their SHA-256 digests into a folder small enough
// to commit (results/runs/<name>); LoadShipped loads such a folder read-only as the
// finished run, after checking every file against the manifest, and refuses a damaged,
// edited or foreign one. ShippedDiff tells whether a shipped run is a configuration's.
//
// # Backend
//
// Every graph runs on hmmgraph.NewBackend: GOMLX_BACKEND when set, else the go
// backend with a setting under which the forward pass's While loops cannot deadlock.
package pipeline
