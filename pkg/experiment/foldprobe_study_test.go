//go:build study

package experiment

import (
	"math"
	"os"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestFoldDepthProbe measures how many of a gradient map's visited clones fold when
// they are compared fewer moves ahead (chmm.FoldAlikeWithin within DefaultFoldAlike,
// Symbolic.FoldCost), what each
// fold costs on the training walks, and, from the true places (which the run does
// not see), how many of the clones left are at two places or more. Given a checkpoint
// (--checkpoint; the split map its next training starts from), it runs that training
// as the run does (or loads the map trained so from FOLD_PROBE_MODEL, saving it there
// first if the file is missing). Not a test: set FOLD_PROBE_CKPT to an absolute path.
//
//	FOLD_PROBE_CKPT=$PWD/cscg_empty_s6.ckpt go test -tags study -run TestFoldDepthProbe -v -timeout 60m ./pkg/experiment
func TestFoldDepthProbe(t *testing.T) {
	c, s, env, train, walks := probeCheckpoint(t, "FOLD_PROBE_CKPT")
	saved := os.Getenv("FOLD_PROBE_MODEL")
	m, err := chmm.Load(saved)
	if saved == "" || err != nil {
		if m, _, _, err = TrainSymbolic(c.Model, train, s.splitRoundTraining(), nil); err != nil {
			t.Fatal(err)
		}
		if saved != "" {
			if err := m.Save(saved); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := chmm.Diagnose(m, train, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, mixed := clonesByPlace(t, env, m, train, walks)
	t.Logf("%s seed %d, training %d: %d clones, %.4f bits/step; of those with 50 visits or more, %d at one place (95%%), %d not",
		s.Env, s.Seed, c.Round+1, m.N()-1, d.TrainBits, one, mixed)
	for _, depth := range []int{1, 2, 3, 4, 6, 8, 0} {
		keep, kept := chmm.KeepVisited(m, d.Visits, 0)
		f := m.Clone()
		n, stable := chmm.FoldAlikeWithin(f, keep, d.Visits, DefaultFoldAlike, depth)
		pm, _, err := chmm.Prune(f, keep)
		if err != nil {
			t.Fatal(err)
		}
		ll, err := chmm.LogLikelihood(pm, train)
		if err != nil {
			t.Fatal(err)
		}
		one, mixed := clonesByPlace(t, env, pm, train, walks)
		t.Logf("refined %d times (0: until stable; stable %v): %d of the %d visited clones folded, %.4f bits/step; %d at one place, %d not",
			depth, stable, n, kept, -ll/float64(d.Steps)/math.Ln2, one, mixed)
	}
}

// clonesByPlace counts the clones of m that the Viterbi paths of train visit 50 times
// or more at one place (95% of their visits) and at several (the true places of walks).
func clonesByPlace(t *testing.T, env *gridworld.Env, m *chmm.Model, train []chmm.Sequence, walks []gridworld.Episode) (one, mixed int) {
	at := make([]map[int]int, m.N())
	for e, ep := range walks {
		path, _, err := chmm.Viterbi(m, train[e])
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range path {
			if at[st] == nil {
				at[st] = map[int]int{}
			}
			at[st][ep.Places[i]]++
		}
	}
	for _, h := range at {
		tot, best := 0, 0
		for _, v := range h {
			tot, best = tot+v, max(best, v)
		}
		switch {
		case tot < 50:
		case float64(best) >= 0.95*float64(tot):
			one++
		default:
			mixed++
		}
	}
	return one, mixed
}
