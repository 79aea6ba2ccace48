package chmm

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// envData builds the training episodes (the environment's reference sizes)
// and a held-out episode of a built-in environment, with class ids
// compacted to tokens 0..K-1, and the reference clone budget.
func envData(t *testing.T, name string, seed uint64) (train []Sequence, test Sequence, places []int, clones []int, actions int) {
	t.Helper()
	env, err := gridworld.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	def := env.Defaults()
	var ids []int
	for _, c := range env.Class {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	slices.Sort(ids)
	conv := func(ep gridworld.Episode) Sequence {
		o := make([]int, len(ep.Obs))
		for i, c := range ep.Obs {
			o[i], _ = slices.BinarySearch(ids, c)
		}
		return Sequence{Obs: o, Actions: ep.Actions}
	}
	for _, ep := range env.TrainingEpisodes(rand.New(rand.NewPCG(seed, 1)), def.Episodes, def.Steps) {
		train = append(train, conv(ep))
	}
	held := env.Walk(rand.New(rand.NewPCG(seed, 3)), def.Steps)
	clones = UniformClones(len(ids), def.ClonesPerClass)
	for c, n := range def.ClonesByClass {
		k, _ := slices.BinarySearch(ids, c)
		clones[k] = n
	}
	return train, conv(held), held.Places, clones, env.NumActions()
}

// TestRecoverMapsLong trains with DefaultGradConfig on the built-in
// environments and checks the held-out state→place purity. Minutes on 2
// cores: set GRADCSCG_LONG=1.
func TestRecoverMapsLong(t *testing.T) {
	if os.Getenv("GRADCSCG_LONG") == "" {
		t.Skip("set GRADCSCG_LONG=1 to run")
	}
	for _, tc := range []struct {
		env    string
		clones int // 0: the environment's reference budget
	}{
		{"aliased", 0}, {"corridors", 0}, {"room", 0}, {"two_rooms", 0},
		{"square", 0}, {"three_rooms", 0}, {"cscg_maze5", 0}, {"cscg_cliques", 0},
		{"cscg_stitched", 0},
		{"uniform_interior", 40}, // the reference 20 clones per symbol are too few for gradient training
	} {
		t.Run(tc.env, func(t *testing.T) {
			train, test, places, clones, actions := envData(t, tc.env, 1)
			if tc.clones > 0 {
				clones = UniformClones(len(clones), tc.clones)
			}
			m := New(clones, actions, rand.New(rand.NewPCG(1, 2)))
			t0 := time.Now()
			h, err := TrainGradient(m, train, DefaultGradConfig())
			if err != nil {
				t.Fatal(err)
			}
			states, _, err := Viterbi(m, test)
			if err != nil {
				t.Fatal(err)
			}
			pur, used := purity(states, places)
			t.Logf("%s: N=%d, %d iterations (%s, splits %v), ℓ/T %.5f, purity %.4f, %d states, %.0fs",
				tc.env, m.N(), len(h.Iter), h.Stop, h.Splits, h.LogLik[h.BestIter], pur, used, time.Since(t0).Seconds())
			if pur < 0.99 {
				t.Errorf("state→place purity %.4f, want >= 0.99", pur)
			}
		})
	}
}

// TestRecoverAliased is the default suite's check on a paper benchmark: the
// 4×4 aliased room (4 tokens, each at 4 places; 5 clones per token) from
// 2 × 5,000 steps, both trainers.
func TestRecoverAliased(t *testing.T) {
	train, test, places, clones, actions := envData(t, "aliased", 4)
	train = []Sequence{
		{Obs: train[0].Obs[:5000], Actions: train[0].Actions[:4999]},
		{Obs: train[1].Obs[:5000], Actions: train[1].Actions[:4999]},
	}
	for _, trainer := range []string{"gradient", "em"} {
		m := New(clones, actions, rand.New(rand.NewPCG(4, 2)))
		var err error
		if trainer == "em" {
			_, err = TrainEM(m, train, DefaultEMConfig())
		} else {
			_, err = TrainGradient(m, train, DefaultGradConfig())
		}
		if err != nil {
			t.Fatal(err)
		}
		states, _, err := Viterbi(m, test)
		if err != nil {
			t.Fatal(err)
		}
		if pur, used := purity(states, places); pur < 0.99 {
			t.Errorf("%s: held-out state→place purity %.4f (%d states for 16 places), want >= 0.99", trainer, pur, used)
		}
	}
}
