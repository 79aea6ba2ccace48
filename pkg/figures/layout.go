package figures

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// LayoutPanel draws an environment's layout (paper Figure 2; Figure 5, top row):
// every cell filled with the colour of its observation class (ClassColor) and the
// class id printed in it, walls grey. A graph environment (three_rooms) is drawn
// as its place graph (nodes coloured and labelled by class, laid out by
// LayoutGraph).
type LayoutPanel struct {
	Env   *gridworld.Env
	Title string // "" draws the environment's name and size
}

// Draw implements Panel.
func (p LayoutPanel) Draw(c draw.Canvas) {
	if p.Env == nil {
		return
	}
	title := p.Title
	if title == "" {
		title = envTitle(p.Env)
	}
	c = panelTitle(c, title)
	if p.Env.IsGraph() {
		drawTrueGraph(c, p.Env)
		return
	}
	e := p.Env
	f := fitFrame(c, 0, float64(e.Cols), float64(-e.Rows), 0, 2)
	border := draw.LineStyle{Color: lineColor, Width: max(min(f.s/30, 0.8), 0.3)}
	fontSize := max(min(f.s*0.42, 12), 4)
	for r := range e.Rows {
		for col := range e.Cols {
			rect := f.cell(r, col)
			cls := e.Cells[r*e.Cols+col]
			if cls == gridworld.Wall {
				fillRect(c, rect, wallColor)
				strokeRect(c, rect, border)
				continue
			}
			fill := ClassColor(cls)
			fillRect(c, rect, fill)
			strokeRect(c, rect, border)
			label := strconv.Itoa(cls)
			sty := textStyle(fontSize, textOn(fill), draw.XCenter, draw.YCenter)
			if w := sty.Width(label); w > f.s*0.9 { // long ids (custom layouts) shrink to fit
				sty.Font.Size = max(fontSize*f.s*0.9/w, 3)
			}
			c.FillText(sty, vg.Point{X: (rect.Min.X + rect.Max.X) / 2, Y: (rect.Min.Y + rect.Max.Y) / 2}, label)
		}
	}
}

// envTitle is "name (R×C, P places, K classes)" or, for graphs, "(graph, ...)".
func envTitle(e *gridworld.Env) string {
	shape := "graph"
	if !e.IsGraph() {
		shape = fmt.Sprintf("%d×%d", e.Rows, e.Cols)
	}
	return fmt.Sprintf("%s (%s, %d places, %d classes)", e.Name, shape, e.NumPlaces(), len(e.ClassesUsed()))
}

// placePositions returns the layout coordinate of every place: the cell centre on
// grids, the LayoutGraph position of the true map on graph environments.
func placePositions(e *gridworld.Env) [][2]float64 {
	pos := make([][2]float64, e.NumPlaces())
	if !e.IsGraph() {
		for g, rc := range e.Coord {
			pos[g] = cellCenter(rc[0], rc[1])
		}
		return pos
	}
	pts, err := LayoutGraph(e.NumPlaces(), e.Edges(), nil)
	if err != nil { // cannot happen: Edges are valid place pairs
		for g := range pos {
			a := 2 * math.Pi * float64(g) / float64(len(pos))
			pos[g] = [2]float64{math.Cos(a), math.Sin(a)}
		}
		return pos
	}
	return pts
}

// drawTrueGraph draws the true place graph of e: nodes at placePositions coloured
// and labelled by class, grids with their walls shaded behind.
func drawTrueGraph(c draw.Canvas, e *gridworld.Env) {
	pos := placePositions(e)
	var f frame
	radius := 0.3
	if e.IsGraph() {
		minX, maxX, minY, maxY := boundsOf(pos, 0.55)
		f = fitFrame(c, minX, maxX, minY, maxY, 2)
		radius = 0.32
	} else {
		f = fitFrame(c, 0, float64(e.Cols), float64(-e.Rows), 0, 2)
		for r := range e.Rows {
			for col := range e.Cols {
				if e.Cells[r*e.Cols+col] == gridworld.Wall {
					fillRect(c, f.cell(r, col), lighten(wallColor, 0.45))
				}
			}
		}
	}
	nodes := make([]nodeStyle, len(pos))
	for g := range nodes {
		nodes[g] = nodeStyle{Fill: ClassColor(e.Class[g]), Label: strconv.Itoa(e.Class[g])}
	}
	drawGraph(c, f, pos, e.Edges(), nil, nodes, radius)
}

// TrueGraphPanel draws an environment's true place graph (paper Figure 3, top
// row): a node per place, coloured and labelled by its observation class, an edge
// per pair of places one action apart; on grids nodes sit at their cells and
// walls are shaded.
type TrueGraphPanel struct {
	Env   *gridworld.Env
	Title string // "" draws the environment's name and size
}

// Draw implements Panel.
func (p TrueGraphPanel) Draw(c draw.Canvas) {
	if p.Env == nil {
		return
	}
	title := p.Title
	if title == "" {
		title = "true map: " + envTitle(p.Env)
	}
	drawTrueGraph(panelTitle(c, title), p.Env)
}

// Panel sizes (points) of the multi-panel figures.
const (
	tileW = 250
	tileH = 260
)

// Layouts draws paper Figure 2: the layout of each environment, at most four per
// row (LayoutPanel: one colour per class with its id printed, walls grey; graph
// environments as graphs). It works for every built-in and custom environment.
// Panels have square cells and fill their tiles: within a row every panel has
// the same height and a width in proportion to its grid's columns/rows, the
// row filling the figure's width (justifiedRows), so a tall grid such as
// two_rooms (13×9) is as tall as its square neighbours.
func Layouts(envs ...*gridworld.Env) (*Figure, error) {
	if len(envs) == 0 {
		return nil, errors.New("figures.Layouts: no environment")
	}
	cols := min(len(envs), 4)
	j := justifiedRows{perRow: cols, titleH: panelTitleHeight()}
	for i, e := range envs {
		if e == nil {
			return nil, fmt.Errorf("figures.Layouts: environment %d is nil", i)
		}
		aspect := 1.0 // graphs are laid out in a square
		if !e.IsGraph() {
			aspect = float64(e.Cols) / float64(max(e.Rows, 1))
		}
		j.panels = append(j.panels, LayoutPanel{Env: e})
		j.aspects = append(j.aspects, aspect)
	}
	w := vg.Length(cols) * tileW
	h := j.height(w - 8) // Figure.Draw pads its single tile by 4 points a side
	return &Figure{Rows: 1, Cols: 1, Panels: []Panel{j}, Width: w, Height: h + 8}, nil
}

// justifiedRows lays panels out in rows of perRow, like a justified photo
// gallery: panel i's drawing has width aspects[i] × the row's height (plus a
// title band of titleH above it); a full row's height makes the row exactly as
// wide as the canvas (at most maxRowAspect × that width), a shorter last row
// takes the height of the row above and is centred. Panels then fill their
// tiles with no margin wasted.
type justifiedRows struct {
	panels  []Panel
	aspects []float64 // drawing width / height of each panel
	perRow  int
	titleH  vg.Length
}

// Spacing of justifiedRows (points).
const (
	justifiedGapX = 8
	justifiedGapY = 8
)

// rowHeights returns the drawing height (without title) of every row for a
// canvas w points wide.
func (j justifiedRows) rowHeights(w vg.Length) []vg.Length {
	var hs []vg.Length
	for from := 0; from < len(j.panels); from += j.perRow {
		to := min(from+j.perRow, len(j.panels))
		sum := 0.0
		for _, a := range j.aspects[from:to] {
			sum += max(a, 0.05)
		}
		free := w - vg.Length(to-from-1)*justifiedGapX
		h := free / vg.Length(sum)
		h = min(h, free*maxRowAspect) // a lone very tall grid stays in bounds
		if to-from < j.perRow && len(hs) > 0 {
			h = min(h, hs[len(hs)-1])
		}
		hs = append(hs, max(h, 1))
	}
	return hs
}

// maxRowAspect caps a row's height at this multiple of the figure's width.
const maxRowAspect = 1.6

// height is the total height of the rows (titles and gaps included) at width w.
func (j justifiedRows) height(w vg.Length) vg.Length {
	hs := j.rowHeights(w)
	var total vg.Length
	for _, h := range hs {
		total += h + j.titleH
	}
	return total + vg.Length(max(len(hs)-1, 0))*justifiedGapY
}

// Draw implements Panel: the rows at the canvas width, scaled down uniformly
// when they are taller than the canvas, centred.
func (j justifiedRows) Draw(c draw.Canvas) {
	cw, ch := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	w := cw
	if th := j.height(w); th > ch && th > 0 {
		// Heights scale with the width (titles and gaps do not): shrink the
		// width until the rows fit.
		for range 30 {
			w *= ch / j.height(w)
			if j.height(w) <= ch*1.0005 {
				break
			}
		}
	}
	hs := j.rowHeights(w)
	y := c.Max.Y - (ch-j.height(w))/2
	for r, h := range hs {
		from := r * j.perRow
		to := min(from+j.perRow, len(j.panels))
		rowW := vg.Length(to-from-1) * justifiedGapX
		for _, a := range j.aspects[from:to] {
			rowW += h * vg.Length(max(a, 0.05))
		}
		x := c.Min.X + (cw-rowW)/2
		for i := from; i < to; i++ {
			pw := h * vg.Length(max(j.aspects[i], 0.05))
			tile := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - j.titleH - h},
				Max: vg.Point{X: x + pw, Y: y},
			}}
			if j.panels[i] != nil {
				j.panels[i].Draw(tile)
			}
			x += pw + justifiedGapX
		}
		y -= h + j.titleH + justifiedGapY
	}
}
