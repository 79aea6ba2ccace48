package figures

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/graph/layout"
	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/mat"
)

// CloneGraph is a recovered transition graph over clone states: the nodes are
// state ids s of the model, the edges undirected pairs of them.
type CloneGraph struct {
	Nodes  []int     // state ids, increasing
	Edges  [][2]int  // state-id pairs (a < b), sorted
	Weight []float64 // per edge: traversal count (PathGraph) or max_a T (TransitionGraph)
}

// PathGraph reads the recovered graph off a decoded path (the clone-level analogue
// of the paper's Viterbi-path map, Sec. 5.3): it counts the transitions s*_t → s*_{t+1}
// with s*_t ≠ s*_{t+1}, both directions of a pair adding up, and keeps the pairs
// traversed more than minCount times. The nodes are the states visited more than
// minCount times (rarer ones are decoding noise) plus the ends of kept edges.
// Weight holds the traversal counts.
func PathGraph(states []int, numStates int, minCount float64) (CloneGraph, error) {
	if numStates < 1 {
		return CloneGraph{}, fmt.Errorf("figures.PathGraph: numStates %d must be ≥ 1", numStates)
	}
	visits := make([]int, numStates)
	pairs := map[[2]int]int{}
	for t, s := range states {
		if s < 0 || s >= numStates {
			return CloneGraph{}, fmt.Errorf("figures.PathGraph: states[%d] = %d outside [0, %d)", t, s, numStates)
		}
		visits[s]++
		if t+1 < len(states) && states[t+1] != s {
			a, b := s, states[t+1]
			if a > b {
				a, b = b, a
			}
			pairs[[2]int{a, b}]++
		}
	}
	keep := make([]bool, numStates)
	for s, n := range visits {
		keep[s] = float64(n) > minCount
	}
	var g CloneGraph
	for p, n := range pairs {
		if float64(n) > minCount {
			g.Edges = append(g.Edges, p)
			keep[p[0]], keep[p[1]] = true, true
		}
	}
	sortEdges(g.Edges)
	for _, e := range g.Edges {
		g.Weight = append(g.Weight, float64(pairs[e]))
	}
	for s, k := range keep {
		if k {
			g.Nodes = append(g.Nodes, s)
		}
	}
	return g, nil
}

// TransitionGraph reads the recovered graph off the learned transitions: over the
// given nodes (for example the states a held-out path visits), the undirected pairs
// i ≠ j with max_a max(T[a,i,j], T[a,j,i]) > eta. trans is T flat, [A, N, N]
// row-major (chmm.Model.Transitions). Weight holds that maximum.
func TransitionGraph(trans []float64, numActions, numStates int, nodes []int, eta float64) (CloneGraph, error) {
	if numActions < 1 || numStates < 1 || len(trans) != numActions*numStates*numStates {
		return CloneGraph{}, fmt.Errorf("figures.TransitionGraph: %d transition values for A=%d, N=%d (want A·N·N)", len(trans), numActions, numStates)
	}
	g := CloneGraph{Nodes: slices.Clone(nodes)}
	slices.Sort(g.Nodes)
	g.Nodes = slices.Compact(g.Nodes)
	for _, s := range g.Nodes {
		if s < 0 || s >= numStates {
			return CloneGraph{}, fmt.Errorf("figures.TransitionGraph: node %d outside [0, %d)", s, numStates)
		}
	}
	for x, i := range g.Nodes {
		for _, j := range g.Nodes[x+1:] {
			w := 0.0
			for a := range numActions {
				w = max(w, trans[(a*numStates+i)*numStates+j], trans[(a*numStates+j)*numStates+i])
			}
			if w > eta {
				g.Edges = append(g.Edges, [2]int{i, j})
				g.Weight = append(g.Weight, w)
			}
		}
	}
	return g, nil
}

// sortEdges sorts pairs lexicographically.
func sortEdges(e [][2]int) {
	sort.Slice(e, func(i, j int) bool {
		if e[i][0] != e[j][0] {
			return e[i][0] < e[j][0]
		}
		return e[i][1] < e[j][1]
	})
}

// components returns the connected components of the graph on nodes 0..n-1, each
// sorted, largest first (ties: smallest first node).
func components(n int, edges [][2]int) [][]int {
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, e := range edges {
		a, b := find(e[0]), find(e[1])
		if a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	byRoot := map[int][]int{}
	for i := range n {
		r := find(i)
		byRoot[r] = append(byRoot[r], i)
	}
	out := make([][]int, 0, len(byRoot))
	for _, c := range byRoot {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i][0] < out[j][0]
	})
	return out
}

// LayoutGraph places the nodes 0..n-1 of an undirected graph in the plane from
// its connectivity alone. Each connected component is laid out by Isomap (Torgerson
// multidimensional scaling of the shortest-path distances, gonum's
// layout.IsomapR2), which draws grid graphs as grids; components Isomap cannot
// embed in two dimensions fall back to a force-directed layout (layout.EadesR2,
// fixed seed). The layout is then refined by stress majorization on the same
// distances (stressMajorize), which keeps grids square and pulls apart the dense
// clusters classical scaling flattens (rooms, duplicate clones). Each component is
// scaled to a median edge length of 1.
//
// target, if not nil, holds a reference position per node (NaN: none), for
// example the cell of the node's assigned place. Each component is then moved by
// the similarity transform (rotation or reflection, uniform scale, translation)
// that best matches its reference positions (orthogonal Procrustes), so the drawing
// has the orientation of the true map; its shape still comes from the learned
// connectivity alone. Components without targets, or without a target given,
// are packed side by side below the largest one.
//
// Finally nodes closer than minSeparation (0.66 edge lengths) are pushed apart so
// that duplicates stay visible. Shapes: edges [E][2] node indices; result [n][2].
func LayoutGraph(n int, edges [][2]int, target [][2]float64) ([][2]float64, error) {
	if n < 0 {
		return nil, fmt.Errorf("figures.LayoutGraph: n = %d", n)
	}
	if target != nil && len(target) != n {
		return nil, fmt.Errorf("figures.LayoutGraph: %d targets for %d nodes", len(target), n)
	}
	for i, e := range edges {
		if e[0] < 0 || e[0] >= n || e[1] < 0 || e[1] >= n {
			return nil, fmt.Errorf("figures.LayoutGraph: edge %d (%d, %d) outside [0, %d)", i, e[0], e[1], n)
		}
	}
	xy := make([][2]float64, n)
	comps := components(n, edges)
	placed := make([]bool, len(comps))
	for ci, comp := range comps {
		local := layoutComponent(comp, edges)
		for k, v := range comp {
			xy[v] = local[k]
		}
		if target != nil {
			placed[ci] = alignComponent(xy, comp, target)
		}
	}
	packComponents(xy, comps, placed)
	separate(xy, minSeparation)
	return xy, nil
}

// minSeparation is the smallest distance LayoutGraph leaves between two nodes, in
// units of the median edge length: discs of radius 0.27 do not overlap (image
// nodes are sized from the layout instead: imageNodeRadius).
const minSeparation = 0.66

// layoutComponent lays out one component (node ids comp, sorted) and returns the
// coordinates in comp's order, scaled to a median edge length of 1 and centred.
func layoutComponent(comp []int, edges [][2]int) [][2]float64 {
	m := len(comp)
	out := make([][2]float64, m)
	if m == 1 {
		return out
	}
	index := make(map[int]int, m)
	for k, v := range comp {
		index[v] = k
	}
	g := simple.NewUndirectedGraph()
	for k := range comp {
		g.AddNode(simple.Node(k))
	}
	var local [][2]int
	for _, e := range edges {
		a, okA := index[e[0]]
		b, okB := index[e[1]]
		if okA && okB && a != b && !g.HasEdgeBetween(int64(a), int64(b)) {
			g.SetEdge(simple.Edge{F: simple.Node(a), T: simple.Node(b)})
			local = append(local, [2]int{a, b})
		}
	}
	ok := false
	if m >= 3 {
		ok = isomap(out, shortestPaths(m, local))
		// A rank-deficient embedding (a path: every point on one line) is
		// valid for Isomap but draws edges on top of each other; the spread of
		// the second axis tells.
		if ok && spread(out, 1) < 1e-6*max(spread(out, 0), 1e-12) && !isPath(m, local) {
			ok = false
		}
	}
	if !ok {
		eades := layout.EadesR2{Repulsion: 1, Rate: 0.05, Updates: 200, Theta: 0.2, Src: rand.NewPCG(1, 2)}
		opt := layout.NewOptimizerR2(g, eades.Update)
		for opt.Update() {
		}
		for k := range m {
			v := opt.Coord2(int64(k))
			out[k] = [2]float64{v.X, v.Y}
		}
	}
	stressMajorize(out, local, 300)
	normalise(out, local)
	canonicalOrientation(out)
	return out
}

// canonicalOrientation rotates a centred layout so that its first node lies on the
// +x axis and reflects it so that the first node off that axis has y > 0. Isomap's
// embedding of a symmetric graph (three_rooms' ring) is fixed only up to a rotation,
// which varied from run to run with gonum's map order; the shape does not, so the
// drawing is now the same every time.
func canonicalOrientation(pts [][2]float64) {
	if len(pts) < 2 {
		return
	}
	a := math.Atan2(pts[0][1], pts[0][0])
	if math.Hypot(pts[0][0], pts[0][1]) < 1e-9 {
		return
	}
	c, sn := math.Cos(-a), math.Sin(-a)
	for i, p := range pts {
		pts[i] = [2]float64{c*p[0] - sn*p[1], sn*p[0] + c*p[1]}
	}
	for _, p := range pts[1:] {
		if math.Abs(p[1]) > 1e-6 {
			if p[1] < 0 {
				for i := range pts {
					pts[i][1] = -pts[i][1]
				}
			}
			return
		}
	}
}

// isomap sets pts to the classical scaling (Torgerson MDS) of the shortest-path
// distances d — Isomap, as gonum's layout.IsomapR2, but on a dense matrix in node
// order, so that the result does not depend on map iteration order (a symmetric
// graph's degenerate eigenvectors came out differently from run to run):
//
//	B = −½ J D² J,  J = I − 11ᵀ/m,  x_i = (√λ₁ v₁ᵢ, √λ₂ v₂ᵢ)
//
// with λ₁ ≥ λ₂ the two largest eigenvalues of B (a negative λ₂ counts as 0). It
// reports false when d is not finite or B has no positive eigenvalue.
func isomap(pts [][2]float64, d [][]float64) bool {
	m := len(pts)
	d2 := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			if math.IsInf(d[i][j], 0) || math.IsNaN(d[i][j]) {
				return false
			}
			d2.SetSym(i, j, d[i][j]*d[i][j])
		}
	}
	row := make([]float64, m)
	var all float64
	for i := range m {
		for j := range m {
			row[i] += d2.At(i, j)
		}
		all += row[i]
		row[i] /= float64(m)
	}
	all /= float64(m * m)
	b := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			b.SetSym(i, j, -0.5*(d2.At(i, j)-row[i]-row[j]+all))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(b, true) {
		return false
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	l1, l2 := vals[m-1], vals[m-2]
	if !(l1 > 0) {
		return false
	}
	s1, s2 := math.Sqrt(l1), math.Sqrt(max(l2, 0)) // a path: one axis (the caller checks)
	for i := range m {
		pts[i] = [2]float64{s1 * vecs.At(i, m-1), s2 * vecs.At(i, m-2)}
	}
	return true
}

// stressMajorize refines a layout pts of a connected graph by stress
// majorization (Gansner, Koren & North 2004): it lowers
//
//	stress(X) = Σ_{i<j} w_ij (|x_i − x_j| − d_ij)²,   w_ij = d_ij⁻²,
//
// with d_ij the shortest-path distance, by the localized update
//
//	x_i ← Σ_{j≠i} w_ij (x_j + d_ij (x_i − x_j)/|x_i − x_j|) / Σ_{j≠i} w_ij,
//
// sweeping the nodes in order until no node moves by more than 1e-4·(mean d) or
// after sweeps sweeps. Starting from Isomap (classical scaling of the same
// distances) it keeps grids square and separates dense clusters (rooms, cliques,
// duplicate clones) that classical scaling flattens. pts [m][2], edges [E][2]
// indices into pts.
func stressMajorize(pts [][2]float64, edges [][2]int, sweeps int) {
	m := len(pts)
	if m < 3 {
		return
	}
	d := shortestPaths(m, edges)
	// Start at the scale of the distances: scale pts so the mean drawn
	// distance matches the mean graph distance.
	var sumD, sumX float64
	for i := range m {
		for j := i + 1; j < m; j++ {
			sumD += d[i][j]
			sumX += math.Hypot(pts[i][0]-pts[j][0], pts[i][1]-pts[j][1])
		}
	}
	if sumX > 0 {
		for i := range pts {
			pts[i][0] *= sumD / sumX
			pts[i][1] *= sumD / sumX
		}
	}
	tol := 1e-4 * sumD / float64(m*(m-1)/2)
	for range sweeps {
		moved := 0.0
		for i := range m {
			var nx, ny, den float64
			for j := range m {
				if j == i || math.IsInf(d[i][j], 0) {
					continue
				}
				w := 1 / (d[i][j] * d[i][j])
				dx, dy := pts[i][0]-pts[j][0], pts[i][1]-pts[j][1]
				dist := math.Hypot(dx, dy)
				if dist < 1e-9 { // coincident: push along a direction fixed by the indices
					a := float64(i*7+j*13) * 0.61803398875 * 2 * math.Pi
					dx, dy, dist = math.Cos(a)*1e-3, math.Sin(a)*1e-3, 1e-3
				}
				nx += w * (pts[j][0] + d[i][j]*dx/dist)
				ny += w * (pts[j][1] + d[i][j]*dy/dist)
				den += w
			}
			if den == 0 {
				continue
			}
			nx, ny = nx/den, ny/den
			moved = max(moved, math.Hypot(nx-pts[i][0], ny-pts[i][1]))
			pts[i] = [2]float64{nx, ny}
		}
		if moved < tol {
			return
		}
	}
}

// shortestPaths returns the hop distances between all node pairs (gonum's all-pairs
// Dijkstra on the undirected graph, unit weights; +Inf between components). Shape [m][m].
func shortestPaths(m int, edges [][2]int) [][]float64 {
	g := simple.NewUndirectedGraph()
	for i := range m {
		g.AddNode(simple.Node(i))
	}
	for _, e := range edges {
		if e[0] != e[1] {
			g.SetEdge(g.NewEdge(simple.Node(e[0]), simple.Node(e[1])))
		}
	}
	all := path.DijkstraAllPaths(g)
	d := make([][]float64, m)
	for i := range m {
		d[i] = make([]float64, m)
		for j := range m {
			d[i][j] = all.Weight(int64(i), int64(j))
		}
	}
	return d
}

// isPath reports whether the graph on m nodes with these edges is a simple path
// (Isomap then rightly draws a straight line).
func isPath(m int, edges [][2]int) bool {
	if len(edges) != m-1 {
		return false
	}
	deg := make([]int, m)
	for _, e := range edges {
		deg[e[0]]++
		deg[e[1]]++
	}
	for _, d := range deg {
		if d > 2 {
			return false
		}
	}
	return true
}

// spread is the standard deviation of coordinate axis of pts.
func spread(pts [][2]float64, axis int) float64 {
	var s, s2 float64
	for _, p := range pts {
		s += p[axis]
		s2 += p[axis] * p[axis]
	}
	n := float64(len(pts))
	return math.Sqrt(max(s2/n-(s/n)*(s/n), 0))
}

// normalise centres pts and scales them to a median edge length of 1 (edges index
// pts); without edges, to a unit spread.
func normalise(pts [][2]float64, edges [][2]int) {
	var cx, cy float64
	for _, p := range pts {
		cx += p[0]
		cy += p[1]
	}
	cx /= float64(len(pts))
	cy /= float64(len(pts))
	var lens []float64
	for _, e := range edges {
		a, b := pts[e[0]], pts[e[1]]
		if d := math.Hypot(a[0]-b[0], a[1]-b[1]); d > 0 {
			lens = append(lens, d)
		}
	}
	scale := 1.0
	if len(lens) > 0 {
		slices.Sort(lens)
		scale = 1 / lens[len(lens)/2]
	} else if s := math.Hypot(spread(pts, 0), spread(pts, 1)); s > 0 {
		scale = 1 / s
	}
	for i := range pts {
		pts[i] = [2]float64{(pts[i][0] - cx) * scale, (pts[i][1] - cy) * scale}
	}
}

// alignComponent moves the component's points (xy[comp]) by the similarity
// transform that best fits their targets; it reports whether the component was
// placed (at least one finite target).
func alignComponent(xy [][2]float64, comp []int, target [][2]float64) bool {
	var src, dst [][2]float64
	for _, v := range comp {
		t := target[v]
		if !math.IsNaN(t[0]) && !math.IsNaN(t[1]) {
			src = append(src, xy[v])
			dst = append(dst, t)
		}
	}
	if len(src) == 0 {
		return false
	}
	f := Procrustes(src, dst)
	for _, v := range comp {
		xy[v] = f.Apply(xy[v])
	}
	return true
}

// Similarity is a similarity transform of the plane: p ↦ Scale·R·p + Shift, with R
// a rotation by Angle, preceded by the reflection x ↦ −x when Reflect is set.
type Similarity struct {
	Reflect bool
	Angle   float64 // radians
	Scale   float64
	Shift   [2]float64
}

// Apply maps p.
func (f Similarity) Apply(p [2]float64) [2]float64 {
	x, y := p[0], p[1]
	if f.Reflect {
		x = -x
	}
	c, s := math.Cos(f.Angle), math.Sin(f.Angle)
	return [2]float64{f.Scale*(c*x-s*y) + f.Shift[0], f.Scale*(s*x+c*y) + f.Shift[1]}
}

// Procrustes returns the similarity transform f minimising Σ_i |f(src_i) − dst_i|²
// (orthogonal Procrustes in the plane, reflections allowed). With centred points
// x_i, y_i the best rotation angle is atan2(Σ x_i × y_i, Σ x_i · y_i) and the scale
// |(Σ x·y, Σ x×y)| / Σ|x_i|²; both handednesses are tried. A single point, or
// source points that all coincide, give a pure translation (scale 1).
func Procrustes(src, dst [][2]float64) Similarity {
	n := float64(len(src))
	if len(src) == 0 || len(src) != len(dst) {
		return Similarity{Scale: 1}
	}
	var sc, dc [2]float64
	for i := range src {
		sc[0] += src[i][0] / n
		sc[1] += src[i][1] / n
		dc[0] += dst[i][0] / n
		dc[1] += dst[i][1] / n
	}
	best := Similarity{Scale: 1}
	bestFit := -1.0
	for _, reflect := range []bool{false, true} {
		var dot, cross, norm float64
		for i := range src {
			x0, x1 := src[i][0]-sc[0], src[i][1]-sc[1]
			if reflect {
				x0 = -x0
			}
			y0, y1 := dst[i][0]-dc[0], dst[i][1]-dc[1]
			dot += x0*y0 + x1*y1
			cross += x0*y1 - x1*y0
			norm += x0*x0 + x1*x1
		}
		fit := math.Hypot(dot, cross)
		if norm < 1e-12 {
			best = Similarity{Scale: 1}
			break
		}
		if fit > bestFit+1e-12 {
			bestFit = fit
			best = Similarity{Reflect: reflect, Angle: math.Atan2(cross, dot), Scale: fit / norm}
			if best.Scale == 0 {
				best.Scale = 1
			}
		}
	}
	// Shift so that the centroid lands on the target centroid.
	c := best.Apply(sc)
	best.Shift = [2]float64{dc[0] - c[0], dc[1] - c[1]}
	return best
}

// packComponents moves the components not yet placed: if none is placed, the
// largest stays at the origin; the rest go in rows below everything placed,
// wrapping at the width of the drawing so far.
func packComponents(xy [][2]float64, comps [][]int, placed []bool) {
	anyPlaced := slices.Contains(placed, true)
	if !anyPlaced && len(comps) > 0 {
		placed[0] = true
	}
	minX, maxX, minY := math.Inf(1), math.Inf(-1), math.Inf(1)
	for ci, comp := range comps {
		if !placed[ci] {
			continue
		}
		for _, v := range comp {
			minX, maxX = min(minX, xy[v][0]), max(maxX, xy[v][0])
			minY = min(minY, xy[v][1])
		}
	}
	if math.IsInf(minX, 0) {
		return
	}
	width := max(maxX-minX, 4)
	const gap = 1.0
	x, y, rowH := minX, minY-1.5, 0.0
	for ci, comp := range comps {
		if placed[ci] {
			continue
		}
		bx0, bx1, by0, by1 := bbox(xy, comp)
		w, h := bx1-bx0, by1-by0
		if x > minX && x+w > minX+width {
			x, y, rowH = minX, y-rowH-gap, 0
		}
		for _, v := range comp {
			xy[v] = [2]float64{xy[v][0] - bx0 + x, xy[v][1] - by1 + y}
		}
		x += w + gap
		rowH = max(rowH, h)
	}
}

// bbox is the bounding box of the points of comp.
func bbox(xy [][2]float64, comp []int) (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, v := range comp {
		x0, x1 = min(x0, xy[v][0]), max(x1, xy[v][0])
		y0, y1 = min(y0, xy[v][1]), max(y1, xy[v][1])
	}
	return
}

// separate pushes apart points closer than d (a few relaxation sweeps; points
// that coincide move apart along a direction fixed by their indices).
func separate(xy [][2]float64, d float64) {
	for range 60 {
		moved := false
		for i := range xy {
			for j := i + 1; j < len(xy); j++ {
				dx, dy := xy[j][0]-xy[i][0], xy[j][1]-xy[i][1]
				dist := math.Hypot(dx, dy)
				if dist >= d {
					continue
				}
				if dist < 1e-9 {
					a := float64(i*7+j*13) * 0.61803398875 * 2 * math.Pi
					dx, dy, dist = math.Cos(a), math.Sin(a), 1
				}
				push := (d - dist) / 2 * 1.01
				ux, uy := dx/dist*push, dy/dist*push
				xy[i][0] -= ux
				xy[i][1] -= uy
				xy[j][0] += ux
				xy[j][1] += uy
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}
