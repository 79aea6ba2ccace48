package experiment

import (
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func threeRooms(t *testing.T) (*gridworld.Env, Tokens, []chmm.Sequence) {
	t.Helper()
	env, err := gridworld.Named("three_rooms")
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokens(env)
	var train []chmm.Sequence
	for _, ep := range SymbolicTrainingWalks(env, 1, 1, 2000) {
		train = append(train, tok.Sequence(ep))
	}
	return env, tok, train
}

// TestTokens: token k is the k-th smallest class shown, and a sequence carries them.
func TestTokens(t *testing.T) {
	env, tok, train := threeRooms(t)
	if got := tok.Classes; len(got) != 8 || got[0] != 0 || got[7] != 7 {
		t.Errorf("classes %v", got)
	}
	if _, ok := tok.Token(99); ok {
		t.Error("class 99 has a token")
	}
	ep := SymbolicHeldOutWalk(env, 1, 50)
	s := tok.Sequence(ep)
	for i, c := range ep.Obs {
		if k, _ := tok.Token(c); s.Obs[i] != k || tok.Classes[k] != c {
			t.Fatalf("step %d: class %d → token %d", i, c, s.Obs[i])
		}
	}
	if len(train) != 1 || train[0].Len() != 2000 {
		t.Errorf("training walks: %d", len(train))
	}
}

// TestTrainSymbolicEMKeepsBestRestart: with restarts, the model returned has the
// highest training likelihood of the starts, and it is at least the single start's.
func TestTrainSymbolicEMKeepsBestRestart(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 3
	}
	tr := Training{Trainer: TrainerEM, Seed: 1, Iters: 30, Pseudocount: 1e-3}
	one, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Restarts = 3
	best, h, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	llOne, _ := chmm.LogLikelihood(one, train)
	llBest, _ := chmm.LogLikelihood(best, train)
	if llBest < llOne-1e-9 {
		t.Errorf("best of 3 restarts ℓ = %g < the first start's %g", llBest, llOne)
	}
}

// TestTrainSymbolicGradientInPlace: the gradient trainer trains the given model, and
// an unknown trainer is an error naming it.
func TestTrainSymbolicGradientInPlace(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 2
	}
	m := SymbolicInit(clones, env.NumActions(), 1, InitUniform)
	before, _ := chmm.LogLikelihood(m, train)
	got, h, err := TrainSymbolic(m, train, Training{Trainer: TrainerGradient, Seed: 1, Iters: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := chmm.LogLikelihood(m, train)
	if got != m || len(h.LogLik) == 0 || !(after > before) {
		t.Errorf("same model %v, %d iterations, ℓ %g → %g", got == m, len(h.LogLik), before, after)
	}
	if _, _, err := TrainSymbolic(m, train, Training{Trainer: "sgd"}, nil); err == nil || !strings.Contains(err.Error(), "sgd") {
		t.Errorf("trainer sgd: %v", err)
	}
	if _, _, err := TrainSymbolic(m, train, Training{Trainer: TrainerEM, Init: "zeros"}, nil); err == nil || !strings.Contains(err.Error(), "zeros") {
		t.Errorf("init zeros: %v", err)
	}
}

// TestTrainSymbolicGradientRestarts: with restarts the gradient trainer keeps the
// start with the highest training likelihood, at least the first start's.
func TestTrainSymbolicGradientRestarts(t *testing.T) {
	env, tok, train := threeRooms(t)
	clones := make([]int, len(tok.Classes))
	for k := range clones {
		clones[k] = 2
	}
	tr := Training{Trainer: TrainerGradient, Seed: 1, Iters: 40}
	one, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Restarts = 3
	best, _, err := TrainSymbolic(SymbolicInit(clones, env.NumActions(), 1, InitUniform), train, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	llOne, _ := chmm.LogLikelihood(one, train)
	llBest, _ := chmm.LogLikelihood(best, train)
	if llBest < llOne-1e-9 {
		t.Errorf("best of 3 starts ℓ = %g < the first start's %g", llBest, llOne)
	}
}
