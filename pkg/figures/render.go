package figures

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	imgdraw "image/draw"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	xfont "golang.org/x/image/font"
)

// DPI is the resolution of PNG output: a figure w points wide is w·DPI/72 pixels
// wide (2 pixels per point).
const DPI = 144

// Panel is anything that draws itself into the canvas it is given: the grid and
// graph panels of this package, a *plot.Plot, a whole *Figure.
type Panel interface {
	Draw(c draw.Canvas)
}

// Figure is a grid of panels with a natural size, the unit the figure functions
// return. Panels is row-major, Rows×Cols entries; a nil entry leaves its tile
// blank. Display it in a notebook with PNG, write it with Save.
type Figure struct {
	Rows, Cols    int
	Panels        []Panel
	Width, Height vg.Length // natural size
	// ColWeights, if it has Cols entries, divides the width among the columns in
	// these proportions (a tall layout gets a wider column); otherwise equally.
	ColWeights []float64
	// RowWeights, if it has Rows entries, divides the height among the rows in
	// these proportions; otherwise equally.
	RowWeights []float64
	// Title, if set, is drawn centred above the panels.
	Title string
}

// titleHeight is the band a Figure's title takes.
const titleHeight = 22

// Draw draws the panels into their tiles of c.
func (f *Figure) Draw(c draw.Canvas) {
	fillRect(c, c.Rectangle, color.White)
	if f.Title != "" {
		sty := textStyle(sizeFigureTitle, color.Black, draw.XCenter, draw.YTop)
		// vgpdf registers the bold face under the plain style but selects it
		// with style "B", which go-pdf rejects ("undefined font"): PDF titles
		// are regular.
		if _, pdf := c.Canvas.(*vgpdf.Canvas); !pdf {
			sty.Font.Weight = xfont.WeightBold
		}
		c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - 4}, f.Title)
		c = draw.Crop(c, 0, 0, 0, -titleHeight)
	}
	if f.Rows < 1 || f.Cols < 1 {
		return
	}
	t := draw.Tiles{Rows: f.Rows, Cols: f.Cols, PadX: 6, PadY: 6, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 4}
	// Column left edges and the right edge (with ColWeights); row top edges and
	// the bottom edge (with RowWeights), each edge followed by its pad.
	xs := weightedEdges(f.ColWeights, f.Cols, c.Min.X+t.PadLeft, c.Max.X-c.Min.X-t.PadLeft-t.PadRight, t.PadX)
	ys := weightedEdges(f.RowWeights, f.Rows, 0, c.Max.Y-c.Min.Y-t.PadTop-t.PadBottom, t.PadY)
	for i, p := range f.Panels {
		if p == nil || i >= f.Rows*f.Cols {
			continue
		}
		col, row := i%f.Cols, i/f.Cols
		tile := t.At(c, col, row)
		if xs != nil {
			tile.Min.X, tile.Max.X = xs[col], xs[col+1]-t.PadX
		}
		if ys != nil {
			top := c.Max.Y - t.PadTop
			tile.Max.Y, tile.Min.Y = top-ys[row], top-ys[row+1]+t.PadY
		}
		p.Draw(tile)
	}
}

// weightedEdges divides a length into n parts in proportion to weights (n
// entries, not all zero; otherwise nil), pad apart: it returns the n+1 edges
// from start, every part followed by pad.
func weightedEdges(weights []float64, n int, start, length, pad vg.Length) []vg.Length {
	if len(weights) != n || n == 0 {
		return nil
	}
	total := 0.0
	for _, w := range weights {
		total += max(w, 0)
	}
	if !(total > 0) {
		return nil
	}
	inner := length - vg.Length(n-1)*pad
	out := make([]vg.Length, 0, n+1)
	x := start
	for _, w := range weights {
		out = append(out, x)
		x += inner*vg.Length(max(w, 0)/total) + pad
	}
	return append(out, x)
}

// PNG renders the figure at its natural size (see the package function PNG).
func (f *Figure) PNG() ([]byte, error) { return PNG(f, f.Width, f.Height) }

// SVG renders the figure at its natural size as SVG text.
func (f *Figure) SVG() ([]byte, error) { return SVG(f, f.Width, f.Height) }

// Image renders the figure at its natural size as an image (DPI dots per inch).
func (f *Figure) Image() (image.Image, error) { return Image(f, f.Width, f.Height) }

// Save writes the figure at its natural size to path; the extension chooses the
// format (see the package function Save).
func (f *Figure) Save(path string) error { return Save(path, f, f.Width, f.Height) }

// checkSize rejects sizes the vg back ends would panic on.
func checkSize(w, h vg.Length) error {
	if !(w > 0 && h > 0) || math.IsInf(float64(w), 0) || math.IsInf(float64(h), 0) || w > 20000 || h > 20000 {
		return fmt.Errorf("figures: size %.1f×%.1f points: both must be in (0, 20000]", w, h)
	}
	return nil
}

// Image renders p on a white w×h canvas (points) at DPI dots per inch.
func Image(p Panel, w, h vg.Length) (img image.Image, err error) {
	if err := checkSize(w, h); err != nil {
		return nil, err
	}
	defer recoverDraw(&err)
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	return c.Image(), nil
}

// PNG renders p on a white w×h canvas (points) and returns the PNG file's bytes:
// round(w·DPI/72) × round(h·DPI/72) pixels. This is what a notebook displays
// (gonbui.DisplayPng).
func PNG(p Panel, w, h vg.Length) ([]byte, error) {
	return encode(p, w, h, "png")
}

// SVG renders p on a w×h canvas (points) as an SVG document.
func SVG(p Panel, w, h vg.Length) ([]byte, error) {
	return encode(p, w, h, "svg")
}

// Save renders p on a w×h canvas (points) and writes it to path atomically (a
// temporary file in the same directory, renamed over path). The extension picks
// the format: .png, .svg or .pdf.
func Save(path string, p Panel, w, h vg.Length) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch format {
	case "png", "svg", "pdf":
	default:
		return fmt.Errorf("figures: %s: unknown figure format %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
	}
	data, err := encode(p, w, h, format)
	if err != nil {
		return fmt.Errorf("figures: %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// encode renders p in one of the formats png, svg, pdf.
func encode(p Panel, w, h vg.Length, format string) (data []byte, err error) {
	if err := checkSize(w, h); err != nil {
		return nil, err
	}
	defer recoverDraw(&err)
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))}
	case "svg":
		c = vgsvg.New(w, h)
	case "pdf":
		c = vgpdf.New(w, h)
	default:
		return nil, fmt.Errorf("figures: unknown format %q", format)
	}
	dc := draw.New(c)
	if format != "png" {
		fillRect(dc, dc.Rectangle, color.White)
	}
	p.Draw(dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figures: encode %s: %w", format, err)
	}
	return buf.Bytes(), nil
}

// recoverDraw turns a panic of the plotting library (it panics on some invalid
// input, e.g. a non-finite coordinate) into an error.
func recoverDraw(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("figures: drawing failed: %v", r)
	}
}

// ImagePanel draws an image scaled to fit its tile, keeping the aspect ratio
// (pixels stay square), centred, with nearest-neighbour scaling (drawPixels).
// Use it to place a raster (for example the Reconstructions image) in a Figure
// or to save it as SVG.
type ImagePanel struct {
	Img image.Image
}

// Draw implements Panel.
func (p ImagePanel) Draw(c draw.Canvas) {
	if p.Img == nil || p.Img.Bounds().Empty() {
		return
	}
	b := p.Img.Bounds()
	r := fitRect(c.Rectangle, float64(b.Dx()), float64(b.Dy()))
	drawPixels(c, r, p.Img)
}

// vectorDotsPerPoint is the resolution (dots per point) at which drawPixels
// rasterises images for vector output (SVG, PDF), whose viewers scale embedded
// images smoothly: at 4 dots per point the smoothing is invisible.
const vectorDotsPerPoint = 4

// drawPixels draws img into r with nearest-neighbour scaling, so that every image
// pixel is a sharp-edged block (the plotting library's own image drawing
// interpolates bilinearly, which blurs small images such as MNIST digits). On a
// raster canvas r is snapped to whole device pixels and img is resized to
// exactly that many pixels, so the library draws it 1:1; on vector canvases img
// is enlarged by a whole factor to about vectorDotsPerPoint dots per point.
func drawPixels(c draw.Canvas, r vg.Rectangle, img image.Image) {
	b := img.Bounds()
	if b.Empty() || !(r.Max.X > r.Min.X) || !(r.Max.Y > r.Min.Y) {
		return
	}
	dpi := rasterDPI(c.Canvas)
	if dpi == 0 { // vector output
		k := int(math.Ceil(float64(r.Max.X-r.Min.X) * vectorDotsPerPoint / float64(b.Dx())))
		k = max(1, min(k, 16))
		c.DrawImage(r, scaleNearest(img, k*b.Dx(), k*b.Dy()))
		return
	}
	perDot := vg.Inch / vg.Length(dpi) // points per device pixel
	snap := func(v vg.Length) int { return int(math.Round(float64(v / perDot))) }
	x0, x1, y0, y1 := snap(r.Min.X), snap(r.Max.X), snap(r.Min.Y), snap(r.Max.Y)
	if x1 <= x0 || y1 <= y0 {
		return
	}
	snapped := vg.Rectangle{
		Min: vg.Point{X: vg.Length(x0) * perDot, Y: vg.Length(y0) * perDot},
		Max: vg.Point{X: vg.Length(x1) * perDot, Y: vg.Length(y1) * perDot},
	}
	c.DrawImage(snapped, scaleNearest(img, x1-x0, y1-y0))
}

// rasterDPI returns the resolution of a raster (vgimg) canvas, looking through
// the draw.Canvas wrappers that tiling adds, and 0 for vector canvases.
func rasterDPI(cv vg.Canvas) float64 {
	for range 64 {
		switch c := cv.(type) {
		case *vgimg.Canvas:
			return c.DPI()
		case vgimg.PngCanvas:
			return c.DPI()
		case draw.Canvas:
			cv = c.Canvas
		case *draw.Canvas:
			cv = c.Canvas
		default:
			return 0
		}
	}
	return 0
}

// scaleNearest resizes img to w×h pixels by nearest-neighbour sampling: output
// pixel (x, y) takes the source pixel ⌊(x+½)·W/w⌋, ⌊(y+½)·H/h⌋.
func scaleNearest(img image.Image, w, h int) image.Image {
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return img
	}
	src, ok := img.(*image.RGBA)
	if !ok {
		src = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		imgdraw.Draw(src, src.Rect, img, b.Min, imgdraw.Src)
	}
	sb := src.Rect
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	xs := make([]int, w) // byte offset of each output column's source pixel in a row
	for x := range xs {
		xs[x] = 4 * min((2*x+1)*sb.Dx()/(2*w), sb.Dx()-1)
	}
	for y := range h {
		sy := min((2*y+1)*sb.Dy()/(2*h), sb.Dy()-1)
		row := src.Pix[sy*src.Stride:]
		dst := out.Pix[y*out.Stride:]
		for x, off := range xs {
			copy(dst[4*x:4*x+4], row[off:off+4])
		}
	}
	return out
}

// fitRect returns the largest rectangle of aspect w:h centred in r.
func fitRect(r vg.Rectangle, w, h float64) vg.Rectangle {
	rw, rh := float64(r.Max.X-r.Min.X), float64(r.Max.Y-r.Min.Y)
	s := min(rw/w, rh/h)
	dw, dh := vg.Length(w*s), vg.Length(h*s)
	x0 := r.Min.X + (vg.Length(rw)-dw)/2
	y0 := r.Min.Y + (vg.Length(rh)-dh)/2
	return vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x0 + dw, Y: y0 + dh}}
}

// fillRect fills r with col.
func fillRect(c draw.Canvas, r vg.Rectangle, col color.Color) {
	c.FillPolygon(col, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// strokeRect outlines r.
func strokeRect(c draw.Canvas, r vg.Rectangle, sty draw.LineStyle) {
	c.StrokeLines(sty, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})
}

// circle returns a closed path approximating a circle (for fills and strokes
// that must look the same in every back end).
func circlePath(ctr vg.Point, r vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: ctr.X + r, Y: ctr.Y})
	p.Arc(ctr, r, 0, 2*math.Pi)
	p.Close()
	return p
}

// fillCircle draws a filled disc with an outline.
func fillCircle(c draw.Canvas, ctr vg.Point, r vg.Length, fill color.Color, edge color.Color, width vg.Length) {
	p := circlePath(ctr, r)
	c.SetColor(fill)
	c.Fill(p)
	if edge != nil && width > 0 {
		c.SetLineStyle(draw.LineStyle{Color: edge, Width: width})
		c.Stroke(p)
	}
}

// panelTitleHeight is the band a one-line panelTitle takes.
func panelTitleHeight() vg.Length {
	return textStyle(sizePanelTitle, color.Black, draw.XCenter, draw.YTop).Height("M") + 4
}

// panelTitle draws title at the top of c (sizePanelTitle, smaller when it is
// wider than c) and returns the canvas below it.
func panelTitle(c draw.Canvas, title string) draw.Canvas {
	if title == "" {
		return c
	}
	sty := textStyle(sizePanelTitle, color.Black, draw.XCenter, draw.YTop)
	if w, avail := sty.Width(title), c.Max.X-c.Min.X-2; w > avail && avail > 0 {
		sty.Font.Size = max(sty.Font.Size*avail/w, sizeMinText)
	}
	h := panelTitleHeight()
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - 1}, title)
	return draw.Crop(c, 0, 0, 0, -h)
}

// writeFileAtomic writes data to a temporary file next to path and renames it.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	return nil
}
