package notebook

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"strings"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// MIME types of displayed content.
const (
	MIMEMarkdown = "text/markdown"
	MIMEPNG      = "image/png"
	MIMEHTML     = "text/html"
)

// Output receives every displayed item. Under GoNB it sends the item to the notebook
// (gonbui); otherwise it writes a plain-text form to Stdout. Tests replace it.
var Output = func(mime string, data []byte) {
	if gonbui.IsNotebook {
		switch mime {
		case MIMEMarkdown:
			gonbui.DisplayMarkdown(jupyterMarkdown(string(data)))
		case MIMEPNG:
			gonbui.DisplayPng(data)
		default:
			gonbui.DisplayHTML(string(data))
		}
		return
	}
	writeText(Stdout, mime, data)
}

// jupyterMarkdown writes a pipe escaped for a table cell (`\|`, as in the result
// tables' "H(token\|place)") as the entity &#124;: Jupyter's renderer splits table
// cells at escaped pipes too.
func jupyterMarkdown(md string) string { return strings.ReplaceAll(md, `\|`, "&#124;") }

// Stdout is where Output writes outside a notebook.
var Stdout io.Writer = os.Stdout

// writeText writes the plain-text form of a displayed item.
func writeText(w io.Writer, mime string, data []byte) {
	switch mime {
	case MIMEPNG:
		if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err == nil {
			fmt.Fprintf(w, "[PNG image %d×%d, %d bytes]\n", cfg.Width, cfg.Height, len(data))
		} else {
			fmt.Fprintf(w, "[PNG image, %d bytes: %v]\n", len(data), err)
		}
	default:
		fmt.Fprintln(w, strings.TrimRight(string(data), "\n"))
	}
}

// Sync waits until everything displayed so far has reached the notebook (gonbui.Sync).
// Start every displaying cell with `defer notebook.Sync()`.
func Sync() { gonbui.Sync() }

// Markdown displays markdown text.
func Markdown(md string) { Output(MIMEMarkdown, []byte(md)) }

// Markdownf displays fmt.Sprintf(format, args...) as markdown.
func Markdownf(format string, args ...any) { Markdown(fmt.Sprintf(format, args...)) }

// ResultMarkdown displays a results document (a table file of results/, with its
// title and notes) inside a notebook: its headings become bold paragraphs, so that
// they do not compete with the notebook's own sections.
func ResultMarkdown(md string) { Markdown(demoteHeadings(md)) }

// demoteHeadings rewrites the ATX headings of md ("# Title") outside code fences as
// bold paragraphs ("**Title**").
func demoteHeadings(md string) string {
	lines := strings.Split(md, "\n")
	fenced := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(t, "#") {
			continue
		}
		text := strings.TrimLeft(t, "#")
		if len(t)-len(text) > 6 || text != "" && text[0] != ' ' {
			continue
		}
		if text = strings.TrimSpace(strings.TrimRight(text, "# ")); text != "" {
			lines[i] = "**" + text + "**"
		}
	}
	return strings.Join(lines, "\n")
}

// HTML displays HTML.
func HTML(html string) { Output(MIMEHTML, []byte(html)) }

// PNG displays PNG-encoded bytes (as the figures package returns them). It returns
// an error, displaying nothing, when b is not a PNG.
func PNG(b []byte) error {
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("notebook: not a PNG image (%d bytes): %w", len(b), err)
	}
	Output(MIMEPNG, b)
	return nil
}

// Image displays an image as PNG.
func Image(img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("notebook: encoding the image as PNG: %w", err)
	}
	Output(MIMEPNG, buf.Bytes())
	return nil
}

// PlotPNG renders a gonum plot of width w and height h as PNG bytes.
func PlotPNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("notebook: plot size %v×%v: both must be > 0", w, h)
	}
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return nil, fmt.Errorf("notebook: rendering the plot: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("notebook: rendering the plot: %w", err)
	}
	return buf.Bytes(), nil
}

// Plot displays a gonum plot of width w and height h (e.g. 16*vg.Centimeter).
func Plot(p *plot.Plot, w, h vg.Length) error {
	b, err := PlotPNG(p, w, h)
	if err != nil {
		return err
	}
	Output(MIMEPNG, b)
	return nil
}

// Check stops the cell when err is not nil: it flushes the displayed output, prints
// "error: err" to stderr and exits with status 1 (which the notebook test reports).
// In a GoNB kernel, a cell that meets an error another cell of the kernel has already
// shown (a cell depending on a run that failed) prints one short line instead, and
// one that refuses to resume an interrupted training (*Interrupted, Later) prints its
// one line of advice; both exit with status 0, so that the line is all they show.
func Check(err error) {
	if err == nil {
		return
	}
	Sync()
	var intr *Interrupted
	if errors.As(err, &intr) && intr.Later {
		fmt.Fprintln(stderr, intr.Error())
		exit(0)
		return
	}
	if shownBefore(err.Error()) {
		fmt.Fprintln(stderr, shortError(err.Error()))
		exit(0)
		return
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	exit(1)
}

// exit and stderr are os.Exit and os.Stderr; tests replace them.
var (
	exit             = os.Exit
	stderr io.Writer = os.Stderr
)

// Must returns v, or stops the cell as Check does when err is not nil.
func Must[T any](v T, err error) T {
	Check(err)
	return v
}
