package hmmgraph

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
)

// Posteriors are the forward–backward quantities of one pass, all gradient-free.
type Posteriors struct {
	LogLik *Node // [B] ℓ_b in accDType: float64 for float32/64 inputs, float32 for half precision
	Gamma  *Node // [B, T, N] γ_t(j) = p(s_t = j | o, a); 0 at padded steps. Equals ∂ℓ_b/∂logEmit[b,t,j].
	DPi    *Node // [B, N] ∂ℓ_b/∂π = γ_1 − π̄ (0 for an empty sequence)
	DTheta *Node // [B, A, N, N] ∂ℓ_b/∂Θ = ξ − rowsum(ξ)·T, ξ_b the expected transition counts
}

// LogLikelihoodLoop returns ℓ(o_{1:T} | a_{1:T-1}) per sequence [B] (paper Sec. 3.3, soft emissions
// Sec. 3.5) — the same value as LogLikelihoodUnrolled — computed by a forward and a backward
// recursion in two While loops, so graph size and compile time do not depend on T, and memory is
// O(B·T·N) plus B·A·N² for the per-sequence gradient w.r.t. Θ.
//
// GoMLX has no gradient through While, so the exact gradient from forward–backward
// (ForwardBackward) is attached with a surrogate whose value is 0 and whose first derivative is
// that gradient:
//
//	ℓ_b = sg(ℓ_b) + Σ sg(∂ℓ_b/∂Θ)(Θ − sg Θ) + Σ sg(∂ℓ_b/∂π)(π − sg π) + Σ sg(γ_b)(logE − sg logE).
//
// The gradient is kept per sequence, so autodiff of any function of ℓ (per-step normalisation,
// per-sequence weights, an encoder producing logEmit) is exact to first order. Second
// derivatives are not available.
//
// Shapes and masking as in LogLikelihoodUnrolled. The backend must support closures and While
// (go, xla). On the go backend use GoBackendConfig: with the default setting a While whose body
// runs a large enough matmul deadlocks.
func LogLikelihoodLoop(piLogits, thetaLogits, logEmit, actions, mask *Node) *Node {
	ll, _ := logLikelihoodLoop(piLogits, thetaLogits, logEmit, actions, mask)
	return ll
}

// logLikelihoodLoop returns LogLikelihoodLoop's ℓ [B] and its value in accDType (gradient-free).
func logLikelihoodLoop(piLogits, thetaLogits, logEmit, actions, mask *Node) (ll, llAcc *Node) {
	post, dThetaIAJ := forwardBackward(piLogits, thetaLogits, logEmit, actions, mask)
	return withGradient(post, dThetaIAJ, piLogits, thetaLogits, logEmit), post.LogLik
}

// withGradient returns ℓ [B] (input dtype) with the surrogate terms that attach the gradients of
// post (LogLik in accDType, DPi, Gamma) and dThetaIAJ ([B, N, A, N]) to the inputs.
func withGradient(post Posteriors, dThetaIAJ, piLogits, thetaLogits, logEmit *Node) *Node {
	g := logEmit.Graph()
	dt := logEmit.DType()

	// The Θ, π and logE terms of the surrogate; each is 0 in value. Non-finite entries (−Inf
	// logits or emissions, padded garbage) are replaced by 0 first: x − sg(x) would be NaN there,
	// and their gradient is 0 anyway. Element-wise products + sums (not Dot): their VJPs need no
	// transposes.
	delta := func(x *Node) *Node {
		xf := Where(IsFinite(x), x, ScalarZero(g, dt))
		return Sub(xf, StopGradient(xf))
	}
	dThetaT := InsertAxes(TransposeAllAxes(delta(thetaLogits), 1, 0, 2), 0) // [1, N, A, N]
	thetaTerm := ReduceSum(Mul(dThetaIAJ, dThetaT), 1, 2, 3)                // [B]
	piTerm := ReduceSum(Mul(post.DPi, InsertAxes(delta(piLogits), 0)), 1)   // [B]
	emitTerm := ReduceSum(Mul(post.Gamma, delta(logEmit)), 1, 2)            // [B]
	return Add(ConvertDType(post.LogLik, dt), Add(thetaTerm, Add(piTerm, emitTerm)))
}

// ForwardBackward runs the forward and backward recursions in While loops and returns ℓ and its
// exact gradients as gradient-free nodes. Inputs as in LogLikelihoodUnrolled.
//
// Forward (Sec. 3.3/3.5), in probability space with the emissions scaled per step outside the
// loop, e_t(j) = exp(log e_t(j) − M_t) ∈ [0, 1] with M_t = max_j log e_t(j), in float64 for float32
// inputs (accDType); α̂_t is the normalised forward message (Σ_i α̂_t(i) = 1):
//
//	x_{t+1} = α̂_t·T_{a_t},   u = x_{t+1} ⊙ e_{t+1},   s_{t+1} = u·1,   α̂_{t+1} = u / s_{t+1},
//
// and ℓ = Σ_t (log s_t + M_t) (summed after the loop). Backward, the smoother on posteriors
// γ_t = p(s_t | o, a) (Rabiner's scaled α̂·β̂), with γ at the last real step = α̂:
//
//	γ_t = α̂_t ⊙ (T_{a_t}·r_{t+1}),   r_{t+1}(j) = γ_{t+1}(j) / x_{t+1}(j),
//
// where r = 0 for states predicted below the dtype's smallest normal number (so r·T never
// overflows). The normaliser s_t is a matrix product with a ones vector, so neither loop body
// holds a reduction. After the loops, the expected transition counts of sequence b are batched
// matmuls over t (one per action):
//
//	ξ_b[a,i,j] = T[a,i,j] Σ_{t: a_t=a} α̂_t(i) r_{t+1}(j),
//
// which is α_t(i) T_{a,i,j} e_{t+1}(j) β_{t+1}(j) / p(o_{t+1} | o_{1:t}). Then ∂ℓ_b/∂Θ[a,i,:] =
// ξ_b[a,i,:] − (Σ_j ξ_b[a,i,j])·T[a,i,:] (softmax VJP), ∂ℓ_b/∂π = γ_{b,1} − π̄ and
// ∂ℓ_b/∂logE[b,t,j] = γ_{b,t}(j).
//
// A real step whose observation every predicted state rules out (s = 0: possible with −Inf logits
// or emissions, or an observation more than about 700 nats less likely than under the best state
// of its step) gives ℓ = −Inf and zero posteriors from there on, never NaN.
func ForwardBackward(piLogits, thetaLogits, logEmit, actions, mask *Node) Posteriors {
	post, dThetaIAJ := forwardBackward(piLogits, thetaLogits, logEmit, actions, mask)
	post.DTheta = StopGradient(TransposeAllAxes(dThetaIAJ, 0, 2, 1, 3))
	return post
}

// forwardBackward is ForwardBackward with ∂ℓ/∂Θ in the layout [B, N(i), A, N(j)] (see dThetaIAJ);
// the returned Posteriors has no DTheta. Loop bodies and conditions hold no reduction, arg-max,
// reduce-window or select-and-scatter (go-xla builds those once per program, so they cannot appear
// in two functions); everything reduced over states or steps is computed in the main function.
func forwardBackward(piLogits, thetaLogits, logEmit, actions, mask *Node) (Posteriors, *Node) {
	p := newPass("hmmgraph.ForwardBackward", StopGradient(piLogits), StopGradient(thetaLogits),
		StopGradient(logEmit), actions, mask)
	g, dt := p.g, p.dtype
	B, T, N := p.B, p.T, p.N
	acc := accDType(dt)

	// GoMLX caches scalar constants per graph, not per function scope: a scalar first created
	// inside one loop body and then used in the other (or in the main function) is rejected by
	// the backend ("node from a different function scope"). Creating them here, in the parent
	// scope, makes the cache hand out nodes that every closure may capture.
	for _, d := range []dtypes.DType{dt, acc, dtypes.Int32} {
		_, _ = ScalarZero(g, d), ScalarOne(g, d)
	}
	zeroI := Const(g, int32(0))
	ones := Ones(g, shapes.Make(acc, N)) // [N]: the normaliser u·1

	// Emissions relative to each step's best state, e_t(j) = exp(log e_t(j) − M_t) ∈ [0, 1], time-major
	// [T, B, N] in acc; M [T, B] is 0 for an all −Inf row (and at padded steps).
	logET := TransposeAllAxes(p.logE, 1, 0, 2) // [T, B, N]
	mT := maxShift(logET)                      // [T, B]
	eT := Exp(ConvertDType(Sub(logET, InsertAxes(mT, -1)), acc))

	// Step 1: α̂_1 ∝ π̄ ⊙ e_1.
	a0, s0 := normaliseProb(Mul(InsertAxes(Exp(ConvertDType(p.logPi, acc)), 0), Squeeze(Slice(eT, AxisElem(0)), 0)), ones, dt)
	if T == 1 {
		post := p.posteriors(InsertAxes(a0, 1), InsertAxes(s0, 1), TransposeAllAxes(mT, 1, 0))
		return post, StopGradient(Zeros(g, shapes.Make(dt, B, N, p.A, N)))
	}

	// Per-step inputs are time-major, read with at(x, t) inside the loops; the histories are
	// time-major too (written at [t, 0, 0]).
	rows := Add(Reshape(TransposeAllAxes(p.acts, 1, 0), T-1, B, 1), // [T-1, B, 1] b·A + a_t: the row of T_{a_t}
		Mul(Iota(g, shapes.Make(dtypes.Int32, T-1, B, 1), 1), Const(g, int32(p.A))))
	validTBN := timeMajorMask(p.lengths, T, N)         // [T, B, N] Bool
	fwd, bwd := fwdMatrix(p.trans), bwdMatrix(p.trans) // [N, A·N] each
	aHist0 := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, T, B, N)), InsertAxes(a0, 0), []*Node{zeroI, zeroI, zeroI})

	// Forward loop, t = 0 … T-2: state (t, α̂_t [B,N], Â [T,B,N], X [T,B,N]); fills step t+1.
	// Padded steps compute finite garbage (their emissions are e = 1); it is masked after the loops.
	fwdCond := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		_ = Parameter(g, "a", shapes.Make(dt, B, N))
		_ = Parameter(g, "A", shapes.Make(dt, T, B, N))
		_ = Parameter(g, "X", shapes.Make(dt, T, B, N))
		return []*Node{LessThan(t, Const(g, int32(T-1)))}
	})
	fwdBody := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		a := Parameter(g, "a", shapes.Make(dt, B, N))
		aHist := Parameter(g, "A", shapes.Make(dt, T, B, N))
		xHist := Parameter(g, "X", shapes.Make(dt, T, B, N))
		next := Add(t, Const(g, int32(1)))
		x := pickAction(Dot(a, fwd).Product(), at(rows, t), N) // [B, N] x_{t+1} = α̂_t·T_{a_t}
		a, _ = normaliseProb(Mul(ConvertDType(x, acc), at(eT, next)), ones, dt)
		aHist = DynamicUpdateSlice(aHist, InsertAxes(a, 0), []*Node{next, zeroI, zeroI})
		xHist = DynamicUpdateSlice(xHist, InsertAxes(x, 0), []*Node{next, zeroI, zeroI})
		return []*Node{next, a, aHist, xHist}
	})
	fwdOut := While(fwdCond, fwdBody, zeroI, a0, aHist0, Zeros(g, shapes.Make(dt, T, B, N)))
	aHist, xHist := fwdOut[2], fwdOut[3] // [T, B, N] each

	// The normalisers s_t = x_t·e_t (s_1 from step 1), recomputed for all steps at once.
	sT := ReduceSum(Mul(ConvertDType(xHist, acc), eT), -1) // [T, B]
	sT = Concatenate([]*Node{InsertAxes(s0, 0), Slice(sT, AxisRange(1, T))}, 0)

	// 1/x at real steps whose x is a normal number, else 0: r = γ ⊙ invX ≤ 1/(smallest normal).
	tiny := Scalar(g, dt, smallestNormal(dt))
	okX := LogicalAnd(validTBN, GreaterOrEqual(xHist, tiny))
	invX := Where(okX, Reciprocal(Where(okX, xHist, ScalarOne(g, dt))), ScalarZero(g, dt)) // [T, B, N]

	// Backward loop, t = T-2 … 0: state (t, γ_{t+1} [B,N], G [T,B,N]); γ = α̂ at the last real
	// step of each sequence and garbage after it (masked after the loop).
	gLast := Squeeze(Slice(aHist, AxisElem(T-1)), 0) // [B, N]
	gHist0 := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, T, B, N)), InsertAxes(gLast, 0),
		[]*Node{Const(g, int32(T-1)), zeroI, zeroI})
	bwdCond := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		_ = Parameter(g, "g", shapes.Make(dt, B, N))
		_ = Parameter(g, "G", shapes.Make(dt, T, B, N))
		return []*Node{GreaterOrEqual(t, zeroI)}
	})
	bwdBody := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		gNext := Parameter(g, "g", shapes.Make(dt, B, N))
		gHist := Parameter(g, "G", shapes.Make(dt, T, B, N))
		next := Add(t, Const(g, int32(1)))
		ti, ni := InsertAxes(t, 0), InsertAxes(next, 0)             // Gather indices of steps t and t+1
		r := Mul(gNext, Gather(invX, ni))                           // [B, N] r_{t+1}
		u := pickAction(Dot(r, bwd).Product(), Gather(rows, ti), N) // [B, N] T_{a_t}·r
		a := Gather(aHist, ti)                                      // [B, N] α̂_t
		gamma := Where(Gather(validTBN, ni), Mul(a, u), a)          // [B, N] γ_t
		gHist = DynamicUpdateSlice(gHist, InsertAxes(gamma, 0), []*Node{t, zeroI, zeroI})
		return []*Node{Sub(t, Const(g, int32(1))), gamma, gHist}
	})
	bwdOut := While(bwdCond, bwdBody, Const(g, int32(T-2)), gLast, gHist0)
	gHist := bwdOut[2] // [T, B, N]

	post := p.posteriors(TransposeAllAxes(gHist, 1, 0, 2), TransposeAllAxes(sT, 1, 0), TransposeAllAxes(mT, 1, 0))
	return post, p.dThetaIAJ(aHist, gHist, invX, fwd)
}

// normaliseProb returns (u / s in dtype dt, s) for u [B, N] ≥ 0 (acc dtype), s = u·1 [B]; a row
// with s = 0 gives α̂ = 0. Its constant is created where it is called (ConstAs, not the graph's
// scalar cache): go-xla refuses an arithmetic op whose operand belongs to another function.
func normaliseProb(u, ones *Node, dt dtypes.DType) (a, s *Node) {
	s = Dot(u, ones).Product() // [B]
	safe := Max(s, ConstAs(s, smallestNormal(s.DType())))
	return ConvertDType(Div(u, InsertAxes(safe, -1)), dt), s
}

// smallestNormal returns the smallest positive normal number of a float dtype.
func smallestNormal(dt dtypes.DType) float64 {
	switch dt {
	case dtypes.Float64:
		return 0x1p-1022
	case dtypes.Float16:
		return 0x1p-14
	}
	return 0x1p-126 // float32, bfloat16
}

// dThetaIAJ returns ∂ℓ_b/∂Θ in the layout [B, N(i), A, N(j)] (that of fwdMatrix), which the
// batched matmul produces without transposes; LogLikelihoodLoop's surrogate uses it directly.
// aHist, gHist and invX are time-major [T, B, N]: α̂_t, γ_t (garbage at padded steps) and 1/x_t
// (0 at padded steps).
//
// ξ_b[i,a,j] = T[a,i,j] Σ_{t: a_t=a} α̂_t(i) r_{t+1}(j) as in ForwardBackward; α̂_t ≤ 1 and r_{t+1}
// ≤ 1/(smallest normal) stay in range.
func (p *pass) dThetaIAJ(aHist, gHist, invX, fwd *Node) *Node {
	T, N, A := p.T, p.N, p.A
	r := Mul(Slice(gHist, AxisRange(1, T)), Slice(invX, AxisRange(1, T))) // [T-1, B, N] r_{t+1}, 0 if t+1 is padded
	rB := TransposeAllAxes(r, 1, 0, 2)                                    // [B, T-1, N]
	alphaT := TransposeAllAxes(Slice(aHist, AxisRange(0, T-1)), 1, 2, 0)  // [B, N, T-1] α̂_t(i)
	// One batched matmul per action: counts[b,i,a,j] = Σ_t α̂_t(i) [a_t = a] r_{t+1}(j). (One
	// matmul on r expanded to [B, T-1, A·N] would need a large concatenation or a general broadcast.)
	perAction := make([]*Node, A)
	for a := range A {
		ra := Mul(rB, Slice(p.oneHotA, AxisRange(), AxisRange(), AxisElem(a)))         // [B, T-1, N]
		perAction[a] = Dot(alphaT, ra).General([]int{2}, []int{0}, []int{1}, []int{0}) // [B, N, N]
	}
	c4 := Stack(perAction, 2) // [B, N, A, N]
	// ∂ℓ/∂Θ = ξ − rowsum(ξ)·T = T ⊙ (counts − rowsum(T ⊙ counts)).
	tIAJ := InsertAxes(Reshape(fwd, N, A, N), 0)                  // [1, N, A, N]
	rows := ReduceSum(Mul(c4, tIAJ), -1)                          // [B, N, A]
	return StopGradient(Mul(Sub(c4, InsertAxes(rows, -1)), tIAJ)) // [B, N, A, N]
}

// at returns x[t] for x [T, ...] and a scalar int32 node t (a Gather: DynamicSlice is not
// implemented in the go backend).
func at(x, t *Node) *Node {
	return Gather(x, InsertAxes(t, 0))
}

// posteriors computes ℓ, γ and ∂ℓ/∂π from γ [B, T, N] (garbage at padded steps), the per-step
// normalisers s [B, T] (acc dtype) and the emission shifts M [B, T]: log c_t = log s_t + M_t.
func (p *pass) posteriors(gamma, s, m *Node) Posteriors {
	g, dt := p.g, p.dtype
	acc := accDType(dt)
	logC := Add(Log(Where(p.valid, s, ScalarOne(g, acc))), ConvertDType(m, acc))
	ll := ReduceSum(Where(p.valid, logC, ScalarZero(g, acc)), 1) // [B]
	gamma = Where(p.validFull, gamma, ScalarZero(g, dt))         // [B, T, N]

	piBar := Exp(p.logPi)                                                       // [N]
	v0 := ConvertDType(stepAt(p.valid, 0), dt)                                  // [B]
	dPi := Sub(stepAt(gamma, 0), Mul(InsertAxes(v0, -1), InsertAxes(piBar, 0))) // [B, N]
	return Posteriors{
		LogLik: StopGradient(ll),
		Gamma:  StopGradient(gamma),
		DPi:    StopGradient(dPi),
	}
}
