package figures

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The style of every figure: one sans-serif family (Liberation Sans, which the
// plotting library embeds) at these sizes, in points (a PNG has DPI/72 = 2 pixels
// per point). Vector figures, rasters (labelFace) and line plots (NewPlot) all take
// their text from here.
var sansSerif = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Text sizes (points).
const (
	sizeFigureTitle vg.Length = 13 // Figure.Title
	sizePanelTitle  vg.Length = 10 // panel and plot titles
	sizeLabel       vg.Length = 9  // axis labels, row labels, keys
	sizeText        vg.Length = 8  // tick labels, legends, token labels
	sizeNote        vg.Length = 7  // explanatory lines under a panel, phase names
	sizeMinText     vg.Length = 5  // titles and notes shrink to fit no further
)

// textStyle is a text style of the figures' family at the given size (points).
func textStyle(size vg.Length, col color.Color, xa draw.XAlignment, ya draw.YAlignment) draw.TextStyle {
	return draw.TextStyle{
		Color:   col,
		Font:    font.From(sansSerif, size),
		XAlign:  xa,
		YAlign:  ya,
		Handler: plot.DefaultTextHandler,
	}
}

// NewPlot returns a line plot in the figures' style (the sans-serif family and the
// sizes above; gonum's own default is a serif face): title, axis labels, tick labels
// and legend. Every plot of this package and of the notebooks starts here.
func NewPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansSerif, sizePanelTitle)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansSerif, sizeLabel)
		ax.Tick.Label.Font = font.From(sansSerif, sizeText)
	}
	p.Legend.TextStyle.Font = font.From(sansSerif, sizeText)
	return p
}
