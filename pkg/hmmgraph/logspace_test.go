package hmmgraph

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
	"github.com/gomlx/gomlx/core/tensors"
)

// logSpaceLoop is a second implementation of LogLikelihoodLoop: the log-space recursions with an
// exact max shift per step (ReduceMax inside the While bodies, so it runs on the go backend only),
// with the same surrogate. Forward: y = log(p_t·T_{a_t}) + log e_{t+1}, p = exp(la − max la);
// backward: lb_t = log(T_{a_t}·exp(v − max v)), v = log e_{t+1} + lb_{t+1}; γ = softmax(la + lb);
// ξ from w_t = exp(log e_{t+1} + lb_{t+1} − Γ_{t+1} − log c_{t+1}).
func logSpaceLoop(pi, theta, logEmit, actions, mask *Node) *Node {
	p := newPass("logSpaceLoop", StopGradient(pi), StopGradient(theta), StopGradient(logEmit), actions, mask)
	g, dt := p.g, p.dtype
	B, T, N, A := p.B, p.T, p.N, p.A
	acc := accDType(dt)
	zero := ScalarZero(g, dt)
	zeroI := Const(g, int32(0))
	la0, c0 := initStep(p.logPi, stepAt(p.logE, 0))
	laHist, lbHist, cHist := InsertAxes(la0, 1), Zeros(g, shapes.Make(dt, B, 1, N)), InsertAxes(c0, 1)
	if T > 1 {
		for _, d := range []dtypes.DType{dt, acc, dtypes.Int32} {
			_, _ = ScalarZero(g, d), ScalarOne(g, d)
		}
		logE := TransposeAllAxes(p.logE, 1, 0, 2)
		oneHotA := TransposeAllAxes(p.oneHotA, 1, 0, 2)
		validTBN := timeMajorMask(p.lengths, T, N)
		fwd, bwd := fwdMatrix(p.trans), bwdMatrix(p.trans)
		m0 := ReduceMax(la0, -1)
		p0 := Exp(Sub(la0, InsertAxes(m0, -1)))
		laH := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, B, T, N)), laHist, []*Node{zeroI, zeroI, zeroI})
		cH := DynamicUpdateSlice(Zeros(g, shapes.Make(dt, B, T)), cHist, []*Node{zeroI, zeroI})
		state := func(g *Graph, names []string, shs ...shapes.Shape) []*Node {
			out := make([]*Node, len(names))
			for i, n := range names {
				out[i] = Parameter(g, n, shs[i])
			}
			return out
		}
		fShapes := []shapes.Shape{shapes.Make(dtypes.Int32), shapes.Make(dt, B, N), shapes.Make(dt, B), shapes.Make(dt, B, T, N), shapes.Make(dt, B, T)}
		fNames := []string{"t", "p", "m", "LA", "C"}
		fwdOut := While(NewClosure(g, func(g *Graph) []*Node {
			return []*Node{LessThan(state(g, fNames, fShapes...)[0], Const(g, int32(T-1)))}
		}), NewClosure(g, func(g *Graph) []*Node {
			s := state(g, fNames, fShapes...)
			t, pt, m, la, c := s[0], s[1], s[2], s[3], s[4]
			next := Add(t, Const(g, int32(1)))
			x := ReduceSum(Mul(Reshape(Dot(pt, fwd).Product(), B, A, N), InsertAxes(at(oneHotA, t), -1)), 1)
			y := Add(Log(x), at(logE, next))
			mY := ReduceMax(y, -1)
			ey := Exp(Sub(y, InsertAxes(mY, -1)))
			lse := Add(mY, Log(ReduceSum(ey, -1)))
			la = DynamicUpdateSlice(la, InsertAxes(Sub(y, InsertAxes(lse, -1)), 1), []*Node{zeroI, next, zeroI})
			c = DynamicUpdateSlice(c, InsertAxes(Add(lse, m), 1), []*Node{zeroI, next})
			return []*Node{next, ey, Sub(mY, lse), la, c}
		}), zeroI, p0, m0, laH, cH)
		bShapes := []shapes.Shape{shapes.Make(dtypes.Int32), shapes.Make(dt, B, N), shapes.Make(dt, B, T, N)}
		bNames := []string{"t", "lb", "LB"}
		bwdOut := While(NewClosure(g, func(g *Graph) []*Node {
			return []*Node{GreaterOrEqual(state(g, bNames, bShapes...)[0], zeroI)}
		}), NewClosure(g, func(g *Graph) []*Node {
			s := state(g, bNames, bShapes...)
			t, lb, lbH := s[0], s[1], s[2]
			next := Add(t, Const(g, int32(1)))
			v := Add(at(logE, next), lb)
			q := Exp(Sub(v, InsertAxes(ReduceMax(v, -1), -1)))
			z := ReduceSum(Mul(Reshape(Dot(q, bwd).Product(), B, A, N), InsertAxes(at(oneHotA, t), -1)), 1)
			lb = Where(at(validTBN, next), Log(z), ScalarZero(g, dt))
			lbH = DynamicUpdateSlice(lbH, InsertAxes(lb, 1), []*Node{zeroI, t, zeroI})
			return []*Node{Sub(t, Const(g, int32(1))), lb, lbH}
		}), Const(g, int32(T-2)), Zeros(g, shapes.Make(dt, B, N)), Zeros(g, shapes.Make(dt, B, T, N)))
		laHist, cHist, lbHist = fwdOut[3], fwdOut[4], bwdOut[2]
	}
	// Posteriors: γ = softmax_j(la + lb), Γ its log normaliser.
	lg := Add(laHist, lbHist)
	m := ReduceMax(lg, -1)
	m = Where(IsFinite(m), m, zero)
	e := Exp(Sub(lg, InsertAxes(m, -1)))
	s := ReduceSum(e, -1)
	s = Where(GreaterThan(s, zero), s, ScalarOne(g, dt))
	gammaLogNorm := Add(m, Log(s))
	gamma := Where(p.validFull, Div(e, InsertAxes(s, -1)), zero)
	v0 := ConvertDType(stepAt(p.valid, 0), dt)
	post := Posteriors{
		LogLik: StopGradient(ReduceSum(ConvertDType(Where(p.valid, cHist, zero), acc), 1)),
		Gamma:  StopGradient(gamma),
		DPi:    StopGradient(Sub(stepAt(gamma, 0), Mul(InsertAxes(v0, -1), InsertAxes(Exp(p.logPi), 0)))),
	}
	dTheta := StopGradient(Zeros(g, shapes.Make(dt, B, N, A, N)))
	if T > 1 {
		w := Exp(Sub(Add(p.logE, lbHist), InsertAxes(Add(gammaLogNorm, cHist), -1)))
		w = Slice(Where(p.validFull, w, zero), AxisRange(), AxisRange(1, T))
		uT := TransposeAllAxes(Exp(Slice(laHist, AxisRange(), AxisRange(0, T-1))), 0, 2, 1)
		perAction := make([]*Node, A)
		for a := range A {
			wa := Mul(w, Slice(p.oneHotA, AxisRange(), AxisRange(), AxisElem(a)))
			perAction[a] = Dot(uT, wa).General([]int{2}, []int{0}, []int{1}, []int{0})
		}
		c4 := Stack(perAction, 2)
		tIAJ := InsertAxes(Reshape(fwdMatrix(p.trans), N, A, N), 0)
		dTheta = StopGradient(Mul(Sub(c4, InsertAxes(ReduceSum(Mul(c4, tIAJ), -1), -1)), tIAJ))
	}
	return withGradient(post, dTheta, pi, theta, logEmit)
}

// TestLoopMatchesLogSpaceRecursion: LogLikelihoodLoop (probability-space forward, posterior
// smoother backward, no reduction in its loop bodies) gives the same ℓ and gradients w.r.t. π, Θ
// and log ρ (or the per-state log-emissions) as the log-space recursions with exact per-step max
// shifts: within 1e-12 (float64) and 1e-6 (float32) of max(1, each tensor's largest entry), on soft and
// hard emissions, prefix masks, length-1 sequences and T = 1, -Inf emissions with NaN padding,
// -Inf Θ logits, and an empty sequence.
func TestLoopMatchesLogSpaceRecursion(t *testing.T) {
	if backend(t).String() != "go" {
		t.Skip("the log-space reference holds reductions in its loop bodies: go backend only")
	}
	rng := rand.New(rand.NewPCG(77, 78))
	mixed := Layout{Clones: []int{3, 1, 4, 2}}
	for _, c := range []struct {
		name       string
		p          *problem
		directInfE bool // per-state log-emissions with -Inf (sink, other tokens) and NaN padding
		infLogits  bool // Θ[a,i,j] = -Inf where (i+j+a) % 7 == 0, j ≠ i
		weights    []float64
	}{
		{"soft", randomProblem(rng, mixed, 3, []int{30, 17, 30}, 30, false), false, false, []float64{0.5, 2, -1}},
		{"hard", randomProblem(rng, UniformLayout(4, 5), 4, []int{40, 25, 40}, 40, true), false, false, []float64{1, 1, 1}},
		{"length 1", randomProblem(rng, Layout{Clones: []int{2, 3, 1}}, 3, []int{1, 5, 2}, 5, false), false, false, []float64{1, 1, 1}},
		{"T = 1", randomProblem(rng, Layout{Clones: []int{2, 3, 1}}, 3, []int{1, 1}, 1, false), false, false, []float64{1, 2}},
		{"-Inf emissions", randomProblem(rng, UniformLayout(4, 5), 4, []int{60, 33}, 60, true), true, false, []float64{1, 1}},
		{"-Inf logits", randomProblem(rng, mixed, 3, []int{30, 17, 30}, 30, false), false, true, []float64{1, -1, 1}},
		{"empty", randomProblem(rng, mixed, 3, []int{0, 7}, 7, false), false, false, []float64{1, 1}},
	} {
		p := c.p
		N := p.layout.N()
		if c.infLogits {
			for a := range p.A {
				for i := range N {
					for j := range N {
						if (i+j+a)%7 == 0 && j != i {
							p.theta[(a*N+i)*N+j] = math.Inf(-1)
						}
					}
				}
			}
		}
		for _, tc := range []struct {
			dt  dtypes.DType
			tol float64
		}{{dtypes.Float64, 1e-12}, {dtypes.Float32, 1e-6}} {
			got := p.runDirect(t, LogLikelihoodLoop, tc.dt, c.weights, c.directInfE)
			want := p.runDirect(t, logSpaceLoop, tc.dt, c.weights, c.directInfE)
			for i, name := range []string{"ℓ", "∂/∂π", "∂/∂Θ", "∂/∂logE"} {
				if hasNaN(got[i]) {
					t.Errorf("%s %s %s: NaN/Inf", c.name, tc.dt, name)
				}
				scale := max(maxAbs(want[i]), 1) // probabilities and their differences are O(1)
				if d := maxAbsDiff(t, got[i], want[i]); d > tc.tol*scale {
					t.Errorf("%s %s %s: max |diff| = %.3g = %.3g × max |value| > %g", c.name, tc.dt, name, d, d/scale, tc.tol)
				}
			}
		}
	}
}

// runDirect evaluates fn on p like problem.run; with directInfE the pass gets per-state
// log-emissions [B, T, N] (-Inf for the sink and other tokens, NaN at padded steps) instead of
// StateLogEmissions(log ρ), and the last output is the gradient w.r.t. them.
func (p *problem) runDirect(tb testing.TB, fn func(pi, theta, logEmit, actions, mask *Node) *Node,
	dt dtypes.DType, weights []float64, directInfE bool) [][]float64 {
	tb.Helper()
	exec, err := NewExec(backend(tb), func(in []*Node) []*Node {
		pi, theta, e, acts, mask, w := in[0], in[1], in[2], in[3], in[4], in[5]
		logE := e
		if !directInfE {
			logE = p.layout.StateLogEmissions(e)
		}
		ll := fn(pi, theta, logE, acts, mask)
		grads := Gradient(ReduceAllSum(Mul(ll, w)), pi, theta, e)
		return []*Node{ll, grads[0], grads[1], grads[2]}
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer exec.Finalize()
	in := append(p.inputs(dt), floatTensor(dt, weights, len(weights)))
	if directInfE {
		B, T, N := p.B(), p.T(), p.layout.N()
		w := p.layout.StateTokens()
		logE := make([]float64, 0, B*T*N)
		for b := range B {
			for s := range T {
				for j := range N {
					v := math.Inf(-1)
					if s >= p.lengths[b] {
						v = math.NaN()
					} else if w[j] >= 0 {
						v = p.logRho[b][s][w[j]]
					}
					logE = append(logE, v)
				}
			}
		}
		in[2] = floatTensor(dt, logE, B, T, N)
	}
	out, err := exec.Call(in...)
	if err != nil {
		tb.Fatal(err)
	}
	vals := make([][]float64, len(out))
	for i, o := range out {
		if vals[i], err = toFloat64(o); err != nil {
			tb.Fatal(err)
		}
	}
	return vals
}

// floatTensor is x as a tensor of dtype dt (Float32 or Float64) with the dimensions dims.
func floatTensor(dt dtypes.DType, x []float64, dims ...int) *tensors.Tensor {
	if dt == dtypes.Float32 {
		return tensors.FromFlatDataAndDimensions(toFloat32(x), dims...)
	}
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), x...), dims...)
}
