//go:build study

package chmm

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// incremental is incremental EM (Neal and Hinton 1998) over a segmenter's segments:
// each segment's statistics are kept, the E-step runs on a batch of segments at a
// time (one per worker, spread along the walk), and the M-step follows each batch
// from the sum of every segment's latest statistics.
type incremental struct {
	s    *segmenter
	accs []*accum // per segment
	sum  *accum
	// noSum: batch leaves sum alone (stepwise EM)
	noSum bool
}

func newIncremental(p *params, seqs []Sequence, n int) *incremental {
	s := newSegmenter(p, seqs, n, len(seqs[0].Obs))
	inc := &incremental{s: s, accs: make([]*accum, len(s.segs)), sum: newAccum(p)}
	for g := range inc.accs {
		inc.accs[g] = newAccum(p)
	}
	return inc
}

// batch runs the E-step on segments gs in parallel, replacing their statistics and
// carrying their messages to their neighbours.
func (inc *incremental) batch(p *params, seqs []Sequence, gs []int) error {
	s := inc.s
	ns := len(s.segs)
	err := parallel(len(gs), len(gs), func(w, i int) error {
		resetAccums([]*accum{inc.accs[gs[i]]})
		return s.segment(p, seqs, w, gs[i], inc.accs[gs[i]])
	})
	if err != nil {
		return err
	}
	cp := func(dst *[]float64, src []float64) {
		if src == nil {
			return
		}
		if *dst == nil {
			*dst = make([]float64, len(src))
		}
		copy(*dst, src)
	}
	for _, g := range gs {
		if g+1 < ns && s.nextAlpha[g+1] != nil {
			cp(&s.alpha[g+1], s.nextAlpha[g+1])
		}
		if g > 0 && s.nextBeta[g-1] != nil {
			cp(&s.beta[g-1], s.nextBeta[g-1])
		}
	}
	if inc.noSum {
		return nil
	}
	resetAccums([]*accum{inc.sum})
	for _, a := range inc.accs {
		for i, v := range a.counts {
			inc.sum.counts[i] += v
		}
		for i, v := range a.gamma1 {
			inc.sum.gamma1[i] += v
		}
		for i, v := range a.last {
			inc.sum.last[i] += v
		}
		for i, v := range a.conf {
			inc.sum.conf[i] += v
		}
		inc.sum.ll += a.ll
		inc.sum.steps += a.steps
		inc.sum.seqs += a.seqs
	}
	return nil
}

// stepwise sets sum to (1 − eta) sum + eta × the statistics of segments gs scaled to
// the whole walk's steps.
func (inc *incremental) stepwise(gs []int, eta float64) {
	steps := 0
	for _, g := range gs {
		steps += inc.accs[g].steps
	}
	total := inc.sum.steps
	scale := eta * float64(total) / float64(steps)
	mix := func(dst []float64, pick func(a *accum) []float64) {
		for i := range dst {
			dst[i] *= 1 - eta
		}
		for _, g := range gs {
			for i, v := range pick(inc.accs[g]) {
				dst[i] += scale * v
			}
		}
	}
	mix(inc.sum.counts, func(a *accum) []float64 { return a.counts })
	mix(inc.sum.conf, func(a *accum) []float64 { return a.conf })
	mix(inc.sum.last, func(a *accum) []float64 { return a.last })
}

// TestIncrementalEMStudy is a measurement, not a check (skipped unless INCEM_SEGS is
// set): BenchmarkEMRound's round (roundProblem, one 300,000-step walk, about 260 states,
// through the learned confusion matrix with the pipeline's beam), trained by INCEM_PASSES
// (default 10) passes of incremental EM over INCEM_SEGS segments, GOMAXPROCS at a time,
// then by today's round (the whole walk in GOMAXPROCS segments, SQUAREM, the StopGain
// stop) to its end. It prints the exact −ℓ/T after each pass and at the end, the E-steps
// (passes count as one each), seconds, CPU-seconds and the decoding's purities.
//
//	INCEM_SEGS=16 go test -tags study ./pkg/chmm -run TestIncrementalEMStudy -v -timeout 2h
func TestIncrementalEMStudy(t *testing.T) {
	v := os.Getenv("INCEM_SEGS")
	if v == "" {
		t.Skip("a measurement: set INCEM_SEGS")
	}
	nseg, err := strconv.Atoi(v)
	if err != nil || nseg < 2 {
		t.Fatalf("INCEM_SEGS=%q: want an integer >= 2", v)
	}
	passes := 10
	if v := os.Getenv("INCEM_PASSES"); v != "" {
		if passes, err = strconv.Atoi(v); err != nil || passes < 0 {
			t.Fatalf("INCEM_PASSES=%q: want an integer >= 0", v)
		}
	}
	prob := newRoundProblem(t, 300000)
	workers := runtime.GOMAXPROCS(0)
	seqs := []Sequence{prob.seq}
	m := prob.m.Clone()
	conf := cloneRows(prob.conf)
	exact := func() float64 {
		p := newParamsWorkers(m, workers)
		p.setConfusion(conf, 1e-4)
		acc, err := newEstepper(p, workers, 1).run(p, seqs)
		if err != nil {
			t.Fatal(err)
		}
		return -acc.ll / float64(len(prob.seq.Obs))
	}
	cpu0, w0 := cpuSeconds(), time.Now()
	var evalCPU float64
	fmt.Printf("start: −ℓ/T %.6f\n", exact())
	p := newParamsWorkers(m, workers)
	p.setConfusion(conf, 1e-4)
	inc := newIncremental(p, seqs, nseg)
	ns := len(inc.s.segs)
	// pass 0: every segment under the start's parameters (a batch E-step), then M.
	all := make([]int, ns)
	for g := range all {
		all[g] = g
	}
	// INCEM_ALPHA > 0: stepwise EM instead (Liang and Klein 2009): the statistics are
	// (1 − η) times the last plus η times the batch's scaled to the whole walk, η = (k+2)^−α
	// at the k-th batch.
	alpha := 0.0
	if v := os.Getenv("INCEM_ALPHA"); v != "" {
		if alpha, err = strconv.ParseFloat(v, 64); err != nil || alpha < 0 || alpha > 1 {
			t.Fatalf("INCEM_ALPHA=%q: want a number in [0, 1]", v)
		}
	}
	k := 0
	for pass := range passes {
		if pass == 0 {
			if err := inc.batch(p, seqs, all); err != nil {
				t.Fatal(err)
			}
			mstep(m, inc.sum, 2e-3, false, workers)
			confusionStep(conf, inc.sum)
			p = newParamsWorkers(m, workers)
			p.setConfusion(conf, 1e-4)
			inc.noSum = alpha > 0
		} else {
			stride := (ns + workers - 1) / workers
			for i := range stride {
				var gs []int
				for w := range workers {
					if g := w*stride + i; g < ns {
						gs = append(gs, g)
					}
				}
				if err := inc.batch(p, seqs, gs); err != nil {
					t.Fatal(err)
				}
				if alpha > 0 {
					inc.stepwise(gs, math.Pow(float64(k+2), -alpha))
					k++
				}
				mstep(m, inc.sum, 2e-3, false, workers)
				confusionStep(conf, inc.sum)
				p = newParamsWorkers(m, workers)
				p.setConfusion(conf, 1e-4)
			}
		}
		c := cpuSeconds()
		ll := exact()
		evalCPU += cpuSeconds() - c
		fmt.Printf("pass %d: −ℓ/T %.6f (%.0f s, %.0f CPU-s without the evaluations)\n", pass+1, ll, time.Since(w0).Seconds(), cpuSeconds()-cpu0-evalCPU)
	}
	cfg := EMConfig{MaxIters: 1000, Tol: -1, Pseudocount: 2e-3, FixedPi: true, Confusion: conf,
		LearnConfusion: true, ConfusionBeam: 1e-4, Workers: workers,
		Segments: workers, Accelerate: true, StopGain: DefaultStopGain}
	h, err := TrainEM(m, seqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	conf = h.Confusion
	for i, ll := range h.LogLik {
		if i < 10 || (i < 100 && i%10 == 9) || i%50 == 49 || i == len(h.LogLik)-1 {
			fmt.Printf("  E-step %d: −ℓ/T %.6f\n", passes+i+1, -ll)
		}
	}
	secs, cpu := time.Since(w0).Seconds(), cpuSeconds()-cpu0-evalCPU
	lls, err := ConfusedLogLikelihoods(m, seqs, conf, 0)
	if err != nil {
		t.Fatal(err)
	}
	sp, ps := prob.purities(t, m, conf)
	fmt.Printf("segments %d, %d passes + %d E-steps = %d; %.0f s, %.0f CPU-s; −ℓ/T-µnats %.0f; state→place %.4f, place→state %.4f\n",
		ns, passes, len(h.LogLik), passes+len(h.LogLik), secs, cpu, -1e6*lls[0]/float64(len(prob.seq.Obs)), sp, ps)
}
