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
//	actions     [B, T-1]     integer; action t leads from step t to step t+1 (never read when T = 1)
//	mask        [B, T]       prefix mask (Bool, or numeric with nonzero = real step), or nil
//	result      [B]          ℓ_b = log p(o_{1:L_b} | a_{1:L_b-1}) per sequence
//
// Padded steps (mask false, always at the end) contribute exactly nothing to ℓ or to any
// gradient, whatever their emissions and actions hold (also NaN or out-of-range actions): their
// inputs are replaced (by Where, after a comparison) before any arithmetic op reads them, every
// local derivative on a gradient path through them is finite (log through a double Where), and
// their gradients are exactly 0 on every backend, also where Sign, Max and Min propagate NaN as
// XLA's do. A sequence of length 1 has no transitions; an
// all-false mask gives ℓ = 0. No graph op has a 0-sized shape. Shape errors panic while the graph
// is built (the GoMLX convention), naming the argument; graph.Exec returns them as errors.
// GradExec checks Go inputs and returns errors naming sequence and step.
//
// # Variants
//
// LogLikelihoodLoop (the default, LogLikelihood) runs the forward and the backward recursion in two
// While loops and attaches the exact forward–backward gradient — γ for the emissions, expected
// transition counts through the softmax VJP for Θ, γ_1 − π̄ for π — with a surrogate term, because
// GoMLX has no gradient through While. Graph size and compile time are independent of T; memory is
// O(B·T·N) plus B·A·N² (the gradient w.r.t. Θ is kept per sequence, so any per-sequence weighting
// downstream is differentiated exactly). ForwardBackward exposes ℓ (in accDType), γ and the
// gradients directly.
//
// The forward recursion runs in probability space: the emissions enter as e_t = exp(log e_t − M_t)
// ∈ [0, 1], M_t = max_j log e_t(j), computed for all steps before the loop in accDType; each step
// is the matmul x = α̂_t·T_{a_t}, u = x ⊙ e_{t+1}, and the normaliser s = u·1 (a matmul with a ones
// vector), α̂_{t+1} = u/s, ℓ = Σ_t (log s_t + M_t) summed in accDType after the loop. The backward
// recursion is the smoother on posteriors, γ_t = α̂_t ⊙ T_{a_t}·(γ_{t+1}/x_{t+1}), with γ = α̂ at the
// last real step; states predicted below the dtype's smallest normal number carry no backward
// mass. Neither the loop bodies nor their conditions hold a reduction, arg-max, reduce-window or
// select-and-scatter: go-xla builds the closure of such an op once per (dtype, kind) for the whole
// program, which StableHLO refuses in a second function. Nor does an element-wise arithmetic op in
// a body take a main-function value as an operand (go-xla refuses operands of another function):
// bodies read main-function tensors through Gather or DotGeneral and create their constants
// themselves (Const, ConstAs), not through the graph's scalar cache. Graph code added to the loops
// must keep to both rules. A real step whose observation every predicted state rules out (−Inf
// logits or emissions, or an observation about 700 nats less likely than under its step's best
// state) gives ℓ = −Inf and zero posteriors from there on, never NaN. -Inf Θ logits (exact zeros)
// give a gradient of exactly 0 there.
//
// LogLikelihoodUnrolled unrolls the log-space recursion (per-step max shifts) in the graph and
// relies on plain autodiff; the graph grows with T. It is the reference the loop variant is tested
// against, and fine for small T; -Inf logits may leave a denormal gradient there.
//
// # Backend setting
//
// Programs get their backend from NewBackend: GOMLX_BACKEND when set (XLA when the binary is
// built with cgo and a PJRT plugin is found), else the go backend with GoBackendConfig
// ("parallelism=-1", i.e. GOMLX_BACKEND=go:parallelism=-1; NewGoBackend). With the default
// worker pool (2 × GOMAXPROCS workers) and the default dynamic scheduling, or "ops_parallel", a
// While whose body runs a large enough matmul or element-wise op deadlocks: the loop occupies a
// worker of the pool and its body's ops wait for workers that the loop's own executors hold. An
// unbounded pool never makes an op wait for a worker; "ops_sequential" (one op at a time) avoids
// the wait too, and NewBackend adds it to a go configuration that bounds the pool.
//
// On XLA, NewBackend adds tf32=false to go-xla's options unless they set tf32: every float32
// matrix product (the HMM's included) then runs at full float32 precision; with TF32, go-xla's
// default on CUDA, products keep a 10-bit mantissa, too coarse for ℓ summed over long sequences.
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
// GradExec (NewGradExec) compiles ℓ = Σ_b ℓ_b (accumulated in float64) and ∂ℓ/∂(π, Θ) for hard
// tokens and returns Go slices, from tensors (Exec) or from checked Go sequences (Sequences); it
// matches pkg/chmm's Gradient.
package hmmgraph
