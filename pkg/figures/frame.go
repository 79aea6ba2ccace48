package figures

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// frame maps layout coordinates (x to the right, y up, unit = one grid cell or one
// edge length) into a canvas with a uniform scale, so cells stay square.
type frame struct {
	minX, maxY float64   // layout coordinates of the drawing's top-left corner
	s          vg.Length // points per layout unit
	ox, oy     vg.Length // canvas position of (minX, maxY)
}

// fitFrame fits the layout box [minX, maxX]×[minY, maxY] into c, centred, with
// pad points of margin on each side.
func fitFrame(c draw.Canvas, minX, maxX, minY, maxY float64, pad vg.Length) frame {
	w, h := max(maxX-minX, 1e-9), max(maxY-minY, 1e-9)
	cw := float64(c.Max.X - c.Min.X - 2*pad)
	ch := float64(c.Max.Y - c.Min.Y - 2*pad)
	s := max(min(cw/w, ch/h), 0)
	f := frame{minX: minX, maxY: maxY, s: vg.Length(s)}
	f.ox = c.Min.X + pad + vg.Length((cw-w*s)/2)
	f.oy = c.Max.Y - pad - vg.Length((ch-h*s)/2)
	return f
}

// pt maps a layout point to the canvas.
func (f frame) pt(x, y float64) vg.Point {
	return vg.Point{X: f.ox + vg.Length(x-f.minX)*f.s, Y: f.oy - vg.Length(f.maxY-y)*f.s}
}

// cell returns the canvas rectangle of grid cell (row, col): the layout box
// [col, col+1]×[−row−1, −row].
func (f frame) cell(row, col int) vg.Rectangle {
	return vg.Rectangle{Min: f.pt(float64(col), float64(-row-1)), Max: f.pt(float64(col+1), float64(-row))}
}

// cellCenter is the layout coordinate of the centre of cell (row, col).
func cellCenter(row, col int) [2]float64 {
	return [2]float64{float64(col) + 0.5, -float64(row) - 0.5}
}

// boundsOf returns the bounding box of pts grown by margin.
func boundsOf(pts [][2]float64, margin float64) (minX, maxX, minY, maxY float64) {
	minX, minY = math.Inf(1), math.Inf(1)
	maxX, maxY = math.Inf(-1), math.Inf(-1)
	for _, p := range pts {
		minX, maxX = min(minX, p[0]), max(maxX, p[0])
		minY, maxY = min(minY, p[1]), max(maxY, p[1])
	}
	if len(pts) == 0 {
		minX, maxX, minY, maxY = 0, 0, 0, 0
	}
	return minX - margin, maxX + margin, minY - margin, maxY + margin
}

// grayImage turns side×side values in [0,1] into an image: ink (1) white on
// black, the MNIST look. Values outside [0,1] are clipped.
func grayImage(pix []float32, side int) (*image.Gray, error) {
	if side < 1 || len(pix) != side*side {
		return nil, fmt.Errorf("figures: %d pixel values for a %d×%d image", len(pix), side, side)
	}
	img := image.NewGray(image.Rect(0, 0, side, side))
	for i, v := range pix {
		img.Pix[i] = uint8(min(max(v, 0), 1)*255 + 0.5)
	}
	return img, nil
}

// nodeStyle says how drawGraph draws a node.
type nodeStyle struct {
	Fill  color.RGBA
	Label string
	Image image.Image // drawn instead of a disc when set
	Ring  bool        // a thick outline (in Fill) around an image node
}

// drawGraph draws nodes at pts (layout coordinates) with undirected edges into f.
// radius is the node radius in layout units; edgeColors, if not nil, colours each
// edge (nil entries: the default grey).
func drawGraph(c draw.Canvas, f frame, pts [][2]float64, edges [][2]int, edgeColors []color.Color, nodes []nodeStyle, radius float64) {
	r := vg.Length(radius) * f.s
	width := max(min(r/6, 1.6), 0.5)
	for i, e := range edges {
		col := color.Color(edgeColor)
		dashes := []vg.Length(nil)
		if edgeColors != nil && edgeColors[i] != nil {
			col = edgeColors[i]
			dashes = []vg.Length{3, 2}
		}
		a, b := f.pt(pts[e[0]][0], pts[e[0]][1]), f.pt(pts[e[1]][0], pts[e[1]][1])
		c.StrokeLine2(draw.LineStyle{Color: col, Width: width, Dashes: dashes}, a.X, a.Y, b.X, b.Y)
	}
	fontSize := max(min(r*1.1, 11), 4)
	for i, p := range pts {
		ns := nodes[i]
		ctr := f.pt(p[0], p[1])
		if ns.Image != nil {
			box := vg.Rectangle{Min: vg.Point{X: ctr.X - r, Y: ctr.Y - r}, Max: vg.Point{X: ctr.X + r, Y: ctr.Y + r}}
			ring := max(r/5, 1)
			outer := vg.Rectangle{Min: vg.Point{X: box.Min.X - ring, Y: box.Min.Y - ring}, Max: vg.Point{X: box.Max.X + ring, Y: box.Max.Y + ring}}
			fillRect(c, outer, ns.Fill)
			drawPixels(c, box, ns.Image)
			continue
		}
		fillCircle(c, ctr, r, ns.Fill, lineColor, width*0.6)
		if ns.Label != "" {
			sty := textStyle(fontSize, textOn(ns.Fill), draw.XCenter, draw.YCenter)
			if sty.Width(ns.Label) > 2*r*0.95 {
				sty.Font.Size = max(fontSize*2*r*0.95/sty.Width(ns.Label), 3)
			}
			c.FillText(sty, ctr, ns.Label)
		}
	}
}
