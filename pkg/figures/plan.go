package figures

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// Colours of the planning figure.
var (
	startBeliefColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	goalBeliefColor  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff} // orange
	pathColor        = color.RGBA{R: 0x20, G: 0x20, B: 0x20, A: 0xff}
	goalColor        = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
)

// PlanTrialPanel draws one closed-loop planning trial traced with
// plan.EvalConfig.Trace in the true room: the layout in pale class colours; the
// agent's belief after its localisation walk (blue) and at the end of the
// demonstration that defines the goal (orange), each as a disc per place whose
// area is the belief's share there; the executed walk as a line from the start
// (filled circle) to where it ended (filled square); the true goal (ring). The
// beliefs are over the map's states and are drawn at the true places the
// evaluation assigns to those states (StatePlace, χ of evaluate.Report), so the
// labels are used only to draw. Grid environments only.
type PlanTrialPanel struct {
	Env        *gridworld.Env
	Trial      plan.Trial
	Mode       plan.Mode
	StatePlace []int  // χ(s) per state, −1 for a state no place was assigned
	Title      string // "" draws the trial's outcome
}

// placeMass projects a belief over states onto the true places through χ.
func placeMass(belief []float64, chi []int, places int) []float64 {
	m := make([]float64, places)
	total := 0.0
	for s, b := range belief {
		if s < len(chi) && chi[s] >= 0 && chi[s] < places {
			m[chi[s]] += b
			total += b
		}
	}
	if total > 0 {
		for g := range m {
			m[g] /= total
		}
	}
	return m
}

// Draw implements Panel.
func (p PlanTrialPanel) Draw(c draw.Canvas) {
	e, t := p.Env, p.Trial
	title := p.Title
	if title == "" {
		outcome := "missed the goal"
		if t.Success {
			outcome = "reached the goal"
		}
		steps := "steps"
		if t.Steps == 1 {
			steps = "step"
		}
		title = fmt.Sprintf("pair %d, %s: %s in %d %s (shortest %d)", t.Pair, p.Mode, outcome, t.Steps, steps, t.Shortest)
	}
	c = panelTitle(c, title)
	if e == nil || e.IsGraph() {
		panelMessage(c, "grid environments only")
		return
	}
	f := fitFrame(c, 0, float64(e.Cols), float64(-e.Rows), 0, 2)
	border := draw.LineStyle{Color: lineColor, Width: max(min(f.s/30, 0.8), 0.3)}
	for r := range e.Rows {
		for col := range e.Cols {
			rect := f.cell(r, col)
			if cls := e.Cells[r*e.Cols+col]; cls == gridworld.Wall {
				fillRect(c, rect, wallColor)
			} else {
				fillRect(c, rect, lighten(ClassColor(cls), 0.7))
			}
			strokeRect(c, rect, border)
		}
	}
	at := func(g int) vg.Point {
		rc := e.Coord[g]
		xy := cellCenter(rc[0], rc[1])
		return f.pt(xy[0], xy[1])
	}
	// Beliefs: a disc per place, area ∝ mass (a whole cell's inscribed disc at 1),
	// the two beliefs side by side in the cell.
	for i, b := range [][]float64{t.StartBelief, t.GoalBelief} {
		if len(b) == 0 {
			continue
		}
		col := []color.RGBA{startBeliefColor, goalBeliefColor}[i]
		dx := vg.Length(float64(2*i-1)) * f.s * 0.2
		for g, m := range placeMass(b, p.StatePlace, e.NumPlaces()) {
			if m < 0.01 {
				continue
			}
			ctr := at(g)
			ctr.X += dx
			fillCircle(c, ctr, f.s*0.22*vg.Length(math.Sqrt(m)), col, nil, 0)
		}
	}
	// The executed walk.
	if len(t.Path) > 1 {
		pts := make([]vg.Point, len(t.Path))
		for i, g := range t.Path {
			pts[i] = at(g)
		}
		c.StrokeLines(draw.LineStyle{Color: pathColor, Width: max(f.s/14, 1)}, pts)
	}
	r := f.s * 0.16
	fillCircle(c, at(t.Start), r, pathColor, nil, 0)
	end := at(t.End)
	fillRect(c, vg.Rectangle{Min: vg.Point{X: end.X - r, Y: end.Y - r}, Max: vg.Point{X: end.X + r, Y: end.Y + r}}, pathColor)
	c.SetLineStyle(draw.LineStyle{Color: goalColor, Width: max(f.s/12, 1)})
	c.Stroke(circlePath(at(t.Goal), f.s*0.34))
}

// PlanTrials draws traced planning trials side by side (PlanTrialPanel) with a key
// below them. mode names the execution mode the trials ran in.
func PlanTrials(env *gridworld.Env, mode plan.Mode, statePlace []int, trials ...plan.Trial) (*Figure, error) {
	if len(trials) == 0 {
		return nil, errors.New("figures.PlanTrials: no trial")
	}
	if env == nil || env.IsGraph() {
		return nil, errors.New("figures.PlanTrials: needs a grid environment")
	}
	for _, t := range trials {
		if len(t.Path) == 0 {
			return nil, fmt.Errorf("figures.PlanTrials: pair %d was not traced (plan.EvalConfig.Trace)", t.Pair)
		}
	}
	cols := min(len(trials), 3)
	rows := (len(trials) + cols - 1) / cols
	grid := &Figure{Rows: rows, Cols: cols}
	for _, t := range trials {
		grid.Panels = append(grid.Panels, PlanTrialPanel{Env: env, Trial: t, Mode: mode, StatePlace: statePlace})
	}
	return &Figure{Rows: 1, Cols: 1, Width: tileW * vg.Length(cols), Height: tileH*vg.Length(rows) + planKeyHeight + titleHeight,
		Title:  fmt.Sprintf("Planning in %s with the learned map (%s)", env.Name, mode),
		Panels: []Panel{withKey{Body: grid, Key: planKey{}, Height: planKeyHeight}}}, nil
}

// planKeyHeight is the height of the planning figure's key.
const planKeyHeight = 24

// withKey draws Body above a key strip Height points high.
type withKey struct {
	Body, Key Panel
	Height    vg.Length
}

func (w withKey) Draw(c draw.Canvas) {
	w.Body.Draw(draw.Crop(c, 0, 0, w.Height, 0))
	w.Key.Draw(draw.Crop(c, 0, 0, 0, -(c.Max.Y - c.Min.Y - w.Height)))
}

// planKey is the key of the planning figure.
type planKey struct{}

func (planKey) Draw(c draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	x := c.Min.X + 8
	sty := textStyle(sizeLabel, color.Black, draw.XLeft, draw.YCenter)
	item := func(drawMark func(p vg.Point), label string) {
		drawMark(vg.Point{X: x + 5, Y: y})
		c.FillText(sty, vg.Point{X: x + 14, Y: y}, label)
		x += 14 + sty.Width(label) + 14
	}
	item(func(p vg.Point) { fillCircle(c, p, 5, startBeliefColor, nil, 0) }, "belief after localising")
	item(func(p vg.Point) { fillCircle(c, p, 5, goalBeliefColor, nil, 0) }, "belief at the end of the demonstration")
	item(func(p vg.Point) { fillCircle(c, p, 4, pathColor, nil, 0) }, "start")
	item(func(p vg.Point) {
		fillRect(c, vg.Rectangle{Min: vg.Point{X: p.X - 4, Y: p.Y - 4}, Max: vg.Point{X: p.X + 4, Y: p.Y + 4}}, pathColor)
	}, "end of the walk")
	item(func(p vg.Point) {
		c.SetLineStyle(draw.LineStyle{Color: goalColor, Width: 1.5})
		c.Stroke(circlePath(p, 5))
	}, "goal")
}
