// Package experiment holds the experiments a user runs, between the engines
// (gridworld, chmm, vqvae, pipeline, evaluate, plan, figures) and the two front ends
// (cmd/gradcscg and the notebooks), so that both run the same code.
//
// So far:
//   - TrainSymbolic, the symbolic trainer of paper Sec. 5.1 (gradient or EM, with
//     restarts), its seed streams (SymbolicTrainingWalks, SymbolicHeldOutWalk,
//     SymbolicInit) and the class→token map (Tokens), behind `gradcscg symbolic`, the
//     symbolic and cscg suites, Figure 3 and notebook.Symbolic;
//   - Plan, closed-loop planning with a learned map (SymbolicPlanSetup for a symbolic
//     model, RunPlanSetup for a pixel run, the noise models of hard emissions), behind
//     `gradcscg plan` and the plan suite, and callable from a notebook;
//   - RunVQStudy, the VQ-VAE alone (warm-up, no labels) scored on held-out test
//     images, and RunVQSuite, its grid (results/vqvae.md), behind `gradcscg vqvae`
//     and notebook 07;
//   - Size, the one size knob (full, ci, smoke) of pipelines and VQ-VAE studies,
//     behind `gradcscg train --size` and the notebooks' GRADCSCG_NB_SIZE.
package experiment
