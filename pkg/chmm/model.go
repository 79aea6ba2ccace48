package chmm

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Model is an action-conditioned cloned HMM (paper Section 3.3).
//
// States are grouped by token: token 0's Clones[0] clones come first, then
// token 1's, and so on; the sink ⊥ is the last state, N-1. Emissions are
// deterministic (state s emits Token(s); the sink emits nothing), so the
// learnable parameters are the logits alone:
//
//	π̄ = softmax(PiLogits)                      [N]
//	T[a,i,:] = softmax(ThetaLogits[a,i,:])     [A][N][N], row-major
//
// A logit of -Inf is an exact zero probability. Every row (and π) must have at
// least one finite logit; NaN and +Inf are invalid (see Validate).
type Model struct {
	Clones      []int     // C_k per token k (len K), each >= 1
	NumActions  int       // A >= 1
	PiLogits    []float64 // π, len N = 1 + Σ_k C_k
	ThetaLogits []float64 // Θ, len A*N*N, [a][i][j]

	// Meta is free-form metadata (environment, trainer, seed, ...) stored in
	// the model file's header.
	Meta map[string]string
}

// Sequence is one episode: observed tokens o_1..o_T and actions a_1..a_{T-1},
// Actions[t] moving from step t to step t+1 (len(Actions) == len(Obs)-1).
type Sequence struct {
	Obs     []int
	Actions []int
}

// Len returns the number of observations T.
func (s Sequence) Len() int { return len(s.Obs) }

// UniformClones returns numTokens clone counts all equal to clones.
func UniformClones(numTokens, clones int) []int {
	if numTokens < 0 {
		numTokens = 0
	}
	c := make([]int, numTokens)
	for k := range c {
		c[k] = clones
	}
	return c
}

// Reference initialisation constants: real destinations get
// logits uniform in ±initNoise, the sink log(initSinkWeight).
const (
	initNoise      = 0.1
	initSinkWeight = 10
)

// New returns a model initialised as the reference implementation does:
// Θ logits uniform in [-0.1, 0.1] toward real destinations and
// log(10) toward the sink, the same for every action; π logits ~ N(0, 1).
// A nil rng means a fixed seed. New never panics: invalid clone counts or
// action counts give a model whose Validate (and every function using it)
// returns an error.
func New(clones []int, numActions int, rng *rand.Rand) *Model {
	m := &Model{Clones: append([]int(nil), clones...), NumActions: numActions}
	if m.validateShape() != nil || numActions < 1 {
		return m
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	n := m.N()
	m.PiLogits = make([]float64, n)
	for s := range m.PiLogits {
		m.PiLogits[s] = rng.NormFloat64()
	}
	m.ThetaLogits = make([]float64, numActions*n*n)
	row := make([]float64, n)
	logSink := math.Log(initSinkWeight)
	for i := range n {
		for j := range n - 1 {
			row[j] = initNoise * (2*rng.Float64() - 1)
		}
		row[n-1] = logSink
		for a := range numActions {
			copy(m.ThetaLogits[(a*n+i)*n:(a*n+i+1)*n], row)
		}
	}
	return m
}

// NewRandom returns a model initialised as the original CSCG initialises its
// transitions (chmm_actions.py: T = rand(A, N, N), rows normalised): every
// transition toward a real destination gets weight u ~ U(0, 1], drawn per action,
// i.e. logit log u; the sink keeps New's weight 10 and π is New's. Unlike New's
// near-uniform start, the clones of a token differ from the first iteration.
func NewRandom(clones []int, numActions int, rng *rand.Rand) *Model {
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	m := New(clones, numActions, rng)
	if m.ThetaLogits == nil {
		return m
	}
	n := m.N()
	for a := range numActions {
		for i := range n {
			row := m.ThetaLogits[(a*n+i)*n:][:n]
			for j := range n - 1 {
				row[j] = math.Log(1 - rng.Float64()) // u in (0, 1]
			}
		}
	}
	return m
}

// K returns the number of tokens.
func (m *Model) K() int { return len(m.Clones) }

// N returns the number of states, 1 + Σ_k C_k (the sink included).
func (m *Model) N() int {
	n := 1
	for _, c := range m.Clones {
		n += c
	}
	return n
}

// Sink returns the index of the sink state, N-1.
func (m *Model) Sink() int { return m.N() - 1 }

// FirstState returns the first clone of token k; its clones are
// FirstState(k) .. FirstState(k)+Clones[k]-1.
func (m *Model) FirstState(k int) int {
	s := 0
	for _, c := range m.Clones[:k] {
		s += c
	}
	return s
}

// Token returns the token emitted by state s, or -1 for the sink (and for
// states out of range).
func (m *Model) Token(s int) int {
	if s < 0 {
		return -1
	}
	for k, c := range m.Clones {
		if s < c {
			return k
		}
		s -= c
	}
	return -1
}

// StateTokens returns Token(s) for every state s (the sink maps to -1).
func (m *Model) StateTokens() []int {
	out := make([]int, 0, m.N())
	for k, c := range m.Clones {
		for range c {
			out = append(out, k)
		}
	}
	return append(out, -1)
}

// Pi returns the initial distribution softmax(π), len N.
func (m *Model) Pi() []float64 {
	p := make([]float64, len(m.PiLogits))
	softmaxInto(p, m.PiLogits)
	return p
}

// Transitions returns T flat, len A*N*N, T[(a*N+i)*N+j] = softmax(Θ[a,i,:])_j.
func (m *Model) Transitions() []float64 {
	t := make([]float64, len(m.ThetaLogits))
	transitionsInto(t, m.ThetaLogits, m.N(), 0)
	return t
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := &Model{
		Clones:      append([]int(nil), m.Clones...),
		NumActions:  m.NumActions,
		PiLogits:    append([]float64(nil), m.PiLogits...),
		ThetaLogits: append([]float64(nil), m.ThetaLogits...),
	}
	if m.Meta != nil {
		c.Meta = make(map[string]string, len(m.Meta))
		for k, v := range m.Meta {
			c.Meta[k] = v
		}
	}
	return c
}

// maxStates bounds N so that A*N*N stays addressable and allocations sane.
const maxStates = 1 << 15

func (m *Model) validateShape() error {
	if len(m.Clones) == 0 {
		return fmt.Errorf("chmm: model has no tokens (Clones is empty)")
	}
	n := 1
	for k, c := range m.Clones {
		if c < 1 {
			return fmt.Errorf("chmm: Clones[%d] = %d, want >= 1", k, c)
		}
		n += c
		if n > maxStates {
			return fmt.Errorf("chmm: %d states exceed the limit %d", n, maxStates)
		}
	}
	return nil
}

// Validate checks the model's shape and logits: clone counts >= 1, A >= 1,
// slice lengths N and A*N*N, no NaN or +Inf, and at least one finite logit in
// π and in every transition row.
func (m *Model) Validate() error {
	if err := m.validateShape(); err != nil {
		return err
	}
	if m.NumActions < 1 {
		return fmt.Errorf("chmm: NumActions = %d, want >= 1", m.NumActions)
	}
	n := m.N()
	if len(m.PiLogits) != n {
		return fmt.Errorf("chmm: len(PiLogits) = %d, want N = %d", len(m.PiLogits), n)
	}
	if len(m.ThetaLogits) != m.NumActions*n*n {
		return fmt.Errorf("chmm: len(ThetaLogits) = %d, want A*N*N = %d*%d*%d", len(m.ThetaLogits), m.NumActions, n, n)
	}
	if err := checkLogits(m.PiLogits); err != nil {
		return fmt.Errorf("chmm: PiLogits: %w", err)
	}
	for a := range m.NumActions {
		for i := range n {
			r := (a*n + i) * n
			if err := checkLogits(m.ThetaLogits[r : r+n]); err != nil {
				return fmt.Errorf("chmm: ThetaLogits[%d][%d]: %w", a, i, err)
			}
		}
	}
	return nil
}

func checkLogits(row []float64) error {
	finite := false
	for j, v := range row {
		switch {
		case math.IsNaN(v):
			return fmt.Errorf("entry %d is NaN", j)
		case math.IsInf(v, 1):
			return fmt.Errorf("entry %d is +Inf", j)
		case !math.IsInf(v, -1):
			finite = true
		}
	}
	if !finite {
		return fmt.Errorf("every entry is -Inf (no probability mass)")
	}
	return nil
}

// CheckCompatible reports whether the model fits data with numTokens tokens
// and numActions actions.
func (m *Model) CheckCompatible(numTokens, numActions int) error {
	if m.K() != numTokens {
		return fmt.Errorf("chmm: model has %d tokens, data has %d", m.K(), numTokens)
	}
	if m.NumActions != numActions {
		return fmt.Errorf("chmm: model has %d actions, data has %d", m.NumActions, numActions)
	}
	return nil
}

// Check validates the model and reports the first problem in seqs: an empty
// sequence, len(Actions) != len(Obs)-1, a token outside [0, K) or an action
// outside [0, A), naming the sequence index and step.
func (m *Model) Check(seqs []Sequence) error {
	if err := m.Validate(); err != nil {
		return err
	}
	return m.checkSeqs(seqs)
}

// PassCost returns the multiply-adds of one forward pass of m over seqs,
// Σ_t C_{o_t}·C_{o_{t+1}} (the blocks of the recursions; package doc): an E-step
// or an exact gradient costs about three times it. seqs must have passed Check.
func PassCost(m *Model, seqs []Sequence) float64 {
	var w float64
	for _, s := range seqs {
		for t := 1; t < len(s.Obs); t++ {
			w += float64(m.Clones[s.Obs[t-1]] * m.Clones[s.Obs[t]])
		}
	}
	return w
}

func (m *Model) checkSeqs(seqs []Sequence) error {
	k, a := m.K(), m.NumActions
	for i, s := range seqs {
		if len(s.Obs) == 0 {
			return fmt.Errorf("chmm: sequence %d: no observations", i)
		}
		if len(s.Actions) != len(s.Obs)-1 {
			return fmt.Errorf("chmm: sequence %d: %d actions for %d observations, want %d", i, len(s.Actions), len(s.Obs), len(s.Obs)-1)
		}
		for t, o := range s.Obs {
			if o < 0 || o >= k {
				return fmt.Errorf("chmm: sequence %d, step %d: token %d outside [0, %d)", i, t, o, k)
			}
		}
		for t, x := range s.Actions {
			if x < 0 || x >= a {
				return fmt.Errorf("chmm: sequence %d, step %d: action %d outside [0, %d)", i, t, x, a)
			}
		}
	}
	return nil
}

// softmaxInto writes softmax(x) into dst (len(dst) == len(x)); -Inf entries
// give exact zeros. x must hold at least one finite entry.
func softmaxInto(dst, x []float64) {
	clearUpper()
	mx := math.Inf(-1)
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	var z float64
	for j, v := range x {
		e := math.Exp(v - mx) // exp(-Inf) = 0
		dst[j] = e
		z += e
	}
	inv := 1 / z
	for j := range dst {
		dst[j] *= inv
	}
}

// logSumExp returns log Σ exp(x), -Inf for an empty or all -Inf x.
func logSumExp(x []float64) float64 {
	clearUpper()
	mx := math.Inf(-1)
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	var z float64
	for _, v := range x {
		z += math.Exp(v - mx)
	}
	return mx + math.Log(z)
}

// TrainBytes estimates the peak memory of training a cloned HMM with n states and
// actions actions on steps observations: forward and backward messages (two T × N
// float64 arrays) and about six A × N × N float64 tensors (logits, probabilities,
// gradient, two Adam moments, expected counts).
func TrainBytes(n, actions, steps int) float64 {
	return 8 * (2*float64(steps)*float64(n) + 6*float64(actions)*float64(n)*float64(n))
}
