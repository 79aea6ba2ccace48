package chmm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// roundProblem is one soft-EM round of the pixel finalisation's shape: one walk of
// tiled (144 places, 9 tokens, every token at 16 places) whose steps are misread, at a
// rate of 3 %, as one of two fixed other tokens; the places walked; and a map of
// about 260 states through a learned confusion matrix, made from one clone per token
// as the finalisation makes it (EM rounds of 150 iterations on the walk's first 40,000
// steps, the clones used kept and split in two after each, five times).
type roundProblem struct {
	seq    Sequence
	places []int
	m      *Model
	conf   [][]float64
	before *Model // m before its last split (the last round's kept clones)
}

func newRoundProblem(tb testing.TB, steps int) *roundProblem {
	tb.Helper()
	env, err := gridworld.Named("tiled")
	if err != nil {
		tb.Fatal(err)
	}
	var ids []int
	for _, c := range env.Class {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	slices.Sort(ids)
	k := len(ids)
	ep := env.Walk(rand.New(rand.NewPCG(1, 1)), steps)
	rng := rand.New(rand.NewPCG(1, 7))
	other := make([][2]int, k)
	for i := range other {
		other[i] = [2]int{(i + 1 + rng.IntN(k-1)) % k, (i + 1 + rng.IntN(k-1)) % k}
	}
	seq := Sequence{Obs: make([]int, steps), Actions: ep.Actions}
	for t, c := range ep.Obs {
		seq.Obs[t], _ = slices.BinarySearch(ids, c)
		if rng.Float64() < 0.03 {
			seq.Obs[t] = other[seq.Obs[t]][rng.IntN(2)]
		}
	}
	conf := make([][]float64, k)
	for i := range conf {
		conf[i] = make([]float64, k)
		for o := range conf[i] {
			conf[i][o] = 0.1 / float64(k-1)
		}
		conf[i][i] = 0.9
	}
	n := min(steps, 40000)
	short := []Sequence{{Obs: seq.Obs[:n], Actions: seq.Actions[:n-1]}}
	m := New(UniformClones(k, 1), 4, rand.New(rand.NewPCG(1, 0xf1a1)))
	split := rand.New(rand.NewPCG(1, 0x5b1e))
	var before *Model
	for range 5 {
		h, err := TrainEM(m, short, EMConfig{MaxIters: 150, Pseudocount: 2e-3, Tol: -1, FixedPi: true,
			Confusion: conf, LearnConfusion: true, ConfusionBeam: 1e-4})
		if err != nil {
			tb.Fatal(err)
		}
		conf = h.Confusion
		TrimConfusion(conf, 1e-3)
		visits, err := ExpectedVisits(m, short, conf, 0)
		if err != nil {
			tb.Fatal(err)
		}
		keep, _ := KeepVisited(m, visits, UsedShare)
		if m, _, err = Prune(m, keep); err != nil {
			tb.Fatal(err)
		}
		before = m
		if m, err = SplitAll(m, 0.1, split); err != nil {
			tb.Fatal(err)
		}
	}
	return &roundProblem{seq: seq, places: ep.Places, m: m, conf: conf, before: before}
}

// cutPieces cuts seq into n pieces of near-equal length, each a sequence of its own
// (the transition between two pieces dropped), as the pipeline cut its walks for
// TrainEM before the segmented E-step.
func cutPieces(seq Sequence, n int) []Sequence {
	out := make([]Sequence, n)
	tt := len(seq.Obs)
	for i := range n {
		lo, hi := i*tt/n, (i+1)*tt/n
		out[i] = Sequence{Obs: seq.Obs[lo:hi], Actions: seq.Actions[lo : hi-1]}
	}
	return out
}

// BenchmarkEMRound: one soft-EM round (roundProblem, one 300,000-step walk, about 260
// states) through the learned confusion matrix with the pipeline's beam, pseudocount
// and π, no splits within the round, on GOMAXPROCS workers (-cpu 1,2; -benchtime 1x):
//
//   - today: the walk cut in GOMAXPROCS pieces, plain EM for its 1000 iterations
//     (Tol −1: the finalisation's round);
//   - new: the whole walk in GOMAXPROCS segments, SQUAREM, and the StopGain stop.
//
// It reports the E-steps, −ℓ/T of the model trained in millionths of a nat (over the
// whole walk, through its confusion matrix without the beam), the state→place and
// place→state purities of its decoding of the walk's last 20,000 steps, and the
// process's CPU-seconds.
func BenchmarkEMRound(b *testing.B) {
	prob := newRoundProblem(b, 300000)
	workers := runtime.GOMAXPROCS(0)
	base := EMConfig{MaxIters: 1000, Tol: -1, Pseudocount: 2e-3, FixedPi: true, Confusion: prob.conf,
		LearnConfusion: true, ConfusionBeam: 1e-4, Workers: workers}
	fast := base
	fast.Segments, fast.Accelerate, fast.StopGain = workers, true, DefaultStopGain
	for _, c := range []struct {
		name string
		seqs []Sequence
		cfg  EMConfig
	}{
		{"today", cutPieces(prob.seq, workers), base},
		{"new", []Sequence{prob.seq}, fast},
	} {
		b.Run(c.name, func(b *testing.B) {
			var m *Model
			var h *History
			cpu0 := cpuSeconds()
			for b.Loop() {
				m = prob.m.Clone()
				var err error
				if h, err = TrainEM(m, c.seqs, c.cfg); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuSeconds() - cpu0
			lls, err := ConfusedLogLikelihoods(m, []Sequence{prob.seq}, h.Confusion, 0)
			if err != nil {
				b.Fatal(err)
			}
			sp, ps := prob.purities(b, m, h.Confusion)
			b.ReportMetric(float64(len(h.LogLik)), "E-steps")
			b.ReportMetric(-1e6*lls[0]/float64(len(prob.seq.Obs)), "−ℓ/T-µnats")
			b.ReportMetric(sp, "state→place")
			b.ReportMetric(ps, "place→state")
			b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkSegmentedEStep: one E-step of BenchmarkEMRound's round (the 300,000-step
// walk, its start map, through the confusion matrix with the beam) on GOMAXPROCS
// workers: over the whole walk (today's E-step; one goroutine through a confusion
// matrix) and cut into 1, 2, 4, 16 and 64 segments with their messages carried (a
// second E-step after one that set them). The per-segment cost is the difference
// between segment counts on one worker.
func BenchmarkSegmentedEStep(b *testing.B) {
	prob := newRoundProblem(b, 300000)
	p := newParams(prob.m)
	p.setConfusion(prob.conf, 1e-4)
	seqs := []Sequence{prob.seq}
	workers := runtime.GOMAXPROCS(0)
	b.Run("whole", func(b *testing.B) {
		es := newEstepper(p, workers, 1)
		cpu0 := cpuSeconds()
		for b.Loop() {
			if _, err := es.run(p, seqs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	})
	for _, n := range []int{1, 2, 4, 16, 64} {
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			s := newSegmenter(p, seqs, n, workers)
			if _, err := s.run(p, seqs); err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuSeconds()
			for b.Loop() {
				if _, err := s.run(p, seqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkEMSerial: the work of one iteration of BenchmarkEMRound's round besides its
// E-step, on one goroutine (it does not shrink with more workers): the M-step of T and
// C and the next E-step's parameters (plain EM), and what SQUAREM adds at most per
// E-step (the objective, two flattened points and one installed).
func BenchmarkEMSerial(b *testing.B) {
	prob := newRoundProblem(b, 300000)
	p := newParams(prob.m)
	p.setConfusion(prob.conf, 1e-4)
	acc, err := newSegmenter(p, []Sequence{prob.seq}, 16, runtime.GOMAXPROCS(0)).run(p, []Sequence{prob.seq})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("mstep", func(b *testing.B) {
		m, conf := prob.m.Clone(), cloneRows(prob.conf)
		cpu0 := cpuSeconds()
		for b.Loop() {
			mstep(m, acc, 2e-3, false, 0)
			confusionStep(conf, acc)
			q := newParams(m)
			q.setConfusion(conf, 1e-4)
		}
		b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	})
	b.Run("squarem", func(b *testing.B) {
		m, conf := prob.m.Clone(), cloneRows(prob.conf)
		ac := newAccel(false, true)
		var x []float64
		cpu0 := cpuSeconds()
		for b.Loop() {
			_ = objective(m, acc.ll, float64(acc.steps), 2e-3, false)
			ac.x0 = ac.flatten(m, conf, ac.x0)
			x = ac.flatten(m, conf, x)
			ac.unflatten(x, m, conf)
		}
		b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	})
}

// purities decodes the walk's last 20,000 steps under m read through conf and returns
// the visit-weighted state→place and place→state purities.
func (p *roundProblem) purities(tb testing.TB, m *Model, conf [][]float64) (sp, ps float64) {
	lo := max(0, len(p.seq.Obs)-20000)
	states, _, err := Decode(m, Confused{Tokens: p.seq.Obs[lo:], C: conf}, p.seq.Actions[lo:])
	if err != nil {
		tb.Fatal(err)
	}
	sp, _ = purity(states, p.places[lo:])
	ps, _ = purity(p.places[lo:], states)
	return sp, ps
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
