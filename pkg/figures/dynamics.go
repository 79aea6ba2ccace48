package figures

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// Record is one line of a pipeline run's history.jsonl (the fields of
// pipeline.Record, which converts to it: figures.Record(r)).
type Record struct {
	Step       int      `json:"step"` // 1-based within the phase
	Phase      string   `json:"phase"`
	Rec        float64  `json:"rec"`
	Commit     float64  `json:"commit"`
	NLLPerStep float64  `json:"nll_per_step"`
	Div        float64  `json:"div"`
	Lambda     float64  `json:"lambda"`
	Perplexity float64  `json:"perplexity"`
	Seconds    float64  `json:"seconds"`
	Churn      *float64 `json:"churn,omitempty"` // probe tokens changed since the last checkpoint
	Event      string   `json:"event,omitempty"`
}

// HistoryLimit bounds a history.jsonl file: a line per warm-up step, joint iteration
// and finalisation iteration.
var HistoryLimit = inputfile.Limit{Format: "history file", Bytes: 1 << 30}

// ReadHistory reads a history.jsonl file (one Record per line; blank lines are
// skipped). Errors name path:line.
func ReadHistory(path string) ([]Record, error) {
	f, err := inputfile.Open(path, HistoryLimit)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	defer f.Close()
	return DecodeHistory(f, path)
}

// DecodeHistory reads history records, one JSON object per line, from r; name
// labels errors (name:line: reason).
func DecodeHistory(r io.Reader, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec Record
		dec := json.NewDecoder(strings.NewReader(text))
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if rec.Phase == "" {
			return nil, fmt.Errorf("%s:%d: phase: missing", name, line)
		}
		for _, v := range []float64{rec.Rec, rec.Commit, rec.NLLPerStep, rec.Div, rec.Lambda, rec.Perplexity} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: non-finite value", name, line)
			}
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return out, nil
}

// phaseSpan is a run of consecutive records of one phase: records [From, To).
type phaseSpan struct {
	Phase    string
	From, To int
}

// phaseSpans splits the history into consecutive phases.
func phaseSpans(h []Record) []phaseSpan {
	var out []phaseSpan
	for i, r := range h {
		if len(out) == 0 || out[len(out)-1].Phase != r.Phase {
			out = append(out, phaseSpan{Phase: r.Phase, From: i})
		}
		out[len(out)-1].To = i + 1
	}
	return out
}

// phaseNames are the display names of the pipeline's phases.
var phaseNames = map[string]string{"warmup": "1 VQ-VAE warm-up", "joint": "2 joint", "final": "3 finalisation (encoder frozen)"}

// phaseFills shade the phases in turn.
var phaseFills = []color.RGBA{{0xe8, 0xf0, 0xfb, 0xff}, {0xfd, 0xf0, 0xdc, 0xff}, {0xe6, 0xf5, 0xe6, 0xff}}

// series colours of the line plots.
var seriesColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
}

// dynTerm is one plotted history term.
type dynTerm struct {
	name  string
	get   func(Record) float64
	exact bool // a schedule, not a noisy estimate: drawn as is, not smoothed
}

// dynPanel is one panel of TrainingDynamics: its terms, on a log scale or not.
type dynPanel struct {
	title string
	terms []dynTerm
	log   bool
}

// TrainingDynamics draws paper Figure 6: every term of the loss history of a
// pipeline run against the step (the records in file order, numbered across the
// phases): reconstruction and commitment losses (log scale), the gradCSCG NLL per
// step (soft in the joint phase, hard in the finalisation), the diversity
// penalty, λ_t and the codebook perplexity, and where it was measured (the
// label-free stop) the token churn at the checkpoints. Each term is drawn in the phases
// where it is recorded (not all zero), raw in a light line and as a moving average;
// the phases are shaded and named, and events are marked by vertical lines
// through every panel, one colour and dash pattern per kind of event, the same in
// every figure (eventKinds: rollbacks red, pruning purple, …), each kind named
// once in the legend under the plots, in eventKinds order.
func TrainingDynamics(h []Record) (*Figure, error) {
	if len(h) == 0 {
		return nil, errors.New("figures.TrainingDynamics: empty history")
	}
	spans := phaseSpans(h)
	panels := []dynPanel{
		{"reconstruction loss L_rec and commitment loss L_commit", []dynTerm{{name: "L_rec", get: func(r Record) float64 { return r.Rec }}, {name: "L_commit", get: func(r Record) float64 { return r.Commit }}}, true},
		{"gradCSCG NLL per step (nats)", []dynTerm{{name: "−ℓ/T", get: func(r Record) float64 { return r.NLLPerStep }}}, false},
		{"diversity penalty log K − H(ρ̄)", []dynTerm{{name: "L_div", get: func(r Record) float64 { return r.Div }}}, false},
		{"λ_t (gradCSCG weight)", []dynTerm{{name: "λ", get: func(r Record) float64 { return r.Lambda }, exact: true}}, false},
		{"codebook perplexity", []dynTerm{{name: "perplexity", get: func(r Record) float64 { return r.Perplexity }}}, false},
	}
	if slices.ContainsFunc(h, func(r Record) bool { return r.Churn != nil }) { // the label-free stop's measure
		panels = append(panels, dynPanel{"token churn: share of the probe frames whose token changed since the last checkpoint", []dynTerm{{name: "churn", exact: true, get: func(r Record) float64 {
			if r.Churn == nil {
				return math.NaN() // not measured at this step
			}
			return *r.Churn
		}}}, false})
	}
	// Phase p occupies x ∈ [p, p+1]: record i of a span of n records sits at
	// p + (i − From + 1)/n, so that short phases (the joint one) stay readable.
	xOf := make([]float64, len(h))
	for p, sp := range spans {
		n := float64(sp.To - sp.From)
		for i := sp.From; i < sp.To; i++ {
			xOf[i] = float64(p) + float64(i-sp.From+1)/n
		}
	}
	events, kinds := historyEvents(h, xOf)
	var keys []legendKey
	plots := make([][]*plot.Plot, len(panels))
	for pi, pan := range panels {
		p := NewPlot(pan.title)
		p.X.Min, p.X.Max = 0, float64(len(spans))
		p.X.Tick.Marker = phaseTicks{spans: spans, labels: pi == len(panels)-1}
		if pi == len(panels)-1 {
			p.X.Label.Text = "step within each phase (phases drawn at equal width)"
		}
		if pan.log {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		var lines []plot.Plotter
		for ti, term := range pan.terms {
			col := seriesColors[ti%len(seriesColors)]
			first := true
			for _, sp := range spans {
				raw := plotter.XYs{}
				defined := false
				for i := sp.From; i < sp.To; i++ {
					if term.get(h[i]) != 0 {
						defined = true
					}
				}
				if !defined {
					continue
				}
				for i := sp.From; i < sp.To; i++ {
					v := term.get(h[i])
					if math.IsNaN(v) || pan.log && v <= 0 {
						continue
					}
					raw = append(raw, plotter.XY{X: xOf[i], Y: v})
					lo, hi = min(lo, v), max(hi, v)
				}
				if len(raw) == 0 {
					continue
				}
				var smooth *plotter.Line
				var err error
				if term.exact {
					smooth, err = plotter.NewLine(raw)
				} else {
					var light *plotter.Line
					if light, err = plotter.NewLine(raw); err != nil {
						return nil, fmt.Errorf("figures.TrainingDynamics: %s: %w", term.name, err)
					}
					light.Color = lighten(col, 0.65)
					light.Width = 0.6
					lines = append(lines, light)
					smooth, err = plotter.NewLine(movingAverage(raw, max(1, len(raw)/40)))
				}
				if err != nil {
					return nil, fmt.Errorf("figures.TrainingDynamics: %s: %w", term.name, err)
				}
				smooth.Color = col
				smooth.Width = 1.4
				lines = append(lines, smooth)
				if first && len(pan.terms) > 1 {
					// The panel's own terms are named in the panel (top, over the
					// finalisation, where these curves do not run; left of its end,
					// where the pruning line usually is).
					p.Legend.Add(term.name, smooth)
					p.Legend.Top, p.Legend.YOffs, p.Legend.XOffs = true, -vg.Length(14), -vg.Length(70)
					p.Legend.TextStyle.Font.Size = sizeText
					first = false
				}
			}
		}
		if math.IsInf(lo, 0) { // nothing recorded: an empty panel with a fixed range
			lo, hi = 0, 1
			if pan.log {
				lo, hi = 1e-3, 1
			}
		}
		if hi <= lo {
			hi = lo + math.Max(math.Abs(lo)*0.1, 1e-3)
		}
		// Headroom: the top panel carries the phase names above the curves.
		pad, top := (hi-lo)*0.05, 1.2
		if pi == 0 {
			pad, top = (hi-lo)*0.2, 4
		}
		if pan.log {
			p.Y.Min, p.Y.Max = lo/1.2, hi*top
		} else {
			p.Y.Min, p.Y.Max = lo-(hi-lo)*0.05, hi+pad
		}
		p.Add(&phaseShading{spans: spans, events: events, names: pi == 0})
		p.Add(lines...)
		plots[pi] = []*plot.Plot{p}
	}
	keys = append(keys, kinds...)
	w, hgt := vg.Length(560), vg.Length(130*len(panels))
	strip := legendStrip(keys)
	sh := strip.height(w)
	return &Figure{Rows: 1, Cols: 1, Panels: []Panel{stacked{top: alignedPlots(plots), bottom: strip, bottomH: sh}},
		Width: w, Height: hgt + sh, Title: "Training dynamics"}, nil
}

// movingAverage is the centred moving average of ys over 2·half+1 points
// (truncated at the ends).
func movingAverage(xy plotter.XYs, half int) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		lo, hi := max(0, i-half), min(len(xy), i+half+1)
		var s float64
		for _, p := range xy[lo:hi] {
			s += p.Y
		}
		out[i] = plotter.XY{X: xy[i].X, Y: s / float64(hi-lo)}
	}
	return out
}

// phaseShading fills the x-range of every phase with a light colour, separates the
// phases by grey lines, marks events with dashed vertical lines (unlabelled: the
// figure's legend names them, so that close events do not pile up labels), and
// (names) writes the phase names at the top.
type phaseShading struct {
	spans  []phaseSpan
	events []event
	names  bool
}

// event is a history event at x (the phase-scaled axis), drawn in its kind's style.
type event struct {
	x    float64
	kind int // index into eventKinds
}

// eventKind is a kind of history event: how to recognise its text, its legend
// label and its line, the same in every figure.
type eventKind struct {
	match  func(text string) bool
	label  string
	color  color.RGBA
	dashes []vg.Length
}

// eventKinds are the kinds of events the pipeline records, in legend order; the
// last matches every other text. Rollbacks are red.
var eventKinds = []eventKind{
	{func(t string) bool { return strings.HasPrefix(t, "intervention:") }, "rollback to a healthy checkpoint (anti-collapse)",
		eventColor, []vg.Length{4, 2}},
	{func(t string) bool { return strings.HasPrefix(t, "collapse") }, "perception rollback (codebook collapse)",
		color.RGBA{0xf0, 0x80, 0x80, 0xff}, []vg.Length{1.5, 1.5}},
	{func(t string) bool { return strings.HasPrefix(t, "non-finite step") }, "non-finite step not applied",
		color.RGBA{0x20, 0x20, 0x20, 0xff}, []vg.Length{1, 2}},
	{func(t string) bool { return strings.Contains(t, "α_div anneal starts") }, "tokens settled: α_div anneal starts",
		color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, []vg.Length{4, 2}},
	{func(t string) bool { return strings.Contains(t, "joint phase ends") }, "tokens settled: joint phase ends",
		color.RGBA{0x00, 0x5a, 0x00, 0xff}, []vg.Length{6, 2}},
	{func(t string) bool { return strings.HasPrefix(t, "budget ×2") }, "clone budget doubled",
		color.RGBA{0x1f, 0x5f, 0xd6, 0xff}, []vg.Length{4, 2}},
	{func(t string) bool { return strings.HasPrefix(t, "pruned ") }, "unvisited states pruned",
		color.RGBA{0x6a, 0x3d, 0x9a, 0xff}, []vg.Length{4, 2}},
	{func(string) bool { return true }, "other event",
		color.RGBA{0x8c, 0x56, 0x4b, 0xff}, []vg.Length{2, 2}},
}

// eventKindOf returns the index in eventKinds of one event text.
func eventKindOf(text string) int {
	for i, k := range eventKinds {
		if k.match(text) {
			return i
		}
	}
	return len(eventKinds) - 1
}

// historyEvents returns the events of h (a record's Event may join several with
// "; ") at their x positions xOf, and the legend keys of the kinds that occur, in
// eventKinds order: the label, with its count when the kind occurs more than once
// ("(×3)"); a kind that occurs once with a short text of its own (pruned 21
// states, an unknown event) shows that text.
func historyEvents(h []Record, xOf []float64) ([]event, []legendKey) {
	var events []event
	counts := make([]int, len(eventKinds))
	texts := make([]string, len(eventKinds))
	for i, r := range h {
		if r.Event == "" {
			continue
		}
		for _, text := range strings.Split(r.Event, "; ") {
			text = strings.TrimSpace(text)
			if text == "" {
				continue
			}
			k := eventKindOf(text)
			counts[k]++
			texts[k] = text
			events = append(events, event{x: xOf[i], kind: k})
		}
	}
	var keys []legendKey
	for k, n := range counts {
		if n == 0 {
			continue
		}
		kind := eventKinds[k]
		label := kind.label
		switch {
		case n > 1:
			label = fmt.Sprintf("%s (×%d)", label, n)
		case k == len(eventKinds)-1 || strings.HasPrefix(texts[k], "pruned "):
			label = shorten(texts[k], 32)
		}
		keys = append(keys, legendKey{color: kind.color, dashes: kind.dashes, label: label})
	}
	return events, keys
}

// shorten cuts text to at most n runes, marking a cut with "…".
func shorten(text string, n int) string {
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}

// Plot implements plot.Plotter.
func (s *phaseShading) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for i, sp := range s.spans {
		x0, x1 := trX(float64(i)), trX(float64(i+1))
		fillRect(c, vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x1, Y: c.Max.Y}}, phaseFills[i%len(phaseFills)])
		if i > 0 {
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{0x90}, Width: 0.8}, x0, c.Min.Y, x0, c.Max.Y)
		}
		if s.names {
			name := phaseNames[sp.Phase]
			if name == "" {
				name = sp.Phase
			}
			sty := textStyle(sizeNote, color.Gray{0x40}, draw.XLeft, draw.YTop)
			if sty.Width(name) > x1-x0-4 {
				sty.Font.Size = max(sizeNote*(x1-x0-4)/sty.Width(name), sizeMinText)
			}
			c.FillText(sty, vg.Point{X: x0 + 2, Y: c.Max.Y - 2}, name)
		}
	}
	for _, e := range s.events {
		x := trX(e.x)
		k := eventKinds[e.kind]
		c.StrokeLine2(draw.LineStyle{Color: k.color, Width: 1, Dashes: k.dashes}, x, c.Min.Y, x, c.Max.Y)
	}
}

// phaseTicks marks the step numbers within each phase on the phase-scaled axis
// of TrainingDynamics (phase p spans [p, p+1]); labels off gives unlabelled ticks
// for the stacked panels above the bottom one.
type phaseTicks struct {
	spans  []phaseSpan
	labels bool
}

// Ticks implements plot.Ticker.
func (t phaseTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for p, sp := range t.spans {
		n := float64(sp.To - sp.From)
		for _, tk := range (plot.DefaultTicks{}).Ticks(0, n) {
			if tk.Value < 0 || tk.Value > 0.85*n { // leave room for the next phase's 0
				continue
			}
			x := float64(p) + tk.Value/n
			if x < lo || x > hi {
				continue
			}
			if tk.Label != "" { // whole step numbers: "250", not "250.00"
				tk.Label = strconv.FormatFloat(tk.Value, 'f', -1, 64)
			}
			if !t.labels {
				tk.Label = ""
			}
			tk.Value = x
			out = append(out, tk)
		}
	}
	return out
}

// alignedPlots draws a grid of plots with aligned data areas (plot.Align).
type alignedPlots [][]*plot.Plot

// Draw implements Panel.
func (a alignedPlots) Draw(c draw.Canvas) {
	if len(a) == 0 || len(a[0]) == 0 {
		return
	}
	t := draw.Tiles{Rows: len(a), Cols: len(a[0]), PadX: 10, PadY: 6, PadTop: 2, PadBottom: 2, PadLeft: 2, PadRight: 8}
	canvases := plot.Align(a, t, c)
	for i, row := range a {
		for j, p := range row {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
}
