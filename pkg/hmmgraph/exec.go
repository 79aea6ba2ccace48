package hmmgraph

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// GoBackendConfig is the go-backend configuration for every program that runs these graphs:
// an unbounded worker pool, so that no op ever waits for a free worker. With the backend's
// default pool (2 × GOMAXPROCS workers) and its parallel op scheduling a While loop whose
// body runs a matmul can deadlock: the loop's executors hold the workers its body's matmul
// waits for. "ops_sequential" (ops one at a time, each still parallel inside) also avoids
// that, but leaves a core idle during the single-threaded ops (gathers, padding, most
// element-wise ops): a conv joint iteration took 10–20% longer in wall time, with the same
// results bit for bit (README, Backends and GPUs). As an environment variable:
// GOMLX_BACKEND=go:parallelism=-1.
const GoBackendConfig = "parallelism=-1"

// NewGoBackend returns a go backend with GoBackendConfig.
func NewGoBackend() (compute.Backend, error) {
	return newGo(GoBackendConfig)
}

// Variant selects an implementation of the forward pass.
type Variant int

const (
	// Loop is LogLikelihoodLoop: While-based forward–backward with the exact gradient attached by a
	// surrogate. Any T; the default.
	Loop Variant = iota
	// Unrolled is LogLikelihoodUnrolled: the recursion unrolled in the graph, plain autodiff. Small T.
	Unrolled
)

// DefaultVariant is the variant LogLikelihood uses.
const DefaultVariant = Loop

// String implements fmt.Stringer.
func (v Variant) String() string {
	switch v {
	case Loop:
		return "loop"
	case Unrolled:
		return "unrolled"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant parses "loop" or "unrolled".
func ParseVariant(s string) (Variant, error) {
	switch s {
	case "loop":
		return Loop, nil
	case "unrolled":
		return Unrolled, nil
	}
	return 0, fmt.Errorf("hmmgraph: unknown variant %q (want loop or unrolled)", s)
}

// Func returns the graph function of the variant (LogLikelihoodLoop or LogLikelihoodUnrolled).
func (v Variant) Func() func(piLogits, thetaLogits, logEmit, actions, mask *graph.Node) *graph.Node {
	if v == Unrolled {
		return LogLikelihoodUnrolled
	}
	return LogLikelihoodLoop
}

// funcAcc is Func that also returns ℓ [B] in accDType (float64 for float32 inputs).
func (v Variant) funcAcc() func(piLogits, thetaLogits, logEmit, actions, mask *graph.Node) (ll, llAcc *graph.Node) {
	if v == Unrolled {
		return logLikelihoodUnrolled
	}
	return logLikelihoodLoop
}

// GradExec is a compiled hard-token value-and-gradient pass: for hard tokens it returns
// ℓ = Σ_b ℓ_b (accumulated in float64 for both dtypes) and its gradients w.r.t. the π and Θ
// logits, as Go slices (float64). The graph is compiled once per (B, T) and cached. It is safe
// for concurrent use.
type GradExec struct {
	layout     Layout
	numActions int
	variant    Variant
	dtype      dtypes.DType
	exec       *graph.Exec
}

// NewGradExec compiles (lazily, per shape) the value+gradient graph for the layout, numActions
// actions, the variant, and dtype Float32 or Float64.
func NewGradExec(backend compute.Backend, layout Layout, numActions int, variant Variant,
	dtype dtypes.DType) (*GradExec, error) {
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	if numActions < 1 {
		return nil, fmt.Errorf("hmmgraph.NewGradExec: numActions = %d, want ≥ 1", numActions)
	}
	if dtype != dtypes.Float32 && dtype != dtypes.Float64 {
		return nil, fmt.Errorf("hmmgraph.NewGradExec: dtype %s, want Float32 or Float64", dtype)
	}
	if variant != Loop && variant != Unrolled {
		return nil, fmt.Errorf("hmmgraph.NewGradExec: unknown variant %d", int(variant))
	}
	e := &GradExec{layout: layout, numActions: numActions, variant: variant, dtype: dtype}
	fn := variant.funcAcc()
	exec, err := graph.NewExec(backend, func(in []*graph.Node) []*graph.Node {
		pi, theta, tokens, actions, mask := in[0], in[1], in[2], in[3], in[4]
		logE := layout.HardLogEmissions(tokens, dtype)
		ll, llAcc := fn(pi, theta, logE, actions, mask)
		grads := graph.Gradient(graph.ReduceAllSum(ll), pi, theta)
		return []*graph.Node{graph.ReduceAllSum(graph.StopGradient(llAcc)), grads[0], grads[1]}
	})
	if err != nil {
		return nil, fmt.Errorf("hmmgraph.NewGradExec: %w", err)
	}
	e.exec = exec.WithName(fmt.Sprintf("hmmgraph.GradExec(%s)", variant))
	return e, nil
}

// Exec runs the pass on tensors: piLogits [N] and thetaLogits [A, N, N] of the exec's dtype,
// tokens [B, T] and actions [B, T-1] int32, mask [B, T] Bool (prefix mask). It returns
// ℓ = Σ_b ℓ_b and ∂ℓ/∂π (len N), ∂ℓ/∂Θ (len A·N·N, row-major [a][i][j]). Values are not checked
// (use Sequences for checked Go inputs): an out-of-range token or action at a real step gives
// ℓ = -Inf.
func (e *GradExec) Exec(piLogits, thetaLogits, tokens, actions, mask *tensors.Tensor) (ll float64, gradPi, gradTheta []float64, err error) {
	out, err := e.exec.Call(piLogits, thetaLogits, tokens, actions, mask)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: %w", err)
	}
	defer func() {
		for _, t := range out {
			t.FinalizeAll()
		}
	}()
	vals := make([][]float64, 3)
	for i, t := range out {
		if vals[i], err = toFloat64(t); err != nil {
			return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: output %d: %w", i, err)
		}
	}
	return vals[0][0], vals[1], vals[2], nil
}

// Sequences runs the pass on Go slices: obs[i] tokens in [0, K), actions[i] in [0, A) with
// len(actions[i]) = len(obs[i]) − 1 ≥ 0, and the logits as float64 (π: len N, Θ: len A·N·N,
// row-major [a][i][j]). Sequences are padded to length padTo (0: the longest), so that calls with
// the same batch size and padTo reuse one compiled graph. Inputs are checked; errors name the
// sequence and step.
func (e *GradExec) Sequences(piLogits, thetaLogits []float64, obs, actions [][]int, padTo int) (
	ll float64, gradPi, gradTheta []float64, err error) {
	n, a, k := e.layout.N(), e.numActions, e.layout.K()
	if len(piLogits) != n {
		return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: len(piLogits) = %d, want N = %d", len(piLogits), n)
	}
	if len(thetaLogits) != a*n*n {
		return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: len(thetaLogits) = %d, want A·N·N = %d", len(thetaLogits), a*n*n)
	}
	if len(obs) == 0 || len(obs) != len(actions) {
		return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: %d observation and %d action sequences (want the same, ≥ 1)", len(obs), len(actions))
	}
	maxLen := 0
	for i, o := range obs {
		if len(o) == 0 {
			return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: sequence %d: empty", i)
		}
		if len(actions[i]) != len(o)-1 {
			return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: sequence %d: %d actions for %d observations (want %d)", i, len(actions[i]), len(o), len(o)-1)
		}
		for t, tok := range o {
			if tok < 0 || tok >= k {
				return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: sequence %d, step %d: token %d out of range [0, %d)", i, t, tok, k)
			}
		}
		for t, act := range actions[i] {
			if act < 0 || act >= a {
				return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: sequence %d, step %d: action %d out of range [0, %d)", i, t, act, a)
			}
		}
		maxLen = max(maxLen, len(o))
	}
	T := maxLen
	if padTo > 0 {
		if padTo < maxLen {
			return 0, nil, nil, fmt.Errorf("hmmgraph.GradExec: padTo = %d shorter than the longest sequence (%d)", padTo, maxLen)
		}
		T = padTo
	}
	B := len(obs)
	tok := make([]int32, B*T)
	act := make([]int32, B*max(T-1, 0))
	mask := make([]bool, B*T)
	for b, o := range obs {
		for t, v := range o {
			tok[b*T+t] = int32(v)
			mask[b*T+t] = true
		}
		for t, v := range actions[b] {
			act[b*(T-1)+t] = int32(v)
		}
	}
	var piT, thetaT *tensors.Tensor
	if e.dtype == dtypes.Float32 {
		piT = tensors.FromFlatDataAndDimensions(toFloat32(piLogits), n)
		thetaT = tensors.FromFlatDataAndDimensions(toFloat32(thetaLogits), a, n, n)
	} else {
		piT = tensors.FromFlatDataAndDimensions(append([]float64(nil), piLogits...), n)
		thetaT = tensors.FromFlatDataAndDimensions(append([]float64(nil), thetaLogits...), a, n, n)
	}
	return e.Exec(piT, thetaT,
		tensors.FromFlatDataAndDimensions(tok, B, T),
		tensors.FromFlatDataAndDimensions(act, B, T-1),
		tensors.FromFlatDataAndDimensions(mask, B, T))
}

func toFloat32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// toFloat64 copies a float tensor's data to []float64.
func toFloat64(t *tensors.Tensor) ([]float64, error) {
	switch t.DType() {
	case dtypes.Float64:
		return tensors.CopyFlatData[float64](t)
	case dtypes.Float32:
		f, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected dtype %s", t.DType())
}
