// Package vqvae is gradcscg's perception front-end: a VQ-VAE on GoMLX (paper Sec. 3.2)
// that turns images into discrete tokens and soft codebook posteriors log ρ.
//
// # Two levels
//
// Graph functions compose with other graph code (the joint VQ-VAE + cloned-HMM graph
// calls them inside its own model.Exec):
//
//	scope := m.Scope()                                // variables under /vqvae
//	out := cfg.Forward(scope, x, mask)                // x [B,28,28,1] in [0,1], mask [B] or nil
//	// out.Z [B,D], out.Tokens [B], out.LogRho [B,K] (differentiable in the encoder),
//	// out.XHat [B,28,28,1], out.Rec, out.Commit (scalars)
//	loss := rec + β·commit + λ·NLL(out.LogRho …) + …
//	// … optimizer on scope's trainable variables …
//	revived := cfg.UpdateCodebook(scope, out.Z, out.Tokens, mask) // EMA + dead-code revival
//
// or piece by piece: Config.Encode, Quantize, SoftPosterior, StraightThrough,
// Config.Decode, ReconstructionLoss, CommitmentLoss, EMAUpdate, ReviveDeadCodes,
// Usage, Perplexity, DiversityPenalty. Nothing assumes it owns the Exec. Create the
// variables once with Config.InitVariables (Model does it for you).
//
// Model wraps a configuration, a model.Store and a backend: New, TrainStep, Encode
// (tokens and log ρ), Reconstruct, Latents, InitFromData, Save and Load. A loaded
// model continues bit for bit like the saved one (parameters, codebook, Adam state,
// both random number generators, history and warm-up cursor are saved; files are
// written to a temporary name and renamed). Warmup trains it alone on frames
// (unsupervised: reconstruction + β·commitment; the reference's classification loss
// only with Config.Classify), with progress lines, a per-step loss history and
// periodic checkpoints from which it resumes.
//
// # Decisions
//
//   - Architecture: the reference's (F = 32, D = 32): encoder Conv 4×4/2 → Conv 4×4/2
//     → Conv 3×3/1, ReLU, global average pooling, Dense → D; decoder Dense → 7·7·2F,
//     Conv 3×3/1, two stride-2 4×4 up-convolutions, sigmoid output. Stride-2
//     convolutions run as space-to-depth + 2×2 convolutions, transposed convolutions
//     as sub-pixel 2×2 convolutions + depth-to-space + crop: both are exactly the
//     reference's functions (tests compare them with the strided and the transposed
//     convolution), with the same parameter count up to 99 extra sub-pixel biases.
//   - Losses: per-pixel mean squared error and the per-dimension mean commitment
//     (the reference's Keras means; the paper writes sums, which only rescale).
//   - Codebook: EMA updates with Laplace smoothing exactly as Sec. 3.2, γ = 0.99,
//     ε = 1e-5; initialised by k-means++ on the encoder outputs of the first batch
//     (Config.Init = InitUniform gives the reference's U(±1/K)); dead-code revival
//     (re-seed from a random encoder output of the batch) when a code's EMA size falls
//     below Config.Revive × the uniform share (0 turns it off, as in the reference).
//   - Initialisation: He-uniform weights before ReLUs, Glorot-uniform elsewhere, and
//     the output bias set to logit(mean pixel) of the first batch (the reference's
//     all-Glorot, zero-bias start lets the sigmoid output saturate to a black image).
//   - Supervision: none by default; Config.Classify adds the reference's
//     classification head (Dense D → classes on z, weight 0.1) for comparison.
//
// # Speed
//
// The convolutions are "window gather" im2col products with hand-written backward
// passes (conv.go), in a feature-major [C,H,W,B] layout in which every matrix product
// of the forward and backward pass runs in one of the go backend's native matmul
// layouts. Custom gradients use identity nodes (IdentityWithCustomGradient); the
// layer's output hook runs first in the reverse sweep and hands δ to the input,
// weight and bias hooks (conv.go explains the mechanism and why it costs nothing).
// The layers never materialise a layout change: the stride-2 convolutions gather
// patches straight from the padded input and move their input gradient back with one
// gather, and the decoder stays in sub-pixel form, its output layer multiplying first
// and gathering after (subpixel.go). The package's benchmarks report wall-clock and
// CPU µs per image of a training step and of encoding.
//
// # Training mode
//
// The graph functions mark their graph as a training graph (model.Store.SetTraining):
// outside training mode the go backend embeds variable values as constants when it
// compiles a graph, so a cached inference graph would keep using the weights of the
// moment it was compiled. Any model.Exec that reads variables which later change must
// do the same.
//
// # Backend
//
// Everything runs unchanged on any GoMLX backend. On the go backend the project uses
// hmmgraph.GoBackendConfig, GOMLX_BACKEND=go:parallelism=-1 (with the default worker
// pool a While loop whose body holds a matmul can deadlock); the tests and
// benchmarks use it too, or the backend GOMLX_BACKEND names.
package vqvae
