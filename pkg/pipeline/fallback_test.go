package pipeline

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// forwardBits is −log₂ p(q's tokens | its actions) per step under m read through c,
// by a scaled forward pass over the dense T written out here (the sink emits
// nothing): an implementation apart from chmm's, to check validationBits by.
func forwardBits(m *chmm.Model, q chmm.Sequence, c [][]float64) float64 {
	n := m.N()
	tok := m.StateTokens()
	tr := m.Transitions()
	emit := func(s, o int) float64 {
		if tok[s] < 0 {
			return 0
		}
		return c[tok[s]][o]
	}
	alpha := m.Pi()
	ll := 0.0
	norm := func() {
		z := 0.0
		for _, v := range alpha {
			z += v
		}
		ll += math.Log(z)
		for i := range alpha {
			alpha[i] /= z
		}
	}
	for s := range alpha {
		alpha[s] *= emit(s, q.Obs[0])
	}
	norm()
	for t := 1; t < len(q.Obs); t++ {
		next := make([]float64, n)
		a := q.Actions[t-1]
		for i, ai := range alpha {
			if ai == 0 {
				continue
			}
			row := tr[(a*n+i)*n : (a*n+i+1)*n]
			for j, p := range row {
				next[j] += ai * p
			}
		}
		for j := range next {
			next[j] *= emit(j, q.Obs[t])
		}
		alpha = next
		norm()
	}
	return -ll / float64(len(q.Obs)) / math.Ln2
}

// fallbackMaps returns aliased walks misread with probability 0.08 (training, and a
// validation walk of another seed), a map of one clone per token trained on them (it
// merges the places of each class) and one of four clones per token trained on clean
// walks (the room's own map).
func fallbackMaps(t *testing.T) (env *gridworld.Env, seqs []chmm.Sequence, valid chmm.Sequence, merged, good *chmm.Model) {
	t.Helper()
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	seqs = misreadWalks(env, 5, 4000, 0.08)
	valid = misreadWalks(env, 6, 4000, 0.08)[0]
	merged = chmm.New([]int{1, 1, 1, 1}, env.NumActions(), rand.New(rand.NewPCG(1, 1)))
	if _, err := chmm.TrainEM(merged, seqs, chmm.EMConfig{MaxIters: 100}); err != nil {
		t.Fatal(err)
	}
	good = chmm.New(chmm.UniformClones(4, 4), env.NumActions(), rand.New(rand.NewPCG(1, 2)))
	if _, err := chmm.TrainEM(good, misreadWalks(env, 5, 4000, 0), chmm.EMConfig{MaxIters: 300, SplitRounds: 3}); err != nil {
		t.Fatal(err)
	}
	return env, seqs, valid, merged, good
}

// TestValidationBits: a map's validation bits are its walk's likelihood through the
// confusion matrix fitted to it, as a forward pass written out here computes it (1e-9),
// the room's own map reads fewer than the merged one, and a walk the map cannot make
// (misread, under a C fitted to clean walks) gives -1.
func TestValidationBits(t *testing.T) {
	env, seqs, valid, merged, good := fallbackMaps(t)
	var bits [2]float64
	for i, m := range []*chmm.Model{merged, good} {
		b, err := validationBits(m, seqs, valid)
		if err != nil {
			t.Fatal(err)
		}
		c, err := fitConfusion(m, seqs)
		if err != nil {
			t.Fatal(err)
		}
		if want := forwardBits(m, valid, c); math.Abs(b-want) > 1e-9 {
			t.Errorf("map %d: %v bits per step, the forward pass gives %v", i, b, want)
		}
		bits[i] = b
	}
	if !(bits[1] < bits[0]) {
		t.Errorf("the room's map reads %v bits per step, the merged one %v: want fewer", bits[1], bits[0])
	}
	// Fitted to clean walks, the room's map reads its tokens as they are (C trimmed to
	// the identity): a misread walk has probability 0.
	clean := misreadWalks(env, 5, 4000, 0)
	if b, err := validationBits(good, clean, valid); err != nil || b != -1 {
		t.Errorf("a misread walk read through C fitted to clean ones: %v, %v; want -1", b, err)
	}
}

// TestChoose: choose keeps EM's map where the test for merged places passes it,
// without a comparison; where it reads as merged too, it keeps the map that reads the
// validation walk in fewer bits, whichever trainer made it. A kept gradient map gets
// its own record back and EM's rounds, C and doublings leave it; a kept EM map keeps
// EM's record.
func TestChoose(t *testing.T) {
	env, seqs, valid, merged, good := fallbackMaps(t)
	cfg, err := DefaultConfig(env.Name)
	if err != nil {
		t.Fatal(err)
	}
	// untrained: one clone per token, as chmm.New makes it, worse than merged.
	untrained := chmm.New([]int{1, 1, 1, 1}, env.NumActions(), rand.New(rand.NewPCG(1, 3)))
	// setUp makes r's record that of EM's map em (its C fitted to it, as EM's own
	// stands in here) after a fallback from a gradient map.
	setUp := func(em *chmm.Model) *finaliser {
		t.Helper()
		c, err := fitConfusion(em, seqs)
		if err != nil {
			t.Fatal(err)
		}
		r := testFinaliser(cfg, nil, nil, nil)
		r.valid = &valid
		r.st.Made.Fallback = "reads as merged"
		r.st.Made.Confusion, r.st.Made.HeldOutBits, r.st.Made.Doublings = c, []float64{0.5, 0.4}, 1
		r.st.FallbackGrad = &fallbackGrad{Pruned: 3, GrowRounds: 1}
		return r
	}

	// EM's map passes: kept as it is.
	r := setUp(good)
	hmm, err := r.choose(merged, good, seqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := r.st.Made
	if hmm != good || m.Compared != nil || m.Pruned != 0 || m.Confusion == nil || m.Doublings != 1 || r.st.FallbackGrad != nil || !finalByEM(cfg, &m) {
		t.Errorf("EM's map passes: kept it %v, record %+v, set aside %+v; want it kept, uncompared, with EM's record", hmm == good, m, r.st.FallbackGrad)
	}

	// EM's map reads as merged, the gradient map predicts the walk better.
	r = setUp(merged)
	if hmm, err = r.choose(good, merged, seqs, nil); err != nil {
		t.Fatal(err)
	}
	m = r.st.Made
	if hmm != good || m.Compared == nil || m.Compared.Kept != FinalGradient || m.Pruned != 3 || m.GrowRounds != 1 ||
		m.Confusion != nil || m.HeldOutBits != nil || m.Doublings != 0 || r.st.FallbackGrad != nil || finalByEM(cfg, &m) {
		t.Errorf("better gradient map: kept it %v, record %+v, set aside %+v; want it kept with its record", hmm == good, m, r.st.FallbackGrad)
	}
	if c := m.Compared; c != nil && !(c.GradientBits < c.EMBits) {
		t.Errorf("compared %+v: want the gradient map's bits below EM's", c)
	}

	// Both read as merged, EM's map predicts the walk better.
	r = setUp(merged)
	if hmm, err = r.choose(untrained, merged, seqs, nil); err != nil {
		t.Fatal(err)
	}
	m = r.st.Made
	if hmm != merged || m.Compared == nil || m.Compared.Kept != FinalEM || m.Pruned != 0 || m.Confusion == nil || m.Doublings != 1 ||
		!finalByEM(cfg, &m) {
		t.Errorf("better EM map: kept it %v, record %+v; want it kept with EM's record", hmm == merged, m)
	}
	if c := m.Compared; c != nil && (!(c.EMBits < c.GradientBits) || c.Steps != valid.Len()) {
		t.Errorf("compared %+v: want the EM map's bits below the gradient's, on %d steps", c, valid.Len())
	}
}

// TestFallBackResumes: a fallback interrupted in its EM and resumed from the run
// directory (state and files read back) reads back the gradient map it set aside and
// ends as the same fallback run through at once: the same map, the same record; the
// set-aside file is gone after the map is saved.
func TestFallBackResumes(t *testing.T) {
	errStop := errors.New("stopped")
	env, seqs, valid, merged, _ := fallbackMaps(t)
	cfg, err := DefaultConfig(env.Name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Final.Iters = 100
	run := func(stopAt int) (*finaliser, *chmm.Model, error) {
		dir := t.TempDir()
		var h *hooks
		if stopAt > 0 {
			h = &hooks{emRound: func(round int, _ *chmm.Model, _ [][]float64) error {
				if round == stopAt {
					return errStop
				}
				return nil
			}}
		}
		r := testFinaliser(cfg, nil, nil, h)
		r.ck.dir, r.st.Identity, r.st.Phase, r.valid = dir, "test", PhaseFinal, &valid
		r.st.FinalGrad = &finalGradState{FallBack: true}
		hmm, err := r.fallBack(merged, seqs, nil)
		if stopAt == 0 {
			return r, hmm, err
		}
		if !errors.Is(err, errStop) {
			t.Fatalf("the fallback's EM did not stop at round %d: %v", stopAt, err)
		}
		if _, err := os.Stat(r.ck.path(fallbackGradFile)); err != nil {
			t.Fatalf("interrupted fallback: the gradient map is not set aside: %v", err)
		}
		st, err := readState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.FallbackGrad == nil || st.Made.Fallback == "" || st.FinalEM == nil {
			t.Fatalf("interrupted fallback: state %+v, fallback %q, EM %+v", st.FallbackGrad, st.Made.Fallback, st.FinalEM)
		}
		r = testFinaliser(cfg, nil, nil, nil)
		r.ck.dir, r.st, r.ck.st, r.valid = dir, st, st, &valid
		if !finalByEM(cfg, &r.st.Made) {
			t.Fatal("interrupted fallback: a resumed run would not go on by EM")
		}
		hmm, err = r.byEM(seqs, merged.K(), merged.NumActions, nil, nil)
		return r, hmm, err
	}
	r0, want, err := run(0)
	if err != nil {
		t.Fatal(err)
	}
	r1, got, err := run(2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(r1.st.Made.Compared, r0.st.Made.Compared) ||
		r1.st.Made.Doublings != r0.st.Made.Doublings || !reflect.DeepEqual(r1.st.Made.HeldOutBits, r0.st.Made.HeldOutBits) {
		t.Errorf("resumed: %d states, compared %+v, rounds %v; at once: %d states, compared %+v, rounds %v",
			got.N(), r1.st.Made.Compared, r1.st.Made.HeldOutBits, want.N(), r0.st.Made.Compared, r0.st.Made.HeldOutBits)
	}
	if err := r1.commit(); err != nil { // as saveMap commits the map
		t.Fatal(err)
	}
	if _, err := os.Stat(r1.ck.path(fallbackGradFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the map is saved the set-aside gradient map is still there: %v", err)
	}
}
