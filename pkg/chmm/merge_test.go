package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ringWalk walks a ring of places with classes cls (action 0: next place, 1: previous)
// for T steps; a class in split is emitted as itself or as split[class], at random.
func ringWalk(cls []int, split map[int]int, T int, seed uint64) Sequence {
	r := rand.New(rand.NewPCG(seed, 1))
	s := Sequence{Obs: make([]int, T), Actions: make([]int, T-1)}
	p := 0
	for t := range T {
		o := cls[p]
		if alt, ok := split[o]; ok && r.IntN(2) == 1 {
			o = alt
		}
		s.Obs[t] = o
		if t+1 < T {
			a := r.IntN(2)
			s.Actions[t] = a
			p = (p + len(cls) + 1 - 2*a) % len(cls)
		}
	}
	return s
}

// TestMergeTokens: two classes of a ring split over two tokens each at random come back
// as one group each; the four classes stay apart (each has its own neighbours under
// each action), and with a z bar below the split tokens' statistic nothing merges.
// On ring walks the split tokens of one class reach z ≈ 5 (a walk's counts are not
// quite independent draws), hence bars of 10 and 100.
func TestMergeTokens(t *testing.T) {
	cls := []int{0, 1, 2, 0, 3, 1}
	for seed := range uint64(5) {
		for _, z := range []float64{10, 100} {
			seq := ringWalk(cls, map[int]int{0: 4, 1: 5}, 20000, seed)
			group, n, err := MergeTokens([]Sequence{seq}, 6, 2, z)
			if err != nil {
				t.Fatal(err)
			}
			if n != 4 || group[0] != group[4] || group[1] != group[5] || len(slices.Compact(slices.Sorted(slices.Values(group[:4])))) != 4 {
				t.Fatalf("seed %d, z < %g: groups %v (%d), want 0 with 4, 1 with 5, and four groups", seed, z, group, n)
			}
			// Without splits no token merges.
			plain := ringWalk(cls, nil, 20000, seed)
			if group, n, err = MergeTokens([]Sequence{plain}, 4, 2, z); err != nil || n != 4 {
				t.Fatalf("seed %d, z < %g: unsplit ring: groups %v (%d), %v; want four", seed, z, group, n, err)
			}
		}
	}
	if _, _, err := MergeTokens([]Sequence{{Obs: []int{0, 7}, Actions: []int{0}}}, 4, 2, 5); err == nil {
		t.Fatal("token 7 of 4 accepted")
	}
}

// TestGTest checks G against a hand computation: (10, 30; 30, 10) has expected counts
// 20 everywhere, G = 2·(2·10·ln(1/2) + 2·30·ln(3/2)) with 1 degree of freedom.
func TestGTest(t *testing.T) {
	g, dof := gTest([]float64{10, 30}, []float64{30, 10})
	want := 2 * (20*math.Log(0.5) + 60*math.Log(1.5))
	if dof != 1 || math.Abs(g-want) > 1e-9 {
		t.Fatalf("G = %v (dof %d), want %v (1)", g, dof, want)
	}
	if g, dof := gTest([]float64{5, 0}, []float64{0, 0}); g != 0 || dof != 0 {
		t.Fatalf("empty row: %v, %d", g, dof)
	}
}
