package hmmgraph

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
)

// Posteriors are the forward–backward quantities of one pass, all gradient-free.
type Posteriors struct {
	LogLik *Node // [B] ℓ_b (input dtype; summed in float64 for float32/64 inputs)
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
	post, dThetaIAJ := forwardBackward(piLogits, thetaLogits, logEmit, actions, mask)
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
	return Add(post.LogLik, Add(thetaTerm, Add(piTerm, emitTerm)))
}

// ForwardBackward runs the forward and backward recursions in While loops and returns ℓ and its
// exact gradients as gradient-free nodes. Inputs as in LogLikelihoodUnrolled.
//
// Forward (Sec. 3.3/3.5), per step t → t+1, with p_t = α_t / max_i α_t(i) ∈ [0, 1]:
//
//	y(j) = log(p_t·T_{a_t})(j) + log e_{t+1}(j),   log c_{t+1} = lse_j y(j) + log max_i α_t(i),
//
// α_{t+1} = softmax(y), ℓ = Σ_t log c_t (summed after the loop). Backward, with lb up to a constant
// per step (log β_T = 0):
//
//	lb_t(i) = log Σ_j T_{a_t,i,j} exp(log e_{t+1}(j) + lb_{t+1}(j) − V),  V = max_j(log e_{t+1} + lb_{t+1}).
//
// After the loops, with Γ_t = lse_j(la_t + lb_t) (so γ_t = exp(la_t + lb_t − Γ_t)), the expected
// transition counts of sequence b are batched matmuls over t (one per action):
//
//	ξ_b[a,i,j] = T[a,i,j] Σ_{t: a_t=a} α_t(i) w_t(j),   w_t(j) = exp(log e_{t+1}(j) + lb_{t+1}(j) − Γ_{t+1} − log c_{t+1}),
//
// which is α_t(i) T_{a,i,j} e_{t+1}(j) β_{t+1}(j) / p(o_{t+1} | o_{1:t}) with β scaled so that α·β = γ.
// Then ∂ℓ_b/∂Θ[a,i,:] = ξ_b[a,i,:] − (Σ_j ξ_b[a,i,j])·T[a,i,:] (softmax VJP), ∂ℓ_b/∂π = γ_{b,1} − π̄
// and ∂ℓ_b/∂logE[b,t,j] = γ_{b,t}(j).
//
// A sequence of probability zero (possible only with −Inf logits or float underflow) gets a
// non-finite ℓ.
func ForwardBackward(piLogits, thetaLogits, logEmit, actions, mask *Node) Posteriors {
	post, dThetaIAJ := forwardBackward(piLogits, thetaLogits, logEmit, actions, mask)
	post.DTheta = StopGradient(TransposeAllAxes(dThetaIAJ, 0, 2, 1, 3))
	return post
}

// forwardBackward is ForwardBackward with ∂ℓ/∂Θ in the layout [B, N(i), A, N(j)] (see dThetaIAJ);
// the returned Posteriors has no DTheta.
func forwardBackward(piLogits, thetaLogits, logEmit, actions, mask *Node) (Posteriors, *Node) {
	p := newPass("hmmgraph.ForwardBackward", StopGradient(piLogits), StopGradient(thetaLogits),
		StopGradient(logEmit), actions, mask)
	g, dt := p.g, p.dtype
	B, T, N, A := p.B, p.T, p.N, p.A
	acc := accDType(dt)
	zeroI := Const(g, int32(0))

	// Step 1 (outside the loops): la_1 = normalise(log π̄ + log e_1).
	la0, c0 := initStep(p.logPi, stepAt(p.logE, 0)) // [B, N], [B]
	if T == 1 {
		post := p.posteriors(InsertAxes(la0, 1), Zeros(g, shapes.Make(dt, B, 1, N)), InsertAxes(c0, 1))
		return post, StopGradient(Zeros(g, shapes.Make(dt, B, N, A, N)))
	}

	// GoMLX caches scalar constants per graph, not per function scope: a scalar first created
	// inside one loop body and then used in the other (or in the main function) is rejected by
	// the backend ("node from a different function scope"). Creating them here, in the parent
	// scope, makes the cache hand out nodes that every closure may capture.
	for _, d := range []dtypes.DType{dt, acc, dtypes.Int32} {
		_, _ = ScalarZero(g, d), ScalarOne(g, d)
	}

	// Time-major copies of the per-step inputs, read with at(x, t) inside the loops.
	logE := TransposeAllAxes(p.logE, 1, 0, 2)          // [T, B, N]
	oneHotA := TransposeAllAxes(p.oneHotA, 1, 0, 2)    // [T-1, B, A]
	validTBN := timeMajorMask(p.lengths, T, N)         // [T, B, N] Bool
	fwd, bwd := fwdMatrix(p.trans), bwdMatrix(p.trans) // [N, A·N] each

	// Histories are batch-major, [B, T, ...], written at [0, t, 0] (no transposes after the loops).
	m0 := ReduceMax(la0, -1)                // [B] log max_i α_1(i)
	p0 := Exp(Sub(la0, InsertAxes(m0, -1))) // [B, N]
	laHist0 := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, B, T, N)), InsertAxes(la0, 1), []*Node{zeroI, zeroI, zeroI})
	cHist0 := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, B, T)), InsertAxes(c0, 1), []*Node{zeroI, zeroI})

	// Forward loop, t = 0 … T-2: state (t, p_t [B,N], m_t [B], LA [B,T,N], C [B,T]); fills step t+1.
	// Padded steps compute finite garbage (their emissions are 0); it is masked after the loop.
	fwdCond := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		_ = Parameter(g, "p", shapes.Make(dt, B, N))
		_ = Parameter(g, "m", shapes.Make(dt, B))
		_ = Parameter(g, "LA", shapes.Make(dt, B, T, N))
		_ = Parameter(g, "C", shapes.Make(dt, B, T))
		return []*Node{LessThan(t, Const(g, int32(T-1)))}
	})
	fwdBody := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		pt := Parameter(g, "p", shapes.Make(dt, B, N))
		m := Parameter(g, "m", shapes.Make(dt, B))
		laHist := Parameter(g, "LA", shapes.Make(dt, B, T, N))
		cHist := Parameter(g, "C", shapes.Make(dt, B, T))
		next := Add(t, Const(g, int32(1)))
		x := selectAction(Dot(pt, fwd).Product(), at(oneHotA, t)) // [B, N] = p_t·T_{a_t}
		y := Add(Log(x), at(logE, next))                          // [B, N]
		mY := ReduceMax(y, -1)                                    // [B]
		ey := Exp(Sub(y, InsertAxes(mY, -1)))                     // [B, N] = p_{t+1}
		lse := Add(mY, Log(ReduceSum(ey, -1)))                    // [B]
		la := Sub(y, InsertAxes(lse, -1))                         // [B, N] log α_{t+1}
		c := Add(lse, m)                                          // [B] log c_{t+1}
		laHist = DynamicUpdateSlice(laHist, InsertAxes(la, 1), []*Node{zeroI, next, zeroI})
		cHist = DynamicUpdateSlice(cHist, InsertAxes(c, 1), []*Node{zeroI, next})
		return []*Node{next, ey, Sub(mY, lse), laHist, cHist}
	})
	fwdOut := While(fwdCond, fwdBody, zeroI, p0, m0, laHist0, cHist0)
	laHist, cHist := fwdOut[3], fwdOut[4] // [B, T, N], [B, T]

	// Backward loop, t = T-2 … 0: state (t, lb_{t+1} [B,N], LB [B,T,N]); lb = 0 at and after the
	// last real step of each sequence.
	bwdCond := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		_ = Parameter(g, "lb", shapes.Make(dt, B, N))
		_ = Parameter(g, "LB", shapes.Make(dt, B, T, N))
		return []*Node{GreaterOrEqual(t, zeroI)}
	})
	bwdBody := NewClosure(g, func(g *Graph) []*Node {
		t := Parameter(g, "t", shapes.Make(dtypes.Int32))
		lb := Parameter(g, "lb", shapes.Make(dt, B, N))
		lbHist := Parameter(g, "LB", shapes.Make(dt, B, T, N))
		next := Add(t, Const(g, int32(1)))
		v := Add(at(logE, next), lb)                             // [B, N]
		q := Exp(Sub(v, InsertAxes(ReduceMax(v, -1), -1)))       // [B, N], max 1
		z := selectAction(Dot(q, bwd).Product(), at(oneHotA, t)) // [B, N] = T_{a_t}·q
		lb = Where(at(validTBN, next), Log(z), ScalarZero(g, dt))
		lbHist = DynamicUpdateSlice(lbHist, InsertAxes(lb, 1), []*Node{zeroI, t, zeroI})
		return []*Node{Sub(t, Const(g, int32(1))), lb, lbHist}
	})
	bwdOut := While(bwdCond, bwdBody, Const(g, int32(T-2)), Zeros(g, shapes.Make(dt, B, N)),
		Zeros(g, shapes.Make(dt, B, T, N)))
	lbHist := bwdOut[2] // [B, T, N]

	post := p.posteriors(laHist, lbHist, cHist)
	return post, p.dThetaIAJ(laHist, lbHist, cHist, fwd)
}

// dThetaIAJ returns ∂ℓ_b/∂Θ in the layout [B, N(i), A, N(j)] (that of fwdMatrix), which the
// batched matmul produces without transposes; LogLikelihoodLoop's surrogate uses it directly.
//
// ξ_b[i,a,j] = T[a,i,j] Σ_{t: a_t=a} α_t(i) w_t(j) as in ForwardBackward; α_t ≤ 1 and w_t =
// e_{t+1} β_{t+1} / c_{t+1} (β scaled so that α·β = γ) stay in range.
func (p *pass) dThetaIAJ(laHist, lbHist, cHist, fwd *Node) *Node {
	g, dt := p.g, p.dtype
	T, N, A := p.T, p.N, p.A
	Tm := T - 1
	shift := Add(p.gammaLogNorm, cHist)                                               // [B, T]
	w := Exp(Sub(Add(p.logE, lbHist), InsertAxes(shift, -1)))                         // [B, T, N]
	w = Slice(Where(p.validFull, w, ScalarZero(g, dt)), AxisRange(), AxisRange(1, T)) // [B, T-1, N], real transitions
	// One batched matmul per action: counts[b,i,a,j] = Σ_t α_t(i) [a_t = a] w_t(j). (One matmul
	// on w expanded to [B, T-1, A·N] would need a large concatenation or a general broadcast.)
	uT := TransposeAllAxes(Exp(Slice(laHist, AxisRange(), AxisRange(0, Tm))), 0, 2, 1) // [B, N, T-1] α_t(i)
	perAction := make([]*Node, A)
	for a := range A {
		wa := Mul(w, Slice(p.oneHotA, AxisRange(), AxisRange(), AxisElem(a)))      // [B, T-1, N]
		perAction[a] = Dot(uT, wa).General([]int{2}, []int{0}, []int{1}, []int{0}) // [B, N, N]
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

// posteriors computes ℓ, γ and ∂ℓ/∂π from the histories la [B,T,N] (normalised log α),
// lb [B,T,N] (log β up to a constant per step) and c [B,T] (log c_t, garbage at padded steps),
// and records Γ_t = lse_j(la_t + lb_t) [B, T] in p.gammaLogNorm.
func (p *pass) posteriors(la, lb, c *Node) Posteriors {
	g, dt := p.g, p.dtype
	zero := ScalarZero(g, dt)
	ll := ReduceSum(ConvertDType(Where(p.valid, c, zero), accDType(dt)), 1) // [B]

	lg := Add(la, lb)                                            // [B, T, N]
	m := ReduceMax(lg, -1)                                       // [B, T], finite at real steps
	m = Where(IsFinite(m), m, zero)                              // padded steps may be anything
	e := Exp(Sub(lg, InsertAxes(m, -1)))                         // [B, T, N]
	s := ReduceSum(e, -1)                                        // [B, T] ≥ 1 at real steps
	s = Where(GreaterThan(s, zero), s, ScalarOne(g, dt))         // avoid 0/0 at padded steps
	p.gammaLogNorm = Add(m, Log(s))                              // [B, T]
	gamma := Where(p.validFull, Div(e, InsertAxes(s, -1)), zero) // [B, T, N]

	piBar := Exp(p.logPi)                                                       // [N]
	v0 := ConvertDType(stepAt(p.valid, 0), dt)                                  // [B]
	dPi := Sub(stepAt(gamma, 0), Mul(InsertAxes(v0, -1), InsertAxes(piBar, 0))) // [B, N]
	return Posteriors{
		LogLik: StopGradient(ConvertDType(ll, dt)),
		Gamma:  StopGradient(gamma),
		DPi:    StopGradient(dPi),
	}
}
