package experiment

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestVQStudyCheck checks that each bad setting is one FieldError naming its field.
func TestVQStudyCheck(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	for field, edit := range map[string]func(*VQStudy){
		"K":               func(s *VQStudy) { s.K = 1 },
		"Steps":           func(s *VQStudy) { s.Steps = 0 },
		"Batch":           func(s *VQStudy) { s.Batch = 0 },
		"LR":              func(s *VQStudy) { s.LR = -1 },
		"Episodes":        func(s *VQStudy) { s.Episodes = -1 },
		"EpisodeLen":      func(s *VQStudy) { s.EpisodeLen = -2 },
		"EvalLen":         func(s *VQStudy) { s.EvalLen = -3 },
		"Curve":           func(s *VQStudy) { s.Curve = -1 },
		"CheckpointEvery": func(s *VQStudy) { s.CheckpointEvery = 0 },
	} {
		s := DefaultVQStudy(env)
		edit(&s)
		var fe *FieldError
		if err := s.Check(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: error %v, want a FieldError of %s", field, err, field)
		}
	}
	if err := DefaultVQStudy(env).Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := DefaultVQStudy(nil).Check(); err == nil {
		t.Error("no environment: no error")
	}
	if got := DefaultVQStudy(env).Name(); got != "aliased_mnist_k4_seed1" {
		t.Errorf("Name() = %q", got)
	}
	if _, _, err := RunVQSuite(VQSuite{Base: DefaultVQStudy(nil), Envs: []string{"aliased"}, Datasets: []string{"mnist"},
		Root: t.TempDir()}, nil); err == nil {
		t.Error("suite of 0 seeds: no error")
	}
}

// TestRunVQStudy trains a tiny study, checks its report against the settings and
// reloads it; a study with other settings refuses the directory, and a batch larger
// than the training frames is a FieldError of Batch.
func TestRunVQStudy(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultVQStudy(env)
	s.Steps, s.Batch, s.Episodes, s.EpisodeLen, s.EvalLen, s.Curve = 3, 16, 1, 64, 40, 2
	s.Dir = filepath.Join(t.TempDir(), "a")
	r, err := RunVQStudy(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps != 3 || r.NumTokens != 4 || r.TrainFrames != 64 || r.EvalFrames != 40 || len(r.Curve) != 2 ||
		r.Curve[1].Step != 3 || !r.Same(s) {
		t.Errorf("report: steps %d K %d train %d eval %d curve %+v same %v", r.Steps, r.NumTokens, r.TrainFrames,
			r.EvalFrames, r.Curve, r.Same(s))
	}
	frames := 0
	for _, c := range r.Classes {
		frames += c.Frames
	}
	if frames != 40 {
		t.Errorf("class rows hold %d frames, want 40", frames)
	}
	again, err := RunVQStudy(s, nil)
	if err != nil || again.TestMSE != r.TestMSE || again.Purity != r.Purity {
		t.Errorf("reloaded study: %v, MSE %v vs %v", err, again.TestMSE, r.TestMSE)
	}
	other := s
	other.Seed = 2
	if _, err := RunVQStudy(other, nil); err == nil {
		t.Error("another seed in the same directory: no error")
	}
	big := s
	big.Batch, big.Dir = 100, filepath.Join(t.TempDir(), "b")
	var fe *FieldError
	if _, err := RunVQStudy(big, nil); !errors.As(err, &fe) || fe.Field != "Batch" {
		t.Errorf("batch 100 of 64 frames: %v", err)
	}
}
