package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// Obs is one observation: a hard token and, optionally, the soft posterior
// log ρ over the K tokens of an image (paper Sec. 3.2, 3.5).
type Obs struct {
	Token  int       // hard token in [0, K)
	LogRho []float32 // [K] soft posterior; nil for symbolic observations
}

// Prior is the belief over clones before the first observation.
type Prior int

const (
	// PriorStationary is the stationary distribution of the random policy
	// (Map.Stationary): the right prior for an agent that has been walking
	// for a while. The default.
	PriorStationary Prior = iota
	// PriorUniform is uniform over the real states.
	PriorUniform
	// PriorPi is the learned initial distribution π̄ = softmax(π) (paper
	// Sec. 3.3), which describes the start of a training episode.
	PriorPi
)

// String returns the prior's name.
func (p Prior) String() string {
	switch p {
	case PriorStationary:
		return "stationary"
	case PriorUniform:
		return "uniform"
	case PriorPi:
		return "pi"
	}
	return fmt.Sprintf("Prior(%d)", int(p))
}

// FilterConfig configures a Filter.
type FilterConfig struct {
	Prior Prior
	// Soft uses the soft emissions ρ_t(ω(j)) of paper Sec. 3.5 (Obs.LogRho
	// is required); otherwise the hard token's indicator log B (Sec. 3.3).
	Soft bool
	// Noise ε ∈ [0, 1) softens hard emissions into a token-misreading model:
	// a clone of the observed token has likelihood 1−ε, any other real clone
	// ε/(K−1). 0 is the model's own deterministic emission.
	Noise float64
	// Confusion, if set, replaces Noise with a full misreading model: a
	// clone of token k sees token o with probability Confusion[k][o], shape
	// [K][K], rows summing to 1 (Map.EstimateConfusion learns it).
	Confusion [][]float64
}

// Validate reports an invalid field.
func (c FilterConfig) Validate() error {
	switch {
	case c.Prior < PriorStationary || c.Prior > PriorPi:
		return fmt.Errorf("plan: filter: unknown prior %d", int(c.Prior))
	case !(c.Noise >= 0 && c.Noise < 1):
		return fmt.Errorf("plan: filter: noise %v outside [0, 1)", c.Noise)
	}
	return nil
}

// Filter is the normalised forward recursion of paper Sec. 3.3 run online:
// after observations o_1..o_t and actions a_1..a_{t−1} its belief is
//
//	b_t(j) = p(s_t = j | o_{1:t}, a_{1:t−1}) = α_t(j) / Σ_j' α_t(j')
//	b_1(j) ∝ prior(j) e_1(j),   b_{t+1}(j) ∝ Σ_i b_t(i) T[a_t,i,j] e_{t+1}(j)
//
// with e_t(j) the emission of state j (hard, noisy or soft, FilterConfig).
// The sink emits nothing, so its belief is always 0. Belief vectors have
// shape [N]. When an observation has zero probability under the belief (the
// model says it cannot happen) the filter restarts from the prior and that
// observation (counted in Resets; LogLikelihood becomes −Inf).
type Filter struct {
	mp     *Map
	cfg    FilterConfig
	conf   [][]float64 // [K][K] hard emissions: Confusion, or the matrix of Noise
	prior  []float64   // [N]
	belief []float64   // [N]
	next   []float64   // [N] scratch
	emit   []float64   // [N] scratch
	tok    []float64   // [K] scratch: log p(o | k)
	logLik float64
	steps  int
	resets int
}

// ErrNotStarted is returned by Filter.Step before the first Observe.
var ErrNotStarted = errors.New("plan: filter: Step before the first observation")

// NewFilter returns a filter on mp with no observation yet.
func (mp *Map) NewFilter(cfg FilterConfig) (*Filter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := mp.checkConfusion(cfg.Confusion); err != nil {
		return nil, err
	}
	f := &Filter{mp: mp, cfg: cfg, conf: cfg.Confusion, prior: make([]float64, mp.N), belief: make([]float64, mp.N),
		next: make([]float64, mp.N), emit: make([]float64, mp.N)}
	if f.conf == nil {
		f.conf = uniformConfusion(mp.K, cfg.Noise)
	}
	switch cfg.Prior {
	case PriorStationary:
		copy(f.prior, mp.Stationary)
	case PriorUniform:
		for s := range mp.N - 1 {
			f.prior[s] = 1 / float64(mp.N-1)
		}
	case PriorPi:
		copy(f.prior, mp.Model.Pi())
		f.prior[mp.Sink()] = 0
	}
	return f, nil
}

// checkConfusion reports a confusion matrix that is not [K][K] with
// probability rows (chmm.ValidateConfusionRows; nil is fine: no matrix).
func (mp *Map) checkConfusion(c [][]float64) error {
	if c == nil {
		return nil
	}
	if err := chmm.ValidateConfusionRows(c, mp.K); err != nil {
		return fmt.Errorf("plan: filter: %w", err)
	}
	return nil
}

// FilterHistory runs a new filter over a history: observations obs [T] and
// the actions between them [T−1].
func (mp *Map) FilterHistory(obs []Obs, actions []int, cfg FilterConfig) (*Filter, error) {
	if len(obs) == 0 {
		return nil, fmt.Errorf("plan: filter: empty history")
	}
	if len(actions) != len(obs)-1 {
		return nil, fmt.Errorf("plan: filter: %d observations need %d actions, got %d", len(obs), len(obs)-1, len(actions))
	}
	f, err := mp.NewFilter(cfg)
	if err != nil {
		return nil, err
	}
	if err := f.Observe(obs[0]); err != nil {
		return nil, fmt.Errorf("step 0: %w", err)
	}
	for t, a := range actions {
		if err := f.Step(a, obs[t+1]); err != nil {
			return nil, fmt.Errorf("step %d: %w", t+1, err)
		}
	}
	return f, nil
}

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter {
	g := *f
	g.belief = append([]float64(nil), f.belief...)
	g.next = make([]float64, len(f.next))
	g.emit = make([]float64, len(f.emit))
	g.tok = nil // scratch of its own
	return &g
}

// emission fills f.emit with e(j) ∝ p(o | ω(j)) for observation o (sink 0), read by the
// emissions of chmm that Viterbi decodes with too: chmm.LogRho for soft emissions
// (scaled by the largest, which the normalised belief does not see), chmm.Confused
// (the confusion matrix, or the one of Noise) for hard tokens.
func (f *Filter) emission(o Obs) error {
	mp := f.mp
	var e chmm.Emissions = chmm.Confused{Tokens: []int{o.Token}, C: f.conf}
	if f.cfg.Soft {
		e = chmm.LogRho{o.LogRho}
	}
	if len(f.tok) != mp.K {
		f.tok = make([]float64, mp.K)
	}
	if lik, ok := e.(chmm.Likelihoods); ok { // hard tokens: p(o | k) as it is
		if err := lik.TokenLikelihoods(0, f.tok); err != nil {
			return fmt.Errorf("plan: filter: %w", err)
		}
		for s := range mp.N {
			if k := mp.token[s]; k >= 0 {
				f.emit[s] = f.tok[k]
			} else {
				f.emit[s] = 0
			}
		}
		return nil
	}
	if err := e.LogTokens(0, f.tok); err != nil {
		return fmt.Errorf("plan: filter: %w", err)
	}
	mx := math.Inf(-1)
	for _, v := range f.tok {
		mx = math.Max(mx, v)
	}
	for s := range mp.N {
		if k := mp.token[s]; k >= 0 {
			f.emit[s] = math.Exp(f.tok[k] - mx)
		} else {
			f.emit[s] = 0
		}
	}
	return nil
}

// Observe starts the filter with its first observation:
// b_1(j) ∝ prior(j) e_1(j). Calling it again restarts the filter.
func (f *Filter) Observe(o Obs) error {
	if err := f.emission(o); err != nil {
		return err
	}
	f.steps, f.logLik, f.resets = 0, 0, 0
	return f.absorb(f.prior)
}

// Step advances the filter by action a and the observation o it led to:
// b_{t+1}(j) ∝ Σ_i b_t(i) T[a,i,j] e_{t+1}(j).
func (f *Filter) Step(a int, o Obs) error {
	if f.steps == 0 {
		return ErrNotStarted
	}
	if a < 0 || a >= f.mp.A {
		return fmt.Errorf("plan: filter: action %d outside [0, %d)", a, f.mp.A)
	}
	if err := f.emission(o); err != nil {
		return err
	}
	mp := f.mp
	clear(f.next)
	for i, bi := range f.belief {
		if bi == 0 {
			continue
		}
		row := mp.T[(a*mp.N+i)*mp.N : (a*mp.N+i+1)*mp.N]
		for j, v := range row {
			f.next[j] += bi * v
		}
	}
	return f.absorb(f.next)
}

// absorb sets belief ∝ pred ⊙ emit, accumulating the log normaliser; a zero
// total restarts from the prior.
func (f *Filter) absorb(pred []float64) error {
	z := 0.0
	for j := range f.belief {
		f.belief[j] = pred[j] * f.emit[j]
		z += f.belief[j]
	}
	if !(z > 0) || math.IsInf(z, 0) {
		if f.steps == 0 {
			return fmt.Errorf("plan: filter: the first observation has zero probability under the %s prior", f.cfg.Prior)
		}
		f.resets++
		f.logLik = math.Inf(-1)
		z = 0
		for j := range f.belief {
			f.belief[j] = f.prior[j] * f.emit[j]
			z += f.belief[j]
		}
		if !(z > 0) {
			return fmt.Errorf("plan: filter: observation %d has zero probability under the %s prior", f.steps, f.cfg.Prior)
		}
	} else {
		f.logLik += math.Log(z)
	}
	for j := range f.belief {
		f.belief[j] /= z
	}
	f.steps++
	return nil
}

// Belief returns a copy of the current belief b_t [N].
func (f *Filter) Belief() []float64 { return append([]float64(nil), f.belief...) }

// Steps is the number of observations absorbed.
func (f *Filter) Steps() int { return f.steps }

// Resets is the number of observations that had zero probability and
// restarted the filter.
func (f *Filter) Resets() int { return f.resets }

// LogLikelihood is log p(o_{1:t} | a_{1:t−1}) under the filter's prior and
// emissions (with hard noiseless emissions and PriorPi, the ℓ of paper
// Sec. 3.3); −Inf after a reset.
func (f *Filter) LogLikelihood() float64 { return f.logLik }

// MostProbable returns the state of highest belief (ties: lowest index) and
// its belief.
func (f *Filter) MostProbable() (state int, p float64) { return argmax(f.belief) }

// argmax returns the index of the largest value (ties: lowest index).
func argmax(v []float64) (int, float64) {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best, v[best]
}
