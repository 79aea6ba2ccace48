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
	// Key says which classes' frames each token holds on the episode and gives
	// every token its colour (NewTokenKey; nil: tokens take the colour of
	// TokenClass). NewReadout sets it.
	Key *TokenKey
	// TokenImages, if set, holds an ImageSide² image per token (values in [0,1]) that
	// RecoveredGraphPanel draws as the node of each of the token's clones (Figure 5c).
	TokenImages [][]float32
	// TokenClassImages, if set, holds an ImageSide² image per pair {token, class}
	// (TokenClassImages): RecoveredGraphPanel then draws a clone of token k assigned
	// to a place of class c as image {k, c}, or as a disc labelled c where the token
	// held no image of class c, instead of TokenImages.
	TokenClassImages map[[2]int][]float32
	ImageSide        int
	Title            string // column title; "" means the environment's name
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
	// FrameTokens holds the hard token of every frame of the episode (pixel runs:
	// the encoder's; len(places)), from which the Readout's Key counts the classes
	// each token holds. nil: the tokens of the decoded states (symbolic data: the
	// observations).
	FrameTokens []int
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
	frameTokens := opt.FrameTokens
	if frameTokens == nil {
		frameTokens = make([]int, len(states))
		for t, s := range states {
			if s < 0 || s >= n {
				return nil, fmt.Errorf("figures.NewReadout: states[%d] = %d outside [0, %d)", t, s, n)
			}
			frameTokens[t] = r.StateTokens[s]
		}
	}
	if len(frameTokens) != len(places) {
		return nil, fmt.Errorf("figures.NewReadout: %d frame tokens for %d places", len(frameTokens), len(places))
	}
	frameClasses := make([]int, len(places))
	for t, g := range places {
		frameClasses[t] = env.Class[g]
	}
	if r.Key, err = NewTokenKey(frameTokens, frameClasses); err != nil {
		return nil, fmt.Errorf("figures.NewReadout: %w", err)
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

// stateColor is the colour of state s: its token's colour in the Key, else the
// class colour of its token (TokenClass).
func (r *Readout) stateColor(s int) color.RGBA {
	k := r.StateTokens[s]
	if c, ok := r.Key.Color(k); ok {
		return c
	}
	if k < 0 || k >= len(r.TokenClass) || r.TokenClass[k] < 0 {
		return noneColor
	}
	return ClassColor(r.TokenClass[k])
}

// placeClass is the class of the place state s is assigned to (χ(s)), −1 if none.
func (r *Readout) placeClass(s int) int {
	if g := r.StatePlace[s]; g >= 0 && g < r.Env.NumPlaces() {
		return r.Env.Class[g]
	}
	return -1
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
// filled with the colour of the token they emit and labelled with the class of
// their assigned place (or, with Images, drawn as an image of that class the token
// holds, framed in the token's colour: graphNodes), so that a node shows its own
// place's class even where its token holds several, and the recovered edges: grey when they join two states assigned to the same or
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
		c = noteLine(c, r.EdgeRule)
	}
	note := "node: its place's class, in its token's colour"
	if p.Images && (r.TokenImages != nil || r.TokenClassImages != nil) {
		note = "node: an image of its place's class, framed in its token's colour"
	}
	c = noteLine(c, note)
	nodes := r.graphNodes(p.Images)
	radius := 0.27 // minSeparation keeps discs of this size apart
	if p.Images && (r.TokenImages != nil || r.TokenClassImages != nil) {
		radius = imageNodeRadius(pts)
		separateSquares(pts, 2.4*radius*1.05) // the few nodes closer than that
	}
	minX, maxX, minY, maxY := boundsOf(pts, radius*1.6)
	f := fitFrame(c, minX, maxX, minY, maxY, 2)
	drawGraph(c, f, pts, edges, colors, nodes, radius)
}

// graphNodes returns how RecoveredGraphPanel draws each of r.Graph.Nodes: filled
// with its token's colour (stateColor) and labelled with the class of its
// assigned place; with images, as the image {token, place class} of
// TokenClassImages (a disc where the token held no image of that class), else as
// the token's image of TokenImages.
func (r *Readout) graphNodes(images bool) []nodeStyle {
	nodes := make([]nodeStyle, len(r.Graph.Nodes))
	cache := map[[2]int]image.Image{}
	picture := func(key [2]int, pix []float32) image.Image {
		img, ok := cache[key]
		if !ok {
			if g, err := grayImage(pix, r.ImageSide); err == nil {
				img = g
			}
			cache[key] = img
		}
		return img
	}
	for i, s := range r.Graph.Nodes {
		k, cls := r.StateTokens[s], r.placeClass(s)
		ns := nodeStyle{Fill: r.stateColor(s)}
		if cls >= 0 {
			ns.Label = strconv.Itoa(cls)
		}
		switch {
		case !images:
		case r.TokenClassImages != nil:
			if pix := r.TokenClassImages[[2]int{k, cls}]; pix != nil {
				ns.Image = picture([2]int{k, cls}, pix)
			}
		case k >= 0 && k < len(r.TokenImages) && r.TokenImages[k] != nil:
			ns.Image = picture([2]int{k, -1}, r.TokenImages[k])
		}
		nodes[i] = ns
	}
	return nodes
}

// noteLine writes an explanatory note (sizeNote, grey, shrunk to fit the width) at
// the bottom of c and returns the canvas above it.
func noteLine(c draw.Canvas, note string) draw.Canvas {
	sty := textStyle(sizeNote, color.Gray{0x60}, draw.XCenter, draw.YBottom)
	if w, avail := sty.Width(note), c.Max.X-c.Min.X-2; w > avail && avail > 0 {
		sty.Font.Size = max(sty.Font.Size*avail/w, sizeMinText)
	}
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Min.Y + 1}, note)
	return draw.Crop(c, 0, 0, textStyle(sizeNote, color.Black, draw.XCenter, draw.YBottom).Height(note)+2, 0)
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
	// The colour key: a disc shows its clone's token, the cell its own class; they
	// differ where the joint phase merged classes into one token.
	c = noteLine(c, "cell: the place's class; disc: its clone's token, numbered by state")
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
// (RecoveredGraphPanel), colours matched class ↔ token, and where some token holds
// several classes a third row with each readout's token key (TokenKeyPanel).
func MapComparison(rs ...*Readout) (*Figure, error) {
	if len(rs) == 0 {
		return nil, errors.New("figures.MapComparison: no readout")
	}
	n := len(rs)
	fig := &Figure{Rows: 2, Cols: n, Width: vg.Length(n) * tileW, Height: 2 * tileH}
	fig.Panels = make([]Panel, 2*n)
	var keyH vg.Length
	for i, r := range rs {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("figures.MapComparison: readout %d: %w", i, err)
		}
		fig.Panels[i] = TrueGraphPanel{Env: r.Env, Title: "true map: " + r.title()}
		fig.Panels[n+i] = RecoveredGraphPanel{R: r}
		if r.Key.Shares() {
			keyH = max(keyH, TokenKeyPanel{Key: r.Key}.Height(tileW-8))
		}
	}
	if keyH > 0 { // a row of token keys where some token holds several classes
		fig.Rows, fig.Height = 3, fig.Height+keyH+6
		fig.RowWeights = []float64{tileH, tileH, float64(keyH)}
		for _, r := range rs {
			fig.Panels = append(fig.Panels, TokenKeyPanel{Key: r.Key})
		}
	}
	return fig, nil
}

// ImageMaps draws paper Figure 5: per readout (one environment's pipeline run) a
// column of (a) the layout (LayoutPanel), (b) the decoded clones at their
// assigned places (ClonePlacesPanel), (c) the recovered graph with each node
// drawn as an image of its place's class that its token holds
// (RecoveredGraphPanel with Images; discs where the readout has no images) and,
// where the readouts have a Key, (d) the token key (TokenKeyPanel).
//
// The layout is tight: every column is as wide as its grid's aspect (columns ÷
// rows; graphs square) makes it at the common drawing height, so that every panel
// fills its tile. That height gives the tallest grid imageMapsCell points per
// row (at least imageMapsMinH), less if the figure would be wider than
// imageMapsMaxW.
func ImageMaps(rs ...*Readout) (*Figure, error) {
	if len(rs) == 0 {
		return nil, errors.New("figures.ImageMaps: no readout")
	}
	n := len(rs)
	aspects := make([]float64, n)
	tallest, sum := 1, 0.0
	for i, r := range rs {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("figures.ImageMaps: readout %d: %w", i, err)
		}
		aspects[i] = 1 // graphs are laid out in a square
		if !r.Env.IsGraph() {
			aspects[i] = float64(r.Env.Cols) / float64(max(r.Env.Rows, 1))
			tallest = max(tallest, r.Env.Rows)
		}
		sum += aspects[i]
	}
	const padX, padY, margin = 6, 6, 8 // Figure.Draw's tile spacing
	h := max(imageMapsMinH, imageMapsCell*vg.Length(tallest))
	if w := h*vg.Length(sum) + margin + vg.Length(n-1)*padX; w > imageMapsMaxW {
		h = max((imageMapsMaxW-margin-vg.Length(n-1)*padX)/vg.Length(sum), 1)
	}
	titleH := panelTitleHeight()
	noteH := textStyle(sizeNote, color.Black, draw.XCenter, draw.YBottom).Height("M") + 2
	rows := []vg.Length{titleH + h, titleH + h + noteH, titleH + h + 2*noteH}
	var keyH vg.Length
	keys := make([]Panel, n)
	width := margin + vg.Length(n-1)*padX
	for i, r := range rs {
		colW := h * vg.Length(aspects[i])
		width += colW
		if r.Key != nil {
			kp := TokenKeyPanel{Key: r.Key}
			keys[i] = kp
			keyH = max(keyH, kp.Height(colW))
		}
	}
	if keyH > 0 {
		rows = append(rows, keyH)
	}
	fig := &Figure{Rows: len(rows), Cols: n, Width: width, ColWeights: aspects}
	fig.Height = margin + vg.Length(len(rows)-1)*padY
	for _, rh := range rows {
		fig.Height += rh
		fig.RowWeights = append(fig.RowWeights, float64(rh))
	}
	fig.Panels = make([]Panel, len(rows)*n)
	for i, r := range rs {
		fig.Panels[i] = LayoutPanel{Env: r.Env, Title: "(a) " + r.title() + ": layout"}
		fig.Panels[n+i] = ClonePlacesPanel{R: r}
		fig.Panels[2*n+i] = RecoveredGraphPanel{R: r, Images: r.TokenImages != nil || r.TokenClassImages != nil}
		if keyH > 0 {
			fig.Panels[3*n+i] = keys[i]
		}
	}
	return fig, nil
}

// Geometry of ImageMaps (points).
const (
	imageMapsCell = 30   // per row of the tallest grid
	imageMapsMinH = 230  // the least drawing height
	imageMapsMaxW = 1300 // the widest figure (2600 PNG pixels)
)
