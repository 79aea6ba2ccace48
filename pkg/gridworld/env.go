package gridworld

import (
	"fmt"
	"sort"
)

// Grid actions (spec "Dynamics").
const (
	Up    = 0 // row-1
	Down  = 1 // row+1
	Left  = 2 // col-1
	Right = 3 // col+1
)

// Wall marks a wall cell in Env.Cells.
const Wall = -1

// MaxClass is the largest class id a layout may use.
const MaxClass = 65535

// ActionNames are the names of the grid actions, indexed by action.
var ActionNames = [4]string{"up", "down", "left", "right"}

// gridMoves are the (drow, dcol) of the grid actions.
var gridMoves = [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}

// Env is an environment: places with observation classes, sticky dynamics
// and the true undirected map. Build one with Named, ParseLayout,
// LoadLayout, NewGrid or NewGraph; do not modify the exported slices
// afterwards (Regions excepted, see SetRegions).
type Env struct {
	Name       string
	Rows, Cols int      // grid geometry; 0 for graph environments
	Cells      []int    // row-major Rows*Cols: class id or Wall (grid envs only)
	Class      []int    // place -> observation class
	Coord      [][2]int // place -> (row, col) (grid envs); nil for graph envs
	// Regions are sets of places walked in separate episodes (cscg_stitched);
	// nil means one region holding every place.
	Regions [][]int

	numActions int
	succ       []int    // [P*numActions]: sticky successor of (g, a)
	avail      []int    // [P]: actions available at g (4 on grids, degree on graphs)
	cellPlace  []int    // [Rows*Cols]: place id or -1 (grid envs)
	edges      [][2]int // true undirected map, sorted
	source     string   // file label used in errors
	placeLine  []int    // [P]: 1-based line defining the place (0 = unknown)
	defaults   Defaults
}

// NumPlaces returns the number of places P.
func (e *Env) NumPlaces() int { return len(e.Class) }

// NumActions returns the size of the action alphabet: 4 on grids, the maximum
// degree on graph environments.
func (e *Env) NumActions() int { return e.numActions }

// ActionsAt returns how many actions a walk may take at place g: 4 on grids
// (walls are sticky but allowed), deg(g) on graph environments.
func (e *Env) ActionsAt(g int) int { return e.avail[g] }

// NumClasses returns the largest class id plus one.
func (e *Env) NumClasses() int {
	m := -1
	for _, c := range e.Class {
		m = max(m, c)
	}
	return m + 1
}

// ClassesUsed returns the distinct class ids of the places, increasing. It
// can be shorter than NumClasses when ids are skipped (uniform_interior).
func (e *Env) ClassesUsed() []int {
	seen := make(map[int]bool)
	var out []int
	for _, c := range e.Class {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}

// IsGraph reports whether e is a graph environment (no grid geometry).
func (e *Env) IsGraph() bool { return e.Rows == 0 }

// Next returns the sticky successor of place g under action a: the
// neighbouring place, or g itself when the move hits a wall or the border
// (grids) or when a >= deg(g) (graphs). An action outside [0, NumActions)
// also returns g. g must be a valid place.
func (e *Env) Next(g, a int) int {
	if a < 0 || a >= e.numActions {
		return g
	}
	return e.succ[g*e.numActions+a]
}

// Edges returns the true undirected map: pairs (g, g') with g < g' joined by
// one action, sorted, without self-loops. The slice is shared; do not modify.
func (e *Env) Edges() [][2]int { return e.edges }

// Neighbors returns the places one action away from g, excluding g itself,
// in increasing order.
func (e *Env) Neighbors(g int) []int {
	var out []int
	for a := range e.numActions {
		if h := e.Next(g, a); h != g {
			out = append(out, h)
		}
	}
	sort.Ints(out)
	return dedupSorted(out)
}

// PlaceAt returns the place at (row, col), and false for walls, cells off
// the grid and graph environments.
func (e *Env) PlaceAt(row, col int) (int, bool) {
	if e.IsGraph() || row < 0 || row >= e.Rows || col < 0 || col >= e.Cols {
		return 0, false
	}
	g := e.cellPlace[row*e.Cols+col]
	return g, g >= 0
}

// Defaults returns the reference data size and clone budget of e (spec
// tables); custom layouts get GenericDefaults.
func (e *Env) Defaults() Defaults {
	if e.defaults.Source == "" {
		return GenericDefaults(e)
	}
	return e.defaults.clone()
}

// CheckClasses returns an error naming the first place whose class id is not
// below numClasses (for example a class 12 when images come from MNIST's ten
// digits), with the file and line when known.
func (e *Env) CheckClasses(numClasses int) error {
	for g, c := range e.Class {
		switch {
		case numClasses <= 0:
			return e.placeErr(g, "class %d %s: the dataset has no classes", c, e.where(g))
		case c >= numClasses:
			return e.placeErr(g, "class %d %s is outside the dataset's classes 0-%d", c, e.where(g), numClasses-1)
		}
	}
	return nil
}

// SetRegions validates and sets e.Regions: every region is a non-empty set
// of distinct valid places that is connected under the dynamics restricted to
// the region (cells outside act as walls).
func (e *Env) SetRegions(regions [][]int) error {
	if regions == nil {
		e.Regions = nil
		return nil
	}
	out := make([][]int, len(regions))
	for r, reg := range regions {
		if len(reg) == 0 {
			return fmt.Errorf("%s: region %d is empty", e.source, r)
		}
		in := make([]bool, e.NumPlaces())
		for _, g := range reg {
			if g < 0 || g >= e.NumPlaces() {
				return fmt.Errorf("%s: region %d: place %d out of range [0,%d)", e.source, r, g, e.NumPlaces())
			}
			if in[g] {
				return fmt.Errorf("%s: region %d: place %d listed twice", e.source, r, g)
			}
			in[g] = true
		}
		if g, ok := e.firstUnreachable(reg[0], in); !ok {
			return fmt.Errorf("%s: region %d: place %d %s is unreachable from place %d inside the region",
				e.source, r, g, e.where(g), reg[0])
		}
		for _, g := range reg {
			if len(e.actionsIn(g, in, nil)) == 0 {
				return fmt.Errorf("%s: region %d: place %d %s has no action that stays in the region",
					e.source, r, g, e.where(g))
			}
		}
		out[r] = append([]int(nil), reg...)
	}
	e.Regions = out
	return nil
}

// actionsIn appends to dst[:0] the actions at g that lead to a place of in.
func (e *Env) actionsIn(g int, in []bool, dst []int) []int {
	dst = dst[:0]
	for a := range e.avail[g] {
		if in[e.succ[g*e.numActions+a]] {
			dst = append(dst, a)
		}
	}
	return dst
}

// where describes place g for messages: "at row r, col c" or "of node g".
func (e *Env) where(g int) string {
	if e.IsGraph() {
		return fmt.Sprintf("of node %d", g)
	}
	return fmt.Sprintf("at row %d, col %d", e.Coord[g][0], e.Coord[g][1])
}

// placeErr formats an error about place g, prefixed by file:line when known.
func (e *Env) placeErr(g int, format string, args ...any) error {
	line := 0
	if e.placeLine != nil {
		line = e.placeLine[g]
	}
	return &LayoutError{File: e.source, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// firstUnreachable searches from start over places with in[g] (all when in
// is nil) and returns the lowest such place it cannot reach, or ok = true.
func (e *Env) firstUnreachable(start int, in []bool) (g int, ok bool) {
	P := e.NumPlaces()
	seen := make([]bool, P)
	seen[start] = true
	stack := []int{start}
	for len(stack) > 0 {
		g := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for a := range e.avail[g] {
			h := e.succ[g*e.numActions+a]
			if !seen[h] && (in == nil || in[h]) {
				seen[h] = true
				stack = append(stack, h)
			}
		}
	}
	for g := range P {
		if !seen[g] && (in == nil || in[g]) {
			return g, false
		}
	}
	return 0, true
}

// LayoutError is a malformed layout or environment: File:Line: Msg. Line is
// 0 when unknown.
type LayoutError struct {
	File string
	Line int
	Msg  string
}

func (e *LayoutError) Error() string {
	switch {
	case e.File == "":
		return e.Msg
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

// NewGrid builds a grid environment from row-major cells (a class id in
// [0, MaxClass] or Wall). It fails when the sizes disagree, there is no
// place, or a place is unreachable from the first one.
func NewGrid(name string, rows, cols int, cells []int) (*Env, error) {
	return buildGrid(name, name, rows, cols, cells, nil)
}

// buildGrid is NewGrid with a file label and the 1-based line of each row
// (rowLine may be nil).
func buildGrid(source, name string, rows, cols int, cells []int, rowLine []int) (*Env, error) {
	lerr := func(line int, format string, args ...any) error {
		return &LayoutError{File: source, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if rows <= 0 || cols <= 0 || len(cells) != rows*cols {
		return nil, lerr(0, "grid %dx%d needs %d cells, got %d", rows, cols, max(rows*cols, 0), len(cells))
	}
	e := &Env{Name: name, Rows: rows, Cols: cols, Cells: append([]int(nil), cells...),
		numActions: 4, source: source}
	e.cellPlace = make([]int, rows*cols)
	for i, c := range cells {
		r, col := i/cols, i%cols
		line := 0
		if rowLine != nil {
			line = rowLine[r]
		}
		switch {
		case c == Wall:
			e.cellPlace[i] = -1
			continue
		case c < 0:
			return nil, lerr(line, "negative class id %d at row %d, col %d", c, r, col)
		case c > MaxClass:
			return nil, lerr(line, "class id %d at row %d, col %d exceeds %d", c, r, col, MaxClass)
		}
		e.cellPlace[i] = len(e.Class)
		e.Class = append(e.Class, c)
		e.Coord = append(e.Coord, [2]int{r, col})
		if rowLine != nil {
			e.placeLine = append(e.placeLine, line)
		}
	}
	P := len(e.Class)
	if P == 0 {
		line := 0
		if rowLine != nil {
			line = rowLine[0]
		}
		return nil, lerr(line, "no places: every cell is a wall")
	}
	e.succ = make([]int, P*4)
	e.avail = make([]int, P)
	for g, rc := range e.Coord {
		e.avail[g] = 4
		for a, d := range gridMoves {
			h := g
			if r, c := rc[0]+d[0], rc[1]+d[1]; r >= 0 && r < rows && c >= 0 && c < cols && e.cellPlace[r*cols+c] >= 0 {
				h = e.cellPlace[r*cols+c]
			}
			e.succ[g*4+a] = h
			if a == Down || a == Right { // each undirected edge once
				if h != g {
					e.edges = append(e.edges, [2]int{min(g, h), max(g, h)})
				}
			}
		}
	}
	sortEdges(e.edges)
	if g, ok := e.firstUnreachable(0, nil); !ok {
		return nil, e.placeErr(g, "place at row %d, col %d is unreachable from the place at row %d, col %d",
			e.Coord[g][0], e.Coord[g][1], e.Coord[0][0], e.Coord[0][1])
	}
	return e, nil
}

// NewGraph builds a graph environment: node g has class classes[g]; edges are
// undirected pairs of node ids. It fails on out-of-range nodes, self-loops,
// duplicate edges, a graph without edges, and nodes unreachable from node 0.
// Node g's actions 0..deg(g)-1 lead to its neighbours in increasing id.
func NewGraph(name string, classes []int, edges [][2]int) (*Env, error) {
	return buildGraph(name, name, classes, 0, edges, nil)
}

// buildGraph is NewGraph with a file label, the line of the classes list and
// the line of each edge (edgeLine may be nil).
func buildGraph(source, name string, classes []int, classLine int, edges [][2]int, edgeLine []int) (*Env, error) {
	lerr := func(line int, format string, args ...any) error {
		return &LayoutError{File: source, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	P := len(classes)
	if P == 0 {
		return nil, lerr(classLine, "no places: the classes list is empty")
	}
	for g, c := range classes {
		if c < 0 {
			return nil, lerr(classLine, "negative class id %d of node %d", c, g)
		}
		if c > MaxClass {
			return nil, lerr(classLine, "class id %d of node %d exceeds %d", c, g, MaxClass)
		}
	}
	if len(edges) == 0 {
		return nil, lerr(classLine, "graph has no edges")
	}
	nbr := make([][]int, P)
	firstLine := map[[2]int]int{}
	for i, uv := range edges {
		line := 0
		if edgeLine != nil {
			line = edgeLine[i]
		}
		u, v := uv[0], uv[1]
		for _, x := range []int{u, v} {
			if x < 0 || x >= P {
				return nil, lerr(line, "edge %d %d: node %d out of range 0-%d (the classes list has %d nodes)", u, v, x, P-1, P)
			}
		}
		if u == v {
			return nil, lerr(line, "self loop %d %d", u, v)
		}
		key := [2]int{min(u, v), max(u, v)}
		if l, dup := firstLine[key]; dup {
			if l > 0 {
				return nil, lerr(line, "duplicate edge %d %d (first on line %d)", u, v, l)
			}
			return nil, lerr(line, "duplicate edge %d %d", u, v)
		}
		firstLine[key] = line
		nbr[u] = append(nbr[u], v)
		nbr[v] = append(nbr[v], u)
	}
	e := &Env{Name: name, Class: append([]int(nil), classes...), source: source}
	for g := range nbr {
		sort.Ints(nbr[g])
		e.numActions = max(e.numActions, len(nbr[g]))
	}
	if classLine > 0 {
		e.placeLine = make([]int, P)
		for g := range e.placeLine {
			e.placeLine[g] = classLine
		}
	}
	e.succ = make([]int, P*e.numActions)
	e.avail = make([]int, P)
	for g, ns := range nbr {
		e.avail[g] = len(ns)
		for a := range e.numActions {
			h := g
			if a < len(ns) {
				h = ns[a]
			}
			e.succ[g*e.numActions+a] = h
		}
	}
	for k := range firstLine {
		e.edges = append(e.edges, k)
	}
	sortEdges(e.edges)
	if g, ok := e.firstUnreachable(0, nil); !ok {
		return nil, e.placeErr(g, "node %d is unreachable from node 0", g)
	}
	return e, nil
}

func sortEdges(es [][2]int) {
	sort.Slice(es, func(i, j int) bool {
		if es[i][0] != es[j][0] {
			return es[i][0] < es[j][0]
		}
		return es[i][1] < es[j][1]
	})
}

func dedupSorted(xs []int) []int {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
