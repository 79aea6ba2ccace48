//go:build study

package experiment

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestDropCostProbe measures what dropping and folding cost a gradient map before a
// split (DefaultDropCost's numbers). Given a checkpoint of a run (--checkpoint; the
// split map its next training starts from), it runs that training as the run does,
// then reports per token the clones above each share of its visits, and the training
// walks' bits per step after dropping the clones under 1%, 0.2% and none, each then
// folded (FoldAlike). Not a test: set DROP_PROBE_CKPT to an absolute path to run it.
//
//	DROP_PROBE_CKPT=$PWD/big_room_s1.ckpt go test -tags study -run TestDropCostProbe -v -timeout 60m ./pkg/experiment
func TestDropCostProbe(t *testing.T) {
	c, s, _, train, _ := probeCheckpoint(t, "DROP_PROBE_CKPT")
	m, _, _, err := TrainSymbolic(c.Model, train, s.splitRoundTraining(), nil)
	if err != nil {
		t.Fatal(err)
	}
	bits := func(mm *chmm.Model) (*chmm.Diagnosis, float64) {
		d, err := chmm.Diagnose(mm, train, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return d, d.TrainBits
	}
	d, b := bits(m)
	t.Logf("%s seed %d, training %d: %d states, %.4f bits/step, %d used", s.Env, s.Seed, c.Round+1, m.N(), b, d.UsedClones)
	first := 0
	for k, ck := range m.Clones {
		v := d.Visits[first : first+ck]
		tot := 0
		for _, x := range v {
			tot += x
		}
		over := func(share float64) int {
			n := 0
			for _, x := range v {
				if x > 0 && float64(x) >= share*float64(tot) {
					n++
				}
			}
			return n
		}
		t.Logf("token %d: %d clones, %d visits; visited %d, ≥1%% %d, ≥0.2%% %d, ≥0.1%% %d", k, ck, tot, over(1e-300), over(0.01), over(0.002), over(0.001))
		first += ck
	}
	for _, share := range []float64{chmm.UsedShare, 0.002, 0} {
		keep, kept := chmm.KeepVisited(m, d.Visits, share)
		pm, _, err := chmm.Prune(m, keep)
		if err != nil {
			t.Fatal(err)
		}
		f := m.Clone()
		fk := slices.Clone(keep)
		nf := chmm.FoldAlike(f, fk, d.Visits, s.FoldAlike)
		fm, _, err := chmm.Prune(f, fk)
		if err != nil {
			t.Fatal(err)
		}
		_, pb := bits(pm)
		_, fb := bits(fm)
		t.Logf("dropped under %g: %d kept, %.4f bits/step; then %d folded: %.4f", share, kept, pb, nf, fb)
	}
}

// probeCheckpoint reads the checkpoint named by the environment variable v (the probe
// is skipped when v is not set) and returns it, its experiment and world, and that
// experiment's training walks as tokens and as walks.
func probeCheckpoint(t *testing.T, v string) (*splitCheckpoint, Symbolic, *gridworld.Env, []chmm.Sequence, []gridworld.Episode) {
	path := os.Getenv(v)
	if path == "" {
		t.Skipf("set %s to a checkpoint to run it", v)
	}
	c, err := readCheckpoint(path)
	if c == nil || err != nil {
		t.Fatalf("checkpoint %s: %v", path, err)
	}
	var s Symbolic
	if err := json.Unmarshal(c.Config, &s); err != nil {
		t.Fatal(err)
	}
	env, err := s.Environment()
	if err != nil {
		t.Fatal(err)
	}
	tokens := NewTokens(env)
	walks := SymbolicTrainingWalks(env, s.Seed, s.Episodes, s.Steps)
	var train []chmm.Sequence
	for _, ep := range walks {
		train = append(train, tokens.Sequence(ep))
	}
	return c, s, env, train, walks
}
