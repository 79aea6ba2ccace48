package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteAccum sums bruteEmit's statistics over seqs, with tokens read through c (nil:
// hard tokens).
func bruteAccum(m *Model, seqs []Sequence, c [][]float64) *accum {
	n, kk := m.N(), m.K()
	want := &accum{counts: make([]float64, m.NumActions*n*n), gamma1: make([]float64, n), last: make([]float64, n), conf: make([]float64, kk*kk)}
	for _, s := range seqs {
		emit := func(t, k int) float64 {
			if c != nil {
				return c[k][s.Obs[t]]
			}
			if k == s.Obs[t] {
				return 1
			}
			return 0
		}
		z, xi, g1, last, conf := bruteEmit(m, s, emit)
		want.ll += math.Log(z)
		for i, v := range xi {
			want.counts[i] += v
		}
		for i := range n {
			want.gamma1[i] += g1[i]
			want.last[i] += last[i]
		}
		for i, v := range conf {
			want.conf[i] += v
		}
		want.steps += len(s.Obs)
		want.seqs++
	}
	return want
}

// accumDiff is the largest difference between two accumulators' statistics (ℓ, ξ,
// γ_1, γ_T and, under a confusion matrix, the true-token counts).
func accumDiff(a, b *accum, conf bool) float64 {
	d := math.Max(math.Abs(a.ll-b.ll), maxAbsDiff(a.counts, b.counts))
	d = math.Max(d, math.Max(maxAbsDiff(a.gamma1, b.gamma1), maxAbsDiff(a.last, b.last)))
	if conf {
		d = math.Max(d, maxAbsDiff(a.conf, b.conf))
	}
	return d
}

// The segmented E-step with the messages carried between E-steps under fixed
// parameters: its statistics equal a whole-sequence pass's (brute force) once the
// messages have crossed every segment, and differ before (the first E-step starts
// every segment afresh).
func TestSegmentedCountsBruteForce(t *testing.T) {
	defer func(v int) { minSegment = v }(minSegment)
	minSegment = 2
	rng := rand.New(rand.NewPCG(31, 1))
	m := randomModel(rng, []int{2, 1, 2}, 2, 1, false)
	seqs := []Sequence{randomSeq(rng, 3, 2, 9), randomSeq(rng, 3, 2, 6), randomSeq(rng, 3, 2, 1)}
	for _, c := range []struct {
		name string
		conf [][]float64
	}{{"hard", nil}, {"confused", testConfusion}} {
		t.Run(c.name, func(t *testing.T) {
			want := bruteAccum(m, seqs, c.conf)
			p := newParams(m)
			p.setConfusion(c.conf, 0)
			for _, workers := range []int{1, 3} {
				s := newSegmenter(p, seqs, 7, workers)
				if len(s.segs) != 8 { // 4 + 3 + 1
					t.Fatalf("%d segments, want 8: %v", len(s.segs), s.segs)
				}
				var first, last float64
				for it := range 5 { // the 9-step sequence has 4 segments
					acc, err := s.run(p, seqs)
					if err != nil {
						t.Fatal(err)
					}
					if acc.steps != want.steps || acc.seqs != want.seqs {
						t.Errorf("steps %d, sequences %d; want %d, %d", acc.steps, acc.seqs, want.steps, want.seqs)
					}
					if it == 0 {
						first = accumDiff(acc, want, c.conf != nil)
					}
					last = accumDiff(acc, want, c.conf != nil)
				}
				if last > 1e-12 || first < 1e-3 {
					t.Errorf("%d workers: statistics differ from brute force by %.3g after the first E-step, %.3g after the fifth; want ≥ 1e-3 and ≤ 1e-12", workers, first, last)
				}
			}
		})
	}
}

// With one segment per sequence the segmented E-step is the whole-sequence one, bit
// for bit.
func TestSegmentedOneSegment(t *testing.T) {
	_, seqs := walkData(5, twoRooms, 3, 3000)
	m := New(UniformClones(10, 6), 4, rand.New(rand.NewPCG(5, 2)))
	if _, err := TrainEM(m, seqs, EMConfig{MaxIters: 5, Pseudocount: 2e-3}); err != nil {
		t.Fatal(err)
	}
	conf := make([][]float64, 10)
	for k := range conf {
		conf[k] = make([]float64, 10)
		conf[k][k], conf[k][(k+3)%10] = 0.95, 0.05
	}
	for _, c := range [][][]float64{nil, conf} {
		p := newParams(m)
		p.setConfusion(c, 1e-4)
		want, err := newEstepper(p, 2, len(seqs)).run(p, seqs)
		if err != nil {
			t.Fatal(err)
		}
		s := newSegmenter(p, seqs, len(seqs), 2)
		for range 2 {
			got, err := s.run(p, seqs)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(got.counts, want.counts) || !sameBits(got.gamma1, want.gamma1) || !sameBits(got.last, want.last) ||
				!sameBits(got.conf, want.conf) || got.ll != want.ll || got.steps != want.steps || got.seqs != want.seqs {
				t.Errorf("confusion %v: one segment per sequence differs from the whole-sequence E-step", c != nil)
			}
		}
	}
}

// cutSegments: shares of n proportional to the sequences' lengths, near-equal
// segments covering every step once, none under minSegment steps.
func TestCutSegments(t *testing.T) {
	seq := func(n int) Sequence { return Sequence{Obs: make([]int, n), Actions: make([]int, max(0, n-1))} }
	for _, c := range []struct {
		lens []int
		n    int
		want []int // segments per sequence
	}{
		{[]int{300000}, 16, []int{16}},
		{[]int{30000, 10000}, 8, []int{6, 2}},
		{[]int{2500, 500, 100000}, 40, []int{1, 1, 39}}, // round(0.97), at least 1, round(38.8)
		{[]int{5000}, 64, []int{5}},                     // at most T/minSegment
		{[]int{5000}, 0, []int{1}},
	} {
		var seqs []Sequence
		for _, l := range c.lens {
			seqs = append(seqs, seq(l))
		}
		segs := cutSegments(seqs, c.n)
		got := make([]int, len(seqs))
		next := make([]int, len(seqs))
		for _, g := range segs {
			got[g.seq]++
			if g.lo != next[g.seq] || g.hi <= g.lo || (g.hi-g.lo < minSegment && c.lens[g.seq] >= minSegment) {
				t.Errorf("%v into %d: segment %+v", c.lens, c.n, g)
			}
			next[g.seq] = g.hi
		}
		for q, l := range c.lens {
			if next[q] != l {
				t.Errorf("%v into %d: sequence %d covered to %d of %d", c.lens, c.n, q, next[q], l)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v into %d: %v segments per sequence, want %v", c.lens, c.n, got, c.want)
		}
	}
}

// On a map with blocks wide enough for the vector kernels, with every kernel set the
// CPU has: the segmented E-step under fixed parameters, once its messages have crossed
// every segment, gives the whole-sequence E-step's ℓ and statistics to rounding, on hard
// tokens and through a confusion matrix with and without the beam.
func TestSegmentedMatchesWhole(t *testing.T) {
	defer setKernels(inUse)
	defer func(v int) { minSegment = v }(minSegment)
	minSegment = 250
	rng := rand.New(rand.NewPCG(33, 1))
	m := randomModel(rng, []int{20, 24, 18}, 3, 2, false)
	seqs := []Sequence{randomSeq(rng, 3, 3, 2000), randomSeq(rng, 3, 3, 1250)}
	for _, set := range availableKernels() {
		setKernels(set)
		for _, c := range []struct {
			name string
			conf [][]float64
			beam float64
		}{{"hard", nil, 0}, {"confused", testConfusion, 0}, {"confused, beam", testConfusion, 0.2}} {
			p := newParams(m)
			p.setConfusion(c.conf, c.beam)
			want, err := newEstepper(p, 1, len(seqs)).run(p, seqs)
			if err != nil {
				t.Fatal(err)
			}
			s := newSegmenter(p, seqs, 13, 2) // 8 + 5
			var got *accum
			for range 9 {
				if got, err = s.run(p, seqs); err != nil {
					t.Fatal(err)
				}
			}
			scale := math.Abs(want.ll)
			d := accumDiff(got, want, c.conf != nil)
			t.Logf("%s, %s kernels: largest difference %.3g, ℓ %.6f", c.name, set, d, want.ll)
			if len(s.segs) != 13 || d > 1e-9*scale {
				t.Errorf("%s, %s kernels: %d segments; statistics differ from the whole sequences' by %.3g (ℓ %.6f)", c.name, set, len(s.segs), d, want.ll)
			}
		}
	}
}
