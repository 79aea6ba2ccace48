package hmmgraph

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
	"github.com/gomlx/gomlx/support/exceptions"
)

// LogLikelihood is the default forward pass, LogLikelihoodLoop (any T, O(B·T·N) memory, exact
// gradient); see DefaultVariant. Shapes as in LogLikelihoodUnrolled.
func LogLikelihood(piLogits, thetaLogits, logEmit, actions, mask *Node) *Node {
	return LogLikelihoodLoop(piLogits, thetaLogits, logEmit, actions, mask)
}

// pass holds the checked and sanitised inputs of a likelihood pass.
type pass struct {
	g          *Graph
	dtype      dtypes.DType
	B, T, N, A int

	logPi     *Node // [N] log π̄ = log_softmax(π)
	trans     *Node // [A, N, N] T[a,i,j] = softmax_j Θ[a,i,:]
	logE      *Node // [B, T, N] log-emissions, 0 at padded steps (so padded steps are finite)
	acts      *Node // [B, T-1] int32 actions; action 0 at padded transitions; nil if T = 1
	oneHotA   *Node // [B, T-1, A] one-hot of acts (dtype); nil if T = 1
	valid     *Node // [B, T] Bool: step t of sequence b is real (prefix mask)
	lengths   *Node // [B] int32: number of real steps, L_b
	validFull *Node // [B, T, N] Bool: valid broadcast over states (t < L_b)
}

// newPass checks shapes and builds the common inputs. piLogits [N], thetaLogits [A, N, N],
// logEmit [B, T, N] (all the same float dtype), actions [B, T-1] (any integer dtype),
// mask [B, T] (Bool, or numeric with nonzero = valid) or nil for "all valid".
func newPass(name string, piLogits, thetaLogits, logEmit, actions, mask *Node) *pass {
	p := &pass{g: logEmit.Graph(), dtype: logEmit.DType()}
	if !p.dtype.IsFloat() {
		exceptions.Panicf("%s: logEmit must be float, got %s", name, logEmit.Shape())
	}
	if logEmit.Rank() != 3 {
		exceptions.Panicf("%s: logEmit must be [B, T, N], got %s", name, logEmit.Shape())
	}
	p.B, p.T, p.N = logEmit.Shape().Dimensions[0], logEmit.Shape().Dimensions[1], logEmit.Shape().Dimensions[2]
	if p.T < 1 || p.N < 1 {
		exceptions.Panicf("%s: logEmit needs T ≥ 1 and N ≥ 1, got %s", name, logEmit.Shape())
	}
	if piLogits.Rank() != 1 || piLogits.Shape().Dimensions[0] != p.N || piLogits.DType() != p.dtype {
		exceptions.Panicf("%s: piLogits must be %s [N=%d], got %s", name, p.dtype, p.N, piLogits.Shape())
	}
	if thetaLogits.Rank() != 3 || thetaLogits.DType() != p.dtype ||
		thetaLogits.Shape().Dimensions[1] != p.N || thetaLogits.Shape().Dimensions[2] != p.N {
		exceptions.Panicf("%s: thetaLogits must be %s [A, N=%d, N=%d], got %s", name, p.dtype, p.N, p.N, thetaLogits.Shape())
	}
	p.A = thetaLogits.Shape().Dimensions[0]
	if !actions.DType().IsInt() || actions.Rank() != 2 ||
		actions.Shape().Dimensions[0] != p.B || actions.Shape().Dimensions[1] != p.T-1 {
		exceptions.Panicf("%s: actions must be integer [B=%d, T-1=%d], got %s", name, p.B, p.T-1, actions.Shape())
	}
	g := p.g
	if mask == nil {
		p.valid = BroadcastToDims(Const(g, true), p.B, p.T)
	} else {
		if mask.Rank() != 2 || mask.Shape().Dimensions[0] != p.B || mask.Shape().Dimensions[1] != p.T {
			exceptions.Panicf("%s: mask must be [B=%d, T=%d], got %s", name, p.B, p.T, mask.Shape())
		}
		if mask.DType() == dtypes.Bool {
			p.valid = mask
		} else {
			p.valid = NotEqual(mask, ScalarZero(g, mask.DType()))
		}
	}
	p.logPi = LogSoftmax(piLogits, -1)
	p.trans = Softmax(thetaLogits, -1)
	p.lengths = ReduceSum(ConvertDType(p.valid, dtypes.Int32), 1)
	p.validFull = batchMajorMask(p.lengths, p.T, p.N)
	p.logE = Where(p.validFull, logEmit, ScalarZero(g, p.dtype))
	if p.T > 1 {
		// Transition t→t+1 is real iff step t+1 is (prefix masks); other actions are set to 0.
		// (With T = 1 the actions [B, 0] are never read: no graph op gets a 0-sized shape.)
		next := Slice(p.valid, AxisRange(), AxisRange(1, p.T)) // [B, T-1]
		p.acts = Where(next, ConvertDType(actions, dtypes.Int32), ScalarZero(g, dtypes.Int32))
		p.oneHotA = OneHot(p.acts, p.A, p.dtype) // [B, T-1, A]
	}
	return p
}

// fwdMatrix lays T out as [i, a·N + j] so that one matmul p·M gives Σ_i p(i) T[a,i,j] for all a.
func fwdMatrix(trans *Node) *Node {
	d := trans.Shape().Dimensions
	a, n := d[0], d[1]
	return Reshape(TransposeAllAxes(trans, 1, 0, 2), n, a*n) // [N(i), A·N(j)]
}

// bwdMatrix lays T out as [j, a·N + i] so that one matmul q·M gives Σ_j T[a,i,j] q(j) for all a.
func bwdMatrix(trans *Node) *Node {
	d := trans.Shape().Dimensions
	a, n := d[0], d[1]
	return Reshape(TransposeAllAxes(trans, 2, 0, 1), n, a*n) // [N(j), A·N(i)]
}

// selectAction returns Σ_a oneHot[b,a] all[b, a·N + j]: all [B, A·N], oneHot [B, A] → [B, N].
func selectAction(all, oneHot *Node) *Node {
	b, a := oneHot.Shape().Dimensions[0], oneHot.Shape().Dimensions[1]
	n := all.Shape().Dimensions[1] / a
	return ReduceSum(Mul(Reshape(all, b, a, n), InsertAxes(oneHot, -1)), 1)
}

// pickAction returns all[b, a_b·n : (a_b+1)·n] for all [B, A·n] and rows [B, 1] int32 holding
// b·A + a_b → [B, n]: a Gather, so no reduction (it may run inside a While body on XLA) and no
// gradient.
func pickAction(all, rows *Node, n int) *Node {
	return Gather(Reshape(all, -1, n), rows)
}

// batchMajorMask returns the prefix mask broadcast over states, [B, T, N] Bool: t < L_b for
// lengths L [B] int32. It compares an Iota with the lengths (a trailing broadcast) rather than
// broadcasting valid [B, T]: the go backend's Where is fast only for a full-shape condition, and
// its graph pass ImplicitBroadcastFusion strips an explicit BroadcastInDim off a condition again.
func batchMajorMask(lengths *Node, T, N int) *Node {
	g := lengths.Graph()
	B := lengths.Shape().Dimensions[0]
	t := Iota(g, shapes.Make(dtypes.Int32, B, T, N), 1)
	return LessThan(t, Reshape(lengths, B, 1, 1))
}

// timeMajorMask is batchMajorMask in the layout [T, B, N], built as [T, B·N] against lengths
// repeated per state (a leading broadcast, which the go backend runs fast).
func timeMajorMask(lengths *Node, T, N int) *Node {
	g := lengths.Graph()
	B := lengths.Shape().Dimensions[0]
	perState := Reshape(BroadcastToDims(InsertAxes(lengths, -1), B, N), 1, B*N) // [1, B·N]
	t := Iota(g, shapes.Make(dtypes.Int32, T, B*N), 0)
	return Reshape(LessThan(t, perState), T, B, N)
}

// safeLog is log(x) for x ≥ 0 with log(0) = -Inf and a finite (zero) gradient at 0.
func safeLog(x *Node) *Node {
	g := x.Graph()
	pos := GreaterThan(x, ScalarZero(g, x.DType()))
	return Where(pos, Log(Where(pos, x, ScalarOne(g, x.DType()))), Infinity(g, x.DType(), -1))
}

// logSumExp returns lse over the last axis of x [B, N] → [B]. The shift is gradient-free (lse is
// shift invariant); an all -Inf row gives -Inf.
func logSumExp(x *Node) *Node {
	g := x.Graph()
	m := StopGradient(ReduceMax(x, -1))
	m = Where(IsFinite(m), m, ScalarZero(g, x.DType()))
	return Add(m, Log(ReduceSum(Exp(Sub(x, InsertAxes(m, -1))), -1)))
}

// maxShift returns m = max_j x[b,j] [B], gradient-free and 0 for an all -Inf row.
func maxShift(x *Node) *Node {
	m := StopGradient(ReduceMax(x, -1))
	return Where(IsFinite(m), m, ScalarZero(x.Graph(), x.DType()))
}

// normalise returns (y - lse(y), lse(y)) for y [B, N]: the log-probabilities and the log normaliser.
func normalise(y *Node) (la, lse *Node) {
	lse = logSumExp(y)
	return Sub(y, InsertAxes(lse, -1)), lse
}

// initStep is the first step of the recursion (Sec. 3.3 / 3.5):
//
//	log α_1(j) = log π̄_j + log e_1(j),
//
// returned normalised, la [B, N], with the log normaliser log p(o_1) [B].
func initStep(logPi, logE1 *Node) (la, logC *Node) {
	return normalise(Add(InsertAxes(logPi, 0), logE1))
}

// forwardStep is one step of the recursion (Sec. 3.3 / 3.5):
//
//	log α_{t+1}(j) = lse_i[log α_t(i) + log T_{a_t,i,j}] + log e_{t+1}(j),
//
// computed as log(p·T_{a_t}) + M with p = exp(log α_t − M), M = max_i log α_t(i), so the matmul runs
// on numbers in [0, 1] and -Inf entries never meet a multiplication.
// la [B, N] normalised log α_t, fwd [N, A·N] (fwdMatrix), oneHot [B, A], logE [B, N].
// Returns the normalised log α_{t+1} [B, N] and log p(o_{t+1} | o_{1:t}, a_{1:t}) [B].
func forwardStep(la, fwd, oneHot, logE *Node) (laNext, logC *Node) {
	m := maxShift(la)                                // [B]
	p := Exp(Sub(la, InsertAxes(m, -1)))             // [B, N], max 1
	x := selectAction(Dot(p, fwd).Product(), oneHot) // [B, N] = p·T_{a_t}
	laNext, lse := normalise(Add(safeLog(x), logE))  // [B, N], [B]
	return laNext, Add(lse, m)
}

// accDType is the dtype in which per-step log normalisers are summed: float64 for float32/64 (so
// ℓ stays exact over 10^4+ steps), float32 for half precision.
func accDType(dt dtypes.DType) dtypes.DType {
	if dt == dtypes.Float32 || dt == dtypes.Float64 {
		return dtypes.Float64
	}
	return dtypes.Float32
}

// stepAt returns x[:, t] for x [B, T, ...] with a static t, dropping the axis.
func stepAt(x *Node, t int) *Node {
	specs := make([]SliceAxisSpec, x.Rank())
	for i := range specs {
		specs[i] = AxisRange()
	}
	specs[1] = AxisElem(t)
	return Squeeze(Slice(x, specs...), 1)
}

// LogLikelihoodUnrolled returns ℓ(o_{1:T} | a_{1:T-1}) per sequence [B] (paper Sec. 3.3, soft
// emissions Sec. 3.5), with the recursion unrolled in the graph so that plain autodiff
// differentiates it. The graph and the autodiff tape grow linearly with T (value + gradient at
// B = 4, N = 201, T = 1024 took ≈ 2.3 s against ≈ 0.15–0.3 s for LogLikelihoodLoop); use it for
// short sequences and as the reference for LogLikelihoodLoop.
//
// Shapes: piLogits [N], thetaLogits [A, N, N], logEmit [B, T, N] per-state log-emissions (e.g.
// Layout.StateLogEmissions or Layout.HardLogEmissions; -Inf allowed), all of one float dtype;
// actions [B, T-1] integer, action t leads from step t to t+1; mask [B, T] Bool or numeric (nonzero
// = real) prefix mask, or nil. Padded steps contribute exactly nothing; their emissions and actions
// may hold anything, also NaN. A sequence whose mask is all false gets ℓ = 0.
func LogLikelihoodUnrolled(piLogits, thetaLogits, logEmit, actions, mask *Node) *Node {
	ll, _ := logLikelihoodUnrolled(piLogits, thetaLogits, logEmit, actions, mask)
	return ll
}

// logLikelihoodUnrolled returns LogLikelihoodUnrolled's ℓ [B] and ℓ in accDType before the
// conversion to the input dtype.
func logLikelihoodUnrolled(piLogits, thetaLogits, logEmit, actions, mask *Node) (ll, llAcc *Node) {
	p := newPass("hmmgraph.LogLikelihoodUnrolled", piLogits, thetaLogits, logEmit, actions, mask)
	acc := accDType(p.dtype)
	zero := ScalarZero(p.g, p.dtype)
	fwd := fwdMatrix(p.trans)

	la, logC := initStep(p.logPi, stepAt(p.logE, 0))
	steps := []*Node{Where(stepAt(p.valid, 0), logC, zero)} // [B] each
	for t := 0; t+1 < p.T; t++ {
		laNext, c := forwardStep(la, fwd, stepAt(p.oneHotA, t), stepAt(p.logE, t+1))
		la = Where(stepAt(p.validFull, t+1), laNext, la)
		steps = append(steps, Where(stepAt(p.valid, t+1), c, zero))
	}
	llAcc = ReduceSum(ConvertDType(Stack(steps, 1), acc), 1) // [B], summed in acc precision
	return ConvertDType(llAcc, p.dtype), llAcc
}
