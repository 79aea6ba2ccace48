package chmm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSetup returns a two_rooms-like problem: 10 tokens × 15 clones
// (N = 151), 4 actions, episodes × steps of a random walk, and a model after
// a few EM iterations (so messages are not uniform).
func benchSetup(b *testing.B, episodes, steps int) (*Model, []Sequence) {
	b.Helper()
	_, seqs := walkData(99, twoRooms, episodes, steps)
	m := New(UniformClones(10, 15), 4, rand.New(rand.NewPCG(99, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 3, Pseudocount: 2e-3}); err != nil {
		b.Fatal(err)
	}
	return m, seqs
}

// BenchmarkViterbi: one 10,000-step episode, N = 151 (target < 50 ms).
func BenchmarkViterbi(b *testing.B) {
	m, seqs := benchSetup(b, 1, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Viterbi(m, seqs[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogLikelihood: 4 × 10,000 steps, N = 151.
func BenchmarkLogLikelihood(b *testing.B) {
	m, seqs := benchSetup(b, 4, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := LogLikelihood(m, seqs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGradient: 4 × 10,000 steps, N = 151 (target < 200 ms).
func BenchmarkGradient(b *testing.B) {
	m, seqs := benchSetup(b, 4, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, _, _, err := Gradient(m, seqs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEMIter: one soft EM iteration (E-step on all sequences with the
// default worker count, then the M-step) on 4 × 10,000 steps, N = 151
// (target < 100 ms on 2 cores).
func BenchmarkEMIter(b *testing.B) {
	m, seqs := benchSetup(b, 4, 10000)
	p := newParams(m)
	es := newEstepper(p, 0, len(seqs))
	b.ResetTimer()
	for b.Loop() {
		acc, err := es.run(p, seqs)
		if err != nil {
			b.Fatal(err)
		}
		mstep(m, acc, 2e-3, true, 0)
		p = newParams(m)
	}
}

// BenchmarkGradientStep: one full-batch step of TrainGradient (forward–
// backward, gradient, entropy term, Adam) on 4 × 10,000 steps, N = 151,
// measured as a 10-step run divided by 11 evaluations.
func BenchmarkGradientStep(b *testing.B) {
	m, seqs := benchSetup(b, 4, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := TrainGradient(m, seqs, GradConfig{Iters: 10, EntropyWeight: 0.01}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/11, "ms/step")
}

// BenchmarkGradientLong: one 50,000-step episode of the original CSCG's
// rectangular room, 4 tokens × 70 clones (N = 281): a single long sequence,
// split across goroutines inside the sequence.
func BenchmarkGradientLong(b *testing.B) {
	_, seqs := walkData(98, cscgRectangular, 1, 50000)
	m := New(UniformClones(4, 70), 4, rand.New(rand.NewPCG(98, 2)))
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			if _, err := LogLikelihood(m, seqs); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				if _, _, _, err := GradientWorkers(m, seqs, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGradientKernels: the exact gradient (forward–backward and counts) with
// every block kernel set the CPU has (plain Go, AVX2, AVX-512) side by side, whichever
// the start-up timing chose (Kernels), at C = 15 and 30 clones per token (two_rooms
// shapes, 4 × 10,000 steps) and C = 70 (one 50,000-step episode of the original
// CSCG's rectangular room). One worker, so the numbers are CPU-seconds.
func BenchmarkGradientKernels(b *testing.B) {
	defer setKernels(inUse)
	_, twoRoomsSeqs := walkData(99, twoRooms, 4, 10000)
	_, rectSeqs := walkData(98, cscgRectangular, 1, 50000)
	for _, c := range []struct {
		clones, tokens int
		seqs           []Sequence
	}{{15, 10, twoRoomsSeqs}, {30, 10, twoRoomsSeqs}, {70, 4, rectSeqs}} {
		m := New(UniformClones(c.tokens, c.clones), 4, rand.New(rand.NewPCG(99, 2)))
		for _, set := range availableKernels() {
			b.Run(fmt.Sprintf("C=%d/%s", c.clones, set), func(b *testing.B) {
				setKernels(set)
				for b.Loop() {
					if _, _, _, err := GradientWorkers(m, c.seqs, 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkConfusedEStep: one E-step on one 10,000-step two_rooms episode (15 clones
// per token, N = 151, and 48, N = 481, the width of tiled's pixel maps; a map after 50
// EM iterations) on one goroutine: on hard tokens, and on the tokens
// misread with probability 0.04 (to one of two fixed other tokens) through that
// confusion matrix (3 candidates per step on average), without and with the beam.
// nats/step is −ℓ/T, the beam's being that of the model with the dropped candidates
// removed (a bound on what the beam costs the likelihood). Every block kernel set
// the CPU has, side by side.
func BenchmarkConfusedEStep(b *testing.B) {
	defer setKernels(inUse)
	for _, clones := range []int{15, 30, 48} {
		b.Run(fmt.Sprintf("C=%d", clones), func(b *testing.B) { benchConfusedEStep(b, clones) })
	}
}

func benchConfusedEStep(b *testing.B, clones int) {
	_, seqs := walkData(99, twoRooms, 1, 10000)
	m := New(UniformClones(10, clones), 4, rand.New(rand.NewPCG(99, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 50, Pseudocount: 2e-3, Tol: -1}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(99, 3))
	conf := make([][]float64, 10)
	other := make([][2]int, 10)
	for k := range conf {
		conf[k] = make([]float64, 10)
		other[k] = [2]int{(k + 1 + rng.IntN(9)) % 10, (k + 1 + rng.IntN(9)) % 10}
		conf[k][k] = 0.96
		conf[k][other[k][0]] += 0.02
		conf[k][other[k][1]] += 0.02
	}
	noisy := Sequence{Obs: append([]int(nil), seqs[0].Obs...), Actions: seqs[0].Actions}
	for t, o := range noisy.Obs {
		if rng.Float64() < 0.04 {
			noisy.Obs[t] = other[o][rng.IntN(2)]
		}
	}
	for _, c := range []struct {
		name string
		conf [][]float64
		beam float64
		seq  Sequence
	}{{"hard", nil, 0, seqs[0]}, {"confused", conf, 0, noisy}, {"confused_beam1e-6", conf, 1e-6, noisy}, {"confused_beam1e-4", conf, 1e-4, noisy}, {"confused_beam1e-3", conf, 1e-3, noisy}} {
		for _, set := range availableKernels() {
			b.Run(c.name+"/"+set.String(), func(b *testing.B) {
				setKernels(set)
				p := newParams(m)
				p.setConfusion(c.conf, c.beam)
				es := newEstepper(p, 1, 1)
				var acc *accum
				for b.Loop() {
					var err error
					if acc, err = es.run(p, []Sequence{c.seq}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(-acc.ll/float64(acc.steps), "nats/step")
			})
		}
	}
}

// BenchmarkGradientChunks: the forward–backward pass of one Adam step of TrainGradient
// on one 150,000-step walk of the rectangular room (tiled's length), 4 tokens × 70
// clones (N = 281, a pass of about 7·10⁸ multiply-adds): over the whole walk, and over
// ChunkBatch random chunks of ChunkLen steps as ChunkIfCostly sets it past
// DefaultChunkAbove. One worker: the numbers are CPU-seconds. (A chunked training also
// scores all of the walk with a forward pass every chunkKeepEvery steps.)
func BenchmarkGradientChunks(b *testing.B) {
	_, seqs := walkData(98, cscgRectangular, 1, 150000)
	m := New(UniformClones(4, 70), 4, rand.New(rand.NewPCG(98, 2)))
	cfg := GradConfig{}.ChunkIfCostly(m, seqs, DefaultChunkAbove)
	if cfg.ChunkLen == 0 {
		b.Fatalf("pass cost %g: not chunked", PassCost(m, seqs))
	}
	chunks := make([]Sequence, cfg.Batch)
	newChunkSampler(seqs, cfg.ChunkLen, 1).sample(chunks)
	p := newParams(m)
	for _, c := range []struct {
		name string
		seqs []Sequence
	}{{"whole walk", seqs}, {"chunks", chunks}} {
		es := newEstepper(p, 1, len(c.seqs))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := es.run(p, c.seqs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDensePasses: the dense passes of one Adam step at N = 901 (10 tokens × 90
// clones, 4 actions: 3.2M entries), with the counts of one E-step given: the softmax
// of Θ into T, the gradient, the entropy term and Adam's step, on GOMAXPROCS workers
// (-cpu 1,2 compares one goroutine with two; the bits are the same).
func BenchmarkDensePasses(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := New(UniformClones(10, 90), 4, rng)
	counts := make([]float64, len(m.ThetaLogits))
	for i := range counts {
		counts[i] = rng.Float64()
	}
	acc := &accum{counts: counts, gamma1: make([]float64, m.N()), seqs: 1}
	gPi, gTheta := make([]float64, m.N()), make([]float64, len(counts))
	a := newAdam(len(counts), GradConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	for b.Loop() {
		p := newParamsWorkers(m, 0)
		p.gradient(acc, gPi, gTheta)
		entropyGrad(p, counts, 1e5, 0, gTheta)
		a.step(m.ThetaLogits, gTheta, -1e-5, 0.01)
	}
}
