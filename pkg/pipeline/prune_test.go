package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestPruneDropsUnvisitedClones: an HMM with clones [3, 2] whose transitions lead every
// state to state 0 (token 0) or state 3 (token 1), on an alternating 0,1,0,1… walk, uses
// only states 0 and 3; pruning at 10% keeps exactly those, continues the finalisation's
// history and records the count.
func TestPruneDropsUnvisitedClones(t *testing.T) {
	hmm := chmm.New([]int{3, 2}, 1, rand.New(rand.NewPCG(1, 1)))
	n := hmm.N() // 6 with the sink
	for i := range n {
		row := hmm.ThetaLogits[i*n : (i+1)*n]
		for j := range row {
			row[j] = -5
		}
		row[0], row[3], row[n-1] = 2, 2, math.Inf(-1)
	}
	seq := chmm.Sequence{Obs: make([]int, 200), Actions: make([]int, 199)}
	for t := range seq.Obs {
		seq.Obs[t] = t % 2
	}
	r := testFinaliser(Config{Final: FinalConfig{Prune: 0.1, PruneIters: 5}, Seed: 1}, nil, nil, nil)
	r.st.History = []Record{{Step: 7, Phase: PhaseFinal}}
	got, err := r.prune(hmm, []chmm.Sequence{seq}, chmm.GradConfig{LR: 0.1, Seed: 1}, "retrain")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Clones, []int{1, 1}) {
		t.Errorf("pruned clones %v, want [1 1]", got.Clones)
	}
	if r.st.Made.Pruned != 3 || len(r.st.Made.Runs) != 1 || r.st.Made.Runs[0].Name != "retrain" {
		t.Errorf("record %+v, want 3 pruned and one retrain run", r.st.Made)
	}
	h := r.st.History
	if len(h) < 1+5 || h[1].Step != 8 || h[1].Event != "pruned 3 states" || h[len(h)-1].Step != 7+len(h)-1 {
		t.Errorf("history after pruning: %+v", h)
	}
	if ll, err := chmm.LogLikelihood(got, []chmm.Sequence{seq}); err != nil || ll < -float64(len(seq.Obs)) {
		t.Errorf("pruned model: log-likelihood %v, %v", ll, err)
	}
}

// TestFinalGrow: the finalisation's budget doubles where it binds and twice as many
// clones predict the held-out ends of the training walks better. With aliased's exact
// tokens (6 places per token) and one clone per token, pruning frees nothing and each
// doubling predicts better: 1 → 2 → 4 clones per token, each round's runs and the
// doubling recorded. On tokens drawn at random nothing predicts better: the budget
// binds, is checked once and kept. With Final.BudgetDoublings 0 nothing is checked.
func TestFinalGrow(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	rng := gridworld.NewRand(3)
	var exact, noise []chmm.Sequence
	for range 2 {
		ep := env.Walk(rng, 3000)
		exact = append(exact, chmm.Sequence{Obs: ep.Obs, Actions: ep.Actions})
		obs := make([]int, ep.Len())
		for i := range obs {
			obs[i] = rng.IntN(4)
		}
		noise = append(noise, chmm.Sequence{Obs: obs, Actions: ep.Actions})
	}
	share := []float64{0.25, 0.25, 0.25, 0.25}
	for _, c := range []struct {
		name   string
		seqs   []chmm.Sequence
		grow   int
		rounds int
		checks []bool // Grown of each check
	}{
		{"exact tokens", exact, 2, 2, []bool{true, true}},
		{"exact tokens, a fixed budget", exact, 0, 0, nil},
		{"random tokens", noise, 2, 0, []bool{false}},
	} {
		cfg, err := DefaultConfig("aliased")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Final.Clones, cfg.Final.BudgetDoublings, cfg.Final.Iters, cfg.Final.PruneIters = 1, c.grow, 300, 50
		r := testFinaliser(cfg, nil, nil, nil)
		hmm, err := r.gradient(c.seqs, share, chmm.New([]int{1, 1, 1, 1}, env.NumActions(), rand.New(rand.NewPCG(1, 1))))
		if err != nil {
			t.Fatal(err)
		}
		made := r.st.Made
		var grown []bool
		for _, g := range made.GrowChecks {
			grown = append(grown, g.Grown)
			if g.Grown != (g.Bits-g.GrownBits >= GrowGain) || g.Bits <= 0 || g.GrownBits <= 0 {
				t.Errorf("%s: check %+v", c.name, g)
			}
		}
		if made.GrowRounds != c.rounds || !slices.Equal(grown, c.checks) {
			t.Errorf("%s: %d rounds, checks %v; want %d, %v", c.name, made.GrowRounds, grown, c.rounds, c.checks)
		}
		var names, events []string
		for _, run := range made.Runs {
			names = append(names, run.Name)
		}
		for _, rec := range r.st.History {
			if strings.HasPrefix(rec.Event, "budget ×2") {
				events = append(events, rec.Event)
			}
		}
		want := []string{"finalise", "retrain"}
		for k := 1; k <= c.rounds; k++ {
			want = append(want, fmt.Sprintf("finalise (%d× budget)", 1<<k), fmt.Sprintf("retrain (%d× budget)", 1<<k))
		}
		if !slices.Equal(names, want) || len(events) != c.rounds {
			t.Errorf("%s: runs %q, events %q; want %q and %d doublings", c.name, names, events, want, c.rounds)
		}
		if most := 4 << c.rounds; hmm.N()-1 > most || c.rounds > 0 && hmm.N()-1 <= most/2 {
			t.Errorf("%s: %d clones after %d doublings of 4", c.name, hmm.N()-1, c.rounds)
		}
	}
}

// TestFinalGrowChecksFirst: the first budget is checked even where it does not bind.
// On aliased's exact tokens (4 places each) with 8 clones per token, pruning leaves
// about half of the 32 unused; the check still scores 16 clones per token against 8,
// and keeps 8 (twice as many predict no better, GrowGain). A finalisation begun before
// that check (a checkpoint without CheckFirst) checks nothing here.
func TestFinalGrowChecksFirst(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	rng := gridworld.NewRand(3)
	var seqs []chmm.Sequence
	for range 2 {
		ep := env.Walk(rng, 3000)
		seqs = append(seqs, chmm.Sequence{Obs: ep.Obs, Actions: ep.Actions})
	}
	share := []float64{0.25, 0.25, 0.25, 0.25}
	for _, before := range []bool{false, true} {
		cfg, err := DefaultConfig("aliased")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Final.Clones, cfg.Final.Iters, cfg.Final.PruneIters = 8, 300, 50
		var out strings.Builder
		r := testFinaliser(cfg, nil, &out, nil)
		if before {
			r.st.FinalGrad = &finalGradState{} // a checkpoint written before CheckFirst
		}
		if _, err := r.gradient(seqs, share, chmm.New([]int{1, 1, 1, 1}, env.NumActions(), rand.New(rand.NewPCG(1, 1)))); err != nil {
			t.Fatal(err)
		}
		made := r.st.Made
		if made.Pruned < 8 {
			t.Fatalf("pruning left %d of 32 clones unused; the test needs a budget that does not bind", made.Pruned)
		}
		switch checks := made.GrowChecks; {
		case before && len(checks) != 0:
			t.Errorf("begun before: checks %+v, want none", checks)
		case !before && (len(checks) != 1 || checks[0].Clones != 8 || checks[0].Grown || !(checks[0].Bits > 0)):
			t.Errorf("checks %+v, want one of 8 clones per token, kept:\n%s", checks, out.String())
		case !before && !strings.Contains(out.String(), "the finalisation's first budget: pruning left"):
			t.Errorf("the check does not say why it ran:\n%s", out.String())
		}
		if made.GrowRounds != 0 {
			t.Errorf("before %v: %d doublings, want 0", before, made.GrowRounds)
		}
	}
}

// TestFinaliseEM: on aliased walks whose tokens are misread with probability 0.08 (to
// the next token), the EM finalisation learns C (diagonal 0.92 ± 0.02, the misread
// entry 0.08 ± 0.02) and a map whose Viterbi path through C on a clean walk is one
// state per place; it splits while the held-out ends improve by SplitGain and keeps
// the cheapest round's map, and the run directory's model file carries C.
func TestFinaliseEM(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	const flip = 0.08
	seqs := misreadWalks(env, 5, 4000, flip)
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.WithFinalTrainer(FinalEM)
	cfg.Final.Iters = 100
	r := testFinaliser(cfg, nil, nil, nil)
	hmm, err := r.em(seqs, 4, env.NumActions())
	if err != nil {
		t.Fatal(err)
	}
	made := r.st.Made
	bits := made.HeldOutBits
	if len(bits) < 2 || len(made.Runs) != len(bits) || made.Doublings != slices.Index(bits, slices.Min(bits)) {
		t.Fatalf("held-out bits %v, %d runs, round %d kept", bits, len(made.Runs), made.Doublings)
	}
	t.Logf("held-out bits per round %.4f, round %d kept (%d states)", bits, made.Doublings, hmm.N())
	missed := 0 // rounds in a row without a gain of SplitGain
	for i := 1; i < len(bits); i++ {
		if slices.Min(bits[:i])-bits[i] < SplitGain {
			missed++
		} else {
			missed = 0
		}
		if stop := missed == SplitPatience || i == cfg.Final.SplitRounds; stop != (i == len(bits)-1) {
			t.Errorf("round %d: %d round(s) in a row without a gain, stopped %v: %v", i, missed, i == len(bits)-1, bits)
		}
	}
	c := made.Confusion
	for k := range 4 {
		if math.Abs(c[k][k]-(1-flip)) > 0.02 || math.Abs(c[k][(k+1)%4]-flip) > 0.02 {
			t.Errorf("learned C[%d] = %.3f, want %.2f at %d and %.2f at %d", k, c[k], 1-flip, k, flip, (k+1)%4)
		}
	}
	clean := env.Walk(gridworld.NewRand(6), 3000)
	states, _, err := chmm.Decode(hmm, chmm.Confused{Tokens: clean.Obs, C: c}, clean.Actions)
	if err != nil {
		t.Fatal(err)
	}
	placeOf := map[int]map[int]int{} // state → place → visits
	for i, s := range states {
		if placeOf[s] == nil {
			placeOf[s] = map[int]int{}
		}
		placeOf[s][clean.Places[i]]++
	}
	top := 0
	for _, m := range placeOf {
		best := 0
		for _, n := range m {
			best = max(best, n)
		}
		top += best
	}
	if pur := float64(top) / float64(len(states)); pur < 0.99 {
		t.Errorf("state→place purity %.3f on a clean walk, want ≥ 0.99 (%d states, %d used)", pur, hmm.N(), len(placeOf))
	}
	hmm.Meta = map[string]string{}
	b, _ := json.Marshal(c)
	hmm.Meta[ConfusionMeta] = string(b)
	got, err := MapConfusion(hmm)
	if err != nil || !slices.EqualFunc(got, c, func(a, b []float64) bool { return slices.Equal(a, b) }) {
		t.Errorf("MapConfusion: %v, %v", got, err)
	}
	hmm.Meta[ConfusionMeta] = "[[1]]"
	if _, err := MapConfusion(hmm); err == nil || !strings.Contains(err.Error(), "confusion matrix for K=4") {
		t.Errorf("a 1×1 matrix for K=4: %v", err)
	}
}

// ThroughConfusion reads the encoder's posterior over its codes as the map's tokens:
// log Σ_o C[k][o] ρ(o), by hand.
func TestThroughConfusion(t *testing.T) {
	rho := [][]float32{{float32(math.Log(0.7)), float32(math.Log(0.2)), float32(math.Log(0.1))}}
	c := [][]float64{{1, 0, 0}, {0, 0.5, 0.5}, {0, 0.1, 0.9}} // token 2 mostly read as code 2
	got := ThroughConfusion(rho, c)[0]
	want := []float64{0.7, 0.5*0.2 + 0.5*0.1, 0.1*0.2 + 0.9*0.1}
	for k := range want {
		if math.Abs(float64(got[k])-math.Log(want[k])) > 1e-6 {
			t.Errorf("token %d: %v, want log %v", k, got[k], want[k])
		}
	}
}

// pieces halves the longest walk until every core has one, never below min steps, and
// drops only the actions across the cuts.
func TestPieces(t *testing.T) {
	walk := func(n, from int) chmm.Sequence {
		s := chmm.Sequence{Obs: make([]int, n), Actions: make([]int, n-1)}
		for i := range s.Obs {
			s.Obs[i] = from + i
		}
		for i := range s.Actions {
			s.Actions[i] = from + i
		}
		return s
	}
	for _, c := range []struct {
		lens   []int
		n, min int
		want   []int
	}{
		{[]int{100}, 2, 10, []int{50, 50}},
		{[]int{100}, 4, 10, []int{25, 25, 25, 25}},
		{[]int{100}, 4, 30, []int{50, 50}},
		{[]int{100, 40}, 3, 10, []int{50, 50, 40}},
		{[]int{100, 40}, 1, 10, []int{100, 40}},
	} {
		var seqs []chmm.Sequence
		from := 0
		for _, l := range c.lens {
			seqs = append(seqs, walk(l, from))
			from += l
		}
		got := pieces(seqs, c.n, c.min)
		var lens []int
		var obs []int
		for _, s := range got {
			lens = append(lens, s.Len())
			obs = append(obs, s.Obs...)
			if len(s.Actions) != s.Len()-1 || s.Actions[0] != s.Obs[0] || s.Actions[len(s.Actions)-1] != s.Obs[s.Len()-2] {
				t.Errorf("%v into %d: a piece's actions %v do not follow its steps %v", c.lens, c.n, s.Actions, s.Obs)
			}
		}
		if !slices.Equal(lens, c.want) || len(obs) != from || obs[0] != 0 || !slices.IsSorted(obs) {
			t.Errorf("%v into %d (min %d): pieces %v, want %v", c.lens, c.n, c.min, lens, c.want)
		}
	}
}

// TestFinalChunks: a finalisation training reads random chunks when Config.Final.ChunkAbove
// is below its pass cost on walks of at least chmm.ChunkMinSteps steps, and records them;
// 0 (every run before the field) and the default on a benchmark-sized walk read the whole
// walks.
func TestFinalChunks(t *testing.T) {
	hmm := chmm.New([]int{3, 2}, 1, rand.New(rand.NewPCG(1, 1)))
	seq := chmm.Sequence{Obs: make([]int, chmm.ChunkMinSteps), Actions: make([]int, chmm.ChunkMinSteps-1)}
	for t := range seq.Obs {
		seq.Obs[t] = t % 2
	}
	seqs := []chmm.Sequence{seq}
	cost := chmm.PassCost(hmm, seqs)
	for _, c := range []struct {
		name  string
		above float64
		want  bool
	}{{"costly", cost / 2, true}, {"off", 0, false}, {"default", chmm.DefaultChunkAbove, false}} {
		r := testFinaliser(Config{Final: FinalConfig{ChunkAbove: c.above}, Seed: 1}, nil, nil, nil)
		if err := r.train(hmm.Clone(), seqs, chmm.GradConfig{Iters: 2, LR: 0.1, Seed: 1}, "finalise", ""); err != nil {
			t.Fatal(err)
		}
		run := r.st.Made.Runs[0]
		if got := run.ChunkLen == chmm.ChunkLen && run.Batch == chmm.ChunkBatch; got != c.want || (!c.want && run.ChunkLen+run.Batch != 0) {
			t.Errorf("%s: chunk_len %d, batch %d; want chunks %v", c.name, run.ChunkLen, run.Batch, c.want)
		}
	}
	d, err := DefaultConfig("two_rooms")
	if err != nil || d.Final.ChunkAbove != chmm.DefaultChunkAbove {
		t.Errorf("DefaultConfig: final_chunk_above %g, %v", d.Final.ChunkAbove, err)
	}
	d.Final.ChunkAbove = -1
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "final.chunk_above") {
		t.Errorf("final_chunk_above -1: Validate = %v", err)
	}
}

// TestStartConfusion: FinalEM's first C reads a token shown on fewer than
// chmm.NoisyStepsPerClone steps only as itself, and spreads 0.1 of every other row
// evenly over the other tokens, rare ones included (their steps are misreads).
func TestStartConfusion(t *testing.T) {
	obs := make([]int, 0, 2*chmm.NoisyStepsPerClone+5)
	for i := range 2 * chmm.NoisyStepsPerClone {
		obs = append(obs, i%2) // tokens 0 and 1: NoisyStepsPerClone steps each
	}
	obs = append(obs, 2, 2, 2, 2, 2) // token 2: five steps; token 3: none
	seqs := []chmm.Sequence{{Obs: obs[:100], Actions: make([]int, 99)}, {Obs: obs[100:], Actions: make([]int, len(obs)-101)}}
	c, rare := startConfusion(seqs, 4)
	if !slices.Equal(rare, []int{2, 3}) {
		t.Errorf("rare tokens %v, want [2 3]", rare)
	}
	want := [][]float64{
		{0.9, 0.1 / 3, 0.1 / 3, 0.1 / 3},
		{0.1 / 3, 0.9, 0.1 / 3, 0.1 / 3},
		{0, 0, 1, 0},
		{0, 0, 0, 1},
	}
	for k := range want {
		for o := range want[k] {
			if math.Abs(c[k][o]-want[k][o]) > 1e-12 {
				t.Errorf("C[%d][%d] = %v, want %v", k, o, c[k][o], want[k][o])
			}
		}
	}
	if err := chmm.ValidateConfusion(c, 4); err != nil {
		t.Error(err)
	}
}

// testFinaliser is a finaliser of cfg on data d (nil where the finalisation reads
// none) without a run directory, with progress to out and the hooks h (both may be nil).
func testFinaliser(cfg Config, d *data, out io.Writer, h *hooks) *finaliser {
	st := &runState{Seconds: map[string]float64{}}
	s := &session{ctx: context.Background(), cfg: cfg, d: d, out: out, hooks: h}
	return &finaliser{s: s, ck: &checkpoint{st: st}, st: st, start: time.Now()}
}

// TestFallBack: on aliased walks whose tokens are misread with probability 0.08, a
// hard-token map with one clone per token (it merges the places of each class) reads as
// merged through a fitted confusion matrix, and is finalised again by EM, which learns
// a map of more states with its C, the reason recorded; EM's map passes the test for
// merged places and is kept without a comparison; a map of hard tokens trained on
// clean walks with clones to spare passes and is kept as it is.
func TestFallBack(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	seqs := misreadWalks(env, 5, 4000, 0.08)
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Final.Iters = 100 // the EM's iterations per split round
	merged := chmm.New([]int{1, 1, 1, 1}, env.NumActions(), rand.New(rand.NewPCG(1, 1)))
	if _, err := chmm.TrainEM(merged, seqs, chmm.EMConfig{MaxIters: 100}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r := testFinaliser(cfg, nil, &out, nil)
	r.st.Made.Pruned, r.st.Made.GrowRounds = 3, 1
	r.st.FinalGrad = &finalGradState{FallBack: true}
	r.valid = &misreadWalks(env, 6, 4000, 0.08)[0]
	hmm, err := r.fallBack(merged, seqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	made := r.st.Made
	if hmm == merged || hmm.N() <= merged.N() || made.Confusion == nil || len(made.HeldOutBits) == 0 {
		t.Fatalf("merged map: got %d states (confusion %v, %d EM rounds), want EM's map of more than %d", hmm.N(), made.Confusion != nil, len(made.HeldOutBits), merged.N())
	}
	if !strings.Contains(made.Fallback, "reads as merged") || made.Pruned != 0 || made.GrowRounds != 0 || r.st.FinalGrad != nil {
		t.Errorf("merged map: fallback %q, pruned %d, doublings %d, gradient state %+v; want the reason, no pruning or doubling, no gradient state",
			made.Fallback, made.Pruned, made.GrowRounds, r.st.FinalGrad)
	}
	if made.Compared != nil || r.st.FallbackGrad != nil {
		t.Errorf("merged map: compared %+v, set aside %+v; want EM's map kept without a comparison, nothing set aside", made.Compared, r.st.FallbackGrad)
	}
	if !strings.Contains(out.String(), "finalised again by EM") || !strings.Contains(out.String(), "final.keep_merged=true") ||
		!strings.Contains(out.String(), "EM's map passes the test for merged places") {
		t.Errorf("merged map: output does not say what it did and how to keep the map:\n%s", out.String())
	}

	clean := misreadWalks(env, 5, 4000, 0)
	resolved := chmm.New(chmm.UniformClones(4, 4), env.NumActions(), rand.New(rand.NewPCG(1, 2)))
	if _, err := chmm.TrainEM(resolved, clean, chmm.EMConfig{MaxIters: 300, SplitRounds: 3}); err != nil {
		t.Fatal(err)
	}
	r = testFinaliser(cfg, nil, &out, nil)
	hmm, err = r.fallBack(resolved, seqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hmm != resolved || r.st.Made.Fallback != "" || r.st.Made.Compared != nil {
		t.Errorf("resolved map: replaced (%v), fallback %q, compared %+v; want it kept", hmm != resolved, r.st.Made.Fallback, r.st.Made.Compared)
	}
}
