package chmm

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGrowBySplitting drives the split rounds with stand-in trainers and rules and
// checks the rounds against counts worked out by hand: every kept clone split doubles
// a token's clones (1 → 2 → 4), a dropped clone is not split, a Choose mask splits
// only the clones it marks, the split map is what the next round trains and what
// AfterSplit sees, and a run resumed at a round from its split map (and the
// generator's state) ends with the map of the run that was not interrupted.
func TestGrowBySplitting(t *testing.T) {
	type event struct {
		what   string
		round  int
		clones []int
	}
	grow := func(src *rand.PCG, log *[]event, choose bool) GrowBySplitting {
		g := GrowBySplitting{Noise: 0.1, Rand: rand.New(src)}
		g.Train = func(round int, m *Model) (*Model, error) {
			*log = append(*log, event{"train", round, slices.Clone(m.Clones)})
			return m, nil
		}
		g.Judge = func(round int, m *Model) (SplitJudgement, error) {
			if round == 3 {
				return SplitJudgement{Stop: "three splits"}, nil
			}
			keep := make([]bool, m.N())
			for s := range keep {
				keep[s] = s != m.FirstState(1)+1 // token 1's second clone (if any) is dropped
			}
			keep[m.N()-1] = true
			return SplitJudgement{Keep: keep}, nil
		}
		if choose {
			g.Choose = func(round int, kept *Model) ([]bool, error) {
				split := make([]bool, kept.N())
				split[kept.FirstState(0)] = true // token 0's first clone only
				return split, nil
			}
		}
		g.AfterSplit = func(next int, m *Model) error {
			*log = append(*log, event{"split", next, slices.Clone(m.Clones)})
			return nil
		}
		return g
	}
	start := New([]int{1, 1}, 2, rand.New(rand.NewPCG(1, 2)))
	var log []event
	m, round, err := grow(rand.NewPCG(3, 4), &log, false).Run(0, start.Clone())
	if err != nil || round != 3 {
		t.Fatalf("Run: round %d, %v; want round 3", round, err)
	}
	// Token 0 keeps every clone: 1, 2, 4, 8. Token 1 drops its second: 1, 2, 2, 2.
	want := []event{
		{"train", 0, []int{1, 1}}, {"split", 1, []int{2, 2}},
		{"train", 1, []int{2, 2}}, {"split", 2, []int{4, 2}},
		{"train", 2, []int{4, 2}}, {"split", 3, []int{8, 2}},
		{"train", 3, []int{8, 2}},
	}
	if !slices.EqualFunc(log, want, func(a, b event) bool {
		return a.what == b.what && a.round == b.round && slices.Equal(a.clones, b.clones)
	}) {
		t.Errorf("rounds %v, want %v", log, want)
	}
	if !slices.Equal(m.Clones, []int{8, 2}) {
		t.Errorf("map's clones %v, want [8 2]", m.Clones)
	}

	log = nil
	if m, _, err := grow(rand.NewPCG(3, 4), &log, true).Run(0, start.Clone()); err != nil || !slices.Equal(m.Clones, []int{4, 1}) {
		t.Errorf("one clone split a round: clones %v, %v; want [4 1]", m.Clones, err)
	}

	// Interrupted after the split that starts round 2, and resumed there.
	src := rand.NewPCG(3, 4)
	g := grow(src, &log, false)
	stop := errors.New("interrupted")
	var saved *Model
	var state []byte
	g.AfterSplit = func(next int, m *Model) error {
		if next == 2 {
			saved = m.Clone()
			state, _ = src.MarshalBinary()
			return stop
		}
		return nil
	}
	if _, _, err := g.Run(0, start.Clone()); !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	src = rand.NewPCG(0, 0)
	if err := src.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	resumed, round, err := grow(src, &log, false).Run(2, saved)
	if err != nil || round != 3 || !slices.Equal(resumed.ThetaLogits, m.ThetaLogits) || !slices.Equal(resumed.PiLogits, m.PiLogits) {
		t.Errorf("resumed run: round %d, %v; its map differs from the uninterrupted one's", round, err)
	}
}
