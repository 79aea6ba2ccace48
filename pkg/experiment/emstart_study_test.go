//go:build study

package experiment

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestEMStartComparison is a measurement, not a check (skipped unless EMSTART_ENVS
// names environments): soft EM (200 iterations, no splits, no Viterbi iterations)
// from the near-uniform start (chmm.New) and from the original CSCG's random one
// (chmm.NewRandom) on each environment's reference walks and budget, seeds 1–3
// (EMSTART_SEEDS=N: 1–N). It
// prints bits per step after 10, 30, 100 and 200 iterations and the iterations to
// come within 0.01 bits of the 200th. Results: results/notes/symbolic.md.
//
//	EMSTART_ENVS=aliased,corridors,room,three_rooms,square,two_rooms \
//	  go test -tags study ./pkg/experiment -run TestEMStartComparison -v
func TestEMStartComparison(t *testing.T) {
	envs := os.Getenv("EMSTART_ENVS")
	if envs == "" {
		t.Skip("a measurement: set EMSTART_ENVS")
	}
	seeds := uint64(3)
	if v := os.Getenv("EMSTART_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("EMSTART_SEEDS=%q: want an integer ≥ 1", v)
		}
		seeds = uint64(n)
	}
	for _, name := range strings.Split(envs, ",") {
		env, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		d := env.Defaults()
		tok := NewTokens(env)
		for seed := uint64(1); seed <= seeds; seed++ {
			var train []chmm.Sequence
			for _, ep := range SymbolicTrainingWalks(env, seed, d.Episodes, d.Steps) {
				train = append(train, tok.Sequence(ep))
			}
			clones := make([]int, len(tok.Classes))
			for k, c := range tok.Classes {
				clones[k] = d.ClonesPerClass
				if n, ok := d.ClonesByClass[c]; ok {
					clones[k] = n
				}
			}
			pc := d.Pseudocount
			if pc == 0 {
				pc = chmm.DefaultEMConfig().Pseudocount
			}
			for _, init := range []string{InitUniform, InitRandom} {
				m := SymbolicInit(clones, env.NumActions(), seed, init)
				ec := chmm.DefaultEMConfig()
				ec.MaxIters, ec.ViterbiIters, ec.Pseudocount, ec.Seed, ec.SplitRounds = 200, 0, pc, seed, 0
				t0 := time.Now()
				h, err := chmm.TrainEM(m, train, ec)
				if err != nil {
					t.Fatal(err)
				}
				sec := time.Since(t0).Seconds()
				bits := func(i int) float64 {
					if i >= len(h.LogLik) {
						i = len(h.LogLik) - 1
					}
					return -h.LogLik[i] / math.Ln2
				}
				final := bits(len(h.LogLik) - 1)
				reach := -1
				for i := range h.LogLik {
					if bits(i) <= final+0.01 {
						reach = i
						break
					}
				}
				t.Logf("%s seed %d %-7s bits/step it10 %.4f it30 %.4f it100 %.4f it200 %.4f  iters to within 0.01 of it200: %d  %.1fs/200it\n",
					name, seed, init, bits(10), bits(30), bits(100), final, reach, sec)
			}
		}
	}
}
