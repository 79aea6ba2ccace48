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
	"strings"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
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

// SymbolicConfig is a symbolic run: experiment.Symbolic, the settings of `gradcscg
// symbolic` too (the same config gives the same report as the CLI).
type SymbolicConfig = experiment.Symbolic

// SymbolicDefaults returns the configuration of `gradcscg symbolic --env env --trainer
// trainer` (experiment.DefaultSymbolic) at the notebooks' size (experiment.Size.Symbolic:
// at CI size a map may not be recovered).
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
	c, err := experiment.DefaultSymbolic(e, trainer)
	if err != nil {
		return SymbolicConfig{}, fmt.Errorf("notebook: %w", err)
	}
	size, err := Size()
	if err != nil {
		return SymbolicConfig{}, err
	}
	if size != SizeFull {
		c = experiment.SizeCI.Symbolic(c)
	}
	return c, nil
}

// SymbolicRun is a trained (or loaded) symbolic run with its held-out walk decoded.
type SymbolicRun = experiment.SymbolicRun

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
	reportPath := filepath.Join(dir, SymbolicReportFile)
	if _, err := os.Stat(reportPath); err == nil {
		run := &SymbolicRun{Config: cfg, Env: env}
		tokens := experiment.NewTokens(env)
		run.Classes = tokens.Classes
		run.HeldOut = experiment.SymbolicHeldOutWalk(env, cfg.Seed, cfg.EvalSteps)
		test := tokens.Sequence(run.HeldOut)
		run.Tokens = test.Obs
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

	run, err := experiment.RunSymbolic(cfg, nil, progressOut)
	if run == nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	run.Model.Meta = map[string]string{"env": env.Name, "trainer": cfg.Trainer, "seed": fmt.Sprint(cfg.Seed)}
	modelPath := filepath.Join(dir, SymbolicModelFile)
	if err := run.Model.Save(modelPath); err != nil {
		return nil, err
	}
	if err != nil { // trained but not scored (an impossible held-out step): the map is kept, the run is not finished
		return nil, fmt.Errorf("notebook: %w (the trained map is in %s)", err, modelPath)
	}
	if err := writeJSON(filepath.Join(dir, SymbolicHistoryFile), toJSONHistory(run.History)); err != nil {
		return nil, err
	}
	if err := run.Report.WriteJSON(reportPath); err != nil {
		return nil, err
	}
	return run, nil
}

// checkOrWriteSymbolicConfig writes cfg to dir, or checks that the config already
// there equals it.
func checkOrWriteSymbolicConfig(dir string, cfg SymbolicConfig) error {
	path := filepath.Join(dir, SymbolicConfigFile)
	raw, err := inputfile.ReadFile(path, jsonLimit)
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
		return fmt.Errorf("notebook: %s holds another symbolic run (%s): delete it to train again with these settings (defaults change between versions), or use another directory", dir, diff)
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
	raw, err := inputfile.ReadFile(path, jsonLimit)
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
