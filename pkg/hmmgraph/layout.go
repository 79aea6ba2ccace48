package hmmgraph

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
	"github.com/gomlx/gomlx/support/exceptions"
)

// Layout is the static clone structure of a cloned HMM (paper Sec. 3.3): token k has Clones[k]
// clones, the states of token 0 come first, then token 1, ..., and the sink ⊥ is the last state.
// N = 1 + Σ_k Clones[k]. The layout is the same as pkg/chmm's.
type Layout struct {
	Clones []int // C_k ≥ 1 per token k; len(Clones) = K
}

// UniformLayout returns the layout with numTokens tokens of clones clones each.
func UniformLayout(numTokens, clones int) Layout {
	c := make([]int, numTokens)
	for k := range c {
		c[k] = clones
	}
	return Layout{Clones: c}
}

// Validate reports an error if the layout is empty or a clone count is not positive.
func (l Layout) Validate() error {
	if len(l.Clones) == 0 {
		return fmt.Errorf("hmmgraph: layout: no tokens (Clones is empty)")
	}
	for k, c := range l.Clones {
		if c < 1 {
			return fmt.Errorf("hmmgraph: layout: Clones[%d] = %d, want ≥ 1", k, c)
		}
	}
	return nil
}

// K returns the number of tokens.
func (l Layout) K() int { return len(l.Clones) }

// N returns the number of states, 1 + Σ_k C_k (the sink included).
func (l Layout) N() int {
	n := 1
	for _, c := range l.Clones {
		n += c
	}
	return n
}

// Sink returns the index of the sink state ⊥, N-1.
func (l Layout) Sink() int { return l.N() - 1 }

// FirstState returns the index of token k's first clone.
func (l Layout) FirstState(k int) int {
	s := 0
	for _, c := range l.Clones[:k] {
		s += c
	}
	return s
}

// StateTokens returns ω: the token emitted by each state, len N, with -1 for the sink.
func (l Layout) StateTokens() []int32 {
	w := make([]int32, 0, l.N())
	for k, c := range l.Clones {
		for range c {
			w = append(w, int32(k))
		}
	}
	return append(w, -1)
}

// StateLogEmissions expands per-token log-posteriors log ρ [B, T, K] to per-state log-emissions
// [B, T, N]: out[b,t,j] = log ρ_t(ω(j)) for real states and -Inf for the sink (paper Sec. 3.5).
// With hard tokens (HardLogRho) this is log B_{j,o_t} of Sec. 3.3.
//
// It is differentiable in logRho (the gradient sums over a token's clones). It runs as a matmul
// with the 0/1 matrix [ω(j) = k], which is exact: entries of log ρ below floorLogProb (-Inf) and
// NaN entries (padding garbage) are first replaced by floorLogProb (a finite stand-in whose exp
// is exactly 0), so that only exact products 0·x = 0 and 1·x = x are summed. A NaN meets only a
// comparison, so its gradient is exactly 0 on every backend (XLA's Max and Sign propagate NaN).
func (l Layout) StateLogEmissions(logRho *Node) *Node {
	if logRho.Rank() != 3 || logRho.Shape().Dimensions[2] != l.K() {
		exceptions.Panicf("hmmgraph.StateLogEmissions: logRho must be [B, T, K=%d], got %s", l.K(), logRho.Shape())
	}
	g := logRho.Graph()
	dt := logRho.DType()
	dims := logRho.Shape().Dimensions
	B, T, K, N := dims[0], dims[1], dims[2], l.N()
	assign := make([][]float64, K) // [K, N]: 1 where ω(j) = k
	sinkBias := make([]float64, N) // [N]: -Inf at the sink
	for k := range assign {
		assign[k] = make([]float64, N)
	}
	for j, k := range l.StateTokens() {
		if k < 0 {
			sinkBias[j] = math.Inf(-1)
		} else {
			assign[k][j] = 1
		}
	}
	floor := Scalar(g, dt, floorLogProb(dt))
	flat := Reshape(logRho, B*T, K)
	clamped := Where(GreaterOrEqual(flat, floor), flat, floor)                     // [B·T, K]
	perState := Dot(clamped, ConvertDType(Const(g, assign), dt)).Product()         // [B·T, N]
	withSink := Add(perState, ConvertDType(Reshape(Const(g, sinkBias), 1, N), dt)) // sink = -Inf
	return Reshape(withSink, B, T, N)
}

// floorLogProb is the finite log-probability that stands in for -Inf where a value must be
// multiplied (exp of it, minus any real log-probability, is exactly 0).
func floorLogProb(dt dtypes.DType) float64 {
	if dt == dtypes.Float16 {
		return -6e4
	}
	return -1e30
}

// HardLogEmissions builds log B_{j,o_t} [B, T, N] (0 where ω(j) = o_t, else -Inf; the sink is
// always -Inf) directly from tokens [B, T] (any integer dtype), paper Sec. 3.3. It differs from
// StateLogEmissions(HardLogRho(tokens, K)) only in holding -Inf instead of floorLogProb, and gives
// bit-identical likelihoods and gradients. Token values at padded
// steps are irrelevant; an out-of-range token gives an all -Inf row (ℓ = -Inf or NaN).
func (l Layout) HardLogEmissions(tokens *Node, dtype dtypes.DType) *Node {
	if tokens.Rank() != 2 || !tokens.DType().IsInt() {
		exceptions.Panicf("hmmgraph.HardLogEmissions: tokens must be integer [B, T], got %s", tokens.Shape())
	}
	g := tokens.Graph()
	w := Reshape(Const(g, l.StateTokens()), 1, 1, l.N())                  // [1, 1, N]
	match := Equal(InsertAxes(ConvertDType(tokens, dtypes.Int32), -1), w) // [B, T, N]
	return Where(match, ScalarZero(g, dtype), Infinity(g, dtype, -1))
}

// HardLogRho builds the one-hot log ρ [B, T, K] (0 on the observed token, -Inf elsewhere) from
// tokens [B, T] (any integer dtype), i.e. log B of paper Sec. 3.3 per token.
func HardLogRho(tokens *Node, K int, dtype dtypes.DType) *Node {
	if tokens.Rank() != 2 || !tokens.DType().IsInt() {
		exceptions.Panicf("hmmgraph.HardLogRho: tokens must be integer [B, T], got %s", tokens.Shape())
	}
	g := tokens.Graph()
	k := Iota(g, shapes.Make(dtypes.Int32, 1, 1, K), 2)                   // [1, 1, K]
	match := Equal(InsertAxes(ConvertDType(tokens, dtypes.Int32), -1), k) // [B, T, K]
	return Where(match, ScalarZero(g, dtype), Infinity(g, dtype, -1))
}
