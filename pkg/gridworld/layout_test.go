package gridworld

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		kind, text string
		line       int // 0: no line number in the message
		want       string
	}{
		{"empty", "", 0, "empty layout"},
		{"only comments", "// a\n\n   \n// b\n", 0, "empty layout"},
		{"ragged", "0 1 2\n// c\n0 1\n", 3, "ragged rows: row 1 has 2 cells, row 0 (line 1) has 3"},
		{"unknown token", "0 1\n1 x\n", 2, `unknown token "x" at row 1, col 1`},
		{"float token", "0 1.5\n", 1, `unknown token "1.5"`},
		{"negative id", "\n0 -2\n", 2, "negative class id -2 at row 0, col 1"},
		{"too large id", "0 70000\n", 1, "class id 70000 is too large"},
		{"overflowing id", "0 99999999999999999999999\n", 1, "too large"},
		{"no places", "// all walls\n# #\n# #\n", 2, "no places"},
		{"unreachable", "0 # 1\n", 1, "place at row 0, col 2 is unreachable from the place at row 0, col 0"},
		{"unreachable lower", "0 0 #\n# # #\n# # 1\n", 3, "place at row 2, col 2 is unreachable"},
		{"graph without classes", "graph\n0 1\n", 1, `no "classes:" line`},
		{"graph two classes lines", "graph\nclasses: 0 1\nclasses: 0 1\n0 1\n", 3, "second classes line (first on line 2)"},
		{"graph bad class", "graph\nclasses: 0 z\n0 1\n", 2, `node 1: unknown token "z"`},
		{"graph negative class", "graph\nclasses: 0 -1\n0 1\n", 2, "negative class id -1"},
		{"graph empty classes", "graph\nclasses:\n", 2, "no places"},
		{"graph bad edge line", "graph\nclasses: 0 1\n0 1 2\n", 3, `want an edge "u v"`},
		{"graph negative node", "graph\nclasses: 0 1\n0 -1\n", 3, "negative node id -1"},
		{"graph node out of range", "graph\nclasses: 0 1\n0 1\n1 2\n", 4, "node 2 out of range 0-1"},
		{"graph self loop", "graph\nclasses: 0 1\n0 1\n1 1\n", 4, "self loop 1 1"},
		{"graph duplicate edge", "graph\nclasses: 0 1\n0 1\n// c\n1 0\n", 5, "duplicate edge 1 0 (first on line 3)"},
		{"graph no edges", "graph\nclasses: 0 1\n", 2, "graph has no edges"},
		{"graph unreachable", "graph\nclasses: 0 1 2 3\n0 1\n2 3\n", 2, "node 2 is unreachable from node 0"},
	} {
		_, err := ParseLayout("f.txt", strings.NewReader(tc.text))
		if err == nil {
			t.Errorf("%s: no error", tc.kind)
			continue
		}
		prefix := "f.txt: "
		if tc.line > 0 {
			prefix = "f.txt:" + strconv.Itoa(tc.line) + ": "
		}
		if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q, want prefix %q and %q", tc.kind, msg, prefix, tc.want)
		}
		var le *LayoutError
		if !errors.As(err, &le) || le.Line != tc.line {
			t.Errorf("%s: LayoutError line = %v, want %d", tc.kind, le, tc.line)
		}
	}
}

func TestParseGrid(t *testing.T) {
	// Comments, blank lines, tabs and padding are accepted.
	text := "// my env\n\n 0\t1  #\n\t// inner comment\n  2 3 4 \r\n"
	e, err := ParseLayout("mine", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if e.Rows != 2 || e.Cols != 3 || !slices.Equal(e.Cells, []int{0, 1, Wall, 2, 3, 4}) {
		t.Fatalf("parsed %dx%d %v", e.Rows, e.Cols, e.Cells)
	}
	if !slices.Equal(e.Class, []int{0, 1, 2, 3, 4}) {
		t.Errorf("classes %v", e.Class)
	}
	if !slices.Equal(e.Coord, [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}}) {
		t.Errorf("coords %v", e.Coord)
	}
	// Places 0(0,0) 1(0,1) 2(1,0) 3(1,1) 4(1,2).
	if want := [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}}; !slices.Equal(e.Edges(), want) {
		t.Errorf("edges %v, want %v", e.Edges(), want)
	}
	if d := e.Defaults(); e.Name != "mine" || d.Episodes != 4 || d.Steps != 10000 || d.ClonesPerClass != 10 || d.ClonesByClass != nil {
		t.Errorf("name %q defaults %+v", e.Name, e.Defaults())
	}
	// A one-cell grid is valid: every move is sticky.
	one, err := ParseLayout("one", strings.NewReader("7\n"))
	if err != nil || one.NumPlaces() != 1 || len(one.Edges()) != 0 || one.Next(0, Up) != 0 || one.NumClasses() != 8 {
		t.Errorf("one-cell grid: %v %+v", err, one)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, name := range Names() {
		e := mustNamed(t, name)
		text := e.Layout()
		f, err := ParseLayout(name, strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s: re-parse: %v\n%s", name, err, text)
		}
		if f.Rows != e.Rows || f.Cols != e.Cols || !slices.Equal(f.Cells, e.Cells) ||
			!slices.Equal(f.Class, e.Class) || !slices.Equal(f.Edges(), e.Edges()) || f.NumActions() != e.NumActions() {
			t.Errorf("%s: round trip differs\n%s", name, text)
		}
		for g := range e.NumPlaces() {
			for a := range e.NumActions() {
				if e.Next(g, a) != f.Next(g, a) {
					t.Fatalf("%s: Next(%d,%d) differs after round trip", name, g, a)
				}
			}
		}
		if text2 := f.Layout(); text2 != text {
			t.Errorf("%s: second round trip changed the text", name)
		}
	}
	// The exact text of a small grid.
	e, err := ParseLayout("c", strings.NewReader("0 12\n# 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "// c: 2x2, 3 places, 2 edges\n 0 12\n #  3\n"; e.Layout() != want {
		t.Errorf("Layout() = %q, want %q", e.Layout(), want)
	}
}

func TestLoadLayout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ring.layout")
	if err := os.WriteFile(path, []byte("graph\nclasses: 0 1 0 1\n0 1\n1 2\n2 3\n3 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := LoadLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "ring" || !e.IsGraph() || e.NumPlaces() != 4 || len(e.Edges()) != 4 || e.NumActions() != 2 {
		t.Errorf("loaded %q graph=%v P=%d E=%d A=%d", e.Name, e.IsGraph(), e.NumPlaces(), len(e.Edges()), e.NumActions())
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("0 1\n0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLayout(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ragged") {
		t.Errorf("LoadLayout(bad) = %v", err)
	}
	if _, err := LoadLayout(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("LoadLayout(missing) = %v", err)
	}
}

func TestNewGridErrors(t *testing.T) {
	if _, err := NewGrid("x", 2, 2, []int{0, 1, 2}); err == nil || !strings.Contains(err.Error(), "needs 4 cells") {
		t.Errorf("size mismatch: %v", err)
	}
	if _, err := NewGrid("x", 1, 2, []int{0, -5}); err == nil || !strings.Contains(err.Error(), "negative class id -5") {
		t.Errorf("negative: %v", err)
	}
}

// TestShippedLayouts: every layout the repository ships (layouts/*.txt, which the
// README's commands use) loads.
func TestShippedLayouts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "layouts", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no layouts: %v", err)
	}
	for _, p := range paths {
		e, err := LoadLayout(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".txt"); e.Name != want {
			t.Errorf("%s: name %q, want %q", p, e.Name, want)
		}
	}
}
