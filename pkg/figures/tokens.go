package figures

import (
	"errors"
	"fmt"
	"image/color"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TokenKey says which classes' images each token holds on a decoded episode, and
// gives every token its colour. The classes are the true labels of the frames,
// used here only to draw: the key is the legend of every figure that shows
// tokens (TokenKeyPanel), so that a token holding two digits is shown as such.
type TokenKey struct {
	Entries []TokenEntry // the tokens that occur, in increasing token order
	// Note, if set, is drawn under the key's title (where the frames come from).
	Note string
}

// TokenEntry is one token of a TokenKey.
type TokenEntry struct {
	Token   int
	Frames  int          // frames with this token
	Classes []ClassCount // the classes of those frames, most frames first (ties: lower class)
	Color   color.RGBA   // the token's colour in every figure (TokenKey.Color)
}

// ClassCount is the number of a token's frames that show one class.
type ClassCount struct {
	Class, Frames int
}

// keyMinShare is the smallest share of a token's frames for which the key names a
// class; the classes below it are summed as "other" (single stray frames of a
// well-separated token are not a shared token).
const keyMinShare = 0.05

// NewTokenKey counts, for every token, the classes of the frames that have it:
// tokens[t] is frame t's token, classes[t] its true class (equal lengths, ≥ 0).
//
// Colours: token k takes ClassColor(m) of its majority class m when it is the
// token with the most frames (ties: the lower token) among those whose majority
// class is m, so that a token standing for one class has that class's colour in
// every figure; every other token takes ClassColor(M+1), ClassColor(M+2), … in
// token order, M the largest class of the episode, so that no two tokens share a
// colour.
func NewTokenKey(tokens, classes []int) (*TokenKey, error) {
	if len(tokens) != len(classes) {
		return nil, fmt.Errorf("figures.NewTokenKey: %d tokens for %d frames", len(tokens), len(classes))
	}
	if len(tokens) == 0 {
		return nil, errors.New("figures.NewTokenKey: no frames")
	}
	counts := map[int]map[int]int{}
	maxClass := 0
	for t, k := range tokens {
		c := classes[t]
		if k < 0 || c < 0 {
			return nil, fmt.Errorf("figures.NewTokenKey: frame %d has token %d, class %d (both must be ≥ 0)", t, k, c)
		}
		if counts[k] == nil {
			counts[k] = map[int]int{}
		}
		counts[k][c]++
		maxClass = max(maxClass, c)
	}
	key := &TokenKey{}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		e := TokenEntry{Token: k}
		for c, n := range counts[k] {
			e.Classes = append(e.Classes, ClassCount{Class: c, Frames: n})
			e.Frames += n
		}
		slices.SortFunc(e.Classes, func(a, b ClassCount) int {
			if a.Frames != b.Frames {
				return b.Frames - a.Frames
			}
			return a.Class - b.Class
		})
		key.Entries = append(key.Entries, e)
	}
	// The token that represents each majority class: the most frames, then the lowest id.
	rep := map[int]int{} // majority class → index of its representative entry
	for i, e := range key.Entries {
		m := e.Classes[0].Class
		if j, ok := rep[m]; !ok || e.Frames > key.Entries[j].Frames {
			rep[m] = i
		}
	}
	extra := maxClass + 1
	for i := range key.Entries {
		e := &key.Entries[i]
		if rep[e.Classes[0].Class] == i {
			e.Color = ClassColor(e.Classes[0].Class)
		} else {
			e.Color = ClassColor(extra)
			extra++
		}
	}
	return key, nil
}

// Entry returns token k's entry.
func (key *TokenKey) Entry(k int) (TokenEntry, bool) {
	if key == nil {
		return TokenEntry{}, false
	}
	i, ok := slices.BinarySearchFunc(key.Entries, k, func(e TokenEntry, k int) int { return e.Token - k })
	if !ok {
		return TokenEntry{}, false
	}
	return key.Entries[i], true
}

// Color returns token k's colour, and false when no frame has token k.
func (key *TokenKey) Color(k int) (color.RGBA, bool) {
	e, ok := key.Entry(k)
	return e.Color, ok
}

// Listed returns the classes the key names for token k: those holding at least
// keyMinShare of its frames (always the first), most frames first.
func (e TokenEntry) Listed() []ClassCount {
	var out []ClassCount
	for i, cc := range e.Classes {
		if i == 0 || float64(cc.Frames) >= keyMinShare*float64(e.Frames) {
			out = append(out, cc)
		}
	}
	return out
}

// Shares reports whether the key names more than one class for some token.
func (key *TokenKey) Shares() bool {
	if key == nil {
		return false
	}
	for _, e := range key.Entries {
		if len(e.Listed()) > 1 {
			return true
		}
	}
	return false
}

// Label is the key's text for the token: "t4 (2480 frames): 2 48% · 3 45% · 5 6%
// · other 1%", or "t4 (980 frames): 2" when all its frames show one class.
func (e TokenEntry) Label() string {
	var b strings.Builder
	frames := "frames"
	if e.Frames == 1 {
		frames = "frame"
	}
	fmt.Fprintf(&b, "t%d (%d %s): ", e.Token, e.Frames, frames)
	listed := e.Listed()
	if len(listed) == 1 && listed[0].Frames == e.Frames {
		b.WriteString(strconv.Itoa(listed[0].Class))
		return b.String()
	}
	rest := e.Frames
	for i, cc := range listed {
		if i > 0 {
			b.WriteString(" · ")
		}
		fmt.Fprintf(&b, "%d %s", cc.Class, percent(cc.Frames, e.Frames))
		rest -= cc.Frames
	}
	if rest > 0 {
		fmt.Fprintf(&b, " · other %s", percent(rest, e.Frames))
	}
	return b.String()
}

// percent formats n/of as a whole percentage, "<1%" for a nonzero share under 0.5%.
func percent(n, of int) string {
	p := 100 * float64(n) / float64(of)
	if p < 0.5 && n > 0 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// TokenKeyPanel draws a TokenKey: a title, then per token a swatch of its colour
// and its label (TokenEntry.Label), flowing into as many columns as fit.
type TokenKeyPanel struct {
	Key   *TokenKey
	Title string // "" draws keyTitle
}

// keyTitle is the default title of a TokenKeyPanel.
const keyTitle = "tokens → the classes of their images (share of the token's frames)"

// Geometry of TokenKeyPanel (points).
const (
	keyRowH   = 12 // one entry
	keySwatch = 8  // the colour square
	keyGapX   = 12 // between columns of entries
)

// Height returns the panel's height at width w.
func (p TokenKeyPanel) Height(w vg.Length) vg.Length {
	if p.Key == nil || len(p.Key.Entries) == 0 {
		return 0
	}
	rows, _ := p.layout(w)
	h := p.headHeight(w) + vg.Length(rows)*keyRowH + 4
	return h
}

// headHeight is the height of the title (and note) lines.
func (p TokenKeyPanel) headHeight(w vg.Length) vg.Length {
	h := textStyle(sizeText, color.Black, draw.XLeft, draw.YTop).Height("M") + 3
	if p.Key.Note != "" {
		h += textStyle(sizeNote, color.Black, draw.XLeft, draw.YTop).Height("M") + 2
	}
	return h
}

// layout returns the number of rows and the column width: entries fill columns of
// equal width (the widest label), top to bottom, as many columns as fit in w.
func (p TokenKeyPanel) layout(w vg.Length) (rows int, colW vg.Length) {
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	for _, e := range p.Key.Entries {
		colW = max(colW, keySwatch+4+sty.Width(e.Label()))
	}
	cols := max(1, int((w+keyGapX)/(colW+keyGapX)))
	n := len(p.Key.Entries)
	cols = min(cols, n)
	return (n + cols - 1) / cols, colW
}

// Draw implements Panel.
func (p TokenKeyPanel) Draw(c draw.Canvas) {
	if p.Key == nil || len(p.Key.Entries) == 0 {
		return
	}
	w := c.Max.X - c.Min.X
	title := p.Title
	if title == "" {
		title = keyTitle
	}
	head := textStyle(sizeText, color.Black, draw.XLeft, draw.YTop)
	if tw := head.Width(title); tw > w && w > 0 {
		head.Font.Size = max(head.Font.Size*w/tw, sizeMinText)
	}
	y := c.Max.Y
	c.FillText(head, vg.Point{X: c.Min.X, Y: y}, title)
	y -= textStyle(sizeText, color.Black, draw.XLeft, draw.YTop).Height("M") + 3
	if p.Key.Note != "" {
		note := textStyle(sizeNote, color.Gray{0x50}, draw.XLeft, draw.YTop)
		if tw := note.Width(p.Key.Note); tw > w && w > 0 {
			note.Font.Size = max(note.Font.Size*w/tw, sizeMinText)
		}
		c.FillText(note, vg.Point{X: c.Min.X, Y: y}, p.Key.Note)
		y -= textStyle(sizeNote, color.Black, draw.XLeft, draw.YTop).Height("M") + 2
	}
	rows, colW := p.layout(w)
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	if colW > w && w > 0 { // a single column narrower than its labels: shrink them
		sty.Font.Size = max(sty.Font.Size*w/colW, sizeMinText)
	}
	for i, e := range p.Key.Entries {
		col, row := i/rows, i%rows
		x := c.Min.X + vg.Length(col)*(colW+keyGapX)
		yc := y - keyRowH/2 - vg.Length(row)*keyRowH
		sw := vg.Rectangle{Min: vg.Point{X: x, Y: yc - keySwatch/2}, Max: vg.Point{X: x + keySwatch, Y: yc + keySwatch/2}}
		fillRect(c, sw, e.Color)
		strokeRect(c, sw, draw.LineStyle{Color: lineColor, Width: 0.4})
		c.FillText(sty, vg.Point{X: x + keySwatch + 4, Y: yc}, e.Label())
	}
}
