package notebook

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// CINote is what SizeNote displays at CI size.
const CINote = "**CI-size run** (`GRADCSCG_NB_SIZE=ci`): small data and budgets, so the maps and numbers " +
	"below are not the paper's; where the repository has the full-size figure, or the reports to draw it, " +
	"it is shown beside this run's. " +
	"The notebooks as committed show the full-size runs (`make notebooks-full`)."

// SizeNote displays, at CI size, that the notebook shows CI-size runs (CINote); at full
// size it displays nothing.
func SizeNote() {
	if CI() {
		Markdown(CINote)
	}
}

// CISameNote is what SameSizeNote displays at CI size.
const CISameNote = "**CI-size run** (`GRADCSCG_NB_SIZE=ci`): this notebook's runs have the same configuration at both " +
	"sizes; here they are trained afresh. The notebook as committed shows the runs of `make notebooks-full`."

// SameSizeNote is SizeNote for a notebook whose runs have the same configuration at
// both sizes (the quick start's): at CI size it displays CISameNote, at full size
// nothing.
func SameSizeNote() {
	if CI() {
		Markdown(CISameNote)
	}
}

// Beside displays b, a PNG figure drawn from this notebook's runs. At CI size it says
// that the figure is a CI-size run's and shows the committed full-size figure
// committed (a path relative to the repository root, e.g. "figures/fig5.png") beside
// it; at full size it displays b alone, as PNG does.
func Beside(b []byte, committed string) error {
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("notebook: not a PNG image (%d bytes): %w", len(b), err)
	}
	if !CI() {
		Output(MIMEPNG, b)
		return nil
	}
	full, err := committedFigure(committed)
	if err != nil {
		return err
	}
	besideOutput(b, full, fullCaption+", `"+committed+"`")
	return nil
}

// ShowBeside is Beside for a figure (a *figures.Figure).
func ShowBeside(f PNGer, committed string) error {
	b, err := f.PNG()
	if err != nil {
		return err
	}
	return Beside(b, committed)
}

// committedFigure reads the committed figure rel (relative to the repository root).
func committedFigure(rel string) ([]byte, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("notebook: committed figure %q: want a path relative to the repository root", rel)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("notebook: the committed full-size figure: %w", err)
	}
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("notebook: the committed full-size figure %s is not a PNG image: %w", rel, err)
	}
	return b, nil
}

// BesideDrawn is Beside for a full-size figure the repository has as data rather than
// as a PNG: at CI size it draws full (called only then; e.g. a figure of the committed
// full-size reports) and shows it beside b, captioned "The full-size figure, " and
// from (what it is drawn from, e.g. "drawn from results/images/*_mnist_seed1.json");
// at full size it displays b alone.
func BesideDrawn(b []byte, full func() ([]byte, error), from string) error {
	if _, err := png.DecodeConfig(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("notebook: not a PNG image (%d bytes): %w", len(b), err)
	}
	if !CI() {
		Output(MIMEPNG, b)
		return nil
	}
	fb, err := full()
	if err != nil {
		return fmt.Errorf("notebook: the full-size figure (%s): %w", from, err)
	}
	if _, err := png.DecodeConfig(bytes.NewReader(fb)); err != nil {
		return fmt.Errorf("notebook: the full-size figure (%s) is not a PNG image: %w", from, err)
	}
	besideOutput(b, fb, "The full-size figure, "+from)
	return nil
}

// ciCaption is the caption of the CI-size figure Beside shows; fullCaption, followed
// by the committed figure's path, the committed one's.
const (
	ciCaption   = "This notebook's CI-size run (GRADCSCG_NB_SIZE=ci)"
	fullCaption = "The committed full-size figure"
)

// besideOutput shows the CI-size figure ci beside the full-size one (full, captioned
// caption; text in backquotes is set as code): in a notebook as HTML, with the CI-size
// figure as a PNG too (for front ends without HTML); elsewhere as text.
var besideOutput = func(ci, full []byte, caption string) {
	if !gonbui.IsNotebook {
		fmt.Fprintf(Stdout, "%s:\n", ciCaption)
		writeText(Stdout, MIMEPNG, ci)
		fmt.Fprintf(Stdout, "%s:\n", strings.ReplaceAll(caption, "`", ""))
		writeText(Stdout, MIMEPNG, full)
		return
	}
	figure := func(caption string, b []byte) string {
		return `<figure style="margin:0;flex:1 1 420px;min-width:0"><figcaption style="font-weight:bold;margin-bottom:4px">` +
			caption + `</figcaption><img style="max-width:100%" src="data:image/png;base64,` +
			base64.StdEncoding.EncodeToString(b) + `"></figure>`
	}
	h := `<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">` +
		figure(html.EscapeString(ciCaption), ci) + figure(codeSpans(caption), full) + `</div>`
	gonbui.SendData(&protocol.DisplayData{Data: map[protocol.MIMEType]any{
		protocol.MIMETextHTML: h,
		protocol.MIMEImagePNG: ci,
	}})
}

// codeSpans escapes text as HTML and sets the parts between backquotes as <code>.
func codeSpans(text string) string {
	parts := strings.Split(text, "`")
	for i, p := range parts {
		parts[i] = html.EscapeString(p)
		if i%2 == 1 {
			parts[i] = "<code>" + parts[i] + "</code>"
		}
	}
	return strings.Join(parts, "")
}
