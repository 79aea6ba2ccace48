// Package chmm is the action-conditioned cloned HMM of gradcscg (paper
// Sections 3.3, 3.4, 3.6, 3.7) in plain Go and float64: likelihood, Viterbi
// decoding, the exact gradient by forward–backward, the original CSCG's EM
// trainer, an Adam gradient trainer, and a model file format. It trains on hard
// (symbolic) tokens; the differentiable soft-emission pass lives in
// pkg/hmmgraph. Decode reads observations through one emission abstraction
// (Emissions: hard Tokens, soft LogRho, Confused tokens under a confusion
// matrix), which pkg/plan's filter uses too.
//
// # Model
//
// K tokens, token k with C_k clones; states are grouped by token (token 0's
// clones first) and the sink ⊥ is the last state, N = 1 + Σ_k C_k. State s
// emits Token(s) deterministically; the sink emits nothing, so mass sent to it
// is lost. Parameters are logits: π̄ = softmax(π) [N] and
// T[a,i,:] = softmax(Θ[a,i,:]) [A][N][N]; -Inf logits are exact zeros.
//
// # Algorithms
//
// Because emissions are deterministic, only the clones of the observed token
// carry probability at each step, so every recursion works on the block
// T[a_t, clones(o_t), clones(o_{t+1})] and one step costs C_{o_t}·C_{o_{t+1}},
// not N². The forward pass is per-step normalised in probability space with
// accumulated log normalisers (exact and stable over 10⁵ steps);
// LogLikelihood redoes a sequence in log space if that pass underflows.
// Viterbi is in log space with ties broken toward the lowest state index. The
// exact gradient
//
//	∂ℓ/∂Θ[a,i,j] = ξ_a(i,j) − (Σ_j' ξ_a(i,j')) T[a,i,j],   ∂ℓ/∂π = γ_1 − π̄
//
// comes from the expected transition counts ξ of forward–backward in O(T·C)
// memory per sequence. Sequences run in parallel on goroutines, each with a
// static share of the sequences, so sums are deterministic for a given
// worker count; a single long sequence (≥ 2000 steps) runs its forward and
// backward passes concurrently and sums the counts over time segments. The
// dense passes over the A·N·N entries of T (the softmax of Θ, the gradient,
// the entropy term, Adam's step, EM's M-step, clearing and summing the count
// buffers) are cut into ranges of rows on the same workers; each entry's
// arithmetic is the same on any goroutine, so they give the same bits for any
// worker count.
//
// # Trainers
//
// TrainEM is the original CSCG's Baum–Welch (George et al. 2021): soft EM with
// a pseudocount until the likelihood stops increasing, then Viterbi (hard) EM
// with pseudocount 0, which leaves exact zeros. DefaultEMConfig keeps π fixed
// as the original does. With EMConfig.Confusion, tokens are read through a
// confusion matrix C (a step observed as o may be any token k with C[k][o] > 0,
// our addition for misread images): the recursions run over the union of the
// candidate tokens' clone blocks, EM may learn C as well, and a beam drops the
// candidates the forward pass has all but ruled out (confusion.go).
// FitConfusion fits C alone to a map held fixed.
//
// TrainGradient is Adam on (π, Θ) with the loss −ℓ/T (per step), optionally
// plus the transition-entropy term η·Σ_{a,i} w_{a,i} H(T[a,i,·]) where w_{a,i}
// is the posterior fraction of steps that leave state i by action a: the
// expected per-step transition entropy, a scale-free version of the paper's
// η·Σ H restricted to visited rows (unvisited rows weigh 0). Training is full
// batch (ChunkLen 0: every step sees all episodes exactly; the best
// parameters are kept) or on Batch random chunks of ChunkLen steps;
// GradConfig.ChunkIfCostly picks chunks where a pass over long walks is costly
// (PassCost).
//
// Plain gradient descent gets stuck when two places that show the same token
// share one clone: an unused clone receives no gradient, so nothing can take
// one of the places over. TrainGradient therefore splits, at a plateau, every
// state whose next token is surprising into an unused clone of its token
// (GradConfig.SplitRounds; our addition, not in the paper): the split keeps
// the likelihood, and gradient descent then separates the copies. A token
// with no unused clone frees one by folding two clones that behave alike
// (FoldDuplicates, as EM does), or gets one more clone (GrowClones): the
// model grows by a state at the plateau instead of stopping there.
//
// Defaults (DefaultGradConfig): full batch, LR 0.1, at most 2000 iterations,
// early stopping after 100 iterations without a gain of 1e-4 in ℓ/T, up to
// 5 splitting rounds, folding and growth on.
//
// # File format
//
// A model file (Save, Load, Write, Read) is, in order:
//
//	line 1   the magic "GRADCSCG-CHMM" and '\n'
//	line 2   a one-line JSON header and '\n':
//	         {"format":"gradcscg-chmm","version":1,"num_tokens":K,
//	          "clones":[C_0,...],"num_actions":A,"num_states":N,
//	          "metadata":{"env":"two_rooms",...}}        (metadata optional)
//	payload  N float64 π logits, then A*N*N float64 Θ logits in [a][i][j]
//	         order, IEEE-754 little endian (-Inf is an exact zero)
//	trailer  CRC-32 (IEEE) of every byte before it, uint32 little endian
//
// Nothing may follow the CRC. Save writes to a temporary file in the target's
// directory and renames it, so a file is never half-written. Read rejects a
// wrong magic, an unknown format or version, an inconsistent header, a
// truncated payload, a CRC mismatch, trailing bytes and invalid logits, with
// the line or byte offset of the problem.
package chmm
