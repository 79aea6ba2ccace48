//go:build study

package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestNoisySplitStudy is a measurement, not a check (skipped unless NOISY_SPLIT_ENV
// names an environment): how EM's budget grown by splitting fares on tokens misread
// as a VQ-VAE misreads digits. Each token of the reference walks is replaced, with
// probability NOISY_SPLIT_P (default 0.04), by one of two fixed other tokens; EM
// (SplitRoundIters soft iterations, the environment's pseudocount, no hard phase) is
// trained on the first 90% of every walk, and after each of NOISY_SPLIT_ROUNDS
// (default 8) trainings it prints the bits per step on that part and on the held-out
// end given its start, and the map scored on the (clean) held-out walk; then the
// visited clones are split (keepVisited, chmm.SplitAll). Results:
// results/notes/bigger-pixels.md and verdict.md.
//
//	NOISY_SPLIT_ENV=room go test -tags study ./pkg/experiment -run TestNoisySplitStudy -v
//	NOISY_SPLIT_ENV=tiled NOISY_SPLIT_ROUNDS=6 go test -tags study ./pkg/experiment -run TestNoisySplitStudy -v -timeout 3h
//
// NOISY_SPLIT_CONFUSERS=M misreads each token as one of M fixed other tokens
// (drawn at random, repeats allowed; default 2).
//
// NOISY_SPLIT_MERGE=B:A shows class A at class B's places (as an encoder that
// merges two digits into one token), keeping the environment's data sizes.
//
// NOISY_SPLIT_CONF=oracle trains through the true confusion matrix instead
// (chmm.EMConfig.Confusion: C[k][k] = 1−p, p/2 to each confuser), =learn through
// one learned from C[k][k] = 0.9 on the same nonzero pattern, =full through one
// learned from C[k][k] = 0.9 and 0.1/(K−1) everywhere else, its entries below 1e-3
// dropped after every training (label-free); the bits per step are
// then of the noisy tokens under C, and the clones kept are those with at least 1%
// of their token's expected visits (chmm.ExpectedVisits). NOISY_SPLIT_BEAM sets
// chmm.EMConfig.ConfusionBeam (default 0).
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
	confusers := 2
	if v := os.Getenv("NOISY_SPLIT_CONFUSERS"); v != "" {
		var err error
		if confusers, err = strconv.Atoi(v); err != nil || confusers < 1 || confusers > 20 {
			t.Fatalf("NOISY_SPLIT_CONFUSERS=%q: want an integer in [1, 20]", v)
		}
	}
	mode := os.Getenv("NOISY_SPLIT_CONF")
	if mode != "" && mode != "oracle" && mode != "learn" && mode != "full" {
		t.Fatalf("NOISY_SPLIT_CONF=%q: want oracle, learn or full", mode)
	}
	beam := 0.0
	if v := os.Getenv("NOISY_SPLIT_BEAM"); v != "" {
		var err error
		if beam, err = strconv.ParseFloat(v, 64); err != nil || !(beam >= 0 && beam < 0.5) {
			t.Fatalf("NOISY_SPLIT_BEAM=%q: want a number in [0, 0.5)", v)
		}
	}
	env, err := Symbolic{Env: name}.Environment()
	if err != nil {
		t.Fatal(err)
	}
	sizes := env.Defaults()
	if v := os.Getenv("NOISY_SPLIT_MERGE"); v != "" {
		if env, err = mergeClasses(env, v); err != nil {
			t.Fatalf("NOISY_SPLIT_MERGE=%q: %v", v, err)
		}
	}
	def, err := DefaultSymbolic(env, TrainerEM)
	if err != nil {
		t.Fatal(err)
	}
	def.Episodes, def.Steps, def.EvalSteps = sizes.Episodes, sizes.Steps, sizes.Steps
	tok := NewTokens(env)
	K := len(tok.Classes)
	rng := rand.New(rand.NewPCG(1, 77))
	conf2 := make([][]int, K) // each token's confusers
	for k := range conf2 {
		for range confusers {
			conf2[k] = append(conf2[k], (k+1+rng.IntN(K-1))%K)
		}
	}
	var conf [][]float64 // the confusion matrix trained through (nil: hard tokens)
	if mode != "" {
		conf = make([][]float64, K)
		for k := range conf {
			conf[k] = make([]float64, K)
			conf[k][k] = 1 - p
			for _, o := range conf2[k] {
				conf[k][o] += p / float64(confusers)
			}
			if mode == "full" {
				for o := range conf[k] {
					conf[k][o] = 0.1 / float64(K-1)
				}
				conf[k][k] = 0.9
			}
			if mode == "learn" {
				for o := range conf[k] {
					if o != k && conf[k][o] > 0 {
						conf[k][o] = 0.1 * conf[k][o] / p
					}
				}
				conf[k][k] = 0.9
			}
		}
	}
	var train, start []chmm.Sequence
	held := 0
	for _, ep := range SymbolicTrainingWalks(env, def.Seed, def.Episodes, def.Steps) {
		q := tok.Sequence(ep)
		o := append([]int(nil), q.Obs...)
		for i := range o {
			if rng.Float64() < p {
				o[i] = conf2[o[i]][rng.IntN(confusers)]
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
	tr := Training{Trainer: TrainerEM, Seed: def.Seed, Iters: SplitRoundIters, Full: true, Pseudocount: def.Pseudocount, Restarts: 1}
	split := rand.New(rand.NewPCG(def.Seed, 99))
	for round := 0; round <= rounds; round++ {
		t0 := time.Now()
		lls := chmm.SequenceLogLikelihoods
		if conf == nil {
			if m, _, _, err = TrainSymbolic(m, start, tr, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			ec := chmm.DefaultEMConfig()
			ec.MaxIters, ec.Tol, ec.Pseudocount, ec.ViterbiIters, ec.Seed = SplitRoundIters, -1, def.Pseudocount, 0, def.Seed
			ec.Confusion, ec.LearnConfusion, ec.ConfusionBeam = conf, mode != "oracle", beam
			h, err := chmm.TrainEM(m, start, ec)
			if err != nil {
				t.Fatal(err)
			}
			conf = h.Confusion
			lls = func(m *chmm.Model, seqs []chmm.Sequence, w int) ([]float64, error) {
				return chmm.ConfusedLogLikelihoods(m, seqs, conf, w)
			}
		}
		whole, err := lls(m, train, 0)
		if err != nil {
			t.Fatal(err)
		}
		begun, err := lls(m, start, 0)
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
		fmt.Printf("%s p=%.2f %s round %d: N %d, %.4f bits/step on 90%% of the walks, %.4f on their ends; map F1 %.3f, purity %.3f; %.0f s\n",
			name, p, mode, round, m.N(), -fit/float64(steps)/math.Ln2, -end/float64(held)/math.Ln2, run.Report.ViterbiMap.F1, run.Report.StatePlacePurity, time.Since(t0).Seconds())
		dg, err := chmm.DiagnoseConfused(m, start, nil, conf, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("  diagnosis: predicts next %.3f, surprises %.4f, misses %.4f; surprised d steps after a miss %v, unexplained %.4f; %s\n",
			dg.Determinism, dg.Surprises, dg.Misses, dg.SurprisesAfterMiss, dg.Unexplained(), dg.Judge(chmm.NoisyTokens).Text)
		if conf == nil {
			oracle := make([][]float64, K)
			for k := range oracle {
				oracle[k] = make([]float64, K)
				oracle[k][k] = 1 - p
				for _, o := range conf2[k] {
					oracle[k][o] += p / float64(confusers)
				}
			}
			dg, err := chmm.DiagnoseConfused(m, start, nil, oracle, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("  through the true C: predicts next %.3f, surprises %.4f, misses %.4f\n", dg.Determinism, dg.Surprises, dg.Misses)
		}
		var keep []bool
		if conf == nil {
			visits, err := chmm.ViterbiVisits(m, start, 0)
			if err != nil {
				t.Fatal(err)
			}
			keep, _ = chmm.KeepVisited(m, visits, 0)
		} else {
			ev, err := chmm.ExpectedVisits(m, start, conf, 0)
			if err != nil {
				t.Fatal(err)
			}
			keep, _ = chmm.KeepVisited(m, ev, 0.01)
			if mode != "oracle" {
				diag, entries := make([]string, K), 0
				if mode == "full" {
					chmm.TrimConfusion(conf, 1e-3)
				}
				for k, row := range conf {
					diag[k] = fmt.Sprintf("%.3f", row[k])
					for _, v := range row {
						if v > 0 {
							entries++
						}
					}
				}
				fmt.Printf("  learned C diagonal %v, %d nonzero entries\n", diag, entries)
			}
		}
		if m, _, err = chmm.Prune(m, keep); err != nil {
			t.Fatal(err)
		}
		if m, err = chmm.SplitAll(m, 0.1, split); err != nil {
			t.Fatal(err)
		}
	}
}

// mergeClasses returns env with class b's places showing class a ("b:a").
func mergeClasses(env *gridworld.Env, spec string) (*gridworld.Env, error) {
	var b, a int
	if _, err := fmt.Sscanf(spec, "%d:%d", &b, &a); err != nil || a == b {
		return nil, fmt.Errorf("want two different class ids B:A")
	}
	var out strings.Builder
	for _, line := range strings.Split(env.Layout(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		f := strings.Fields(line)
		for i, c := range f {
			if c == strconv.Itoa(b) {
				f[i] = strconv.Itoa(a)
			}
		}
		out.WriteString(strings.Join(f, " ") + "\n")
	}
	return gridworld.ParseLayout(fmt.Sprintf("%s_%d_as_%d", env.Name, b, a), strings.NewReader(out.String()))
}
