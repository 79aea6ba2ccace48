package pipeline

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
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
