package figures

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func TestPathGraph(t *testing.T) {
	// Transitions: 0→1, 1→0, 0→1, 1→2, 2→2 (self, not counted), 2→3.
	states := []int{0, 1, 0, 1, 2, 2, 3}
	for _, tc := range []struct {
		name     string
		minCount float64
		nodes    []int
		edges    [][2]int
		weight   []float64
	}{
		// {0,1} is traversed 3 times, {1,2} and {2,3} once; visits 2, 2, 2, 1.
		{"all", 0, []int{0, 1, 2, 3}, [][2]int{{0, 1}, {1, 2}, {2, 3}}, []float64{3, 1, 1}},
		{"cutoff 1", 1, []int{0, 1, 2}, [][2]int{{0, 1}}, []float64{3}},
		{"cutoff 3", 3, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := PathGraph(states, 5, tc.minCount)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.Nodes, tc.nodes) || !reflect.DeepEqual(g.Edges, tc.edges) || !reflect.DeepEqual(g.Weight, tc.weight) {
				t.Errorf("PathGraph = %+v; want nodes %v edges %v weights %v", g, tc.nodes, tc.edges, tc.weight)
			}
		})
	}
	if _, err := PathGraph([]int{0, 5}, 5, 0); err == nil {
		t.Error("state out of range: no error")
	}
}

func TestTransitionGraph(t *testing.T) {
	// A = 2, N = 3; T[a][i][j].
	trans := []float64{
		// a = 0
		0.1, 0.9, 0,
		0, 0.5, 0.5,
		0, 0, 1,
		// a = 1
		1, 0, 0,
		0.05, 0.95, 0,
		0.3, 0, 0.7,
	}
	for _, tc := range []struct {
		eta    float64
		nodes  []int
		edges  [][2]int
		weight []float64
	}{
		// max over a and both directions: {0,1}: 0.9, {0,2}: 0.3, {1,2}: 0.5.
		{0.2, []int{0, 1, 2}, [][2]int{{0, 1}, {0, 2}, {1, 2}}, []float64{0.9, 0.3, 0.5}},
		{0.4, []int{0, 1, 2}, [][2]int{{0, 1}, {1, 2}}, []float64{0.9, 0.5}},
		{0.2, []int{2, 0, 0}, [][2]int{{0, 2}}, []float64{0.3}},
	} {
		g, err := TransitionGraph(trans, 2, 3, tc.nodes, tc.eta)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g.Edges, tc.edges) || !reflect.DeepEqual(g.Weight, tc.weight) {
			t.Errorf("η=%g nodes %v: edges %v weights %v; want %v %v", tc.eta, tc.nodes, g.Edges, g.Weight, tc.edges, tc.weight)
		}
	}
	if _, err := TransitionGraph(trans[:5], 2, 3, []int{0}, 0.1); err == nil {
		t.Error("short transitions: no error")
	}
	if _, err := TransitionGraph(trans, 2, 3, []int{3}, 0.1); err == nil {
		t.Error("node out of range: no error")
	}
}

// gridGraph returns the r×c grid graph with node ids permuted by perm (perm[cell]
// is the node of cell row*c+col) and the true cell position of each node.
func gridGraph(r, c int, perm []int) (edges [][2]int, pos [][2]float64) {
	pos = make([][2]float64, r*c)
	for row := range r {
		for col := range c {
			v := perm[row*c+col]
			pos[v] = [2]float64{float64(col), -float64(row)}
			if col+1 < c {
				edges = append(edges, [2]int{v, perm[row*c+col+1]})
			}
			if row+1 < r {
				edges = append(edges, [2]int{v, perm[(row+1)*c+col]})
			}
		}
	}
	return edges, pos
}

// rmsAfterProcrustes is the RMS distance between the best similarity image of xy
// and want, relative to the edge length 1 of want.
func rmsAfterProcrustes(xy, want [][2]float64) float64 {
	f := Procrustes(xy, want)
	var s float64
	for i := range xy {
		p := f.Apply(xy[i])
		s += (p[0]-want[i][0])*(p[0]-want[i][0]) + (p[1]-want[i][1])*(p[1]-want[i][1])
	}
	return math.Sqrt(s / float64(len(xy)))
}

// TestLayoutGridIsGrid lays out grid graphs from their edges alone (node ids
// shuffled) and checks that the result is the grid up to a similarity transform
// (rotation, reflection, scale, shift): the RMS misfit after the best such
// transform is below a tenth of an edge.
func TestLayoutGridIsGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range [][2]int{{3, 3}, {4, 4}, {3, 5}, {6, 6}} {
		n := size[0] * size[1]
		edges, want := gridGraph(size[0], size[1], rng.Perm(n))
		xy, err := LayoutGraph(n, edges, nil)
		if err != nil {
			t.Fatal(err)
		}
		rms := rmsAfterProcrustes(xy, want)
		t.Logf("%d×%d grid: RMS misfit %.4f", size[0], size[1], rms)
		if rms > 0.1 {
			t.Errorf("%d×%d grid: RMS misfit %.3f edge lengths after the best similarity transform, want < 0.1", size[0], size[1], rms)
		}
		// With targets, the drawing lands on the grid itself (no transform left).
		xy, err = LayoutGraph(n, edges, want)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for i := range xy {
			s += math.Hypot(xy[i][0]-want[i][0], xy[i][1]-want[i][1])
		}
		if mean := s / float64(n); mean > 0.1 {
			t.Errorf("%d×%d grid with targets: mean distance to the cells %.3f, want < 0.1", size[0], size[1], mean)
		}
	}
}

// TestLayoutComponents checks disconnected graphs: every node gets a finite
// position, nodes are at least minSeparation apart, and components without
// targets do not overlap the placed ones.
func TestLayoutComponents(t *testing.T) {
	// A 3×3 grid (nodes 0..8), a path 9-10-11, an isolated node 12, a
	// duplicate-like pair 13, 14 with no edges.
	edges, pos := gridGraph(3, 3, []int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	edges = append(edges, [2]int{9, 10}, [2]int{10, 11})
	target := make([][2]float64, 15)
	for i := range target {
		target[i] = [2]float64{math.NaN(), math.NaN()}
	}
	copy(target, pos)
	for _, tg := range [][][2]float64{nil, target} {
		xy, err := LayoutGraph(15, edges, tg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range xy {
			if math.IsNaN(xy[i][0]) || math.IsInf(xy[i][0], 0) || math.IsNaN(xy[i][1]) || math.IsInf(xy[i][1], 0) {
				t.Fatalf("node %d at %v", i, xy[i])
			}
			for j := i + 1; j < len(xy); j++ {
				if d := math.Hypot(xy[i][0]-xy[j][0], xy[i][1]-xy[j][1]); d < minSeparation*0.95 {
					t.Errorf("targets %v: nodes %d and %d only %.3f apart", tg != nil, i, j, d)
				}
			}
		}
		// The path is drawn straight: its middle node halfway between its ends.
		mid := [2]float64{(xy[9][0] + xy[11][0]) / 2, (xy[9][1] + xy[11][1]) / 2}
		if math.Hypot(mid[0]-xy[10][0], mid[1]-xy[10][1]) > 0.05 {
			t.Errorf("path 9-10-11 not straight: %v %v %v", xy[9], xy[10], xy[11])
		}
		// Packed components sit below the grid.
		gridMinY := math.Inf(1)
		for v := range 9 {
			gridMinY = min(gridMinY, xy[v][1])
		}
		for v := 9; v < 15; v++ {
			if xy[v][1] >= gridMinY {
				t.Errorf("targets %v: node %d at y=%.2f not below the grid (min y %.2f)", tg != nil, v, xy[v][1], gridMinY)
			}
		}
	}
	if _, err := LayoutGraph(2, [][2]int{{0, 2}}, nil); err == nil {
		t.Error("edge out of range: no error")
	}
	if _, err := LayoutGraph(2, nil, make([][2]float64, 3)); err == nil {
		t.Error("wrong target count: no error")
	}
}

// TestProcrustes recovers known similarity transforms exactly.
func TestProcrustes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		want := Similarity{Reflect: rng.IntN(2) == 1, Angle: (rng.Float64()*2 - 1) * math.Pi, Scale: 0.2 + 3*rng.Float64(),
			Shift: [2]float64{rng.NormFloat64(), rng.NormFloat64()}}
		src := make([][2]float64, 6)
		dst := make([][2]float64, 6)
		for i := range src {
			src[i] = [2]float64{rng.NormFloat64(), rng.NormFloat64()}
			dst[i] = want.Apply(src[i])
		}
		got := Procrustes(src, dst)
		for i := range src {
			p := got.Apply(src[i])
			if math.Hypot(p[0]-dst[i][0], p[1]-dst[i][1]) > 1e-9 {
				t.Fatalf("transform %+v recovered as %+v: point %d off by %v", want, got, i, math.Hypot(p[0]-dst[i][0], p[1]-dst[i][1]))
			}
		}
		if got.Reflect != want.Reflect || math.Abs(got.Scale-want.Scale) > 1e-9 {
			t.Errorf("transform %+v recovered as %+v", want, got)
		}
	}
	// One point: a pure translation.
	f := Procrustes([][2]float64{{1, 2}}, [][2]float64{{4, 6}})
	if p := f.Apply([2]float64{1, 2}); p != [2]float64{4, 6} || f.Scale != 1 {
		t.Errorf("single point: %+v maps to %v", f, p)
	}
}

// TestShortestPaths: hop distances on a path 0–1–2 with a duplicate edge and a
// self-loop, and an isolated node 3 (hand values).
func TestShortestPaths(t *testing.T) {
	d := shortestPaths(4, [][2]int{{0, 1}, {1, 2}, {2, 1}, {2, 2}})
	inf := math.Inf(1)
	want := [][]float64{{0, 1, 2, inf}, {1, 0, 1, inf}, {2, 1, 0, inf}, {inf, inf, inf, 0}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("shortestPaths = %v, want %v", d, want)
	}
}

// TestLayoutGraphDeterministic: the layout of a symmetric graph (three_rooms' ring of
// cliques, whose Isomap eigenvectors are degenerate) is the same on every call;
// with gonum's map-ordered Isomap it varied from call to call.
func TestLayoutGraphDeterministic(t *testing.T) {
	e, err := gridworld.Named("three_rooms")
	if err != nil {
		t.Fatal(err)
	}
	first, err := LayoutGraph(e.NumPlaces(), e.Edges(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, err := LayoutGraph(e.NumPlaces(), e.Edges(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range first {
			if again[i] != first[i] {
				t.Fatalf("node %d at %v, then at %v", i, first[i], again[i])
			}
		}
	}
}
