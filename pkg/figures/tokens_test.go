package figures

import (
	"bytes"
	"image"
	"image/png"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// handEpisode is a decoded episode made by hand: frame t shows class classes[t]
// and got token tokens[t]. Counted by hand:
//
//	token 1: class 0 ×6                      → "0", colour of class 0
//	token 4: class 2 ×10, 3 ×9, 5 ×1 (20)    → 2 50%, 3 45%, 5 5% (5% is listed)
//	token 7: class 0 ×3                      → majority 0, fewer frames than token 1:
//	                                            the first extra colour, class 9 + 1
//	token 9: class 9 ×40, 3 ×1 (41)          → 9 98%, other 2% (1/41 < 5%)
func handEpisode() (tokens, classes []int) {
	add := func(k, c, n int) {
		for range n {
			tokens = append(tokens, k)
			classes = append(classes, c)
		}
	}
	add(4, 2, 4)
	add(1, 0, 6)
	add(4, 3, 9)
	add(9, 9, 40)
	add(4, 5, 1)
	add(7, 0, 3)
	add(4, 2, 6)
	add(9, 3, 1)
	return tokens, classes
}

func TestTokenKeyFromDecodedEpisode(t *testing.T) {
	tokens, classes := handEpisode()
	key, err := NewTokenKey(tokens, classes)
	if err != nil {
		t.Fatal(err)
	}
	want := []TokenEntry{
		{Token: 1, Frames: 6, Classes: []ClassCount{{0, 6}}, Color: ClassColor(0)},
		{Token: 4, Frames: 20, Classes: []ClassCount{{2, 10}, {3, 9}, {5, 1}}, Color: ClassColor(2)},
		{Token: 7, Frames: 3, Classes: []ClassCount{{0, 3}}, Color: ClassColor(10)},
		{Token: 9, Frames: 41, Classes: []ClassCount{{9, 40}, {3, 1}}, Color: ClassColor(9)},
	}
	if !reflect.DeepEqual(key.Entries, want) {
		t.Fatalf("entries\n%+v\nwant\n%+v", key.Entries, want)
	}
	labels := []string{
		"t1 (6 frames): 0",
		"t4 (20 frames): 2 50% · 3 45% · 5 5%",
		"t7 (3 frames): 0",
		"t9 (41 frames): 9 98% · other 2%",
	}
	for i, e := range key.Entries {
		if got := e.Label(); got != labels[i] {
			t.Errorf("token %d: label %q, want %q", e.Token, got, labels[i])
		}
	}
	if !key.Shares() {
		t.Error("token 4 holds three classes, Shares() = false")
	}
	if c, ok := key.Color(7); !ok || c != ClassColor(10) {
		t.Errorf("Color(7) = %v, %v", c, ok)
	}
	if _, ok := key.Color(2); ok {
		t.Error("token 2 never occurs but has a colour")
	}
	// One class per token, one token per class: no sharing, class colours.
	one, err := NewTokenKey([]int{0, 1, 1, 0}, []int{3, 5, 5, 3})
	if err != nil {
		t.Fatal(err)
	}
	if one.Shares() || one.Entries[0].Color != ClassColor(3) || one.Entries[1].Color != ClassColor(5) {
		t.Errorf("one-to-one key: %+v", one.Entries)
	}
	for _, tc := range []struct {
		tokens, classes []int
		want            string
	}{
		{[]int{0}, []int{0, 1}, "1 tokens for 2 frames"},
		{nil, nil, "no frames"},
		{[]int{0, -1}, []int{0, 0}, "frame 1"},
	} {
		if _, err := NewTokenKey(tc.tokens, tc.classes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v/%v: error %v, want %q", tc.tokens, tc.classes, err, tc.want)
		}
	}
}

// mergedReadout is a readout of a 1×3 corridor of classes 2, 3, 2 whose model has one
// token (3 clones) for both classes, as a VQ-VAE that merged them: state g decodes
// place g.
func mergedReadout(t *testing.T) *Readout {
	t.Helper()
	env, err := gridworld.NewGrid("merged", 1, 3, []int{2, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	m := chmm.New([]int{3}, env.NumActions(), rand.New(rand.NewPCG(1, 1)))
	ep := env.Walk(gridworld.NewRand(3), 400)
	states := append([]int(nil), ep.Places...) // state g at place g
	r, err := NewReadout(env, m, ep.Places, states, ReadoutOptions{Cutoff: 1e-9, FrameTokens: make([]int, len(states))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecoveredNodesShowTheirPlace: where one token holds two classes, every
// recovered node is labelled with its own place's class (not the token's majority
// class) and filled with the token's colour; with images, a node shows the image of
// its place's class its token holds, or a labelled disc where the token holds none.
func TestRecoveredNodesShowTheirPlace(t *testing.T) {
	r := mergedReadout(t)
	if got := r.Key.Entries; len(got) != 1 || len(got[0].Classes) != 2 || got[0].Classes[0].Class != 2 {
		t.Fatalf("key %+v, want token 0 holding classes 2 and 3", got)
	}
	nodes := r.graphNodes(false)
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	for i, s := range r.Graph.Nodes {
		want := []string{"2", "3", "2"}[r.StatePlace[s]]
		if nodes[i].Label != want || nodes[i].Fill != ClassColor(2) {
			t.Errorf("state %d at place %d: label %q fill %v, want %q in token 0's colour %v",
				s, r.StatePlace[s], nodes[i].Label, nodes[i].Fill, want, ClassColor(2))
		}
	}
	r.ImageSide = 2
	r.TokenClassImages = map[[2]int][]float32{{0, 2}: {0, 1, 1, 0}}
	for i, ns := range r.graphNodes(true) {
		g := r.StatePlace[r.Graph.Nodes[i]]
		if (ns.Image != nil) != (g != 1) {
			t.Errorf("place %d: image %v, want one only for the class-2 places", g, ns.Image != nil)
		}
		if g == 1 && ns.Label != "3" {
			t.Errorf("place 1: disc labelled %q, want 3", ns.Label)
		}
	}
}

// TestFigureReconstructionPageWidth: Figure 4 of 20 MNIST-sized images (two_rooms:
// 2 per class) is at most 1000 PNG pixels wide, wraps into blocks, and its token
// labels are at least 10 pixels high; more images wrap into more blocks at the same
// width.
func TestFigureReconstructionPageWidth(t *testing.T) {
	const side, n = 28, 20
	in := make([]float32, n*side*side)
	tokens := make([]int, n)
	for i := range tokens {
		tokens[i] = i / 2 % 7
	}
	key, err := NewTokenKey(tokens, tokens)
	if err != nil {
		t.Fatal(err)
	}
	fig, err := ReconstructionFigure(in, in, tokens, side, "two_rooms", key)
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
	if w := img.Bounds().Dx(); w > 1000 {
		t.Errorf("Figure 4 is %d pixels wide, want ≤ 1000", w)
	}
	p := reconPanel{tokens: tokens, side: side}
	if cols, blocks := p.grid(); cols != 10 || blocks != 2 {
		t.Errorf("%d columns × %d blocks, want 10 × 2", cols, blocks)
	}
	// The token label of the first column: below the colour bar, in the token row
	// (points from the top: title, padding 4, two images and their gap).
	px := func(pt vg.Length) int { return int(pt * DPI / 72) }
	cell := vg.Length(side) * reconPixel(side)
	top := titleHeight + 4 + 2*cell + reconGapPt + 4
	x0, x1 := px(4+reconLabelPt), px(4+reconLabelPt+cell)
	if h := inkHeight(img, x0, x1, px(top), px(top+reconTokenPt)); h < 10 {
		t.Errorf("token label is %d pixels high, want ≥ 10", h)
	}
	// 45 images: 5 blocks of at most 10, no wider.
	many := make([]int, 45)
	fig2, err := ReconstructionFigure(make([]float32, 45*side*side), make([]float32, 45*side*side), many, side, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := px(fig2.Width); w > 1000 {
		t.Errorf("45 images: %d pixels wide", w)
	}
	if _, blocks := (reconPanel{tokens: many, side: side}).grid(); blocks != 5 {
		t.Errorf("45 images in %d blocks, want 5", blocks)
	}
}

// inkHeight is the number of rows in [y0, y1) with a dark pixel in [x0, x1).
func inkHeight(img image.Image, x0, x1, y0, y1 int) int {
	first, last := -1, -1
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r < 0x6000 && g < 0x6000 && b < 0x6000 {
				if first < 0 {
					first = y
				}
				last = y
				break
			}
		}
	}
	if first < 0 {
		return 0
	}
	return last - first + 1
}

// TestFigureImageMapsTight: in Figure 5 every layout panel's drawing has its grid's
// aspect and fills its tile (no column floats in white space), columns share one
// height, and the token key row is there when the readouts have keys.
func TestFigureImageMapsTight(t *testing.T) {
	var rs []*Readout
	for _, name := range []string{"aliased", "corridors", "room", "two_rooms"} {
		env, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := perfectReadout(t, env, 30, 3000)
		rs = append(rs, r)
	}
	fig, err := ImageMaps(rs...)
	if err != nil {
		t.Fatal(err)
	}
	if fig.Rows != 4 {
		t.Fatalf("%d rows, want 4 (layouts, clones, graphs, token keys)", fig.Rows)
	}
	rec := &recordTiles{}
	for i := range fig.Panels {
		fig.Panels[i] = rec
	}
	fig.Title = ""
	fig.Draw(draw.New(vgimg.New(fig.Width, fig.Height)))
	titleH := panelTitleHeight()
	for i, r := range rs {
		tile := rec.tiles[i]
		w, h := tile.Max.X-tile.Min.X, tile.Max.Y-tile.Min.Y-titleH
		aspect := float64(r.Env.Cols) / float64(r.Env.Rows)
		if got := float64(w / h); got < aspect*0.98 || got > aspect*1.02 {
			t.Errorf("%s: layout tile %.1f×%.1f has aspect %.3f, want %.3f", r.Env.Name, w, h, got, aspect)
		}
		if d := h - (rec.tiles[0].Max.Y - rec.tiles[0].Min.Y - titleH); d < -0.5 || d > 0.5 {
			t.Errorf("%s: layout height %.1f differs from the first column's", r.Env.Name, h)
		}
	}
	if px := fig.Width * DPI / 72; px > 2600 {
		t.Errorf("Figure 5 is %.0f pixels wide", px)
	}
}

// TestTokenKeyWraps: a key narrower than its longest label draws one column of
// labels wrapped at " · ", every line within the width and nothing lost; a wide
// key puts the entries side by side on one line each.
func TestTokenKeyWraps(t *testing.T) {
	var tokens, classes []int
	for c := range 10 { // token 4 holds all ten digits, 10% each
		for range 10 {
			tokens, classes = append(tokens, 4), append(classes, c)
		}
	}
	tokens, classes = append(tokens, 1, 1), append(classes, 7, 7)
	key, err := NewTokenKey(tokens, classes)
	if err != nil {
		t.Fatal(err)
	}
	p := TokenKeyPanel{Key: key}
	sty := textStyle(sizeText, nil, draw.XLeft, draw.YCenter)
	const narrow = 120
	cells, rows, _ := p.layout(narrow)
	var joined []string
	for i, cell := range cells {
		if cell.col != 0 {
			t.Errorf("entry %d in column %d of a narrow key", i, cell.col)
		}
		for _, line := range cell.lines {
			if w := sty.Width(line); w > narrow-keySwatch-4 {
				t.Errorf("line %q is %.1f points wide, more than %d", line, w, narrow-keySwatch-4)
			}
		}
		joined = append(joined, strings.Join(cell.lines, " "))
	}
	if rows <= len(cells) || joined[1] != key.Entries[1].Label() {
		t.Errorf("%d lines; token 4 wrapped as %q, want its label %q", rows, joined[1], key.Entries[1].Label())
	}
	if _, rows, _ := p.layout(2000); rows != 1 {
		t.Errorf("a 2000-point key takes %d lines, want 1", rows)
	}
	if h := p.Height(narrow); h < vg.Length(rows)*keyRowH {
		t.Errorf("height %.1f for %d lines", h, rows)
	}
}
