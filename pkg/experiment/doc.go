// Package experiment holds the experiments a user runs, between the engines
// (gridworld, chmm, vqvae, pipeline, evaluate, plan, figures) and the two front ends
// (cmd/gradcscg and the notebooks), so that both run the same code.
//
// So far:
//   - Symbolic and RunSymbolic, the symbolic experiment of paper Sec. 5.1 (settings,
//     training, held-out scoring, verdict), with its trainer (TrainSymbolic: gradient
//     or EM, with restarts), its seed streams (SymbolicTrainingWalks,
//     SymbolicHeldOutWalk, SymbolicInit) and the class→token map (Tokens), behind
//     `gradcscg symbolic`, the symbolic, cscg and bigger suites, Figure 3 and
//     notebook.Symbolic;
//   - Plan, closed-loop planning with a learned map (SymbolicPlanSetup for a symbolic
//     model, RunPlanSetup for a pixel run, the noise models of hard emissions) and its
//     named presets (PlanPresets), behind `gradcscg plan` and the plan suite, and
//     callable from a notebook;
//   - RunVQStudy, the VQ-VAE alone (warm-up, no labels) scored on held-out test
//     images, and RunVQSuite, its grid (results/vqvae.md), behind `gradcscg vqvae`
//     and notebook 07;
//   - Size, the one size knob (full, ci, smoke) of pipelines, symbolic experiments and
//     VQ-VAE studies, behind `gradcscg train --size` and the notebooks'
//     GRADCSCG_NB_SIZE;
//   - the reproduction suites, each a struct and one call that runs (or resumes, or
//     with Collect only reads) its grid and writes its table: RunSymbolicSuite
//     (symbolic, cscg, bigger), RunImageSuite (Tables 3 and 4), RunAblationSuite,
//     RunStressSuite and RunPlanSuite, behind `gradcscg reproduce` and notebooks 01
//     and 02, with the run directory names they share (RunName, ImageRun);
//   - RunFigures, the paper's figures (`gradcscg figures`, `make figures`), with the
//     read-outs the notebooks draw too: DecodeHeldOut (a pixel run's held-out episode
//     as its report scored it), RunReadout, ClassReconstructions and SymbolicReadout.
package experiment
