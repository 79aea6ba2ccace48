package gridworld

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// LayoutLimit bounds a layout file: the longest line parseLayout reads, a few times.
var LayoutLimit = inputfile.Limit{Format: "layout file", Bytes: 64 << 20}

// LoadLayout reads a custom environment from a layout file (format in the
// package documentation). The environment is named after the file without
// its extension; errors name path:line.
func LoadLayout(path string) (*Env, error) {
	f, err := inputfile.Open(path, LayoutLimit)
	if err != nil {
		return nil, fmt.Errorf("gridworld: %w", err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return parseLayout(path, name, f)
}

// ParseLayout reads a layout (format in the package documentation) from r.
// name is the environment's name and the file label of errors.
func ParseLayout(name string, r io.Reader) (*Env, error) {
	return parseLayout(name, name, r)
}

type srcLine struct {
	n    int    // 1-based line number
	text string // trimmed
}

func parseLayout(source, name string, r io.Reader) (*Env, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	var lines []srcLine
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		lines = append(lines, srcLine{n, t})
	}
	if err := sc.Err(); err != nil {
		return nil, &LayoutError{File: source, Msg: "read: " + err.Error()}
	}
	if len(lines) == 0 {
		return nil, &LayoutError{File: source, Msg: "empty layout: no rows, no graph"}
	}
	if lines[0].text == "graph" {
		return parseGraph(source, name, lines)
	}
	return parseGrid(source, name, lines)
}

// parseInt parses a non-negative decimal integer token up to limit; what
// names the token in messages ("class id", "node id").
func parseInt(tok, what string, limit int) (int, error) {
	n, err := strconv.Atoi(tok)
	var ne *strconv.NumError
	switch {
	case errors.As(err, &ne) && ne.Err == strconv.ErrRange:
		return 0, fmt.Errorf("%s %s is too large (max %d)", what, tok, limit)
	case err != nil:
		return 0, fmt.Errorf("unknown token %q", tok)
	case n < 0:
		return 0, fmt.Errorf("negative %s %d", what, n)
	case n > limit:
		return 0, fmt.Errorf("%s %d is too large (max %d)", what, n, limit)
	}
	return n, nil
}

func parseGrid(source, name string, lines []srcLine) (*Env, error) {
	cols := len(strings.Fields(lines[0].text))
	cells := make([]int, 0, cols*len(lines))
	rowLine := make([]int, len(lines))
	for r, l := range lines {
		toks := strings.Fields(l.text)
		if len(toks) != cols {
			return nil, &LayoutError{File: source, Line: l.n,
				Msg: fmt.Sprintf("ragged rows: row %d has %d cells, row 0 (line %d) has %d", r, len(toks), lines[0].n, cols)}
		}
		rowLine[r] = l.n
		for c, tok := range toks {
			if tok == "#" {
				cells = append(cells, Wall)
				continue
			}
			v, err := parseInt(tok, "class id", MaxClass)
			if err != nil {
				return nil, &LayoutError{File: source, Line: l.n,
					Msg: fmt.Sprintf("%v at row %d, col %d (want # or a class id 0-%d)", err, r, c, MaxClass)}
			}
			cells = append(cells, v)
		}
	}
	return buildGrid(source, name, len(lines), cols, cells, rowLine)
}

func parseGraph(source, name string, lines []srcLine) (*Env, error) {
	var (
		classes   []int
		classLine int
		edges     [][2]int
		edgeLine  []int
	)
	for _, l := range lines[1:] {
		if rest, ok := strings.CutPrefix(l.text, "classes:"); ok {
			if classLine > 0 {
				return nil, &LayoutError{File: source, Line: l.n, Msg: fmt.Sprintf("second classes line (first on line %d)", classLine)}
			}
			classLine = l.n
			classes = []int{} // present, maybe empty
			for i, tok := range strings.Fields(rest) {
				v, err := parseInt(tok, "class id", MaxClass)
				if err != nil {
					return nil, &LayoutError{File: source, Line: l.n, Msg: fmt.Sprintf("node %d: %v", i, err)}
				}
				classes = append(classes, v)
			}
			continue
		}
		toks := strings.Fields(l.text)
		if len(toks) != 2 {
			return nil, &LayoutError{File: source, Line: l.n,
				Msg: fmt.Sprintf("want an edge \"u v\" or \"classes: c0 c1 ...\", got %q", l.text)}
		}
		var uv [2]int
		for i, tok := range toks {
			v, err := parseInt(tok, "node id", 1<<30)
			if err != nil {
				return nil, &LayoutError{File: source, Line: l.n, Msg: fmt.Sprintf("edge: %v", err)}
			}
			uv[i] = v
		}
		edges = append(edges, uv)
		edgeLine = append(edgeLine, l.n)
	}
	if classLine == 0 {
		return nil, &LayoutError{File: source, Line: lines[0].n, Msg: "graph has no \"classes:\" line"}
	}
	return buildGraph(source, name, classes, classLine, edges, edgeLine)
}

// WriteLayout writes e in the layout file format; ParseLayout reads it back
// to the same environment (Regions and Defaults are not part of the format).
func (e *Env) WriteLayout(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if e.IsGraph() {
		fmt.Fprintf(bw, "// %s: graph, %d places, %d edges\ngraph\nclasses:", e.Name, e.NumPlaces(), len(e.edges))
		for _, c := range e.Class {
			fmt.Fprintf(bw, " %d", c)
		}
		bw.WriteString("\n")
		for _, uv := range e.edges {
			fmt.Fprintf(bw, "%d %d\n", uv[0], uv[1])
		}
		return bw.Flush()
	}
	fmt.Fprintf(bw, "// %s: %dx%d, %d places, %d edges\n", e.Name, e.Rows, e.Cols, e.NumPlaces(), len(e.edges))
	width := 1
	for _, c := range e.Class {
		width = max(width, len(strconv.Itoa(c)))
	}
	for r := range e.Rows {
		for c := range e.Cols {
			tok := "#"
			if v := e.Cells[r*e.Cols+c]; v != Wall {
				tok = strconv.Itoa(v)
			}
			if c > 0 {
				bw.WriteByte(' ')
			}
			fmt.Fprintf(bw, "%*s", width, tok)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Layout returns e in the layout file format (see WriteLayout).
func (e *Env) Layout() string {
	var sb strings.Builder
	_ = e.WriteLayout(&sb)
	return sb.String()
}
