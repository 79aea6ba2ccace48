package experiment

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/plan"
	"github.com/gradcscg/gradcscg/pkg/progress"
)

// Noise models of planning with hard emissions (Plan).
const (
	NoiseRate  = ""      // the filter's misreading rate as given (plan.FilterConfig.Noise)
	NoiseAuto  = "auto"  // the rate under which the map explains an unlabelled walk best
	NoiseLearn = "learn" // a token confusion matrix fitted to that walk by EM
	NoiseMap   = "map"   // the confusion matrix the map was trained through (PlanSetup.Confusion)
)

// DefaultNoise is the noise model of planning with s when none is chosen, for a map
// read from images through hard emissions (the encoder misreads test images):
// NoiseMap if the map was trained through a
// confusion matrix, else NoiseLearn. NoiseRate otherwise: symbols are never
// misread, and soft emissions carry the encoder's own uncertainty (read through the
// map's confusion matrix, if it has one: RunPlanSetup).
func DefaultNoise(s *PlanSetup, soft bool) string {
	switch {
	case soft || s.Dataset == "symbolic":
		return NoiseRate
	case s.Confusion != nil:
		return NoiseMap
	}
	return NoiseLearn
}

// PlanPreset is a named change to planning's defaults, for comparisons (the plan
// suite's variants, `gradcscg reproduce --suite plan --variant NAME`).
type PlanPreset struct {
	Name string
	// Noise is the noise model in place of DefaultNoise's choice (NoiseAuto or
	// NoiseLearn); "" keeps it.
	Noise string
	// Soft filters with the encoder's soft emissions log ρ instead of hard tokens
	// (image runs only).
	Soft bool
	// ArriveMass is MPC's arrival mass in place of plan.DefaultArriveMass (1e-9: stop
	// on arrival without looking for the goal's rival); 0 keeps it.
	ArriveMass float64
}

// PlanPresets are the named presets, the defaults first.
var PlanPresets = []PlanPreset{
	{Name: "default"},
	{Name: "uniform-noise", Noise: NoiseAuto}, // one misreading rate for every token
	{Name: "soft", Soft: true},
	{Name: "no-look", ArriveMass: 1e-9},
	{Name: "previous", Noise: NoiseAuto, ArriveMass: 1e-9}, // planning before the confusion matrix and the look
}

// LookupPlanPreset returns the preset called name.
func LookupPlanPreset(name string) (PlanPreset, error) {
	var names []string
	for _, p := range PlanPresets {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return PlanPreset{}, &FieldError{Field: "preset", Value: fmt.Sprintf("%q", name), Need: "must be one of " + strings.Join(names, ", ")}
}

// Apply makes p's changes to cfg and to the noise model noise, and returns the noise
// model to plan with.
func (p PlanPreset) Apply(cfg *plan.EvalConfig, noise string) string {
	if p.Soft {
		cfg.Filter.Soft, cfg.Filter.Noise = true, 0
		noise = NoiseRate
	}
	if p.ArriveMass > 0 {
		cfg.ArriveMass = p.ArriveMass
	}
	if p.Noise != "" {
		noise = p.Noise
	}
	return noise
}

// PlanSetup is what Plan plans with: a map, the true environment it is scored in and
// how the agent observes places.
type PlanSetup struct {
	Map      *plan.Map
	Env      *gridworld.Env
	Observer plan.Observer
	Source   string // run directory or model file
	Dataset  string // "symbolic", "mnist", "fashion"
	Obs      string // how observations are made, for reports
	// StatePlace is the place χ(s) the run's evaluation assigns to each state (for
	// figures.PlanTrials); nil for a symbolic model.
	StatePlace []int
	// Confusion is the token confusion matrix C[k][o] the map was trained through
	// (pipeline.MapConfusion: a run finalised by EM), [K][K]; nil if none.
	Confusion [][]float64
}

// SymbolicPlanSetup plans with a symbolic model m of env (source names it): the agent
// observes each place's class as its token (Tokens).
func SymbolicPlanSetup(m *chmm.Model, env *gridworld.Env, source string) (*PlanSetup, error) {
	tokens := NewTokens(env)
	if err := m.CheckCompatible(len(tokens.Classes), env.NumActions()); err != nil {
		return nil, fmt.Errorf("%s does not fit environment %s: %w", source, env.Name, err)
	}
	mp, err := plan.NewMap(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	sym := make(plan.Symbols, env.NumPlaces())
	for g, c := range env.Class {
		sym[g], _ = tokens.Token(c)
	}
	return &PlanSetup{Map: mp, Env: env, Observer: sym, Source: source, Dataset: "symbolic", Obs: "symbols"}, nil
}

// RunPlanSetup plans with the map of a finished pixel run (source names it): every
// observation is a fresh test-split image of the place's class, encoded by the run's
// frozen VQ-VAE; emissions names the filter's use of them (hard or soft), for reports.
func RunPlanSetup(res *pipeline.Result, source, emissions string, progressOut io.Writer) (*PlanSetup, error) {
	env, err := res.Config.Environment()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := res.HMM.CheckCompatible(res.HMM.K(), env.NumActions()); err != nil {
		return nil, fmt.Errorf("%s: the map does not fit environment %s: %w", source, env.Name, err)
	}
	mp, err := plan.NewMap(res.HMM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	conf, err := pipeline.MapConfusion(res.HMM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	pool, err := encodeTestImages(res, env, conf, progressOut)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &PlanSetup{Map: mp, Env: env, Observer: pool, Source: source, Dataset: res.Config.Dataset, StatePlace: res.Report.StatePlace,
		Obs: "held-out " + res.Config.Dataset + " images, " + emissions + " emissions", Confusion: conf}, nil
}

// encodeTestImages encodes every test-split image of the environment's classes with
// the run's frozen VQ-VAE: the pool fresh observations are drawn from. With the map's
// confusion matrix conf (nil: none) the soft posteriors are read as the map's tokens
// (pipeline.ThroughConfusion), as the run's own read-out does.
func encodeTestImages(res *pipeline.Result, env *gridworld.Env, conf [][]float64, progressOut io.Writer) (*plan.Pool, error) {
	bank, err := dataset.LoadBank(res.Config.Dataset, dataset.Test, env.ClassesUsed())
	if err != nil {
		return nil, err
	}
	if err := bank.CheckSide(res.Config.VQVAE.Side, "vqvae.side"); err != nil {
		return nil, err
	}
	set := bank.Set()
	want := map[int]bool{}
	for _, c := range env.ClassesUsed() {
		want[c] = true
	}
	var idx, labels []int
	for i, l := range set.Labels {
		if want[int(l)] {
			idx, labels = append(idx, i), append(labels, int(l))
		}
	}
	t0 := time.Now()
	tokens, logRho, err := res.VQVAE.Encode(bank.Floats(idx, nil))
	if err != nil {
		return nil, fmt.Errorf("encoding the held-out images: %w", err)
	}
	obs := make([]plan.Obs, len(tokens))
	for i := range tokens {
		if len(logRho[i]) != res.HMM.K() {
			return nil, fmt.Errorf("the encoder has %d codes, the map %d tokens", len(logRho[i]), res.HMM.K())
		}
		obs[i] = plan.Obs{Token: tokens[i], LogRho: logRho[i]}
	}
	if conf != nil {
		for i, lr := range pipeline.ThroughConfusion(logRho, conf) {
			obs[i].LogRho = lr
		}
	}
	if progressOut != nil {
		fmt.Fprintf(progressOut, "encoded %d held-out %s images in %.1fs\n", len(idx), res.Config.Dataset, time.Since(t0).Seconds())
	}
	return plan.NewPool(env.Class, labels, obs)
}

// PlanReport is a closed-loop planning report and where its map came from.
type PlanReport struct {
	Source  string  `json:"source"`  // run directory or model file
	Dataset string  `json:"dataset"` // "symbolic", "mnist", "fashion"
	Obs     string  `json:"observations"`
	Seconds float64 `json:"seconds"`
	// Noise is the hard-emission filter's noise model (NoiseRate, NoiseAuto,
	// NoiseLearn or NoiseMap); Confusion is the matrix of NoiseLearn or NoiseMap, [K][K].
	Noise     string      `json:"noise"`
	Confusion [][]float64 `json:"confusion,omitempty"`
	*plan.Report
}

// The unlabelled calibration walk of NoiseAuto and NoiseLearn: its length, and the
// confusion EM's starting rate and rounds (the log-likelihood settles within about
// five).
const (
	CalibrationSteps = 2000
	confusionStart   = 0.05
	confusionRounds  = 10
)

// Plan scores closed-loop planning with s under cfg (plan.Evaluate). With noise
// NoiseAuto or NoiseLearn the hard-emission filter's misreading rate or confusion
// matrix is first fitted to an unlabelled walk of CalibrationSteps steps on a seed
// stream of its own (no place or label is used); with NoiseMap the filter reads the
// tokens through the map's own confusion matrix (s.Confusion). Progress goes to
// progressOut when it is not nil.
func Plan(s *PlanSetup, cfg plan.EvalConfig, noise string, progressOut io.Writer) (*PlanReport, error) {
	t0 := time.Now()
	rep := &PlanReport{Source: s.Source, Dataset: s.Dataset, Obs: s.Obs, Noise: noise}
	whose := "" // where a confusion matrix came from, for the filter's description
	switch noise {
	case NoiseRate:
	case NoiseMap:
		switch {
		case cfg.Filter.Soft:
			return nil, fmt.Errorf("experiment: noise model %q applies to hard emissions only (soft ones are read through the map's confusion matrix already)", noise)
		case s.Confusion == nil:
			return nil, fmt.Errorf("experiment: noise model %q: %s has no confusion matrix (only a run finalised by EM has one); use %q or %q", noise, s.Source, NoiseLearn, NoiseAuto)
		}
		cfg.Filter.Confusion, rep.Confusion = s.Confusion, s.Confusion
		whose = "the map's own"
		if progressOut != nil {
			fmt.Fprintf(progressOut, "noise map: the token confusion matrix the map was trained through\n")
		}
	case NoiseAuto, NoiseLearn:
		if cfg.Filter.Soft {
			return nil, fmt.Errorf("experiment: noise model %q applies to hard emissions only", noise)
		}
		obs, actions := calibrationWalk(s.Env, s.Observer, cfg.Seed)
		if noise == NoiseAuto {
			eps, ll, err := s.Map.EstimateNoise(obs, actions, cfg.Filter, plan.DefaultNoiseGrid)
			if err != nil {
				return nil, fmt.Errorf("noise auto: %w", err)
			}
			cfg.Filter.Noise = eps
			if progressOut != nil {
				var b strings.Builder
				for i, e := range plan.DefaultNoiseGrid {
					fmt.Fprintf(&b, " %g:%.0f", e, ll[i])
				}
				fmt.Fprintf(progressOut, "noise auto: ε = %g (log-likelihood of a %d-step unlabelled walk by ε:%s)\n", eps, CalibrationSteps, b.String())
			}
		} else {
			c, ll, err := s.Map.EstimateConfusion(obs, actions, cfg.Filter, confusionStart, confusionRounds)
			if err != nil {
				return nil, fmt.Errorf("noise learn: %w", err)
			}
			cfg.Filter.Confusion, rep.Confusion = c, c
			whose = fmt.Sprintf("fitted to a %d-step unlabelled walk", CalibrationSteps)
			if progressOut != nil {
				hit := 0.0
				for k := range c {
					hit += c[k][k]
				}
				fmt.Fprintf(progressOut, "noise learn: token confusion matrix fitted to a %d-step unlabelled walk (log-likelihood %.0f at ε = %g → %.0f after %d EM rounds; mean diagonal %.3f)\n",
					CalibrationSteps, ll[0], confusionStart, ll[len(ll)-1], confusionRounds, hit/float64(len(c)))
			}
		}
	default:
		return nil, fmt.Errorf("experiment: noise model %q: want %q (the rate given), %q, %q or %q", noise, NoiseRate, NoiseAuto, NoiseLearn, NoiseMap)
	}
	if progressOut != nil {
		fmt.Fprintf(progressOut, "%s: %d places; map: %d states, %d model places; %d pairs\n",
			s.Env.Name, s.Env.NumPlaces(), s.Map.N, s.Map.NumPlaces, cfg.Pairs)
		bar := progress.New(progressOut, "plan", cfg.Pairs)
		cfg.Progress = func(done, total int) { bar.Update(done, "") }
		defer bar.Done("")
	}
	r, err := plan.Evaluate(s.Map, s.Env, s.Observer, cfg)
	if err != nil {
		return nil, err
	}
	if whose != "" {
		r.Filter += " (" + whose + ")"
	}
	rep.Report = r
	rep.Seconds = time.Since(t0).Seconds()
	return rep, nil
}

// calibrationWalk is the unlabelled walk of NoiseAuto and NoiseLearn: the agent walks
// CalibrationSteps steps at random, on a walk and images of their own seed stream
// (not the evaluation's), and keeps what it saw and did.
func calibrationWalk(env *gridworld.Env, observer plan.Observer, seed uint64) ([]plan.Obs, []int) {
	ep := env.Walk(gridworld.NewRand(seed^0xca1b_7a7e), CalibrationSteps)
	rng := rand.New(rand.NewPCG(seed, 0xca1b_7a7e))
	obs := make([]plan.Obs, len(ep.Places))
	for t, g := range ep.Places {
		obs[t] = observer.Observe(rng, g)
	}
	return obs, ep.Actions
}
