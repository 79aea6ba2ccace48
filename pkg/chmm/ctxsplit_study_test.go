//go:build study

package chmm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// splitByContext is SplitSome (every clone) with each copy pair started from the
// clone's decoded visits: the visits along path (a state path of seq) are grouped in
// two by where they came from, so that the groups' next moves differ the most
// (two-means over the arrivals' distributions of the next (action, state)); the first
// group's arrivals lead mostly (0.9) to the clone, the second's to its copy, and each
// takes its group's next moves, mixed half and half with the clone's rows.
func splitByContext(m *Model, seq Sequence, path []int, rng *rand.Rand) (*Model, error) {
	n, na := m.N(), m.NumActions
	type ctx struct{ a, s int }
	// arrivals[c][in] = counts of the next (action, state) after arriving at c from in.
	arrivals := make([]map[ctx]map[ctx]float64, n)
	for t := 1; t+1 < len(path); t++ {
		c := path[t]
		if arrivals[c] == nil {
			arrivals[c] = map[ctx]map[ctx]float64{}
		}
		in := ctx{seq.Actions[t-1], path[t-1]}
		if arrivals[c][in] == nil {
			arrivals[c][in] = map[ctx]float64{}
		}
		arrivals[c][in][ctx{seq.Actions[t], path[t+1]}]++
	}
	// group[c][in]: 0 or 1.
	group := make([]map[ctx]int, n)
	outs := make([][2]map[ctx]float64, n)
	for c := range n {
		ar := arrivals[c]
		if len(ar) < 2 {
			continue
		}
		ins := make([]ctx, 0, len(ar))
		for in := range ar {
			ins = append(ins, in)
		}
		slices.SortFunc(ins, func(x, y ctx) int {
			if x.a != y.a {
				return x.a - y.a
			}
			return x.s - y.s
		})
		norm := func(h map[ctx]float64) (map[ctx]float64, float64) {
			var tot float64
			for _, v := range h {
				tot += v
			}
			out := make(map[ctx]float64, len(h))
			for k, v := range h {
				out[k] = v / tot
			}
			return out, tot
		}
		dist := func(x, y map[ctx]float64) float64 { // total variation
			var d float64
			for k, v := range x {
				d += math.Abs(v - y[k])
			}
			for k, v := range y {
				if _, ok := x[k]; !ok {
					d += v
				}
			}
			return d / 2
		}
		rows := make([]map[ctx]float64, len(ins))
		wts := make([]float64, len(ins))
		for i, in := range ins {
			rows[i], wts[i] = norm(ar[in])
		}
		// seeds: the heaviest arrival and the arrival (of weight ≥ 5) farthest from it
		a := 0
		for i := range ins {
			if wts[i] > wts[a] {
				a = i
			}
		}
		b, far := -1, 0.0
		for i := range ins {
			if d := dist(rows[i], rows[a]); wts[i] >= 5 && d > far {
				b, far = i, d
			}
		}
		if b < 0 {
			continue
		}
		cent := [2]map[ctx]float64{rows[a], rows[b]}
		g := make([]int, len(ins))
		for range 10 {
			for i := range ins {
				g[i] = 0
				if dist(rows[i], cent[1]) < dist(rows[i], cent[0]) {
					g[i] = 1
				}
			}
			var sums [2]map[ctx]float64
			for k := range sums {
				sums[k] = map[ctx]float64{}
			}
			for i, in := range ins {
				for o, v := range ar[in] {
					sums[g[i]][o] += v
				}
			}
			if len(sums[0]) == 0 || len(sums[1]) == 0 {
				break
			}
			cent[0], _ = norm(sums[0])
			cent[1], _ = norm(sums[1])
		}
		group[c] = map[ctx]int{}
		for i, in := range ins {
			group[c][in] = g[i]
		}
		outs[c] = cent
	}
	d := m.Clone()
	// copies: SplitSome's layout, then overwrite the shares and rows where grouped.
	rngCopy := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	split, err := SplitSome(d, nil, 0.1, rngCopy)
	if err != nil {
		return nil, err
	}
	// map old state -> (new index of the clone, new index of its copy)
	newOf := make([]int, n)
	copyOf := make([]int, n)
	for k := range m.K() {
		f0, c0 := m.FirstState(k), m.Clones[k]
		f1 := split.FirstState(k)
		for j := range c0 {
			newOf[f0+j] = f1 + j
			copyOf[f0+j] = f1 + c0 + j
		}
	}
	nn := split.N()
	for c := range n {
		if group[c] == nil {
			continue
		}
		ci, cu := newOf[c], copyOf[c]
		for in, g := range group[c] {
			for _, src := range []int{newOf[in.s], copyOf[in.s]} { // the arrival's source clone and its copy
				row := split.ThetaLogits[(in.a*nn+src)*nn : (in.a*nn+src+1)*nn]
				if math.IsInf(row[ci], -1) && math.IsInf(row[cu], -1) {
					continue
				}
				tot := logAdd(row[ci], row[cu])
				w := 0.9
				if g == 1 {
					w = 0.1
				}
				row[ci] = tot + math.Log(w)
				row[cu] = tot + math.Log1p(-w)
			}
		}
		for k, st := range [2]int{ci, cu} {
			for a := range na {
				row := split.ThetaLogits[(a*nn+st)*nn : (a*nn+st+1)*nn]
				// the clone's own row as probabilities, mixed with the group's moves
				lz := logSumExp(row)
				var gtot float64
				for o, v := range outs[c][k] {
					if o.a == a {
						gtot += v
					}
				}
				if gtot == 0 {
					continue
				}
				p := make([]float64, nn)
				for j, v := range row {
					p[j] = 0.5 * math.Exp(v-lz)
				}
				for o, v := range outs[c][k] {
					if o.a == a {
						// the next state o.s and, alike, its copy
						p[newOf[o.s]] += 0.25 * v / gtot
						p[copyOf[o.s]] += 0.25 * v / gtot
					}
				}
				for j := range row {
					if math.IsInf(row[j], -1) {
						continue // keep the model's zeros (other tokens' blocks stay as they were)
					}
					row[j] = math.Log(p[j])
				}
			}
		}
	}
	return split, nil
}

func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// TestContextSplitStudy is a measurement, not a check (skipped unless CTXSPLIT is
// set): BenchmarkEMRound's round, from its map before the last split, split by
// SplitAll (BenchmarkEMRound's start) and by splitByContext on the walk's Viterbi
// path through the confusion matrix; each trained by today's round. It prints the
// E-steps, seconds, CPU-seconds, −ℓ/T and the decoding's purities.
//
//	CTXSPLIT=1 go test -tags study ./pkg/chmm -run TestContextSplitStudy -v -timeout 2h
func TestContextSplitStudy(t *testing.T) {
	if os.Getenv("CTXSPLIT") == "" {
		t.Skip("a measurement: set CTXSPLIT")
	}
	prob := newRoundProblem(t, 300000)
	seq, conf, m, m0 := prob.seq, prob.conf, prob.m, prob.before
	path, _, err := Decode(m0, Confused{Tokens: seq.Obs, C: conf}, seq.Actions)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := splitByContext(m0, seq, path, rand.New(rand.NewPCG(1, 0x5b1e)))
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Validate(); err != nil {
		t.Fatal(err)
	}
	workers := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		name string
		m    *Model
	}{{"context", mc}, {"random", m}} {
		mm := c.m.Clone()
		cfg := EMConfig{MaxIters: 1000, Tol: -1, Pseudocount: 2e-3, FixedPi: true, Confusion: conf,
			LearnConfusion: true, ConfusionBeam: 1e-4, Workers: workers,
			Segments: workers, Accelerate: true, StopGain: DefaultStopGain}
		cpu0, w0 := cpuSeconds(), time.Now()
		h, err := TrainEM(mm, []Sequence{seq}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		secs, cpu := time.Since(w0).Seconds(), cpuSeconds()-cpu0
		for i, ll := range h.LogLik {
			if i < 5 || (i < 100 && i%10 == 9) || i%50 == 49 || i == len(h.LogLik)-1 {
				fmt.Printf("  %s E-step %d: −ℓ/T %.6f\n", c.name, i+1, -ll)
			}
		}
		lls, err := ConfusedLogLikelihoods(mm, []Sequence{seq}, h.Confusion, 0)
		if err != nil {
			t.Fatal(err)
		}
		sp, ps := prob.purities(t, mm, h.Confusion)
		fmt.Printf("%s: %d states, %d E-steps; %.0f s, %.0f CPU-s; −ℓ/T-µnats %.0f; state→place %.4f, place→state %.4f\n",
			c.name, mm.N(), len(h.LogLik), secs, cpu, -1e6*lls[0]/float64(len(seq.Obs)), sp, ps)
	}
}
