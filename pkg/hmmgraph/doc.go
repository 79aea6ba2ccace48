// Package hmmgraph builds the action-conditioned cloned HMM's forward pass (paper Sec. 3.3–3.5) as
// differentiable GoMLX graphs, for hard tokens and for soft token posteriors log ρ coming from an
// encoder. The functions are plain graph-building functions on *graph.Node: they compose with
// other graph code (an encoder upstream, any loss downstream) and run unchanged on any backend
// that supports closures and While (go, xla).
//
// # State layout
//
// Token k has C_k clones (Layout.Clones); states are grouped by token, token 0 first, and the sink
// ⊥ is the last state, N = 1 + Σ_k C_k — the layout of pkg/chmm. Parameters are logits:
// π [N] with π̄ = softmax(π), and Θ [A, N, N] with T[a,i,:] = softmax_j Θ[a,i,:].
//
// # Shapes
//
//	piLogits    [N]          float (all float inputs share one dtype)
//	thetaLogits [A, N, N]
//	logEmit     [B, T, N]    per-state log-emissions: Layout.StateLogEmissions(logRho [B, T, K]) for
//	                         soft tokens (Sec. 3.5), Layout.HardLogEmissions(tokens [B, T]) for hard
//	                         ones (Sec. 3.3); -Inf allowed
//	actions     [B, T-1]     integer; action t leads from step t to step t+1
//	mask        [B, T]       prefix mask (Bool, or numeric with nonzero = real step), or nil
//	result      [B]          ℓ_b = log p(o_{1:L_b} | a_{1:L_b-1}) per sequence
//
// Padded steps (mask false, always at the end) contribute exactly nothing to ℓ or to any
// gradient, whatever their emissions and actions hold (also NaN or out-of-range actions). A
// sequence of length 1 has no transitions; an all-false mask gives ℓ = 0. Shape errors panic
// while the graph is built (the GoMLX convention), naming the argument; graph.Exec returns them as
// errors. GradExec checks Go inputs and returns errors naming sequence and step.
//
// # Variants
//
// LogLikelihoodLoop (the default, LogLikelihood) runs the forward and the backward recursion in two
// While loops and attaches the exact forward–backward gradient — γ for the emissions, expected
// transition counts through the softmax VJP for Θ, γ_1 − π̄ for π — with a surrogate term, because
// GoMLX has no gradient through While. Graph size and compile time are independent of T; memory is
// O(B·T·N) plus B·A·N² (the gradient w.r.t. Θ is kept per sequence, so any per-sequence weighting
// downstream is differentiated exactly). ForwardBackward exposes γ and the gradients directly.
//
// LogLikelihoodUnrolled unrolls the recursion in the graph and relies on plain autodiff; the graph
// grows with T. It is the reference the loop variant is tested against, and fine for small T.
//
// Both recursions are per-step normalised in log space (the matmul runs on exp(log α − max) ∈ [0, 1],
// -Inf never meets a multiplication) and sum the per-step log normalisers in float64 for float32
// inputs, so ℓ stays exact over 10^4+ steps. -Inf emissions and -Inf Θ logits (exact zeros) give
// no NaN in values or gradients; the gradient w.r.t. a -Inf entry is 0 (the unrolled variant may
// leave a denormal there). A sequence of probability zero gets a non-finite ℓ.
//
// # Backend setting
//
// Programs get their backend from NewBackend: GOMLX_BACKEND when set (XLA when the binary is
// built with cgo and a PJRT plugin is found), else the go backend with GoBackendConfig
// ("parallelism=-1", i.e. GOMLX_BACKEND=go:parallelism=-1; NewGoBackend). With the default
// worker pool (2 × GOMAXPROCS workers) and the default dynamic scheduling, or "ops_parallel", a
// While whose body runs a large enough matmul or element-wise op deadlocks: the loop occupies a
// worker of the pool and its body's ops wait for workers that the loop's own executors hold
// (reproduced with this package's pass at B = 64, N = 201; TestProbeDefaultBackendDeadlock). An
// unbounded pool never makes an op wait for a worker; "ops_sequential" (one op at a time) avoids
// the wait too, and NewBackend adds it to a go configuration that bounds the pool. Independent
// ops run concurrently only with the unbounded pool, which made a conv joint step 10–20% faster
// in wall time than "ops_sequential" with results identical bit for bit.
//
// # GoMLX pitfalls worked around here (v0.28.16 / compute v0.1.14)
//
//   - Scalar constants (ScalarZero, ScalarOne, Scalar) are cached per graph, not per function
//     scope: a scalar first created inside one While body and reused in another closure or in the
//     main function fails with "node from a different function scope". The loop variant creates
//     the scalars it needs in the main scope before building its closures.
//   - The go backend's Where is fast only with a condition of the output's full shape, and its
//     ImplicitBroadcastFusion pass strips an explicit BroadcastInDim off the condition again
//     (inside While bodies that rewrite even fails with "input not computed yet"). Full-shape
//     masks are therefore built by comparing an Iota with the sequence lengths.
//   - DynamicSlice is not implemented in the go backend; per-step inputs are read with Gather.
//   - A general Gather has no gradient; Layout.StateLogEmissions is a matmul with the exact 0/1
//     token-to-state matrix instead.
//
// # Hard-token value and gradient
//
// GradExec (NewGradExec) compiles ℓ = Σ_b ℓ_b and ∂ℓ/∂(π, Θ) for hard tokens and returns Go
// slices, from tensors (Exec) or from checked Go sequences (Sequences); it matches pkg/chmm's
// Gradient (TestMatchesChmmGradient).
package hmmgraph
