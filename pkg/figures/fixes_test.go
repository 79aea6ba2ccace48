package figures

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestFigureSweepTicks: the log axis of Table 4 is labelled at 1 and 3 × 10^k
// with short labels (no floating-point residue such as 0.30000000000000004),
// at 2 and 5 × 10^k too on axes narrower than a decade, and the other integer
// multiples are unlabelled minor ticks.
func TestFigureSweepTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string // labels in order
		minors int
	}{
		{0.008, 0.375, []string{"0.01", "0.03", "0.1", "0.3"}, 10}, // minor: 0.008, 0.009, 0.02, 0.04…0.09, 0.2
		{0.1, 0.6, []string{"0.1", "0.2", "0.3", "0.5"}, 2},
		{1e-4, 2e-3, []string{"0.0001", "0.0003", "0.001"}, 8}, // minor: 2, 4…9 × 1e-4, 0.002
	} {
		var labels []string
		minors := 0
		for _, tk := range (sweepTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo || tk.Value > tc.hi {
				t.Errorf("[%g, %g]: tick %g outside the axis", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label == "" {
				minors++
				continue
			}
			labels = append(labels, tk.Label)
		}
		if strings.Join(labels, " ") != strings.Join(tc.want, " ") {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.lo, tc.hi, labels, tc.want)
		}
		if minors != tc.minors {
			t.Errorf("[%g, %g]: %d minor ticks, want %d", tc.lo, tc.hi, minors, tc.minors)
		}
	}
	if got := (sweepTicks{}).Ticks(0, 1); got != nil {
		t.Errorf("non-positive axis: ticks %v, want none", got)
	}
}

// TestFigureScaleNearest: every output pixel takes the colour of the source pixel
// under its centre, so an integer enlargement turns each pixel into a k×k block.
func TestFigureScaleNearest(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 2, 2))
	copy(src.Pix, []uint8{0, 100, 200, 255})
	out := scaleNearest(src, 6, 6).(*image.RGBA)
	for y := range 6 {
		for x := range 6 {
			want := src.GrayAt(x/3, y/3).Y
			if got := out.RGBAAt(x, y); got.R != want || got.G != want || got.B != want || got.A != 255 {
				t.Fatalf("pixel (%d,%d) = %v, want grey %d", x, y, got, want)
			}
		}
	}
	// Shrinking 4 → 2 samples source pixels 1 and 3 (centres 0.5·4/2 + …).
	row := image.NewGray(image.Rect(0, 0, 4, 1))
	copy(row.Pix, []uint8{10, 20, 30, 40})
	small := scaleNearest(row, 2, 1).(*image.RGBA)
	if a, b := small.RGBAAt(0, 0).R, small.RGBAAt(1, 0).R; a != 20 || b != 40 {
		t.Errorf("shrunk row = %d %d, want 20 40", a, b)
	}
}

// TestFigureReconstructionCrisp: in Figure 4's PNG every image pixel is a 6×6
// block of one grey (nearest-neighbour scaling, no blur at the block edges).
func TestFigureReconstructionCrisp(t *testing.T) {
	const side = 4
	in := make([]float32, 2*side*side)
	for i := range in {
		in[i] = float32((i*7)%5) / 4 // neighbouring pixels differ
	}
	fig, err := ReconstructionFigure(in, in, []int{3, 1}, side, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fig.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// The first input image's top-left corner: the panel sits at the tile's
	// corner (natural size), 4 points of figure padding plus the label column.
	x0 := int(2 * (4 + reconLabelPt))
	y0 := int(2 * 4)
	grey := func(x, y int) uint8 { return color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y }
	for py := range side {
		for px := range side {
			want := uint8(in[py*side+px]*255 + 0.5)
			for dy := range 6 {
				for dx := range 6 {
					if g := grey(x0+6*px+dx, y0+6*py+dy); g != want {
						t.Fatalf("pixel (%d,%d), dot (%d,%d): grey %d, want %d", px, py, dx, dy, g, want)
					}
				}
			}
		}
	}
}

// TestFigureImageNodeSize: image nodes are 0.8 × the median max-norm
// nearest-neighbour distance wide (frame included), and separateSquares leaves
// no two nodes closer than a node side in the max norm.
func TestFigureImageNodeSize(t *testing.T) {
	var grid [][2]float64
	for y := range 4 {
		for x := range 5 {
			grid = append(grid, [2]float64{1.5 * float64(x), 1.5 * float64(y)})
		}
	}
	if r := imageNodeRadius(grid); math.Abs(2.4*r-0.8*1.5) > 1e-12 {
		t.Errorf("grid of spacing 1.5: node width %g, want 1.2", 2.4*r)
	}
	if got := medianNearest([][2]float64{{0, 0}, {3, 4}, {10, 0}}); got != 4 {
		t.Errorf("median nearest = %g, want 4 (nearest: 4, 4, 7 in the max norm)", got)
	}
	if r := imageNodeRadius([][2]float64{{1, 1}}); r != 0.27 {
		t.Errorf("single node: radius %g, want 0.27", r)
	}
	// Duplicates on a grid: two nodes on top of each other and one close by.
	pts := append([][2]float64(nil), grid...)
	pts = append(pts, grid[6], [2]float64{grid[12][0] + 0.2, grid[12][1] - 0.1})
	d := 2.4 * imageNodeRadius(pts)
	separateSquares(pts, d)
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if m := max(math.Abs(pts[i][0]-pts[j][0]), math.Abs(pts[i][1]-pts[j][1])); m < d*0.999 {
				t.Errorf("nodes %d and %d overlap: max-norm distance %g < side %g", i, j, m, d)
			}
		}
	}
}

// TestFigureLayoutsFill: in Figure 2 every panel fills its tile, a row of
// panels spans the figure's width, and panels of a row share one height, so a
// 13×9 grid is as tall as its square neighbours.
func TestFigureLayoutsFill(t *testing.T) {
	var envs []*gridworld.Env
	for _, n := range []string{"aliased", "corridors", "room", "two_rooms", "square", "three_rooms"} {
		e, err := gridworld.Named(n)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	fig, err := Layouts(envs...)
	if err != nil {
		t.Fatal(err)
	}
	j := fig.Panels[0].(justifiedRows)
	rec := &recordTiles{}
	j.panels = make([]Panel, len(envs))
	for i := range j.panels {
		j.panels[i] = rec
	}
	w, h := fig.Width-8, fig.Height-8
	j.Draw(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}})
	if len(rec.tiles) != len(envs) {
		t.Fatalf("%d tiles drawn, want %d", len(rec.tiles), len(envs))
	}
	first := rec.tiles[:4]
	if l, r := first[0].Min.X, first[3].Max.X; math.Abs(float64(l)) > 1e-6 || math.Abs(float64(r-w)) > 1e-6 {
		t.Errorf("first row spans [%g, %g], want [0, %g]", l, r, w)
	}
	titleH := panelTitleHeight()
	for i, tile := range rec.tiles {
		e := envs[i]
		aspect := 1.0
		if !e.IsGraph() {
			aspect = float64(e.Cols) / float64(e.Rows)
		}
		tw, th := tile.Max.X-tile.Min.X, tile.Max.Y-tile.Min.Y-titleH
		if math.Abs(float64(tw)/float64(th)-aspect) > 1e-9 {
			t.Errorf("%s: drawing %g×%g, aspect %g, want %g", e.Name, tw, th, float64(tw/th), aspect)
		}
		if i < 4 && math.Abs(float64(th-(first[0].Max.Y-first[0].Min.Y-titleH))) > 1e-9 {
			t.Errorf("%s: height %g differs from its row's", e.Name, th)
		}
	}
	// The short second row is not taller than the first; the drawing fits the figure.
	if rec.tiles[4].Max.Y-rec.tiles[4].Min.Y > first[0].Max.Y-first[0].Min.Y+1e-9 {
		t.Error("short last row is taller than the full row above it")
	}
	if bottom := rec.tiles[len(rec.tiles)-1].Min.Y; bottom < -1e-6 {
		t.Errorf("last row reaches %g, below the canvas", bottom)
	}
}

// recordTiles is a Panel that records the canvases it is asked to draw into.
type recordTiles struct{ tiles []vg.Rectangle }

func (r *recordTiles) Draw(c draw.Canvas) { r.tiles = append(r.tiles, c.Rectangle) }

// TestFigureDynamicsEvents: events are named once each in the legend strip, with
// their count, not once per marker.
func TestFigureDynamicsEvents(t *testing.T) {
	h := syntheticHistory()
	for _, i := range []int{70, 72, 74} {
		h[i].Event = "collapse: smoothed perplexity 2.9 < 0.75 × best"
	}
	h[80].Event = "codes revived"
	fig, err := TrainingDynamics(h)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fig.Panels[0].(stacked)
	if !ok {
		t.Fatalf("panel is %T, want the plots stacked over a legend", fig.Panels[0])
	}
	var labels []string
	for _, k := range st.bottom.(legendStrip) {
		labels = append(labels, k.label)
	}
	want := "perception rollback (codebook collapse) (×3)|codes revived"
	if got := strings.Join(labels, "|"); got != want {
		t.Errorf("legend %q, want %q", got, want)
	}
	// The first panel names its own two curves, at its top; the others have no legend.
	for i, row := range st.top.(alignedPlots) {
		if got := row[0].Legend.Top; got != (i == 0) {
			t.Errorf("panel %d: legend at the top %v", i, got)
		}
	}
}

// TestFigureDynamicsChurn: a history with churn at some steps (the label-free stop's
// checkpoints) gets a sixth panel drawn from those steps only (nil elsewhere is not a
// point), and the stop's events are named; a history without churn keeps five panels.
func TestFigureDynamicsChurn(t *testing.T) {
	h := syntheticHistory()
	fig, err := TrainingDynamics(h)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fig.Panels[0].(stacked).top.(alignedPlots)); n != 5 {
		t.Fatalf("without churn: %d panels, want 5", n)
	}
	for i := 10; i < len(h); i += 10 {
		c := 1 / float64(i)
		h[i].Churn = &c
	}
	h[50].Event = "tokens settled (churn 0.0200 ≤ 0.02): α_div anneal starts"
	if fig, err = TrainingDynamics(h); err != nil {
		t.Fatal(err)
	}
	st := fig.Panels[0].(stacked)
	if n := len(st.top.(alignedPlots)); n != 6 {
		t.Fatalf("with churn: %d panels, want 6", n)
	}
	var labels []string
	for _, k := range st.bottom.(legendStrip) {
		labels = append(labels, k.label)
	}
	if !slices.Contains(labels, "tokens settled: α_div anneal starts") {
		t.Errorf("events named %q", labels)
	}
}

// TestFigureDynamicsEventColorsStable: an event kind has one colour and dash
// pattern in every figure, whatever the other events and their order (a pruning
// is purple after a rollback and after a non-finite step alike), rollbacks are
// red, and the legend lists kinds in a fixed order.
func TestFigureDynamicsEventColorsStable(t *testing.T) {
	a := syntheticHistory() // a collapse rollback at joint step 13
	a[75].Event = "intervention: collapse at joint iteration 16: rolled back to iteration 10"
	a[100].Event = "pruned 21 states"
	b := syntheticHistory()
	b[61].Event = "non-finite step not applied (loss NaN)"
	b[65].Event = "tokens settled (churn 0.01 ≤ 0.02): α_div anneal starts; budget ×2: 3/40 unused"
	b[72].Event = ""
	b[95].Event = "pruned 3 states"
	b[110].Event = "intervention: collapse at joint iteration 40: rolled back to iteration 30"
	legend := func(h []Record) map[string]legendKey {
		fig, err := TrainingDynamics(h)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]legendKey{}
		for _, k := range fig.Panels[0].(stacked).bottom.(legendStrip) {
			out[strings.Fields(k.label)[0]] = k
		}
		return out
	}
	la, lb := legend(a), legend(b)
	for _, word := range []string{"rollback", "pruned"} {
		ka, okA := la[word]
		kb, okB := lb[word]
		if !okA || !okB {
			t.Fatalf("%q missing from a legend: %v / %v", word, la, lb)
		}
		if ka.color != kb.color || !reflect.DeepEqual(ka.dashes, kb.dashes) {
			t.Errorf("%q drawn %v %v in one figure and %v %v in the other", word, ka.color, ka.dashes, kb.color, kb.dashes)
		}
	}
	if la["rollback"].color != eventColor {
		t.Errorf("rollback drawn %v, want red %v", la["rollback"].color, eventColor)
	}
	if la["pruned"].color == la["rollback"].color || la["perception"].color == la["pruned"].color {
		t.Error("different kinds share a colour")
	}
	if len(lb) != 5 { // non-finite, tokens settled, budget, pruned, rollback: a joined event is two
		t.Errorf("legend of b: %v, want 5 kinds", lb)
	}
	// The markers drawn in the plots take their kind's colour too.
	events, _ := historyEvents(b, make([]float64, len(b)))
	for _, e := range events {
		if k := eventKinds[e.kind]; k.label == "unvisited states pruned" && k.color != la["pruned"].color {
			t.Errorf("pruning marker %v", k.color)
		}
	}
	fig, err := TrainingDynamics(b)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, k := range fig.Panels[0].(stacked).bottom.(legendStrip) {
		order = append(order, k.label)
	}
	want := []string{"rollback to a healthy checkpoint (anti-collapse)", "non-finite step not applied",
		"tokens settled: α_div anneal starts", "clone budget doubled", "pruned 3 states"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("legend order %q, want %q", order, want)
	}
}
