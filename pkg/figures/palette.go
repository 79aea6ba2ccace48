package figures

import (
	"image/color"
	"math"
)

// basePalette holds 19 colours chosen to be told apart at a glance (Sasha
// Trubetskoy's "20 simple distinct colours" without its grey, which marks walls,
// reordered so that the first ten, the MNIST digits' colours, are at least 97
// apart in RGB). Class c < 19 gets basePalette[c].
var basePalette = []color.RGBA{
	{0xe6, 0x19, 0x4b, 0xff}, // red
	{0x3c, 0xb4, 0x4b, 0xff}, // green
	{0xff, 0xe1, 0x19, 0xff}, // yellow
	{0x43, 0x63, 0xd8, 0xff}, // blue
	{0xf5, 0x82, 0x31, 0xff}, // orange
	{0x91, 0x1e, 0xb4, 0xff}, // purple
	{0x42, 0xd4, 0xf4, 0xff}, // cyan
	{0xf0, 0x32, 0xe6, 0xff}, // magenta
	{0x9a, 0x63, 0x24, 0xff}, // brown
	{0xfa, 0xbe, 0xd4, 0xff}, // pink
	{0x46, 0x99, 0x90, 0xff}, // teal
	{0xdc, 0xbe, 0xff, 0xff}, // lavender
	{0xbf, 0xef, 0x45, 0xff}, // lime
	{0xff, 0xfa, 0xc8, 0xff}, // beige
	{0x80, 0x00, 0x00, 0xff}, // maroon
	{0xaa, 0xff, 0xc3, 0xff}, // mint
	{0x80, 0x80, 0x00, 0xff}, // olive
	{0xff, 0xd8, 0xb1, 0xff}, // apricot
	{0x00, 0x00, 0x75, 0xff}, // navy
}

// Colours of the non-class elements.
var (
	wallColor  = color.RGBA{0x9e, 0x9e, 0x9e, 0xff} // walls and inaccessible cells
	edgeColor  = color.RGBA{0x55, 0x55, 0x55, 0xff} // graph edges
	lineColor  = color.RGBA{0x30, 0x30, 0x30, 0xff} // cell borders, node outlines
	noneColor  = color.RGBA{0xee, 0xee, 0xee, 0xff} // no class (unvisited, unknown)
	eventColor = color.RGBA{0xd0, 0x10, 0x10, 0xff} // rollback markers
)

// ClassColor returns the colour of observation class c, the same in every figure
// (cells, nodes and clones of one class match). Classes 0..18 take a fixed palette
// of distinct colours; higher ids get hues 137.5° (the golden angle) apart, cycling
// through three saturation/brightness levels. A negative c (no class) is light grey.
func ClassColor(c int) color.RGBA {
	if c < 0 {
		return noneColor
	}
	if c < len(basePalette) {
		return basePalette[c]
	}
	i := c - len(basePalette)
	h := math.Mod(float64(i)*137.50776405+15, 360)
	sv := [][2]float64{{0.65, 0.85}, {0.45, 0.95}, {0.8, 0.6}}[i%3]
	return hsv(h, sv[0], sv[1])
}

// hsv converts hue h (degrees), saturation s and value v in [0,1] to RGB.
func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to := func(f float64) uint8 { return uint8(math.Round((f + m) * 255)) }
	return color.RGBA{to(r), to(g), to(b), 0xff}
}

// luminance is the relative luminance (ITU-R BT.709 weights on sRGB values) in [0,1].
func luminance(c color.RGBA) float64 {
	return (0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)) / 255
}

// textOn returns black or white, whichever reads better on background bg.
func textOn(bg color.RGBA) color.Color {
	if luminance(bg) > 0.5 {
		return color.Black
	}
	return color.White
}

// lighten mixes c with white: f = 0 keeps c, f = 1 gives white.
func lighten(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v) + (255-float64(v))*f)) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}
