package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestSplitSiblings: splitting clones 0, 2, 4 and 5 of a map of clones [2 1 3] pairs
// each with its copy, as counted by hand from SplitSome's layout (each token's copies
// after its clones, in the order split): next has clones [3 2 5]. Split without noise,
// the two states of a pair move alike (each row's shares of a pair's two columns
// summed) and no two other states of a token do.
func TestSplitSiblings(t *testing.T) {
	kept := chmm.New([]int{2, 1, 3}, 2, rand.New(rand.NewPCG(1, 2)))
	split := []bool{true, false, true, false, true, true, false} // the sink last
	next, err := chmm.SplitSome(kept, split, 0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next.Clones, []int{3, 2, 5}) {
		t.Fatalf("split map's clones %v, want [3 2 5]", next.Clones)
	}
	got := splitSiblings(kept, next, split)
	want := []int{2, -1, 0, 4, 3, -1, 8, 9, 6, 7, -1}
	if !slices.Equal(got, want) {
		t.Fatalf("siblings %v, want %v", got, want)
	}
	n := next.N()
	trans := next.Transitions()
	row := func(s int) []float64 { // s's moves, a pair's two columns summed into the first
		var r []float64
		for a := range next.NumActions {
			p := make([]float64, n)
			for j := range n {
				to := j
				if got[j] >= 0 {
					to = min(j, got[j])
				}
				p[to] += trans[(a*n+s)*n+j]
			}
			r = append(r, p...)
		}
		return r
	}
	near := func(x, y []float64) bool {
		for i := range x {
			if math.Abs(x[i]-y[i]) > 1e-12 {
				return false
			}
		}
		return true
	}
	tokens := next.StateTokens()
	for a := range n {
		for b := a + 1; b < n; b++ {
			if tokens[a] < 0 || tokens[a] != tokens[b] {
				continue
			}
			if same, paired := near(row(a), row(b)), got[a] == b; same != paired {
				t.Errorf("states %d and %d: same moves %v, paired %v", a, b, same, paired)
			}
		}
	}
	if all := splitSiblings(kept, mustSplit(t, kept), nil); !slices.Equal(all, []int{2, 3, 0, 1, 5, 4, 9, 10, 11, 6, 7, 8, -1}) {
		t.Errorf("every clone split: siblings %v", all)
	}
}

func mustSplit(t *testing.T, m *chmm.Model) *chmm.Model {
	t.Helper()
	next, err := chmm.SplitSome(m, nil, 0.1, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// TestPairsKept: of a map of clones [3 2 5] whose pairs are (0,2), (3,4), (6,8) and
// (7,9), the clones to split are, over the kept ones, those whose sibling is kept too:
// 0 and 2 (both kept), not 3 (its copy 4 dropped), not 1 and 5 (no pair), 6 and 8, not
// 7 (9 dropped); the sink never. Without pairs (round 0) every kept clone splits.
func TestPairsKept(t *testing.T) {
	m := chmm.New([]int{3, 2, 5}, 2, rand.New(rand.NewPCG(1, 2)))
	sib := []int{2, -1, 0, 4, 3, -1, 8, 9, 6, 7, -1}
	keep := []bool{true, true, true, true, false, true, true, true, true, false, true}
	split, n := pairsKept(m, keep, sib)
	// Kept states in order: 0 1 2 3 5 6 7 8 sink.
	want := []bool{true, false, true, false, false, true, false, true, false}
	if !slices.Equal(split, want) || n != 4 {
		t.Errorf("split %v (%d), want %v (4)", split, n, want)
	}
	split, n = pairsKept(m, keep, nil)
	want = []bool{true, true, true, true, true, true, true, true, false}
	if !slices.Equal(split, want) || n != 8 {
		t.Errorf("without pairs: split %v (%d), want %v (8)", split, n, want)
	}
}

// TestFinalEMSplitsSelectively runs the EM finalisation on two room walks of 2,500 steps
// whose tokens are misread with probability 0.05 and reads its rounds from what it prints: after round
// 0 every kept clone splits; a round splits only the clones that kept both copies at
// least once; each round starts with the clones kept and split by the round before,
// plus the sink; a round that split only some and missed SplitGain is followed by one
// that splits every kept clone; and the rounds end on a round that split every clone
// (SplitPatience 1).
func TestFinalEMSplitsSelectively(t *testing.T) {
	if testing.Short() {
		t.Skip("a finalisation of 8,000 steps")
	}
	env, err := gridworld.Named("room")
	if err != nil {
		t.Fatal(err)
	}
	k := env.NumClasses()
	rng := gridworld.NewRand(3)
	var seqs []chmm.Sequence
	for range 2 {
		ep := env.Walk(rng, 2500)
		obs := slices.Clone(ep.Obs)
		for i, o := range obs {
			if rng.Float64() < 0.05 {
				obs[i] = (o + 1 + rng.IntN(k-1)) % k
			}
		}
		seqs = append(seqs, chmm.Sequence{Obs: obs, Actions: ep.Actions})
	}
	cfg, err := DefaultConfig("room")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.WithFinalTrainer(FinalEM)
	var out strings.Builder
	f := testFinaliser(cfg, nil, &out, &hooks{splitMinSteps: 10}) // short walks: 10 steps a state
	if _, err := f.em(seqs, k, env.NumActions()); err != nil {
		t.Fatal(err)
	}
	type round struct {
		states, used, split, folded int
		bits                        float64
		what                        string
	}
	line := regexp.MustCompile(`^round \d+: (\d+) states, (\d+) used(?: \((\d+) of them the two copies of a split folded into one\))?; held-out ends of the training walks ([0-9.]+) bits/step: (.*)$`)
	var rounds []round
	for _, l := range strings.Split(out.String(), "\n") {
		var r round
		g := line.FindStringSubmatch(l)
		if g == nil {
			continue
		}
		r.states, _ = strconv.Atoi(g[1])
		r.used, _ = strconv.Atoi(g[2])
		r.folded, _ = strconv.Atoi(g[3]) // "" without folds: 0
		r.bits, _ = strconv.ParseFloat(g[4], 64)
		r.what = g[5]
		switch {
		case strings.HasPrefix(r.what, "the "):
			fmt.Sscanf(r.what, "the %d that kept", &r.split)
		case strings.HasSuffix(r.what, "split in two"):
			r.split = r.used
		}
		rounds = append(rounds, r)
	}
	if len(rounds) < 3 {
		t.Fatalf("%d rounds reported:\n%s", len(rounds), out.String())
	}
	if testing.Verbose() {
		t.Log(out.String())
	}
	partial, best, folds := false, math.Inf(1), 0
	for i, r := range rounds {
		full := i == 0 || rounds[i-1].split == rounds[i-1].used // round i's start split every clone
		missed := best-r.bits < SplitGain
		best = min(best, r.bits)
		if i > 0 && r.states != rounds[i-1].used+rounds[i-1].split+1 {
			t.Errorf("round %d starts with %d states, want %d kept + %d split + the sink", i, r.states, rounds[i-1].used, rounds[i-1].split)
		}
		last := i == len(rounds)-1
		switch {
		case i == 0 && r.split != r.used:
			t.Errorf("round 0 split %d of %d kept clones, want all", r.split, r.used)
		case missed && full && !last:
			t.Errorf("round %d split every clone and missed, and the rounds went on", i)
		case missed && !full && r.split != r.used:
			t.Errorf("round %d split some clones and missed, then split %d of %d", i, r.split, r.used)
		case last && !(missed && full && strings.Contains(r.what, "without a gain")):
			t.Errorf("the rounds end at round %d (missed %v, its start split every clone %v): %q", i, missed, full, r.what)
		case i == 0 && r.folded > 0:
			t.Errorf("round 0, which has no pairs, folded %d", r.folded)
		case strings.HasPrefix(r.what, "the ") && r.split > r.used-r.folded:
			// a fold's survivor lost its copy, so it is not split again
			t.Errorf("round %d kept %d clones, %d of them folded pairs, and split %d", i, r.used, r.folded, r.split)
		}
		folds += r.folded
		partial = partial || !missed && r.split > 0 && r.split < r.used
	}
	if !partial {
		t.Errorf("no round split only some of its clones:\n%s", out.String())
	}
	t.Logf("%d pairs folded", folds)
	var some []int // the rounds whose start split only some clones, as the report records them
	for i := 1; i < len(rounds); i++ {
		if rounds[i-1].split < rounds[i-1].used {
			some = append(some, i)
		}
	}
	if got := f.st.Made.SplitSome; !slices.Equal(got, some) {
		t.Errorf("training.split_some %v, want %v", got, some)
	}
}
