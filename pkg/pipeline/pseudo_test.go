package pipeline

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestProtoDistance: frames (0,0), (2,0) and (4,0), (4,2): means (1,0) and (4,1),
// spreads E‖x − μ‖² = 1 each, so the distance is (3² + 1²) / (1/2 + 1/2) = 10.
func TestProtoDistance(t *testing.T) {
	group := func(frames ...[]float64) *protoGroup {
		g := &protoGroup{sum: make([]float64, 2)}
		for _, x := range frames {
			g.n++
			for j, v := range x {
				g.sum[j] += v
				g.sq += v * v
			}
		}
		return g
	}
	a, b := group([]float64{0, 0}, []float64{2, 0}), group([]float64{4, 0}, []float64{4, 2})
	if s := a.spread(); math.Abs(s-1) > 1e-12 {
		t.Errorf("spread %g, want 1", s)
	}
	if d := protoDistance(a, b); math.Abs(d-10) > 1e-12 {
		t.Errorf("distance %g, want 10", d)
	}
	if d := protoDistance(a, a); d != 0 {
		t.Errorf("distance to itself %g, want 0", d)
	}
	// Frames without spread: equal means are at 0, others infinitely far.
	c, e := group([]float64{1, 1}), group([]float64{1, 2})
	if d := protoDistance(c, c); d != 0 {
		t.Errorf("no spread, same mean: %g", d)
	}
	if d := protoDistance(c, e); !math.IsInf(d, 1) {
		t.Errorf("no spread, other mean: %g", d)
	}
}

// TestPseudoClasses: 64-pixel images of three classes (each pixel its class's mean
// plus unit Gaussian noise, the means 1.5 apart in 8 pixels). States 0, 1 and 6 show
// class A, 2 and 3 class B, 4 class C; state 5 mixes A and B half and half; state 6
// has 8 frames, state 7 one. The groups are {0, 1, 6}, {2, 3}, {4}: state 6 is within
// the bar of A, state 5 of nothing (left out), and state 7 has too few frames.
func TestPseudoClasses(t *testing.T) {
	const pixels = 64
	rng := rand.New(rand.NewPCG(1, 2))
	mean := func(c int) []float64 {
		m := make([]float64, pixels)
		for j := range 8 {
			m[c*8+j] = 1.5
		}
		return m
	}
	var states []int
	var images [][]float32
	add := func(state, class, n int) {
		for range n {
			x := make([]float32, pixels)
			for j, m := range mean(class) {
				x[j] = float32(m + rng.NormFloat64())
			}
			states = append(states, state)
			images = append(images, x)
		}
	}
	add(0, 0, 400)
	add(1, 0, 300)
	add(2, 1, 500)
	add(3, 1, 350)
	add(4, 2, 450)
	add(5, 0, 30)
	add(5, 1, 30)
	add(6, 0, 8)
	add(7, 2, 1)
	pc, err := pseudoClasses(states, 9, pixels, func(i int, dst []float32) { copy(dst, images[i]) }, 5, RefineBar)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{2, 3}, {0, 1, 6}, {4}} // by seeded frames: 850, 700, 450
	if len(pc.Groups) != len(want) {
		t.Fatalf("groups %v, want %v", pc.Groups, want)
	}
	for k := range want {
		if !slices.Equal(pc.Groups[k], want[k]) {
			t.Errorf("group %d: states %v, want %v", k, pc.Groups[k], want[k])
		}
	}
	if !slices.Equal(pc.Frames, []int{850, 708, 450}) {
		t.Errorf("frames %v, want [850 708 450]", pc.Frames)
	}
	// Visits of the states 0..7: 400 300 500 350 450 60 8 1; median 350 → seeded from 175.
	if pc.Seeded != 175 || !slices.Equal(pc.LeftOut, []int{5, 7}) || pc.Unlabelled != 61 {
		t.Errorf("seeded %d, left out %v (%d frames), want 175, [5 7] (61)", pc.Seeded, pc.LeftOut, pc.Unlabelled)
	}
	if !(pc.Merged > 0 && pc.Merged < RefineBar && pc.Apart > 100) {
		t.Errorf("merged up to %g, apart from %g: want below %g and far above it", pc.Merged, pc.Apart, RefineBar)
	}
	group := map[int]int{0: 1, 1: 1, 6: 1, 2: 0, 3: 0, 4: 2, 5: -1, 7: -1}
	for i, s := range states {
		if pc.Label[i] != group[s] {
			t.Fatalf("frame %d at state %d: label %d, want %d", i, s, pc.Label[i], group[s])
		}
	}
	// A bar above the classes' distances merges everything.
	if all, err := pseudoClasses(states, 9, pixels, func(i int, dst []float32) { copy(dst, images[i]) }, 5, 1e9); err != nil || len(all.Groups) != 1 {
		t.Errorf("bar 1e9: %v groups, %v", all, err)
	}
	// Bad input.
	if _, err := pseudoClasses([]int{0, 9}, 9, pixels, func(int, []float32) {}, 5, RefineBar); err == nil {
		t.Error("state 9 of 9 accepted")
	}
	if _, err := pseudoClasses(states, 9, pixels, func(int, []float32) {}, 1, RefineBar); err == nil {
		t.Error("minVisits 1 accepted")
	}
}

// TestNNLS: nnls against brute force on random problems min ‖Aw − b‖², w ≥ 0: every
// subset of the coordinates solved unconstrained by gonum's least squares (mat.Dense
// Solve on A's columns), the best feasible one kept. The objectives agree to 1e-9 of
// ‖b‖² and the weights to 1e-6.
func TestNNLS(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		k, rows := 1+trial%5, 8
		a := mat.NewDense(rows, k, nil)
		b := mat.NewVecDense(rows, nil)
		for i := range rows {
			for j := range k {
				a.Set(i, j, rng.NormFloat64())
			}
			b.SetVec(i, rng.NormFloat64())
		}
		if trial%3 == 0 { // b a nonnegative mixture of A's columns plus a little noise
			for i := range rows {
				v := 0.0
				for j := range k {
					v += float64(j+1) / float64(k) * a.At(i, j)
				}
				b.SetVec(i, v+0.01*rng.NormFloat64())
			}
		}
		objective := func(w []float64) float64 {
			r := mat.NewVecDense(rows, nil)
			r.MulVec(a, mat.NewVecDense(k, slices.Clone(w)))
			r.SubVec(r, b)
			return mat.Dot(r, r)
		}
		bestW, bestF := make([]float64, k), mat.Dot(b, b)
		for set := 1; set < 1<<k; set++ {
			var cols []int
			for j := range k {
				if set&(1<<j) != 0 {
					cols = append(cols, j)
				}
			}
			sub := mat.NewDense(rows, len(cols), nil)
			for q, j := range cols {
				for i := range rows {
					sub.Set(i, q, a.At(i, j))
				}
			}
			var x mat.VecDense
			if err := x.SolveVec(sub, b); err != nil {
				continue
			}
			w := make([]float64, k)
			ok := true
			for q, j := range cols {
				if w[j] = x.AtVec(q); w[j] < 0 {
					ok = false
				}
			}
			if f := objective(w); ok && f < bestF {
				bestW, bestF = w, f
			}
		}
		gram := make([][]float64, k)
		c := make([]float64, k)
		for i := range k {
			gram[i] = make([]float64, k)
			for j := range k {
				gram[i][j] = mat.Dot(a.ColView(i), a.ColView(j))
			}
			c[i] = mat.Dot(a.ColView(i), b)
		}
		w := nnls(gram, c)
		for j, v := range w {
			if v < 0 || math.Abs(v-bestW[j]) > 1e-6 {
				t.Fatalf("trial %d: nnls %v, brute force %v", trial, w, bestW)
			}
		}
		if f := objective(w); math.Abs(f-bestF) > 1e-9*mat.Dot(b, b) {
			t.Fatalf("trial %d: objective %g, brute force %g", trial, f, bestF)
		}
	}
}

// TestPseudoClassesSelectionAndMixtures: 64-pixel images as in TestPseudoClasses
// (spread 64, classes' means 1.5 apart in 8 pixels: protoEffect 36/64). State 1 shows
// class A with its mean 0.2 off in 8 pixels (a token's selection: protoEffect 0.005,
// but protoDistance 5 at 2000 frames each), so it joins A by RefineSameEffect alone.
// State 4 shows A and B half and half with as many frames as a place: a mixture of the
// larger groups, dropped and left out.
func TestPseudoClassesSelectionAndMixtures(t *testing.T) {
	const pixels = 64
	rng := rand.New(rand.NewPCG(5, 6))
	var states []int
	var images [][]float32
	add := func(state, class, n int, shift float64) {
		for range n {
			x := make([]float32, pixels)
			for j := range x {
				m := 0.0
				if j/8 == class {
					m = 1.5
				}
				if class == 0 && j >= 32 && j < 40 {
					m += shift
				}
				x[j] = float32(m + rng.NormFloat64())
			}
			states = append(states, state)
			images = append(images, x)
		}
	}
	add(0, 0, 2000, 0)
	add(1, 0, 2000, 0.2)
	add(2, 1, 1500, 0)
	add(3, 2, 700, 0)
	add(4, 0, 300, 0)
	add(4, 1, 300, 0)
	add(5, 1, 500, 0)
	add(6, 1, 500, 0)
	add(7, 2, 500, 0)
	image := func(i int, dst []float32) { copy(dst, images[i]) }
	group := func(s int) *protoGroup {
		g := &protoGroup{states: []int{s}, sum: make([]float64, pixels)}
		for i, st := range states {
			if st == s {
				g.n++
				for j, v := range images[i] {
					g.sum[j] += float64(v)
					g.sq += float64(v) * float64(v)
				}
			}
		}
		return g
	}
	if d, e := protoDistance(group(0), group(1)), protoEffect(group(0), group(1)); d < RefineBar || e > RefineSameEffect {
		t.Fatalf("states 0 and 1: protoDistance %.2f, protoEffect %.4f; the test wants them apart by the first and one by the second", d, e)
	}
	pc, err := pseudoClasses(states, 8, pixels, image, 5, RefineBar)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 1}, {2, 5, 6}, {3, 7}}
	if !reflect.DeepEqual(pc.Groups, want) || !slices.Equal(pc.Frames, []int{4000, 2500, 1200}) {
		t.Errorf("groups %v with frames %v, want %v with [4000 2500 1200]", pc.Groups, pc.Frames, want)
	}
	if pc.Mixtures != 1 || !slices.Equal(pc.LeftOut, []int{4}) || pc.Unlabelled != 600 {
		t.Errorf("%d mixture(s), left out %v (%d frames), want 1, [4] (600)", pc.Mixtures, pc.LeftOut, pc.Unlabelled)
	}
	if !(pc.Mixed > 0 && pc.Mixed < RefineMixBar && pc.Unmixed > RefineMixBar && !math.IsInf(pc.Unmixed, 0)) {
		t.Errorf("mixture noise dropped up to %g, kept from %g: want RefineMixBar between", pc.Mixed, pc.Unmixed)
	}
	if !(pc.Merged < RefineBar && pc.Apart > 100) {
		t.Errorf("merged up to %g, apart from %g", pc.Merged, pc.Apart)
	}
	// The effect of states 0 and 1 (0.2² · 8 / 64 = 0.005, up to noise); the classes'
	// means are 1.5² · 16 / 64 = 0.56 apart.
	if math.Abs(pc.SameEffect-0.005) > 0.003 || math.Abs(pc.ApartEffect-0.5625) > 0.05 {
		t.Errorf("effect merged %g, apart %g: want about 0.005 and 0.56", pc.SameEffect, pc.ApartEffect)
	}
	if z := mixtureNoise(group(4), []*protoGroup{group(0), group(2)}); z > 5 {
		t.Errorf("state 4's mixture noise %.2f over A and B, want about 1", z)
	}
	// No mixture of A and B reaches C's 8 pixels at 1.5: the residual is 8·1.5² = 18
	// over a noise of 64/700.
	if z := mixtureNoise(group(3), []*protoGroup{group(0), group(2)}); math.Abs(z/(18*700/64.0)-1) > 0.1 {
		t.Errorf("class C's mixture noise %.2f over A and B, want about %.1f", z, 18*700/64.0)
	}
}
