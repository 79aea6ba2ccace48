package experiment

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestMergeTokensEnvs asks, on every built-in environment's symbolic walks (its default
// data size, seed 1), whether chmm.MergeTokens gives back the classes when each class
// is shown as one of three codes at random (a digit split by its style over codes): no
// group may hold codes of two classes, and at most one class may stay in two groups
// (square and cscg_maze5 keep one rare class's codes in two groups). It prints the
// groups found at three bars.
func TestMergeTokensEnvs(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s")
	}
	const split = 3
	for _, name := range gridworld.Names() {
		e, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		d := e.Defaults()
		K := e.NumClasses()
		rng := gridworld.NewRand(1)
		codes := rand.New(rand.NewPCG(1, 2))
		var seqs []chmm.Sequence
		for range d.Episodes {
			ep := e.Walk(rng, d.Steps)
			obs := make([]int, ep.Len())
			for i, c := range ep.Obs {
				obs[i] = c + K*codes.IntN(split)
			}
			seqs = append(seqs, chmm.Sequence{Obs: obs, Actions: ep.Actions})
		}
		line := fmt.Sprintf("%-18s %2d classes:", name, len(e.ClassesUsed()))
		for _, z := range []float64{10, 30, 100} {
			group, n, err := chmm.MergeTokens(seqs, split*K, e.NumActions(), z)
			if err != nil {
				t.Fatal(err)
			}
			classes := map[int]map[int]bool{}
			for code, g := range group {
				if classes[g] == nil {
					classes[g] = map[int]bool{}
				}
				classes[g][code%K] = true
			}
			mixed := 0
			for _, cs := range classes {
				if len(cs) > 1 {
					mixed++
				}
			}
			used := 0
			for range e.ClassesUsed() {
				used++
			}
			n -= split*K - split*used // codes of classes never shown stay alone
			line += fmt.Sprintf("  z<%g: %d groups, %d mixed", z, n, mixed)
			if mixed > 0 || n < used || n > used+1 {
				t.Errorf("%s, z < %g: %d groups for %d classes, %d of them mixed", name, z, n, used, mixed)
			}
		}
		fmt.Println(line)
	}
}
