package notebook

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// CINote is what SizeNote displays at CI size.
const CINote = "**CI-size run** (`GRADCSCG_NB_SIZE=ci`): small data and budgets, so the maps and numbers " +
	"below are not the paper's; each figure is shown beside the committed full-size one. " +
	"The notebooks as committed show the full-size runs (`make notebooks-full`)."

// SizeNote displays, at CI size, that the notebook shows CI-size runs (CINote); at full
// size it displays nothing.
func SizeNote() {
	if CI() {
		Markdown(CINote)
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
	besideOutput(b, full, committed)
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

// besideCaptions are the captions of the two figures Beside shows at CI size.
const (
	ciCaption   = "This notebook's CI-size run (GRADCSCG_NB_SIZE=ci)"
	fullCaption = "The committed full-size figure"
)

// besideOutput shows the CI-size figure ci beside the committed one (full, at rel): in
// a notebook as HTML, with the CI-size figure as a PNG too (for front ends without
// HTML); elsewhere as text.
var besideOutput = func(ci, full []byte, rel string) {
	if !gonbui.IsNotebook {
		fmt.Fprintf(Stdout, "%s:\n", ciCaption)
		writeText(Stdout, MIMEPNG, ci)
		fmt.Fprintf(Stdout, "%s, %s:\n", fullCaption, rel)
		writeText(Stdout, MIMEPNG, full)
		return
	}
	figure := func(caption string, b []byte) string {
		return `<figure style="margin:0;flex:1 1 420px;min-width:0"><figcaption style="font-weight:bold;margin-bottom:4px">` +
			caption + `</figcaption><img style="max-width:100%" src="data:image/png;base64,` +
			base64.StdEncoding.EncodeToString(b) + `"></figure>`
	}
	h := `<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">` +
		figure(html.EscapeString(ciCaption), ci) +
		figure(html.EscapeString(fullCaption)+" <code>"+html.EscapeString(rel)+"</code>", full) + `</div>`
	gonbui.SendData(&protocol.DisplayData{Data: map[protocol.MIMEType]any{
		protocol.MIMETextHTML: h,
		protocol.MIMEImagePNG: ci,
	}})
}
