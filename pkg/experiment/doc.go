// Package experiment holds the experiments a user runs, between the engines
// (gridworld, chmm, vqvae, pipeline, evaluate, plan, figures) and the two front ends
// (cmd/gradcscg and the notebooks), so that both run the same code with the same
// settings and get the same reports.
//
// # Experiments
//
//   - Symbolic, RunSymbolic: the symbolic experiment of paper Sec. 5.1. Each place
//     emits its class as a token (Tokens); a cloned HMM (TrainSymbolic: gradient or EM)
//     learns the map from random walks (SymbolicTrainingWalks), and Viterbi decodes a
//     held-out walk (SymbolicHeldOutWalk) scored against the true map, with the
//     label-free verdict (DiagnoseSymbolic). By default the budget grows by splitting
//     from one clone per token (Symbolic.Doublings); FixedBudget trains a given one.
//   - Plan, PlanRun: closed-loop planning with a learned map (plan.Evaluate) set up
//     from a symbolic model (SymbolicPlanSetup) or a pixel run (RunPlanSetup), with
//     named presets (PlanPresets).
//   - VQStudy, RunVQStudy: the VQ-VAE alone (warm-up, no labels) scored on held-out
//     test images; VQSuite, RunVQSuite its grid.
//   - ConfigurePipeline: a pixel run's pipeline.Config laid from the environment's
//     defaults, a preset, a Size, a file and key=value settings, each setting's
//     origin reported. RunName names its run directory.
//   - The reproduction suites: SymbolicSuite, ImageSuite, AblationSuite, StressSuite,
//     PlanSuite (Run…Suite), each a grid of runs with one JSON report per run and
//     one markdown table of them.
//   - RunFigures and the read-outs behind them (DecodeHeldOut, RunReadout,
//     ClassReconstructions, SymbolicReadout): the paper's figures.
//
// Size (full, ci, smoke) is the one size knob of pipelines, symbolic experiments
// and VQ-VAE studies: SizeFull returns its argument unchanged.
//
// # Inputs and outputs
//
// Every experiment is a settings struct with its defaults (DefaultSymbolic,
// DefaultVQStudy, pipeline.DefaultConfig) and a validator (Symbolic.Validate,
// VQStudy.Check, pipeline.Config.Validate); key=value settings reach any field
// (Symbolic.Set, VQStudy.Set; SymbolicKeys and VQStudyKeys list the keys and
// ranges). The result is an evaluate.Report (symbolic and pixel runs), a VQReport
// or a PlanReport, each written as JSON.
//
// # Invariants
//
// The same settings give the same report, the seconds aside, with as many workers
// (the trainers' sums depend on them): every random draw comes from the seed
// through fixed streams. Training reads no label; the true
// places and classes are used only to score. A suite skips the runs whose report
// exists (a symbolic report of other walks is re-run; Force re-runs every run;
// Collect trains nothing and only tabulates), so an interrupted suite resumes by
// running it again (ErrInterrupted asks for that), and its table covers every report
// of the whole suite in its directory, whatever subset was run.
//
// # Files
//
//	<out>/<suite>/<env>_<trainer>_seed<N>[_steps<S>].json
//	                     a symbolic suite run's evaluate.Report (symbolic, cscg,
//	                     bigger), with <name>.ckpt beside it while it trains
//	<out>/images/<run name>.json, <out>/stress/<run name>.json
//	                     a pixel run's report, copied from its run directory
//	                     (runs/<RunName>, package pipeline)
//	<out>/plan/…/<run name>.json
//	                     a PlanReport
//	<out>/<table>.md     the suite's table (symbolic.md, table3.md, …)
//	<dir>/run.json, model.vqvae, recon.png, report.json
//	                     a VQ-VAE study's directory: its manifest, its resumable
//	                     checkpoint and then model, its reconstructions, its VQReport
//
// A budget grown by splitting with Symbolic.Checkpoint set is saved after every
// split round and within a round's training (a gob with a version, the experiment's
// JSON and the round's map and training state); a run of the same experiment
// resumes from it to the same map. A checkpoint of another experiment is refused.
package experiment
