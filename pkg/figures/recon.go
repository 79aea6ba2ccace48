package figures

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/vg"
)

// Reconstruction-figure geometry (pixels).
const (
	reconMargin = 6
	reconGap    = 4
	reconLabelH = 15 // height of the token label under each column
	reconRowLab = 44 // width of the row labels on the left
)

// Reconstructions draws the VQ-VAE reconstruction figure: the input images in the top
// row, their reconstructions in the row below, and under each column the token the
// encoder assigned ("t3"). inputs and recons hold n images of side×side pixels in
// [0,1] (row-major, values outside are clipped); tokens has one entry per image.
// Every pixel is drawn as a scale×scale block.
func Reconstructions(inputs, recons []float32, tokens []int, side, scale int) (*image.RGBA, error) {
	if side < 1 || scale < 1 {
		return nil, fmt.Errorf("figures.Reconstructions: side %d and scale %d must be ≥ 1", side, scale)
	}
	p := side * side
	if len(inputs) == 0 || len(inputs)%p != 0 {
		return nil, fmt.Errorf("figures.Reconstructions: %d input values is not a positive multiple of %d×%d", len(inputs), side, side)
	}
	n := len(inputs) / p
	if len(recons) != len(inputs) {
		return nil, fmt.Errorf("figures.Reconstructions: %d reconstruction values for %d input values", len(recons), len(inputs))
	}
	if len(tokens) != n {
		return nil, fmt.Errorf("figures.Reconstructions: %d tokens for %d images", len(tokens), n)
	}
	cell := side * scale
	w := reconMargin*2 + reconRowLab + n*cell + (n-1)*reconGap
	h := reconMargin*2 + 2*cell + reconGap + reconLabelH
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{0x20, 0x20, 0x20, 0xff}), image.Point{}, draw.Src)

	face := basicfont.Face7x13
	text := func(s string, x, baseline int) {
		d := font.Drawer{Dst: img, Src: image.White, Face: face, Dot: fixed.P(x, baseline)}
		d.DrawString(s)
	}
	rowY := []int{reconMargin, reconMargin + cell + reconGap}
	for r, label := range []string{"input", "recon"} {
		text(label, reconMargin, rowY[r]+cell/2+5)
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
		lw := font.MeasureString(face, label).Round()
		text(label, x0+(cell-lw)/2, h-reconMargin-2)
	}
	return img, nil
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

// ReconstructionFigure is paper Figure 4 as a Figure: Reconstructions (pixels
// scaled 3×) in an ImagePanel under title, sized so that every image pixel is
// drawn as 2×2 PNG pixels.
func ReconstructionFigure(inputs, recons []float32, tokens []int, side int, title string) (*Figure, error) {
	img, err := Reconstructions(inputs, recons, tokens, side, 3)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	// Figure.Draw pads the tile by 4 points on each side and the title takes
	// titleHeight; at DPI 144 a point is two pixels.
	w := vg.Length(b.Dx()) + 8
	h := vg.Length(b.Dy()) + 8
	if title != "" {
		h += titleHeight
	}
	return &Figure{Rows: 1, Cols: 1, Panels: []Panel{ImagePanel{Img: img}}, Width: w, Height: h, Title: title}, nil
}
