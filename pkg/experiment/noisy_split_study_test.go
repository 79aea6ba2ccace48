package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// TestNoisySplitStudy is a measurement, not a check (skipped unless NOISY_SPLIT_ENV
// names an environment): how EM's budget grown by splitting fares on tokens misread
// as a VQ-VAE misreads digits. Each token of the reference walks is replaced, with
// probability NOISY_SPLIT_P (default 0.04), by one of two fixed other tokens; EM
// (DoublingIters soft iterations, the environment's pseudocount, no hard phase) is
// trained on the first 90% of every walk, and after each of NOISY_SPLIT_ROUNDS
// (default 8) trainings it prints the bits per step on that part and on the held-out
// end given its start, and the map scored on the (clean) held-out walk; then the
// visited clones are split (keepVisited, chmm.SplitAll). README, "Bigger worlds":
//
//	NOISY_SPLIT_ENV=room go test ./pkg/experiment -run TestNoisySplitStudy -v
//	NOISY_SPLIT_ENV=tiled NOISY_SPLIT_ROUNDS=6 go test ./pkg/experiment -run TestNoisySplitStudy -v -timeout 3h
func TestNoisySplitStudy(t *testing.T) {
	name := os.Getenv("NOISY_SPLIT_ENV")
	if name == "" {
		t.Skip("a measurement: set NOISY_SPLIT_ENV")
	}
	p, rounds := 0.04, 8
	if v := os.Getenv("NOISY_SPLIT_P"); v != "" {
		var err error
		if p, err = strconv.ParseFloat(v, 64); err != nil || p < 0 || p > 1 {
			t.Fatalf("NOISY_SPLIT_P=%q: want a number in [0, 1]", v)
		}
	}
	if v := os.Getenv("NOISY_SPLIT_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 0 || rounds > 12 {
			t.Fatalf("NOISY_SPLIT_ROUNDS=%q: want an integer in [0, 12]", v)
		}
	}
	env, err := Symbolic{Env: name}.Environment()
	if err != nil {
		t.Fatal(err)
	}
	def, err := DefaultSymbolic(env, TrainerEM)
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokens(env)
	K := len(tok.Classes)
	rng := rand.New(rand.NewPCG(1, 77))
	conf := make([][2]int, K) // each token's two confusers
	for k := range conf {
		conf[k] = [2]int{(k + 1 + rng.IntN(K-1)) % K, (k + 1 + rng.IntN(K-1)) % K}
	}
	var train, start []chmm.Sequence
	held := 0
	for _, ep := range SymbolicTrainingWalks(env, def.Seed, def.Episodes, def.Steps) {
		q := tok.Sequence(ep)
		o := append([]int(nil), q.Obs...)
		for i := range o {
			if rng.Float64() < p {
				o[i] = conf[o[i]][rng.IntN(2)]
			}
		}
		q.Obs = o
		n := q.Len() - q.Len()/10
		train = append(train, q)
		start = append(start, chmm.Sequence{Obs: q.Obs[:n], Actions: q.Actions[:n-1]})
		held += q.Len() - n
	}
	steps := 0
	for _, q := range start {
		steps += q.Len()
	}
	ones := make([]int, K)
	for k := range ones {
		ones[k] = 1
	}
	m := SymbolicInit(ones, env.NumActions(), def.Seed, InitUniform)
	tr := Training{Trainer: TrainerEM, Seed: def.Seed, Iters: DoublingIters, Full: true, Pseudocount: def.Pseudocount, Restarts: 1}
	split := rand.New(rand.NewPCG(def.Seed, 99))
	for round := 0; round <= rounds; round++ {
		if m, _, _, err = TrainSymbolic(m, start, tr, nil); err != nil {
			t.Fatal(err)
		}
		whole, err := chmm.SequenceLogLikelihoods(m, train, 0)
		if err != nil {
			t.Fatal(err)
		}
		begun, err := chmm.SequenceLogLikelihoods(m, start, 0)
		if err != nil {
			t.Fatal(err)
		}
		var fit, end float64
		for i := range train {
			fit += begun[i]
			end += whole[i] - begun[i]
		}
		run, err := RunSymbolic(def, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s p=%.2f round %d: N %d, %.4f bits/step on 90%% of the walks, %.4f on their ends; map F1 %.3f, purity %.3f\n",
			name, p, round, m.N(), -fit/float64(steps)/math.Ln2, -end/float64(held)/math.Ln2, run.Report.ViterbiMap.F1, run.Report.StatePlacePurity)
		visits, err := chmm.ViterbiVisits(m, start, 0)
		if err != nil {
			t.Fatal(err)
		}
		keep, _ := keepVisited(m, visits, 0)
		if m, _, err = chmm.Prune(m, keep); err != nil {
			t.Fatal(err)
		}
		if m, err = chmm.SplitAll(m, 0.1, split); err != nil {
			t.Fatal(err)
		}
	}
}
