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

// Layouts draws paper Figure 2: the layout of each environment side by side, at
// most four per row (LayoutPanel: one colour per class with its id printed,
// walls grey; graph environments as graphs). It works for every built-in and
// custom environment.
func Layouts(envs ...*gridworld.Env) (*Figure, error) {
	if len(envs) == 0 {
		return nil, errors.New("figures.Layouts: no environment")
	}
	cols := min(len(envs), 4)
	rows := (len(envs) + cols - 1) / cols
	aspect := 1.0 // tallest rows/cols ratio, so tall grids get taller tiles
	for i, e := range envs {
		if e == nil {
			return nil, fmt.Errorf("figures.Layouts: environment %d is nil", i)
		}
		if !e.IsGraph() {
			aspect = max(aspect, float64(e.Rows)/float64(e.Cols))
		}
	}
	aspect = min(aspect, 1.6)
	fig := &Figure{Rows: rows, Cols: cols, Width: vg.Length(cols) * tileW, Height: vg.Length(rows) * (tileH - tileW + tileW*vg.Length(aspect))}
	for _, e := range envs {
		fig.Panels = append(fig.Panels, LayoutPanel{Env: e})
	}
	return fig, nil
}
