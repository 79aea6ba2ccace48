package figures

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Readout is what Figures 3 and 5 draw of one learned map: the model's states
// decoded on a held-out episode of an environment, and the recovered graph.
type Readout struct {
	Env         *gridworld.Env
	StateTokens []int      // token of every state, −1 for the sink (len N)
	TokenClass  []int      // class whose colour token k takes (len K; −1: none)
	StatePlace  []int      // χ(s), the majority place of state s (len N; −1: never visited)
	Visits      []int      // n(s), steps the path spends in s (len N)
	Steps       int        // T, the length of the decoded episode
	Graph       CloneGraph // the recovered transition graph
	EdgeRule    string     // how Graph was read off ("Viterbi path > 0.2% of T", ...)
	// TokenImages, if set, holds an ImageSide² image per token (values in [0,1]) that
	// RecoveredGraphPanel draws as the node of each of the token's clones (Figure 5c).
	TokenImages [][]float32
	ImageSide   int
	Title       string // column title; "" means the environment's name
}

// ReadoutOptions say how NewReadout builds the recovered graph.
type ReadoutOptions struct {
	// Edges is EdgesPath (the default) or EdgesTransitions.
	Edges string
	// Cutoff (EdgesPath): keep the state pairs the path traverses more than
	// Cutoff·T times, and the states it visits more than Cutoff·T times. 0: 0.002,
	// the paper's Viterbi-path cutoff (Sec. 5.3).
	Cutoff float64
	// Threshold (EdgesTransitions): keep the pairs of visited states with
	// max_a T[a,i,j] > Threshold. 0: 0.1.
	Threshold float64
	// TokenClass overrides the colour class of each token (symbolic data: the
	// class of token k). nil: the class of the places where the path's states of
	// token k are most often (majority over steps).
	TokenClass []int
}

// Edge rules of ReadoutOptions.Edges.
const (
	EdgesPath        = "path"
	EdgesTransitions = "transitions"
)

// NewReadout decodes nothing itself: it takes the true places g_t of a held-out
// episode of env and the model's decoded path s*_t (chmm.Viterbi, or the pipeline's
// soft Viterbi), assigns states to places (Assign) and reads the recovered graph
// off the path (PathGraph) or off m's transitions (TransitionGraph).
func NewReadout(env *gridworld.Env, m *chmm.Model, places, states []int, opt ReadoutOptions) (*Readout, error) {
	if env == nil || m == nil {
		return nil, errors.New("figures.NewReadout: nil environment or model")
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("figures.NewReadout: %w", err)
	}
	if m.NumActions != env.NumActions() {
		return nil, fmt.Errorf("figures.NewReadout: model has %d actions, environment %s has %d", m.NumActions, env.Name, env.NumActions())
	}
	if len(states) == 0 {
		return nil, errors.New("figures.NewReadout: empty path")
	}
	for t, g := range places {
		if g < 0 || g >= env.NumPlaces() {
			return nil, fmt.Errorf("figures.NewReadout: places[%d] = %d outside [0, %d)", t, g, env.NumPlaces())
		}
	}
	n := m.N()
	chi, visits, err := evaluate.Assign(places, states, n)
	if err != nil {
		return nil, err
	}
	r := &Readout{Env: env, StateTokens: m.StateTokens(), StatePlace: chi, Visits: visits, Steps: len(states)}
	switch opt.Edges {
	case "", EdgesPath:
		f := opt.Cutoff
		if f == 0 {
			f = 0.002
		}
		if r.Graph, err = PathGraph(states, n, f*float64(len(states))); err != nil {
			return nil, err
		}
		r.EdgeRule = "edges: Viterbi path > " + strconv.FormatFloat(100*f, 'g', 3, 64) + "% of T"
	case EdgesTransitions:
		eta := opt.Threshold
		if eta == 0 {
			eta = 0.1
		}
		var visited []int
		for s, v := range visits {
			if v > 0 {
				visited = append(visited, s)
			}
		}
		if r.Graph, err = TransitionGraph(m.Transitions(), m.NumActions, n, visited, eta); err != nil {
			return nil, err
		}
		r.EdgeRule = "edges: max_a T > " + strconv.FormatFloat(eta, 'g', 3, 64)
	default:
		return nil, fmt.Errorf("figures.NewReadout: unknown edge rule %q (want %q or %q)", opt.Edges, EdgesPath, EdgesTransitions)
	}
	if opt.TokenClass != nil {
		if len(opt.TokenClass) != m.K() {
			return nil, fmt.Errorf("figures.NewReadout: %d token classes for %d tokens", len(opt.TokenClass), m.K())
		}
		r.TokenClass = opt.TokenClass
	} else {
		r.TokenClass = MajorityClass(env, m.StateTokens(), m.K(), places, states)
	}
	return r, nil
}

// MajorityClass returns, for every token k, the class c maximising
// #{t : Token(s*_t) = k, class(g_t) = c} (ties: lowest class; −1 when the path
// never shows k). stateTokens is chmm.Model.StateTokens().
func MajorityClass(env *gridworld.Env, stateTokens []int, numTokens int, places, states []int) []int {
	counts := make([]map[int]int, numTokens)
	for t, s := range states {
		if t >= len(places) || s < 0 || s >= len(stateTokens) {
			continue
		}
		k := stateTokens[s]
		if k < 0 || k >= numTokens {
			continue
		}
		if counts[k] == nil {
			counts[k] = map[int]int{}
		}
		counts[k][env.Class[places[t]]]++
	}
	out := make([]int, numTokens)
	for k, m := range counts {
		out[k] = -1
		best := 0
		for c, n := range m {
			if n > best || (n == best && c < out[k]) {
				out[k], best = c, n
			}
		}
	}
	return out
}

// check validates the readout's slices against each other.
func (r *Readout) check() error {
	if r == nil || r.Env == nil {
		return errors.New("figures: nil readout or environment")
	}
	n := len(r.StateTokens)
	if len(r.StatePlace) != n || len(r.Visits) != n {
		return fmt.Errorf("figures: readout of %s: %d states, %d assignments, %d visit counts", r.Env.Name, n, len(r.StatePlace), len(r.Visits))
	}
	for _, s := range r.Graph.Nodes {
		if s < 0 || s >= n {
			return fmt.Errorf("figures: readout of %s: graph node %d outside [0, %d)", r.Env.Name, s, n)
		}
	}
	for _, e := range r.Graph.Edges {
		if e[0] < 0 || e[0] >= n || e[1] < 0 || e[1] >= n {
			return fmt.Errorf("figures: readout of %s: graph edge %v outside [0, %d)", r.Env.Name, e, n)
		}
	}
	for s, g := range r.StatePlace {
		if g >= r.Env.NumPlaces() {
			return fmt.Errorf("figures: readout of %s: state %d assigned to place %d of %d", r.Env.Name, s, g, r.Env.NumPlaces())
		}
	}
	if r.TokenImages != nil {
		for k, img := range r.TokenImages {
			if img != nil && len(img) != r.ImageSide*r.ImageSide {
				return fmt.Errorf("figures: readout of %s: token %d image has %d values, want %d²", r.Env.Name, k, len(img), r.ImageSide)
			}
		}
	}
	return nil
}

// stateColor is the colour of state s: the class colour of its token.
func (r *Readout) stateColor(s int) color.RGBA {
	k := r.StateTokens[s]
	if k < 0 || k >= len(r.TokenClass) {
		return noneColor
	}
	return ClassColor(r.TokenClass[k])
}

// title is the column title of the readout.
func (r *Readout) title() string {
	if r.Title != "" {
		return r.Title
	}
	return r.Env.Name
}

// RecoveredLayout returns the layout coordinates of r.Graph.Nodes: LayoutGraph on
// the recovered edges, each component turned to match the positions of the nodes'
// assigned places (so that the drawing has the true map's orientation; its shape
// comes from the recovered edges alone). Shape: [len(Graph.Nodes)][2].
func (r *Readout) RecoveredLayout() ([][2]float64, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	index := make(map[int]int, len(r.Graph.Nodes))
	for i, s := range r.Graph.Nodes {
		index[s] = i
	}
	edges := make([][2]int, 0, len(r.Graph.Edges))
	for _, e := range r.Graph.Edges {
		a, okA := index[e[0]]
		b, okB := index[e[1]]
		if okA && okB {
			edges = append(edges, [2]int{a, b})
		}
	}
	pos := placePositions(r.Env)
	target := make([][2]float64, len(r.Graph.Nodes))
	for i, s := range r.Graph.Nodes {
		target[i] = [2]float64{math.NaN(), math.NaN()}
		if g := r.StatePlace[s]; g >= 0 {
			target[i] = pos[g]
		}
	}
	return LayoutGraph(len(r.Graph.Nodes), edges, target)
}

// RecoveredGraphPanel draws the recovered transition graph (paper Figure 3, bottom
// row; Figure 5, bottom row): the nodes r.Graph.Nodes placed by RecoveredLayout,
// coloured by the class colour of the token they emit and labelled with it (or,
// with Images and r.TokenImages, drawn as the token's image framed in that colour),
// and the recovered edges: grey when they join two states assigned to the same or
// to adjacent places, red and dashed when not (a false edge).
type RecoveredGraphPanel struct {
	R      *Readout
	Images bool   // draw nodes as token images (needs R.TokenImages)
	Title  string // "" draws a summary
}

// Draw implements Panel.
func (p RecoveredGraphPanel) Draw(c draw.Canvas) {
	r := p.R
	pts, err := r.RecoveredLayout()
	if err != nil {
		panelMessage(c, err.Error())
		return
	}
	adj := trueAdjacency(r.Env)
	index := make(map[int]int, len(r.Graph.Nodes))
	for i, s := range r.Graph.Nodes {
		index[s] = i
	}
	var edges [][2]int
	var colors []color.Color
	false_ := 0
	for _, e := range r.Graph.Edges {
		a, okA := index[e[0]]
		b, okB := index[e[1]]
		if !okA || !okB {
			continue
		}
		edges = append(edges, [2]int{a, b})
		ga, gb := r.StatePlace[e[0]], r.StatePlace[e[1]]
		if ga >= 0 && gb >= 0 && (ga == gb || adj[[2]int{min(ga, gb), max(ga, gb)}]) {
			colors = append(colors, nil)
		} else {
			colors = append(colors, eventColor)
			false_++
		}
	}
	title := p.Title
	if title == "" {
		title = fmt.Sprintf("recovered: %d clones, %d edges (%d false)", len(r.Graph.Nodes), len(edges), false_)
	}
	c = panelTitle(c, title)
	if r.EdgeRule != "" {
		sty := textStyle(sizeNote, color.Gray{0x60}, draw.XCenter, draw.YBottom)
		c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Min.Y + 1}, r.EdgeRule)
		c = draw.Crop(c, 0, 0, sty.Height(r.EdgeRule)+2, 0)
	}
	nodes := make([]nodeStyle, len(pts))
	images := map[int]image.Image{}
	for i, s := range r.Graph.Nodes {
		k := r.StateTokens[s]
		ns := nodeStyle{Fill: r.stateColor(s)}
		if k >= 0 && k < len(r.TokenClass) && r.TokenClass[k] >= 0 {
			ns.Label = strconv.Itoa(r.TokenClass[k])
		}
		if p.Images && k >= 0 && k < len(r.TokenImages) && r.TokenImages[k] != nil {
			img, ok := images[k]
			if !ok {
				if g, err := grayImage(r.TokenImages[k], r.ImageSide); err == nil {
					img = g
				}
				images[k] = img
			}
			ns.Image = img
		}
		nodes[i] = ns
	}
	radius := 0.27 // minSeparation keeps discs of this size apart
	if p.Images && r.TokenImages != nil {
		radius = imageNodeRadius(pts)
		separateSquares(pts, 2.4*radius*1.05) // the few nodes closer than that
	}
	minX, maxX, minY, maxY := boundsOf(pts, radius*1.6)
	f := fitFrame(c, minX, maxX, minY, maxY, 2)
	drawGraph(c, f, pts, edges, colors, nodes, radius)
}

// imageNodeRadius is the half-size r of the image nodes of a recovered graph laid
// out at pts: drawGraph frames an image of side 2r with a ring of r/5, so the
// framed node is 2.4r wide, and r makes that 0.8 × the median distance from a
// node to its nearest neighbour in the max-norm max(|Δx|, |Δy|) (square nodes
// overlap exactly when their centres are closer than their side in that norm).
// On grid-like layouts neighbours are then 0.2 node sides apart, whatever the
// number of clones. Few or coincident nodes give 0.27, the disc radius.
func imageNodeRadius(pts [][2]float64) float64 {
	d := medianNearest(pts)
	if !(d > 1e-9) || math.IsInf(d, 0) {
		return 0.27
	}
	return min(0.8*d/2.4, 1)
}

// medianNearest is the median over points of the max-norm distance to the
// nearest other point (+Inf for fewer than two points).
func medianNearest(pts [][2]float64) float64 {
	if len(pts) < 2 {
		return math.Inf(1)
	}
	nn := make([]float64, len(pts))
	for i, p := range pts {
		nn[i] = math.Inf(1)
		for j, q := range pts {
			if i != j {
				nn[i] = min(nn[i], max(math.Abs(p[0]-q[0]), math.Abs(p[1]-q[1])))
			}
		}
	}
	slices.Sort(nn)
	if m := len(nn); m%2 == 0 {
		return (nn[m/2-1] + nn[m/2]) / 2
	}
	return nn[len(nn)/2]
}

// separateSquares nudges apart the points whose max-norm distance is below d
// (square nodes of side d would overlap), each pair moving along the axis where
// they are already farther apart, by just enough; a few relaxation sweeps.
// Points that coincide split along x.
func separateSquares(xy [][2]float64, d float64) {
	for range 50 {
		moved := false
		for i := range xy {
			for j := i + 1; j < len(xy); j++ {
				dx, dy := xy[j][0]-xy[i][0], xy[j][1]-xy[i][1]
				if max(math.Abs(dx), math.Abs(dy)) >= d {
					continue
				}
				axis, delta := 0, dx
				if math.Abs(dy) > math.Abs(dx) {
					axis, delta = 1, dy
				}
				sign := 1.0
				if delta < 0 {
					sign = -1
				}
				push := (d - math.Abs(delta)) / 2 * 1.01
				xy[i][axis] -= sign * push
				xy[j][axis] += sign * push
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// trueAdjacency is the set of true undirected place edges (a < b).
func trueAdjacency(e *gridworld.Env) map[[2]int]bool {
	adj := map[[2]int]bool{}
	for _, p := range e.Edges() {
		adj[[2]int{min(p[0], p[1]), max(p[0], p[1])}] = true
	}
	return adj
}

// panelMessage draws msg in the middle of c (for panels that cannot be drawn).
func panelMessage(c draw.Canvas, msg string) {
	sty := textStyle(sizeText, eventColor, draw.XCenter, draw.YCenter)
	c.FillText(sty, c.Center(), msg)
}

// ClonePlacesPanel draws the decoded clones at their assigned places (paper Figure
// 5, middle row): the layout in pale class colours, and in each cell a disc per
// state of r.Graph.Nodes with χ(s) at that cell, in its token's class colour and
// labelled with the state id. Aliased cells (same colour) carrying different clone
// ids show the clones splitting one observation into places.
type ClonePlacesPanel struct {
	R     *Readout
	Title string // "" draws a summary
}

// Draw implements Panel.
func (p ClonePlacesPanel) Draw(c draw.Canvas) {
	r := p.R
	if err := r.check(); err != nil {
		panelMessage(c, err.Error())
		return
	}
	e := r.Env
	byPlace := make([][]int, e.NumPlaces())
	for _, s := range r.Graph.Nodes {
		if g := r.StatePlace[s]; g >= 0 {
			byPlace[g] = append(byPlace[g], s)
		}
	}
	represented := 0
	for _, ss := range byPlace {
		if len(ss) > 0 {
			represented++
		}
	}
	title := p.Title
	if title == "" {
		title = fmt.Sprintf("clones at their places: %d clones, %d/%d places", len(r.Graph.Nodes), represented, e.NumPlaces())
	}
	c = panelTitle(c, title)
	// The colour key: a disc shows its token's class, the cell its own; they differ
	// where the joint phase merged classes into one token.
	const key = "cell: the place's class; disc: the class its clone's token shows most"
	sty := textStyle(sizeNote, color.Gray{0x60}, draw.XCenter, draw.YBottom)
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Min.Y + 1}, key)
	c = draw.Crop(c, 0, 0, sty.Height(key)+2, 0)
	var f frame
	var centers [][2]float64
	var cellSize float64 // layout units available to a place's clones
	if e.IsGraph() {
		centers = placePositions(e)
		minX, maxX, minY, maxY := boundsOf(centers, 0.5)
		f = fitFrame(c, minX, maxX, minY, maxY, 2)
		cellSize = 0.45 // the square inside a place disc of radius 0.33
		nodes := make([]nodeStyle, len(centers))
		for g := range nodes {
			nodes[g] = nodeStyle{Fill: lighten(ClassColor(e.Class[g]), 0.55)}
		}
		drawGraph(c, f, centers, e.Edges(), nil, nodes, 0.33)
	} else {
		f = fitFrame(c, 0, float64(e.Cols), float64(-e.Rows), 0, 2)
		border := draw.LineStyle{Color: lineColor, Width: max(min(f.s/30, 0.8), 0.3)}
		for row := range e.Rows {
			for col := range e.Cols {
				rect := f.cell(row, col)
				cls := e.Cells[row*e.Cols+col]
				fill := wallColor
				if cls != gridworld.Wall {
					fill = lighten(ClassColor(cls), 0.6)
				}
				fillRect(c, rect, fill)
				strokeRect(c, rect, border)
			}
		}
		centers = make([][2]float64, e.NumPlaces())
		for g, rc := range e.Coord {
			centers[g] = cellCenter(rc[0], rc[1])
		}
		cellSize = 1
	}
	// Every disc has the size that fits the most crowded place's clones on a
	// square grid in a cell; each place's clones sit on a centred grid of rows of
	// ⌈√n⌉.
	most := 1
	for _, ss := range byPlace {
		most = max(most, len(ss))
	}
	step := cellSize / math.Ceil(math.Sqrt(float64(most)))
	radius := step * 0.4
	for g, ss := range byPlace {
		if len(ss) == 0 {
			continue
		}
		k := int(math.Ceil(math.Sqrt(float64(len(ss)))))
		rows := (len(ss) + k - 1) / k
		pts := make([][2]float64, len(ss))
		nodes := make([]nodeStyle, len(ss))
		for i, s := range ss {
			ix, iy := i%k, i/k
			inRow := min(k, len(ss)-iy*k) // the last row may be shorter
			pts[i] = [2]float64{
				centers[g][0] + step*(float64(ix)-float64(inRow-1)/2),
				centers[g][1] - step*(float64(iy)-float64(rows-1)/2),
			}
			nodes[i] = nodeStyle{Fill: r.stateColor(s), Label: strconv.Itoa(s)}
		}
		drawGraph(c, f, pts, nil, nil, nodes, radius)
	}
}

// MapComparison draws paper Figure 3: per readout a column with the true place
// graph on top (TrueGraphPanel) and the recovered clone graph below
// (RecoveredGraphPanel), colours matched class ↔ token.
func MapComparison(rs ...*Readout) (*Figure, error) {
	if len(rs) == 0 {
		return nil, errors.New("figures.MapComparison: no readout")
	}
	fig := &Figure{Rows: 2, Cols: len(rs), Width: vg.Length(len(rs)) * tileW, Height: 2 * tileH}
	fig.Panels = make([]Panel, 2*len(rs))
	for i, r := range rs {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("figures.MapComparison: readout %d: %w", i, err)
		}
		fig.Panels[i] = TrueGraphPanel{Env: r.Env, Title: "true map: " + r.title()}
		fig.Panels[len(rs)+i] = RecoveredGraphPanel{R: r}
	}
	return fig, nil
}

// ImageMaps draws paper Figure 5: per readout (one environment's pipeline run) a
// column of (a) the layout (LayoutPanel), (b) the decoded clones at their
// assigned places (ClonePlacesPanel) and (c) the recovered graph with each node
// drawn as the image of its token (RecoveredGraphPanel with Images; discs where
// the readout has no TokenImages).
func ImageMaps(rs ...*Readout) (*Figure, error) {
	if len(rs) == 0 {
		return nil, errors.New("figures.ImageMaps: no readout")
	}
	n := len(rs)
	// A layout taller than tallRows (two_rooms: 13 rows) gets a proportionally wider
	// column and every row of the figure that much more height, so its cells, clone
	// numbers and token images are drawn as large as a small layout's.
	const tallRows = 7
	weights, scale := make([]float64, n), 1.0
	for i, r := range rs {
		weights[i] = 1
		if r != nil && r.Env != nil {
			h := float64(r.Env.Rows)
			weights[i] = max(1, h/tallRows)
			scale = max(scale, h/tallRows)
		}
	}
	width := 0.0
	for _, w := range weights {
		width += w
	}
	fig := &Figure{Rows: 3, Cols: n, Width: vg.Length(width) * tileW, Height: 3 * tileH * vg.Length(scale), ColWeights: weights}
	fig.Panels = make([]Panel, 3*n)
	for i, r := range rs {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("figures.ImageMaps: readout %d: %w", i, err)
		}
		fig.Panels[i] = LayoutPanel{Env: r.Env, Title: "(a) " + r.title() + ": layout"}
		fig.Panels[n+i] = ClonePlacesPanel{R: r}
		fig.Panels[2*n+i] = RecoveredGraphPanel{R: r, Images: r.TokenImages != nil}
	}
	return fig, nil
}

// Codec is the part of a VQ-VAE (*vqvae.Model) TokenImages needs.
type Codec interface {
	// Latents returns the encoder outputs z [n][D] of n images.
	Latents(images []float32) ([][]float32, error)
	// Codebook returns the code vectors e [K][D].
	Codebook() [][]float32
	// Reconstruct returns the decoder's output through each image's hard code,
	// D(e_k) for an image of code k, and the tokens.
	Reconstruct(images []float32) ([]float32, []int, error)
	// Tokens returns the token of each code, nil when token k is code k.
	Tokens() []int
}

// TokenImages returns an image per token for Figure 5c: for token g, among the
// given images (n images of side² values) whose hard code k has token g (Codec.Tokens),
// the one whose latent is nearest to its code e_k (nearest), and the decoder's output
// D(e_k) computed by reconstructing that image (decoded: the reconstruction of any
// image of code k is D(e_k)). Tokens no image maps to get nil in both.
func TokenImages(codec Codec, images []float32, side int) (decoded, nearest [][]float32, err error) {
	p := side * side
	if side < 1 || len(images) == 0 || len(images)%p != 0 {
		return nil, nil, fmt.Errorf("figures.TokenImages: %d values is not a positive number of %d×%d images", len(images), side, side)
	}
	z, err := codec.Latents(images)
	if err != nil {
		return nil, nil, err
	}
	book := codec.Codebook()
	n := len(images) / p
	if len(z) != n || len(book) == 0 {
		return nil, nil, fmt.Errorf("figures.TokenImages: %d latents for %d images, %d codes", len(z), n, len(book))
	}
	tokenOf := codec.Tokens()
	if tokenOf == nil {
		tokenOf = make([]int, len(book))
		for k := range tokenOf {
			tokenOf[k] = k
		}
	}
	if len(tokenOf) != len(book) {
		return nil, nil, fmt.Errorf("figures.TokenImages: a token map of %d codes for a codebook of %d", len(tokenOf), len(book))
	}
	best := make([]int, slices.Max(tokenOf)+1)
	bestD := make([]float64, len(best))
	for g := range best {
		best[g], bestD[g] = -1, math.Inf(1)
	}
	for i, zi := range z {
		// Hard code: the nearest code (vqvae.Quantize); ties to the lowest k.
		k, dk := -1, math.Inf(1)
		for j, e := range book {
			if d := dist2(zi, e); d < dk {
				k, dk = j, d
			}
		}
		if k >= 0 && dk < bestD[tokenOf[k]] {
			best[tokenOf[k]], bestD[tokenOf[k]] = i, dk
		}
	}
	var sel []float32
	var order []int
	for k, i := range best {
		if i >= 0 {
			sel = append(sel, images[i*p:(i+1)*p]...)
			order = append(order, k)
		}
	}
	decoded = make([][]float32, len(best))
	nearest = make([][]float32, len(best))
	if len(order) == 0 {
		return decoded, nearest, nil
	}
	rec, _, err := codec.Reconstruct(sel)
	if err != nil {
		return nil, nil, err
	}
	if len(rec) != len(sel) {
		return nil, nil, fmt.Errorf("figures.TokenImages: %d reconstructed values for %d", len(rec), len(sel))
	}
	for j, k := range order {
		nearest[k] = append([]float32(nil), sel[j*p:(j+1)*p]...)
		decoded[k] = append([]float32(nil), rec[j*p:(j+1)*p]...)
	}
	return decoded, nearest, nil
}

// dist2 is the squared Euclidean distance of two vectors of equal length.
func dist2(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s
}
