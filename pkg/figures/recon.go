package figures

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
)

// Reconstruction-figure geometry (pixels).
const (
	reconMargin = 6
	reconGap    = 4
	reconLabelH = 15 // height of the token label under each column
	reconRowLab = 44 // width of the row labels on the left
	reconFontPx = 11 // label font size (pixels)
)

// Reconstructions draws the VQ-VAE reconstruction figure as a raster: the input
// images in the top row, their reconstructions in the row below, and under each
// column the token the encoder assigned ("t3"), on a dark background. inputs and
// recons hold n images of side×side pixels in [0,1] (row-major, values outside
// are clipped); tokens has one entry per image. Every pixel is drawn as a
// scale×scale block (nearest neighbour); labels are anti-aliased Liberation Sans.
// ReconstructionFigure draws the same as a vector Figure.
func Reconstructions(inputs, recons []float32, tokens []int, side, scale int) (*image.RGBA, error) {
	n, err := checkRecon("figures.Reconstructions", inputs, recons, tokens, side)
	if err != nil {
		return nil, err
	}
	if scale < 1 {
		return nil, fmt.Errorf("figures.Reconstructions: scale %d must be ≥ 1", scale)
	}
	p := side * side
	cell := side * scale
	w := reconMargin*2 + reconRowLab + n*cell + (n-1)*reconGap
	h := reconMargin*2 + 2*cell + reconGap + reconLabelH
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{0x20, 0x20, 0x20, 0xff}), image.Point{}, draw.Src)

	face := labelFace(reconFontPx)
	ascent := face.Metrics().Ascent.Round()
	text := func(s string, x, baseline int) {
		d := xfont.Drawer{Dst: img, Src: image.White, Face: face, Dot: fixed.P(x, baseline)}
		d.DrawString(s)
	}
	rowY := []int{reconMargin, reconMargin + cell + reconGap}
	for r, label := range []string{"input", "recon"} {
		text(label, reconMargin, rowY[r]+(cell+ascent)/2)
	}
	for i := range n {
		x0 := reconMargin + reconRowLab + i*(cell+reconGap)
		for r, src := range [][]float32{inputs[i*p : (i+1)*p], recons[i*p : (i+1)*p]} {
			for y := range side {
				for x := range side {
					v := min(max(src[y*side+x], 0), 1)
					g := uint8(v*255 + 0.5)
					c := color.RGBA{g, g, g, 0xff}
					for dy := range scale {
						for dx := range scale {
							img.SetRGBA(x0+x*scale+dx, rowY[r]+y*scale+dy, c)
						}
					}
				}
			}
		}
		label := fmt.Sprintf("t%d", tokens[i])
		lw := xfont.MeasureString(face, label).Round()
		top := rowY[1] + cell
		text(label, x0+(cell-lw)/2, top+(h-reconMargin/2-top+ascent)/2)
	}
	return img, nil
}

// checkRecon validates the inputs of a reconstruction figure and returns the
// number of images.
func checkRecon(fn string, inputs, recons []float32, tokens []int, side int) (int, error) {
	if side < 1 {
		return 0, fmt.Errorf("%s: side %d must be ≥ 1", fn, side)
	}
	p := side * side
	if len(inputs) == 0 || len(inputs)%p != 0 {
		return 0, fmt.Errorf("%s: %d input values is not a positive multiple of %d×%d", fn, len(inputs), side, side)
	}
	n := len(inputs) / p
	if len(recons) != len(inputs) {
		return 0, fmt.Errorf("%s: %d reconstruction values for %d input values", fn, len(recons), len(inputs))
	}
	if len(tokens) != n {
		return 0, fmt.Errorf("%s: %d tokens for %d images", fn, len(tokens), n)
	}
	return n, nil
}

// labelFace returns Liberation Sans at px pixels for drawing into rasters (the
// font of the vector figures), or the basic bitmap font if it cannot be loaded.
// A face is not safe for concurrent use: make one per raster.
func labelFace(px float64) xfont.Face {
	f := font.DefaultCache.Lookup(sansSerif, font.Length(px))
	if f.Face == nil {
		return basicfont.Face7x13
	}
	face, err := opentype.NewFace(f.Face, &opentype.FaceOptions{Size: px, DPI: 72, Hinting: xfont.HintingFull})
	if err != nil {
		return basicfont.Face7x13
	}
	return face
}

// WriteReconstructionsPNG draws Reconstructions (pixels scaled 3×) and writes it to
// path atomically (a temporary file in the same directory, then a rename).
func WriteReconstructionsPNG(path string, inputs, recons []float32, tokens []int, side int) error {
	img, err := Reconstructions(inputs, recons, tokens, side, 3)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("figures: encode %s: %w", path, err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

// ReconstructionFigure draws paper Figure 4 as a Figure: the input images above
// their VQ-VAE reconstructions, the token of each column under it ("t3", over a
// bar of the token's colour), row labels on the left, wrapped into blocks of at
// most reconPerRow(side) columns so that the figure is at most reconMaxW points
// (1000 PNG pixels) wide and its labels stay sizeLabel (18 PNG pixels) high at
// that width; under title. key, if not nil, gives the token colours and is drawn
// under the images (TokenKeyPanel: which classes each token holds). Every image
// pixel is a sharp-edged block of reconPixel(side) points (nearest-neighbour
// scaling, drawPixels). Arguments as Reconstructions.
func ReconstructionFigure(inputs, recons []float32, tokens []int, side int, title string, key *TokenKey) (*Figure, error) {
	if _, err := checkRecon("figures.ReconstructionFigure", inputs, recons, tokens, side); err != nil {
		return nil, err
	}
	p := reconPanel{inputs: inputs, recons: recons, tokens: tokens, side: side, key: key}
	w, h := p.size()
	var body Panel = p
	if key != nil {
		kp := TokenKeyPanel{Key: key}
		kh := kp.Height(w)
		body = stacked{top: p, bottom: kp, bottomH: kh}
		h += reconBlockGap + kh
	}
	// Figure.Draw pads the tile by 4 points on each side; the title takes titleHeight.
	w, h = w+8, h+8
	if title != "" {
		h += titleHeight
	}
	return &Figure{Rows: 1, Cols: 1, Panels: []Panel{body}, Width: w, Height: h, Title: title}, nil
}

// Geometry of ReconstructionFigure (points).
const (
	reconMaxW     = 500 // the widest figure, padding included (1000 PNG pixels)
	reconImagePt  = 42  // an image's side: 1.5 points per pixel of a 28×28 image
	reconLabelPt  = 36  // row-label column
	reconGapPt    = 4   // between images
	reconTokenPt  = 18  // token row: colour bar and label
	reconBlockGap = 8   // between blocks of rows
)

// reconPixel is the size of one image pixel (points): reconImagePt/side, at most 3.
func reconPixel(side int) vg.Length {
	return min(vg.Length(reconImagePt)/vg.Length(side), 3)
}

// reconPerRow is the number of images per block that fits reconMaxW.
func reconPerRow(side int) int {
	cell := vg.Length(side) * reconPixel(side)
	return max(1, int((reconMaxW-8-reconLabelPt+reconGapPt)/(cell+reconGapPt)))
}

// reconPanel draws ReconstructionFigure's images: n images of side² values in
// inputs and recons, tokens [n], colours from key (nil: no colour bar).
type reconPanel struct {
	inputs, recons []float32
	tokens         []int
	side           int
	key            *TokenKey
}

// grid returns the columns per block and the number of blocks.
func (p reconPanel) grid() (cols, blocks int) {
	n := len(p.tokens)
	cols = min(n, reconPerRow(p.side))
	return cols, (n + cols - 1) / cols
}

// size is the panel's natural size.
func (p reconPanel) size() (w, h vg.Length) {
	cols, blocks := p.grid()
	cell := vg.Length(p.side) * reconPixel(p.side)
	block := 2*cell + reconGapPt + reconTokenPt
	return reconLabelPt + vg.Length(cols)*cell + vg.Length(cols-1)*reconGapPt,
		vg.Length(blocks)*block + vg.Length(blocks-1)*reconBlockGap
}

// Draw implements Panel: at natural size, or scaled down to fit c, at the top
// left of c.
func (p reconPanel) Draw(c vgdraw.Canvas) {
	n := len(p.tokens)
	pix := p.side * p.side
	if n == 0 || len(p.inputs) < n*pix || len(p.recons) < n*pix {
		return
	}
	w, h := p.size()
	cw, ch := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	s := min(1, cw/w, ch/h)
	if !(s > 0) {
		return
	}
	cols, _ := p.grid()
	cell := vg.Length(p.side) * reconPixel(p.side) * s
	gap := reconGapPt * s
	block := 2*cell + gap + reconTokenPt*s + reconBlockGap*s
	lab := textStyle(sizeLabel*s, color.Black, vgdraw.XRight, vgdraw.YCenter)
	tok := textStyle(sizeLabel*s, color.Black, vgdraw.XCenter, vgdraw.YBottom)
	for i := range n {
		b, col := i/cols, i%cols
		top := c.Max.Y - vg.Length(b)*block
		rowTop := []vg.Length{top, top - cell - gap}
		if col == 0 {
			for r, label := range []string{"input", "recon"} {
				c.FillText(lab, vg.Point{X: c.Min.X + (reconLabelPt-6)*s, Y: rowTop[r] - cell/2}, label)
			}
		}
		x := c.Min.X + reconLabelPt*s + vg.Length(col)*(cell+gap)
		for r, src := range [][]float32{p.inputs[i*pix : (i+1)*pix], p.recons[i*pix : (i+1)*pix]} {
			img, err := grayImage(src, p.side)
			if err != nil {
				continue
			}
			drawPixels(c, vg.Rectangle{Min: vg.Point{X: x, Y: rowTop[r] - cell}, Max: vg.Point{X: x + cell, Y: rowTop[r]}}, img)
		}
		bottom := rowTop[1] - cell - reconTokenPt*s
		if col, ok := p.key.Color(p.tokens[i]); ok { // outlined: pale colours stay visible
			bar := vg.Rectangle{Min: vg.Point{X: x, Y: rowTop[1] - cell - 5*s}, Max: vg.Point{X: x + cell, Y: rowTop[1] - cell - 1*s}}
			fillRect(c, bar, col)
			strokeRect(c, bar, vgdraw.LineStyle{Color: lineColor, Width: 0.4})
		}
		c.FillText(tok, vg.Point{X: x + cell/2, Y: bottom + 1*s}, fmt.Sprintf("t%d", p.tokens[i]))
	}
}
