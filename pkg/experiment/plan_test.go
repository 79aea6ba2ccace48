package experiment

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// TestPlanSymbolic: a symbolic map trained by EM plans in its room, with the noise
// fitted to an unlabelled walk (symbols are never misread: the smallest ε of the
// grid); a bad noise model or a fitted one with soft emissions is an error naming it.
func TestPlanSymbolic(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokens(env)
	var train []chmm.Sequence
	for _, ep := range SymbolicTrainingWalks(env, 1, 1, 3000) {
		train = append(train, tok.Sequence(ep))
	}
	m, _, _, err := TrainSymbolic(SymbolicInit(chmm.UniformClones(len(tok.Classes), 5), env.NumActions(), 1, InitUniform), train,
		Training{Trainer: TrainerEM, Seed: 1, Pseudocount: 2e-3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SymbolicPlanSetup(m, env, "test model")
	if err != nil {
		t.Fatal(err)
	}
	cfg := plan.DefaultEvalConfig()
	cfg.Pairs = 10
	var log strings.Builder
	rep, err := Plan(s, cfg, NoiseAuto, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "ε = 0.01 ") || rep.Source != "test model" || rep.Dataset != "symbolic" || len(rep.Modes) == 0 {
		t.Errorf("report %+v\nlog %s", rep, log.String())
	}
	for _, m := range rep.Modes {
		if m.SuccessRate < 0.9 {
			t.Errorf("%s: success %.2f on a recovered aliased map", m.Mode, m.SuccessRate)
		}
	}
	if _, err := Plan(s, cfg, "guess", nil); err == nil || !strings.Contains(err.Error(), "guess") {
		t.Errorf("noise guess: %v", err)
	}
	if _, err := Plan(s, cfg, NoiseMap, nil); err == nil || !strings.Contains(err.Error(), "no confusion matrix") {
		t.Errorf("map noise without a confusion matrix: %v", err)
	}
	// NoiseMap: the filter reads the tokens through the map's own matrix, here one
	// that says token 0 is misread as token 1 a tenth of the time.
	K := len(tok.Classes)
	s.Confusion = make([][]float64, K)
	for k := range s.Confusion {
		s.Confusion[k] = make([]float64, K)
		s.Confusion[k][k] = 1
	}
	s.Confusion[0][0], s.Confusion[0][1] = 0.9, 0.1
	log.Reset()
	rep, err = Plan(s, cfg, NoiseMap, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "noise map") || !strings.Contains(rep.Filter, "confusion matrix (the map's own)") || rep.Noise != NoiseMap || len(rep.Confusion) != K || rep.Confusion[0][1] != 0.1 {
		t.Errorf("map noise: filter %q, confusion %v\nlog %s", rep.Filter, rep.Confusion, log.String())
	}
	for _, m := range rep.Modes {
		if m.SuccessRate < 0.9 {
			t.Errorf("map noise, %s: success %.2f on a recovered aliased map", m.Mode, m.SuccessRate)
		}
	}
	cfg.Filter.Soft = true
	for _, noise := range []string{NoiseLearn, NoiseMap} {
		if _, err := Plan(s, cfg, noise, nil); err == nil || !strings.Contains(err.Error(), "hard emissions") {
			t.Errorf("soft with %s: %v", noise, err)
		}
	}
}

// TestDefaultNoise checks the noise model chosen when none is given.
func TestDefaultNoise(t *testing.T) {
	for _, tc := range []struct {
		dataset string
		soft    bool
		want    string
		conf    bool // the map was trained through a confusion matrix
	}{{"symbolic", false, NoiseRate, false}, {"mnist", false, NoiseLearn, false}, {"fashion", false, NoiseLearn, false}, {"mnist", true, NoiseRate, false},
		{"mnist", false, NoiseMap, true}, {"mnist", true, NoiseRate, true}} {
		s := &PlanSetup{Dataset: tc.dataset}
		if tc.conf {
			s.Confusion = [][]float64{{1}}
		}
		if got := DefaultNoise(s, tc.soft); got != tc.want {
			t.Errorf("%s soft=%v confusion=%v: %q, want %q", tc.dataset, tc.soft, tc.conf, got, tc.want)
		}
	}
}

// TestPlanPresets: each preset changes only what it names; an unknown one is a
// FieldError listing the names.
func TestPlanPresets(t *testing.T) {
	def := plan.DefaultEvalConfig()
	for _, tc := range []struct {
		name, noise string
		soft        bool
		arrive      float64
	}{
		{"default", NoiseLearn, false, def.ArriveMass},
		{"uniform-noise", NoiseAuto, false, def.ArriveMass},
		{"soft", NoiseRate, true, def.ArriveMass},
		{"no-look", NoiseLearn, false, 1e-9},
		{"previous", NoiseAuto, false, 1e-9},
	} {
		p, err := LookupPlanPreset(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := plan.DefaultEvalConfig()
		noise := p.Apply(&cfg, NoiseLearn)
		want := plan.DefaultEvalConfig()
		want.Filter.Soft, want.ArriveMass = tc.soft, tc.arrive
		if noise != tc.noise || !reflect.DeepEqual(cfg, want) {
			t.Errorf("%s: noise %q, config %+v", tc.name, noise, cfg)
		}
	}
	_, err := LookupPlanPreset("sideways")
	var fe *FieldError
	if !errors.As(err, &fe) || err.Error() != `preset "sideways": must be one of default, uniform-noise, soft, no-look, previous` {
		t.Errorf("unknown preset: %v", err)
	}
}
