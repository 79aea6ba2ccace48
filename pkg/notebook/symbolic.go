package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Symbolic trainers (paper Sec. 5.1).
const (
	TrainerGradient = experiment.TrainerGradient // Adam on (π, Θ) (chmm.TrainGradient)
	TrainerEM       = experiment.TrainerEM       // the original CSCG's Baum–Welch (chmm.TrainEM)
)

// Files of a symbolic run directory.
const (
	SymbolicConfigFile  = "symbolic.json" // SymbolicConfig
	SymbolicModelFile   = "chmm.model"    // the trained cloned HMM
	SymbolicReportFile  = "report.json"   // evaluation of the held-out episode
	SymbolicHistoryFile = "history.json"  // chmm.History of the training
)

// SymbolicConfig is a symbolic run (paper Sec. 5.1, the original CSCG's setting): each
// place emits its class id, mapped to a token (token k is the k-th smallest class the
// environment shows), and a cloned HMM learns the map from random walks. Its seeds are
// those of `gradcscg symbolic`: the same config gives the same report as the CLI.
type SymbolicConfig struct {
	Env string `json:"env"` // built-in environment, or the custom layout's name
	// Layout is a custom environment in the gridworld layout format (the file's text);
	// empty for built-in environments.
	Layout    string `json:"layout,omitempty"`
	Trainer   string `json:"trainer"` // TrainerGradient or TrainerEM
	Seed      uint64 `json:"seed"`
	Episodes  int    `json:"episodes"`   // training episodes
	Steps     int    `json:"steps"`      // observations per training episode
	EvalSteps int    `json:"eval_steps"` // held-out episode
	// ClonesPerClass is the uniform clone budget; ClonesByClass overrides it for some
	// class ids (a hand-set per-observation budget, paper Sec. 5.3).
	ClonesPerClass int         `json:"clones_per_class"`
	ClonesByClass  map[int]int `json:"clones_by_class,omitempty"`
	Iters          int         `json:"iters"`       // maximum iterations (0: the trainer's default)
	Restarts       int         `json:"restarts"`    // EM: initialisations tried, best training likelihood kept
	Pseudocount    float64     `json:"pseudocount"` // EM pseudocount
	// ViterbiIters bounds EM's hard (Viterbi) iterations after Baum–Welch (0: none).
	// They use pseudocount 0 and leave exact zeros, which a short held-out walk can hit.
	ViterbiIters int `json:"viterbi_iters"`
}

// SymbolicDefaults returns the configuration of `gradcscg symbolic --env env --trainer
// trainer`: the environment's reference data size and clone budget (gridworld.Defaults),
// the trainer's default iterations, 3 EM restarts, seed 1. At CI size the data are cut
// to one episode of at most 3,000 steps and the iterations to 300 (gradient) or 30 (EM
// soft iterations): a map may then not be recovered.
func SymbolicDefaults(env, trainer string) (SymbolicConfig, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return SymbolicConfig{}, err
	}
	return SymbolicDefaultsFor(e, trainer)
}

// SymbolicDefaultsFor is SymbolicDefaults for any environment, e.g. one loaded from a
// layout file (stored in Layout).
func SymbolicDefaultsFor(e *gridworld.Env, trainer string) (SymbolicConfig, error) {
	if trainer != TrainerGradient && trainer != TrainerEM {
		return SymbolicConfig{}, fmt.Errorf("notebook: trainer %q: want %q or %q", trainer, TrainerGradient, TrainerEM)
	}
	d := e.Defaults()
	layout := ""
	if b, err := gridworld.Named(e.Name); err != nil || b.Layout() != e.Layout() {
		layout = e.Layout()
	}
	pc := d.Pseudocount
	if pc == 0 {
		pc = chmm.DefaultEMConfig().Pseudocount
	}
	c := SymbolicConfig{
		Env: e.Name, Layout: layout, Trainer: trainer, Seed: 1,
		Episodes: d.Episodes, Steps: d.Steps, EvalSteps: d.Steps,
		ClonesPerClass: d.ClonesPerClass, ClonesByClass: d.ClonesByClass,
		Restarts: 3, Pseudocount: pc, ViterbiIters: chmm.DefaultEMConfig().ViterbiIters,
	}
	size, err := Size()
	if err != nil {
		return SymbolicConfig{}, err
	}
	if size == SizeCI {
		c.Episodes, c.Steps, c.EvalSteps = 1, min(c.Steps, 3000), min(c.Steps, 3000)
		c.Restarts, c.ViterbiIters = 1, 0
		c.ClonesPerClass = min(c.ClonesPerClass, 10)
		if len(c.ClonesByClass) > 0 {
			by := make(map[int]int, len(c.ClonesByClass))
			for k, n := range c.ClonesByClass {
				by[k] = min(n, 10)
			}
			c.ClonesByClass = by
		}
		if trainer == TrainerGradient {
			c.Iters = 200
		} else {
			c.Iters = 20
		}
	}
	return c, nil
}

// Environment returns the run's grid world: the built-in one, or Layout parsed.
func (c SymbolicConfig) Environment() (*gridworld.Env, error) {
	if c.Layout == "" {
		return gridworld.Named(c.Env)
	}
	e, err := gridworld.ParseLayout(c.Env, strings.NewReader(c.Layout))
	if err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	return e, nil
}

// Validate reports every invalid field.
func (c SymbolicConfig) Validate() error {
	var bad []string
	add := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	e, err := c.Environment()
	if err != nil {
		bad = append(bad, fmt.Sprintf("env: %v", err))
	}
	add(c.Trainer == TrainerGradient || c.Trainer == TrainerEM, "trainer=%q (want %q or %q)", c.Trainer, TrainerGradient, TrainerEM)
	add(c.Episodes >= 1, "episodes=%d (need ≥ 1)", c.Episodes)
	add(c.Steps >= 2, "steps=%d (need ≥ 2)", c.Steps)
	add(c.EvalSteps >= 2, "eval_steps=%d (need ≥ 2)", c.EvalSteps)
	add(c.ClonesPerClass >= 1, "clones_per_class=%d (need ≥ 1)", c.ClonesPerClass)
	add(c.Iters >= 0, "iters=%d (need ≥ 0)", c.Iters)
	add(c.Restarts >= 0, "restarts=%d (need ≥ 0)", c.Restarts)
	add(c.ViterbiIters >= 0, "viterbi_iters=%d (need ≥ 0)", c.ViterbiIters)
	add(c.Pseudocount >= 0 && !math.IsInf(c.Pseudocount, 0), "pseudocount=%g (need ≥ 0)", c.Pseudocount)
	classes := map[int]bool{}
	if e != nil {
		for _, k := range e.Class {
			classes[k] = true
		}
	}
	for _, k := range sortedKeys(c.ClonesByClass) {
		add(c.ClonesByClass[k] >= 1, "clones_by_class[%d]=%d (need ≥ 1)", k, c.ClonesByClass[k])
		add(e == nil || classes[k], "clones_by_class[%d]: the environment shows no class %d", k, k)
	}
	if len(bad) > 0 {
		return fmt.Errorf("notebook: invalid symbolic config: %s", strings.Join(bad, "; "))
	}
	return nil
}

func sortedKeys(m map[int]int) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// SymbolicRun is a trained (or loaded) symbolic run with its held-out episode decoded.
type SymbolicRun struct {
	Config  SymbolicConfig
	Env     *gridworld.Env
	Classes []int // token k shows class Classes[k]
	Model   *chmm.Model
	History *chmm.History // nil when the run directory has none
	Report  *evaluate.Report
	HeldOut gridworld.Episode // the held-out walk (places, classes, actions)
	Tokens  []int             // its tokens
	States  []int             // its Viterbi path s*_1..s*_T
}

// Symbolic trains, or loads, the symbolic run in dir: a directory with a finished run
// of the same config is loaded (the model is decoded again, which is fast); a
// directory with another config is refused, naming the fields that differ; otherwise
// the model is trained and config, model, history and report are written (each file
// atomically, the report last, so a run killed part-way is simply trained again).
// Progress lines go to progressOut when it is not nil.
func Symbolic(dir string, cfg SymbolicConfig, progressOut io.Writer) (*SymbolicRun, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env, err := cfg.Environment()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if err := checkOrWriteSymbolicConfig(dir, cfg); err != nil {
		return nil, err
	}
	run := &SymbolicRun{Config: cfg, Env: env}
	tokens := experiment.NewTokens(env)
	run.Classes = tokens.Classes
	run.HeldOut = experiment.SymbolicHeldOutWalk(env, cfg.Seed, cfg.EvalSteps)
	test := tokens.Sequence(run.HeldOut)
	run.Tokens = test.Obs

	reportPath := filepath.Join(dir, SymbolicReportFile)
	if _, err := os.Stat(reportPath); err == nil {
		if run.Model, err = chmm.Load(filepath.Join(dir, SymbolicModelFile)); err != nil {
			return nil, err
		}
		if run.Report, err = evaluate.ReadJSON(reportPath); err != nil {
			return nil, err
		}
		run.History, _ = readHistory(filepath.Join(dir, SymbolicHistoryFile))
		if run.States, _, err = chmm.Viterbi(run.Model, test); err != nil {
			return nil, fmt.Errorf("notebook: %s: decoding the held-out episode: %w", dir, err)
		}
		return run, nil
	}

	t0 := time.Now()
	clones := make([]int, len(run.Classes))
	for k, c := range run.Classes {
		clones[k] = cfg.ClonesPerClass
		if n, ok := cfg.ClonesByClass[c]; ok {
			clones[k] = n
		}
	}
	var train []chmm.Sequence
	for _, ep := range experiment.SymbolicTrainingWalks(env, cfg.Seed, cfg.Episodes, cfg.Steps) {
		train = append(train, tokens.Sequence(ep))
	}
	m := experiment.SymbolicInit(clones, env.NumActions(), cfg.Seed, experiment.InitUniform)
	if progressOut != nil {
		fmt.Fprintf(progressOut, "%s: %d places, %d tokens, %d states; %d×%d training steps; trainer %s\n",
			env.Name, env.NumPlaces(), m.K(), m.N(), cfg.Episodes, cfg.Steps, cfg.Trainer)
	}
	var t experiment.Training
	if run.Model, run.History, t, err = trainSymbolic(m, train, cfg, progressOut); err != nil {
		return nil, err
	}
	trainSec := time.Since(t0).Seconds()

	tEval := time.Now()
	if run.States, _, err = chmm.Viterbi(run.Model, test); err != nil {
		return nil, fmt.Errorf("notebook: decoding the held-out episode: %w", err)
	}
	rep, err := evaluate.Evaluate(evaluate.Input{
		Env: env, Places: run.HeldOut.Places, States: run.States, Tokens: test.Obs,
		Trans: run.Model.Transitions(), NumStates: run.Model.N(), NumTokens: run.Model.K(),
	}, evaluate.DefaultOptions())
	if err != nil {
		return nil, err
	}
	if rep.Diagnosis, err = experiment.DiagnoseSymbolic(run.Model, train, test); err != nil {
		return nil, err
	}
	rep.Env, rep.Dataset, rep.Trainer, rep.Seed = env.Name, "symbolic", cfg.Trainer, cfg.Seed
	rep.Training = experiment.SymbolicTraining(run.Model, train, t, run.History)
	rep.Seconds = map[string]float64{"train": trainSec, "eval": time.Since(tEval).Seconds(), "total": time.Since(t0).Seconds()}
	run.Report = rep

	run.Model.Meta = map[string]string{"env": env.Name, "trainer": cfg.Trainer, "seed": fmt.Sprint(cfg.Seed)}
	if err := run.Model.Save(filepath.Join(dir, SymbolicModelFile)); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, SymbolicHistoryFile), toJSONHistory(run.History)); err != nil {
		return nil, err
	}
	if err := rep.WriteJSON(reportPath); err != nil {
		return nil, err
	}
	return run, nil
}

// trainSymbolic trains m with experiment.TrainSymbolic, the trainer of `gradcscg
// symbolic` too, and returns how it trained.
func trainSymbolic(m *chmm.Model, train []chmm.Sequence, cfg SymbolicConfig, out io.Writer) (*chmm.Model, *chmm.History, experiment.Training, error) {
	restarts := cfg.Restarts // EM's (the gradient trainer here trains one start)
	if cfg.Trainer != TrainerEM {
		restarts = 1
	}
	t := experiment.Training{Trainer: cfg.Trainer, Seed: cfg.Seed, Iters: cfg.Iters,
		Pseudocount: cfg.Pseudocount, ViterbiIters: cfg.ViterbiIters, Restarts: restarts}
	best, h, err := experiment.TrainSymbolic(m, train, t, out)
	return best, h, t, err
}

// checkOrWriteSymbolicConfig writes cfg to dir, or checks that the config already
// there equals it.
func checkOrWriteSymbolicConfig(dir string, cfg SymbolicConfig) error {
	path := filepath.Join(dir, SymbolicConfigFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return writeJSON(path, cfg)
	}
	if err != nil {
		return fmt.Errorf("notebook: %w", err)
	}
	var old SymbolicConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&old); err != nil {
		return fmt.Errorf("notebook: %s: %w", path, err)
	}
	if diff := diffFields(old, cfg); diff != "" {
		return fmt.Errorf("notebook: %s holds another symbolic run (%s): use another directory", dir, diff)
	}
	return nil
}

// diffFields names the JSON fields in which a and b differ.
func diffFields(a, b SymbolicConfig) string {
	va, vb, t := reflect.ValueOf(a), reflect.ValueOf(b), reflect.TypeOf(a)
	var diff []string
	for i := range t.NumField() {
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if m1, ok := x.(map[int]int); ok { // nil and empty maps are the same budget
			m2 := y.(map[int]int)
			if len(m1) == 0 && len(m2) == 0 {
				continue
			}
		}
		if !reflect.DeepEqual(x, y) {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			diff = append(diff, fmt.Sprintf("%s: %v there, %v here", name, x, y))
		}
	}
	return strings.Join(diff, "; ")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("notebook: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("notebook: %w", err)
	}
	return nil
}

// readHistory reads a history.json written by Symbolic.
func readHistory(path string) (*chmm.History, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h jsonHistory
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("notebook: %s: %w", path, err)
	}
	return &chmm.History{Phase: h.Phase, Iter: h.Iter, LogLik: fromNullable(h.LogLik), Seconds: h.Seconds,
		Entropy: fromNullable(h.Entropy), Stop: h.Stop, BestIter: h.BestIter, Splits: h.Splits}, nil
}

// jsonHistory is chmm.History with non-finite values (EM's NaN entropies) as nulls,
// which JSON can hold.
type jsonHistory struct {
	Phase    []string     `json:"phase"`
	Iter     []int        `json:"iter"`
	LogLik   []*float64   `json:"loglik"`
	Seconds  []float64    `json:"seconds"`
	Entropy  []*float64   `json:"entropy"`
	Stop     string       `json:"stop"`
	BestIter int          `json:"best_iter"`
	Splits   []chmm.Split `json:"splits,omitempty"`
}

func toJSONHistory(h *chmm.History) *jsonHistory {
	if h == nil {
		return &jsonHistory{}
	}
	return &jsonHistory{Phase: h.Phase, Iter: h.Iter, LogLik: toNullable(h.LogLik), Seconds: h.Seconds,
		Entropy: toNullable(h.Entropy), Stop: h.Stop, BestIter: h.BestIter, Splits: h.Splits}
}

func toNullable(xs []float64) []*float64 {
	out := make([]*float64, len(xs))
	for i, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out[i] = &xs[i]
		}
	}
	return out
}

func fromNullable(xs []*float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.NaN()
		if x != nil {
			out[i] = *x
		}
	}
	return out
}
