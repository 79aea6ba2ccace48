package figures

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// ThresholdSweep draws the paper's Table 4 as a plot: the projected-map precision,
// recall and F1 against the threshold η (log scale; Report.ProjectedMap), one line
// per report (seeds, environments), and as a wide pale band of the same colour under
// it the Viterbi-path map's score at its cutoff (Report.ViterbiMap), the
// sharper read-out of Sec. 5.3. Reports are labelled "env seed N".
func ThresholdSweep(reports ...*evaluate.Report) (*Figure, error) {
	if len(reports) == 0 {
		return nil, errors.New("figures.ThresholdSweep: no report")
	}
	metrics := []struct {
		name string
		get  func(evaluate.EdgeScore) float64
	}{
		{"precision", func(s evaluate.EdgeScore) float64 { return s.Precision }},
		{"recall", func(s evaluate.EdgeScore) float64 { return s.Recall }},
		{"F1", func(s evaluate.EdgeScore) float64 { return s.F1 }},
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range reports {
		if r == nil {
			return nil, fmt.Errorf("figures.ThresholdSweep: report %d is nil", i)
		}
		if len(r.ProjectedMap) == 0 {
			return nil, fmt.Errorf("figures.ThresholdSweep: report %d (%s seed %d) has no projected_map sweep", i, r.Env, r.Seed)
		}
		for _, s := range r.ProjectedMap {
			if !(s.Threshold > 0) || math.IsInf(s.Threshold, 0) {
				return nil, fmt.Errorf("figures.ThresholdSweep: report %d: threshold %g must be positive for a log axis", i, s.Threshold)
			}
			lo, hi = min(lo, s.Threshold), max(hi, s.Threshold)
		}
	}
	if hi <= lo {
		lo, hi = lo/2, hi*2
	}
	row := make([]*plot.Plot, len(metrics))
	var keys []legendKey
	for mi, m := range metrics {
		p := NewPlot("projected map: " + m.name)
		p.X.Label.Text = "threshold η"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sweepTicks{}
		p.X.Min, p.X.Max = lo/1.25, hi*1.25
		p.Y.Min, p.Y.Max = 0, 1.05
		p.Add(plotter.NewGrid())
		var lines []plot.Plotter // drawn after every band, so no run's band hides another's line
		for ri, r := range reports {
			col := seriesColors[ri%len(seriesColors)]
			sweep := append([]evaluate.ThresholdScore(nil), r.ProjectedMap...)
			sort.Slice(sweep, func(a, b int) bool { return sweep[a].Threshold < sweep[b].Threshold })
			xy := make(plotter.XYs, len(sweep))
			for i, s := range sweep {
				xy[i] = plotter.XY{X: s.Threshold, Y: m.get(s.EdgeScore)}
			}
			line, points, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("figures.ThresholdSweep: %w", err)
			}
			line.Color, line.Width = col, 1.3
			points.Color, points.Shape = col, draw.CircleGlyph{}
			points.Radius = 2.2
			vit, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: m.get(r.ViterbiMap.EdgeScore)}, {X: p.X.Max, Y: m.get(r.ViterbiMap.EdgeScore)}})
			if err != nil {
				return nil, fmt.Errorf("figures.ThresholdSweep: %w", err)
			}
			// A wide pale band under the run's line: visible where the two coincide
			// (recall 1 = 1), never hiding the line.
			vit.Color, vit.Width = pale(col), 5
			p.Add(vit)
			lines = append(lines, line, points)
			if mi == 0 {
				keys = append(keys, legendKey{color: col, label: fmt.Sprintf("%s seed %d", r.Env, r.Seed)})
			}
		}
		p.Add(lines...)
		row[mi] = p
	}
	vitKey := legendKey{color: pale(seriesColors[0]), width: 5,
		label: fmt.Sprintf("Viterbi-path map (> %g%% of T)", 100*reports[0].ViterbiMap.CutoffFraction)}
	if len(reports) > 1 {
		vitKey.color = pale(color.Gray{0x40})
		vitKey.label += ", in each run's colour"
	}
	keys = append(keys, vitKey)
	strip := legendStrip(keys)
	return &Figure{Rows: 1, Cols: 1, Panels: []Panel{stacked{top: alignedPlots{row}, bottom: strip, bottomH: strip.height(760)}},
		Width: 760, Height: 270 + strip.height(760), Title: "Map-edge scores vs threshold (Table 4)"}, nil
}

// sweepTicks marks a log axis: labelled ticks at 1 and 3 × 10^k (also at 2 and 5
// × 10^k when the axis spans less than a decade), unlabelled ones at the other
// integer multiples. Tick values are rounded to 6 significant digits, so that the
// labels read 0.3, not 0.30000000000000004.
type sweepTicks struct{}

// Ticks implements plot.Ticker.
func (sweepTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	labelled := map[int]bool{1: true, 3: true}
	if hi/lo < 10 {
		labelled[2], labelled[5] = true, true
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m <= 9; m++ {
			v := roundSig(float64(m)*math.Pow(10, e), 6)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] {
				t.Label = fmt.Sprintf("%g", v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// roundSig rounds v to digits significant digits.
func roundSig(v float64, digits int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// legendKey is one entry of a legendStrip: a line sample and its label.
type legendKey struct {
	color  color.Color
	dashes []vg.Length // nil: solid
	width  vg.Length   // line width; 0: 1.5
	label  string
}

// pale is c at 35% opacity (a reference band under a line of colour c).
func pale(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 89} // 0.35 × 255
}

// legendStrip draws legend entries side by side, wrapping into rows; it sits
// under plots instead of on top of their data.
type legendStrip []legendKey

const (
	legendRowH   = 14 // points per row
	legendSample = 18 // line sample length
)

// layout returns the position (row, x offset) of every entry for width w.
func (l legendStrip) layout(w vg.Length) (rows []int, xs []vg.Length) {
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	x, row := vg.Length(0), 0
	for _, k := range l {
		ew := legendSample + 4 + sty.Width(k.label) + 14
		if x > 0 && x+ew > w {
			x, row = 0, row+1
		}
		rows = append(rows, row)
		xs = append(xs, x)
		x += ew
	}
	return rows, xs
}

// height is the strip's height at width w.
func (l legendStrip) height(w vg.Length) vg.Length {
	if len(l) == 0 {
		return 0
	}
	rows, _ := l.layout(w - 20)
	return vg.Length(rows[len(rows)-1]+1)*legendRowH + 6
}

// Draw implements Panel.
func (l legendStrip) Draw(c draw.Canvas) {
	rows, xs := l.layout(c.Max.X - c.Min.X - 20)
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	for i, k := range l {
		x := c.Min.X + 10 + xs[i]
		y := c.Max.Y - 3 - legendRowH/2 - vg.Length(rows[i])*legendRowH
		ls := draw.LineStyle{Color: k.color, Width: 1.5}
		if k.width > 0 {
			ls.Width = k.width
		}
		ls.Dashes = k.dashes
		c.StrokeLine2(ls, x, y, x+legendSample, y)
		c.FillText(sty, vg.Point{X: x + legendSample + 4, Y: y}, k.label)
	}
}

// stacked draws top above a band of height bottomH holding bottom.
type stacked struct {
	top, bottom Panel
	bottomH     vg.Length
}

// Draw implements Panel.
func (s stacked) Draw(c draw.Canvas) {
	h := min(s.bottomH, c.Max.Y-c.Min.Y)
	if s.top != nil {
		s.top.Draw(draw.Crop(c, 0, 0, h, 0))
	}
	if s.bottom != nil {
		s.bottom.Draw(draw.Crop(c, 0, 0, 0, -(c.Max.Y - c.Min.Y - h)))
	}
}
