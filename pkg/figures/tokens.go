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
// and its label (TokenEntry.Label), flowing into as many columns as fit; where
// even one label is wider than the panel, one column of labels wrapped at their
// " · " separators. Title and note wrap at spaces.
type TokenKeyPanel struct {
	Key   *TokenKey
	Title string // "" draws keyTitle
}

// keyTitle is the default title of a TokenKeyPanel.
const keyTitle = "tokens → the classes of their images (share of the token's frames)"

// Geometry of TokenKeyPanel (points).
const (
	keyRowH   = 12 // one line of an entry
	keySwatch = 8  // the colour square
	keyGapX   = 12 // between columns of entries
)

// keyCell is where TokenKeyPanel draws one entry: column, first line, lines.
type keyCell struct {
	col, row int
	lines    []string
}

// title is the panel's title.
func (p TokenKeyPanel) title() string {
	if p.Title != "" {
		return p.Title
	}
	return keyTitle
}

// head returns the lines of the title and of the note at width w.
func (p TokenKeyPanel) head(w vg.Length) (title, note []string) {
	title = wrapText(p.title(), " ", textStyle(sizeText, color.Black, draw.XLeft, draw.YTop), w)
	if p.Key.Note != "" {
		note = wrapText(p.Key.Note, " ", textStyle(sizeNote, color.Black, draw.XLeft, draw.YTop), w)
	}
	return title, note
}

// headHeight is the height of the title and note lines at width w.
func (p TokenKeyPanel) headHeight(w vg.Length) vg.Length {
	title, note := p.head(w)
	h := vg.Length(len(title))*textStyle(sizeText, color.Black, draw.XLeft, draw.YTop).Height("M") + 3
	if len(note) > 0 {
		h += vg.Length(len(note))*textStyle(sizeNote, color.Black, draw.XLeft, draw.YTop).Height("M") + 2
	}
	return h
}

// Height returns the panel's height at width w.
func (p TokenKeyPanel) Height(w vg.Length) vg.Length {
	if p.Key == nil || len(p.Key.Entries) == 0 {
		return 0
	}
	_, rows, _ := p.layout(w)
	return p.headHeight(w) + vg.Length(rows)*keyRowH + 4
}

// layout places the entries at width w: columns of equal width (the widest label)
// filled top to bottom, as many as fit; or, where the widest label does not fit,
// one column of wrapped labels. It returns the cells, the number of lines and the
// column width.
func (p TokenKeyPanel) layout(w vg.Length) (cells []keyCell, rows int, colW vg.Length) {
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	for _, e := range p.Key.Entries {
		colW = max(colW, keySwatch+4+sty.Width(e.Label()))
	}
	n := len(p.Key.Entries)
	if colW <= w {
		cols := min(n, max(1, int((w+keyGapX)/(colW+keyGapX))))
		rows = (n + cols - 1) / cols
		for i, e := range p.Key.Entries {
			cells = append(cells, keyCell{col: i / rows, row: i % rows, lines: []string{e.Label()}})
		}
		return cells, rows, colW
	}
	for _, e := range p.Key.Entries {
		lines := wrapText(e.Label(), " · ", sty, w-keySwatch-4)
		cells = append(cells, keyCell{row: rows, lines: lines})
		rows += len(lines)
	}
	return cells, rows, w
}

// wrapText breaks text at sep into lines no wider than w in sty (a part wider
// than w alone gets a line of its own); continuation lines start with the part
// after the separator.
func wrapText(text, sep string, sty draw.TextStyle, w vg.Length) []string {
	parts := strings.Split(text, sep)
	var lines []string
	cur := parts[0]
	for _, part := range parts[1:] {
		if next := cur + sep + part; sty.Width(next) <= w {
			cur = next
			continue
		}
		lines = append(lines, cur+strings.TrimRight(sep, " "))
		cur = part
	}
	return append(lines, cur)
}

// Draw implements Panel.
func (p TokenKeyPanel) Draw(c draw.Canvas) {
	if p.Key == nil || len(p.Key.Entries) == 0 {
		return
	}
	w := c.Max.X - c.Min.X
	title, note := p.head(w)
	y := c.Max.Y
	head := textStyle(sizeText, color.Black, draw.XLeft, draw.YTop)
	for _, line := range title {
		c.FillText(head, vg.Point{X: c.Min.X, Y: y}, line)
		y -= head.Height(line)
	}
	y -= 3
	if len(note) > 0 {
		sty := textStyle(sizeNote, color.Gray{0x50}, draw.XLeft, draw.YTop)
		for _, line := range note {
			c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, line)
			y -= sty.Height(line)
		}
		y -= 2
	}
	cells, _, colW := p.layout(w)
	sty := textStyle(sizeText, color.Black, draw.XLeft, draw.YCenter)
	for i, e := range p.Key.Entries {
		cell := cells[i]
		x := c.Min.X + vg.Length(cell.col)*(colW+keyGapX)
		yc := y - keyRowH/2 - vg.Length(cell.row)*keyRowH
		sw := vg.Rectangle{Min: vg.Point{X: x, Y: yc - keySwatch/2}, Max: vg.Point{X: x + keySwatch, Y: yc + keySwatch/2}}
		fillRect(c, sw, e.Color)
		strokeRect(c, sw, draw.LineStyle{Color: lineColor, Width: 0.4})
		for j, line := range cell.lines {
			c.FillText(sty, vg.Point{X: x + keySwatch + 4, Y: yc - vg.Length(j)*keyRowH}, line)
		}
	}
}
