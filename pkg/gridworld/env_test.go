package gridworld

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func mustNamed(t testing.TB, name string) *Env {
	t.Helper()
	e, err := Named(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// bruteEdges enumerates the grid's true map from the cells alone: pairs of
// non-wall cells at Manhattan distance 1.
func bruteEdges(e *Env) [][2]int {
	var es [][2]int
	for g, p := range e.Coord {
		for h, q := range e.Coord {
			d := abs(p[0]-q[0]) + abs(p[1]-q[1])
			if g < h && d == 1 {
				es = append(es, [2]int{g, h})
			}
		}
	}
	return es
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestBuiltinCounts(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		rows, cols, places, edges     int
		numClasses, usedClasses, acts int
		regions                       int
	}{
		// Counts of the reference setup.
		{"aliased", 4, 4, 16, 24, 4, 4, 4, 0},
		{"corridors", 5, 5, 19, 20, 7, 7, 4, 0},
		{"room", 6, 6, 36, 60, 10, 10, 4, 0},
		{"two_rooms", 13, 9, 87, 152, 10, 10, 4, 0},
		{"square", 5, 5, 25, 40, 25, 25, 4, 0},
		// uniform_interior uses 12 distinct ids up to 20.
		{"uniform_interior", 6, 6, 36, 60, 21, 12, 4, 0},
		{"three_rooms", 0, 0, 15, 30, 8, 8, 4, 0},
		// 6x8 without walls: 6*7 horizontal + 5*8 vertical = 82 edges.
		{"cscg_rectangular", 6, 8, 48, 82, 4, 4, 4, 0},
		{"cscg_empty", 6, 8, 48, 82, 9, 9, 4, 0},
		// Two 8x6 rooms (82 edges each) sharing a 3x3 block (12 edges).
		{"cscg_stitched", 13, 9, 87, 152, 15, 15, 4, 2},
		{"cscg_maze5", 5, 5, 25, 40, 25, 25, 4, 0},
		{"cscg_cliques", 0, 0, 15, 30, 8, 8, 4, 0},
		{"big_room", 10, 10, 100, 180, 10, 10, 4, 0}, // 2·10·9 edges
		{"tiled", 12, 12, 144, 264, 9, 9, 4, 0},      // 2·12·11 edges
		{"four_rooms", 20, 20, 365, 654, 10, 10, 4, 0},
	} {
		e := mustNamed(t, tc.name)
		got := []int{e.Rows, e.Cols, e.NumPlaces(), len(e.Edges()), e.NumClasses(), len(e.ClassesUsed()), e.NumActions(), len(e.Regions)}
		want := []int{tc.rows, tc.cols, tc.places, tc.edges, tc.numClasses, tc.usedClasses, tc.acts, tc.regions}
		if !slices.Equal(got, want) {
			t.Errorf("%s: rows,cols,places,edges,classes,used,actions,regions = %v, want %v", tc.name, got, want)
		}
		if e.Name != tc.name {
			t.Errorf("%s: Name = %q", tc.name, e.Name)
		}
		if e.IsGraph() != (tc.rows == 0) {
			t.Errorf("%s: IsGraph = %v", tc.name, e.IsGraph())
		}
		if !e.IsGraph() {
			if bf := bruteEdges(e); !slices.Equal(bf, e.Edges()) {
				t.Errorf("%s: Edges() differs from brute-force enumeration", tc.name)
			}
		}
		// Edges() must be exactly the set {g, Next(g,a)} with g != Next(g,a).
		var fromNext [][2]int
		for g := range e.NumPlaces() {
			for a := range e.NumActions() {
				if h := e.Next(g, a); h > g {
					fromNext = append(fromNext, [2]int{g, h})
				}
			}
		}
		sortEdges(fromNext)
		if !slices.Equal(dedupEdges(fromNext), e.Edges()) {
			t.Errorf("%s: Edges() disagrees with Next", tc.name)
		}
	}
}

func dedupEdges(es [][2]int) [][2]int {
	var out [][2]int
	for i, x := range es {
		if i == 0 || x != es[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func TestNamesAndUnknown(t *testing.T) {
	if len(Names()) != 15 {
		t.Errorf("Names() = %v, want 15 names", Names())
	}
	_, err := Named("nope")
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "two_rooms") || !strings.Contains(err.Error(), "cscg_cliques") {
		t.Errorf("Named(nope) error = %v, want it to name the input and list valid names", err)
	}
	// Each call returns a fresh copy.
	a, b := mustNamed(t, "aliased"), mustNamed(t, "aliased")
	a.Class[0] = 99
	if b.Class[0] == 99 {
		t.Error("Named shares state between calls")
	}
}

func TestAliasedClassMultiplicity(t *testing.T) {
	e := mustNamed(t, "aliased")
	count := map[int]int{}
	for _, c := range e.Class {
		count[c]++
	}
	for k := range 4 {
		if count[k] != 4 {
			t.Errorf("class %d appears %d times, want 4", k, count[k])
		}
	}
}

func TestThreeRooms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []int
	}{
		// A..H = 0..7; rooms [A B C D E], [F A D E B], [G B C E H].
		{"three_rooms", []int{0, 1, 2, 3, 4, 5, 0, 3, 4, 1, 6, 1, 2, 4, 7}},
		{"cscg_cliques", []int{0, 1, 2, 3, 4, 5, 0, 3, 4, 1, 7, 1, 2, 4, 6}},
	} {
		e := mustNamed(t, tc.name)
		if !slices.Equal(e.Class, tc.classes) {
			t.Errorf("%s classes = %v, want %v", tc.name, e.Class, tc.classes)
		}
		if e.Coord != nil || e.Cells != nil {
			t.Errorf("%s: graph env has grid geometry", tc.name)
		}
		adj := map[[2]int]bool{}
		for _, uv := range e.Edges() {
			adj[uv] = true
		}
		for g := range 15 {
			if d := len(e.Neighbors(g)); d != 4 || e.ActionsAt(g) != 4 {
				t.Errorf("%s: node %d degree %d, actions %d, want 4", tc.name, g, d, e.ActionsAt(g))
			}
		}
		for r := range 3 {
			b := 5 * r
			for i := range 5 {
				for j := i + 1; j < 5; j++ {
					want := !(i == 0 && j == 4)
					if adj[[2]int{b + i, b + j}] != want {
						t.Errorf("%s: edge %d-%d present=%v, want %v", tc.name, b+i, b+j, !want, want)
					}
				}
			}
		}
		for _, uv := range [][2]int{{4, 5}, {9, 10}, {0, 14}} {
			if !adj[uv] {
				t.Errorf("%s: ring edge %v missing", tc.name, uv)
			}
		}
		// Actions number the neighbours in increasing id: node 0 has 1, 2, 3, 14.
		for a, want := range []int{1, 2, 3, 14} {
			if got := e.Next(0, a); got != want {
				t.Errorf("%s: Next(0,%d) = %d, want %d", tc.name, a, got, want)
			}
		}
		if _, ok := e.PlaceAt(0, 0); ok {
			t.Errorf("%s: PlaceAt on a graph env returned ok", tc.name)
		}
	}
}

func TestStitched(t *testing.T) {
	e := mustNamed(t, "cscg_stitched")
	cell := func(r, c int) int { return e.Cells[r*e.Cols+c] }
	// Room 2's top-left 3x3 (union rows 5-7, cols 3-5) equals room 1's block
	// at (1,1) (the confounder); the union's consistency at the overlap is
	// checked when building.
	for dr := range 3 {
		for dc := range 3 {
			if cell(5+dr, 3+dc) != cell(1+dr, 1+dc) {
				t.Errorf("overlap (%d,%d) = %d, confounder block = %d", 5+dr, 3+dc, cell(5+dr, 3+dc), cell(1+dr, 1+dc))
			}
		}
	}
	// Spot values of room 2 at its own coordinates (spec table): (7,5) = 0, (0,3) = 4, (7,0) = 11.
	if cell(5+7, 3+5) != 0 || cell(5+0, 3+3) != 4 || cell(5+7, 3+0) != 11 {
		t.Error("room 2 misplaced in the union grid")
	}
	// Room 1's last row (row 7): 5 9 3 0 14 7.
	for c, want := range []int{5, 9, 3, 0, 14, 7} {
		if cell(7, c) != want {
			t.Errorf("union (7,%d) = %d, want %d", c, cell(7, c), want)
		}
	}
	// Same walls as two_rooms.
	tr := mustNamed(t, "two_rooms")
	for i := range e.Cells {
		if (e.Cells[i] == Wall) != (tr.Cells[i] == Wall) {
			t.Fatalf("cell %d: wall pattern differs from two_rooms", i)
		}
	}
	if len(e.Regions[0]) != 48 || len(e.Regions[1]) != 48 {
		t.Fatalf("region sizes %d, %d, want 48, 48", len(e.Regions[0]), len(e.Regions[1]))
	}
	in1 := map[int]bool{}
	for _, g := range e.Regions[0] {
		in1[g] = true
		if r, c := e.Coord[g][0], e.Coord[g][1]; r >= 8 || c >= 6 {
			t.Errorf("region 0 holds (%d,%d)", r, c)
		}
	}
	shared := 0
	for _, g := range e.Regions[1] {
		if in1[g] {
			shared++
		}
		if r, c := e.Coord[g][0], e.Coord[g][1]; r < 5 || c < 3 {
			t.Errorf("region 1 holds (%d,%d)", r, c)
		}
	}
	if shared != 9 {
		t.Errorf("regions share %d places, want 9", shared)
	}
	d := e.Defaults()
	if d.Episodes != 2 || d.Steps != 50000 || d.NumStates(e.NumClasses()) != 301 {
		t.Errorf("stitched defaults %+v, N=%d", d, d.NumStates(e.NumClasses()))
	}
}

func TestNext(t *testing.T) {
	e := mustNamed(t, "corridors")
	p := func(r, c int) int {
		g, ok := e.PlaceAt(r, c)
		if !ok {
			t.Fatalf("no place at (%d,%d)", r, c)
		}
		return g
	}
	for _, tc := range []struct {
		r, c, a int
		want    [2]int // (row, col) of the successor
	}{
		{0, 0, Up, [2]int{0, 0}},    // off the top: sticky
		{0, 0, Left, [2]int{0, 0}},  // off the left: sticky
		{0, 0, Right, [2]int{0, 1}}, // open
		{0, 0, Down, [2]int{1, 0}},  // open
		{1, 0, Right, [2]int{1, 0}}, // into the wall at (1,1): sticky
		{1, 2, Left, [2]int{1, 2}},  // wall (1,1)
		{1, 2, Right, [2]int{1, 2}}, // wall (1,3)
		{1, 2, Up, [2]int{0, 2}},
		{3, 2, Down, [2]int{4, 2}},
		{4, 4, Down, [2]int{4, 4}}, // off the bottom
		{4, 4, Right, [2]int{4, 4}},
		{4, 4, Up, [2]int{3, 4}},
		{0, 1, Down, [2]int{0, 1}}, // wall below
	} {
		if got, want := e.Next(p(tc.r, tc.c), tc.a), p(tc.want[0], tc.want[1]); got != want {
			t.Errorf("Next((%d,%d), %s) = %v, want %v", tc.r, tc.c, ActionNames[tc.a], e.Coord[got], tc.want)
		}
	}
	g := p(2, 2)
	for _, a := range []int{-1, 4, 100} {
		if e.Next(g, a) != g {
			t.Errorf("Next(g, %d) = %d, want g", a, e.Next(g, a))
		}
	}
	if _, ok := e.PlaceAt(1, 1); ok {
		t.Error("PlaceAt(wall) ok")
	}
	if _, ok := e.PlaceAt(5, 0); ok {
		t.Error("PlaceAt(off grid) ok")
	}
	for g, rc := range e.Coord {
		if h, ok := e.PlaceAt(rc[0], rc[1]); !ok || h != g {
			t.Errorf("PlaceAt(Coord[%d]) = %d, %v", g, h, ok)
		}
	}
	if got := e.Neighbors(p(0, 2)); !slices.Equal(got, []int{p(0, 1), p(0, 3), p(1, 2)}) {
		t.Errorf("Neighbors((0,2)) = %v", got)
	}
}

func TestGraphIrregularDegree(t *testing.T) {
	// A star with centre 0 and a pendant path 3-4: degrees 3, 1, 1, 2, 1.
	e, err := NewGraph("star", []int{0, 1, 1, 2, 3}, [][2]int{{0, 1}, {0, 2}, {0, 3}, {3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if e.NumActions() != 3 {
		t.Fatalf("NumActions = %d, want 3 (max degree)", e.NumActions())
	}
	for _, tc := range []struct{ g, a, want int }{
		{0, 0, 1}, {0, 1, 2}, {0, 2, 3},
		{1, 0, 0}, {1, 1, 1}, {1, 2, 1}, // a >= deg: stay
		{3, 0, 0}, {3, 1, 4}, {3, 2, 3},
		{4, 0, 3}, {4, 2, 4},
	} {
		if got := e.Next(tc.g, tc.a); got != tc.want {
			t.Errorf("Next(%d,%d) = %d, want %d", tc.g, tc.a, got, tc.want)
		}
	}
	if got := []int{e.ActionsAt(0), e.ActionsAt(1), e.ActionsAt(3)}; !slices.Equal(got, []int{3, 1, 2}) {
		t.Errorf("ActionsAt = %v", got)
	}
	// Walks only take actions below the degree, so they never stay put here.
	ep := e.Walk(NewRand(3), 5000)
	for t0, a := range ep.Actions {
		if a >= e.ActionsAt(ep.Places[t0]) || ep.Places[t0+1] == ep.Places[t0] {
			t.Fatalf("step %d: action %d at node %d (deg %d)", t0, a, ep.Places[t0], e.ActionsAt(ep.Places[t0]))
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		episodes, steps, clones int
		numStates               int
	}{
		{"aliased", 4, 10000, 5, 21},
		{"corridors", 4, 10000, 5, 36}, // 7 classes; the reference's K=6 gives 31
		{"room", 4, 10000, 4, 57},      // 20 + 9*4 + sink
		{"two_rooms", 10, 10000, 15, 151},
		{"cscg_rectangular", 1, 50000, 70, 281},
		{"cscg_maze5", 1, 10000, 10, 251},
		{"cscg_cliques", 1, 10000, 5, 41},
	} {
		e := mustNamed(t, tc.name)
		d := e.Defaults()
		got := []int{d.Episodes, d.Steps, d.ClonesPerClass, d.NumStates(e.NumClasses())}
		if want := []int{tc.episodes, tc.steps, tc.clones, tc.numStates}; !slices.Equal(got, want) {
			t.Errorf("%s: episodes,steps,clones,N = %v, want %v", tc.name, got, want)
		}
	}
	e := mustNamed(t, "room")
	d := e.Defaults()
	d.ClonesByClass[0] = 1
	if e.Defaults().ClonesByClass[0] != 20 {
		t.Error("Defaults() exposes the env's map")
	}
	if got := e.Defaults().Clones(3); !slices.Equal(got, []int{20, 4, 4}) {
		t.Errorf("room Clones(3) = %v", got)
	}
}

func TestCheckClasses(t *testing.T) {
	for _, name := range []string{"aliased", "corridors", "room", "two_rooms", "three_rooms"} {
		if err := mustNamed(t, name).CheckClasses(10); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// square's first cell (row 0, col 0, line 2 after the comment) is 21.
	err := mustNamed(t, "square").CheckClasses(10)
	if err == nil || !strings.Contains(err.Error(), "square:2: class 21 at row 0, col 0") {
		t.Errorf("square CheckClasses(10) = %v", err)
	}
	e, err := ParseLayout("my.txt", strings.NewReader("0 1\n\n// c\n2 12\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = e.CheckClasses(10)
	if err == nil || !strings.HasPrefix(err.Error(), "my.txt:4: class 12 at row 1, col 1") || !strings.Contains(err.Error(), "0-9") {
		t.Errorf("CheckClasses = %v", err)
	}
	if err := e.CheckClasses(13); err != nil {
		t.Errorf("CheckClasses(13) = %v", err)
	}
	g, err := ParseLayout("g.txt", strings.NewReader("graph\n// x\nclasses: 0 11\n0 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CheckClasses(10); err == nil || !strings.HasPrefix(err.Error(), "g.txt:3: class 11 of node 1") {
		t.Errorf("graph CheckClasses = %v", err)
	}
}

func TestSetRegions(t *testing.T) {
	e := mustNamed(t, "corridors")
	p := func(r, c int) int { g, _ := e.PlaceAt(r, c); return g }
	for _, tc := range []struct {
		regions [][]int
		want    string
	}{
		{[][]int{{}}, "region 0 is empty"},
		{[][]int{{0, 99}}, "out of range"},
		{[][]int{{0, 0}}, "listed twice"},
		{[][]int{{p(0, 0), p(0, 1)}, {p(0, 0), p(4, 4)}}, "region 1: place"},
	} {
		err := e.SetRegions(tc.regions)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetRegions(%v) = %v, want %q", tc.regions, err, tc.want)
		}
	}
	if err := e.SetRegions([][]int{{p(0, 0), p(0, 1), p(1, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetRegions(nil); err != nil || e.Regions != nil {
		t.Error("SetRegions(nil) should clear")
	}
	// A one-node region of a graph: its only action leaves it.
	g, err := ParseLayout("g.txt", strings.NewReader("graph\nclasses: 0 1\n0 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetRegions([][]int{{0}}); err == nil || !strings.Contains(err.Error(), "region 0: place 0 of node 0 has no action that stays in the region") {
		t.Errorf("SetRegions(one graph node) = %v", err)
	}
}

// TestBiggerWorlds: the class counts the bigger worlds promise, and four_rooms falls
// into four rooms without its four doors.
func TestBiggerWorlds(t *testing.T) {
	count := func(e *Env) map[int]int {
		c := map[int]int{}
		for _, k := range e.Class {
			c[k]++
		}
		return c
	}
	big := mustNamed(t, "big_room")
	if c := count(big); c[0] != 64 || len(c) != 10 {
		t.Errorf("big_room classes %v, want 64 interior places of class 0 and 9 border classes", c)
	}
	for g, rc := range big.Coord {
		interior := rc[0] > 0 && rc[0] < 9 && rc[1] > 0 && rc[1] < 9
		if interior != (big.Class[g] == 0) {
			t.Errorf("big_room place %v has class %d", rc, big.Class[g])
		}
	}
	for k, n := range count(mustNamed(t, "tiled")) {
		if n != 16 {
			t.Errorf("tiled: class %d at %d places, want 16", k, n)
		}
	}
	four := mustNamed(t, "four_rooms")
	for k, n := range count(four) {
		if n < 35 || n > 38 {
			t.Errorf("four_rooms: class %d at %d places, want 35-38", k, n)
		}
	}
	// Components of the place graph without the door cells (on row 10 or column 10).
	door := func(g int) bool { return four.Coord[g][0] == 10 || four.Coord[g][1] == 10 }
	comp := make([]int, four.NumPlaces())
	for i := range comp {
		comp[i] = -1
	}
	n, doors := 0, 0
	for g := range comp {
		if door(g) {
			doors++
			continue
		}
		if comp[g] >= 0 {
			continue
		}
		stack := []int{g}
		comp[g] = n
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for a := range four.NumActions() {
				if y := four.Next(x, a); !door(y) && comp[y] < 0 {
					comp[y] = n
					stack = append(stack, y)
				}
			}
		}
		n++
	}
	if n != 4 || doors != 4 {
		t.Errorf("four_rooms: %d rooms and %d doors, want 4 and 4", n, doors)
	}
}

// TestGenericDefaultsBySize checks a custom layout's defaults against hand-set ones:
// the built-in worlds below BiggerPlaces, loaded as custom layouts, get the generic
// 4 × 10,000 steps and 10 clones per class; big_room's layout gets the data size and
// budget hand-set for big_room; tiled's and four_rooms' get their classes' budgets by
// hand (2.5 per place, at least 10) and 1,000 steps per place.
func TestGenericDefaultsBySize(t *testing.T) {
	custom := func(name string) *Env {
		t.Helper()
		e, err := ParseLayout(name+"_custom", strings.NewReader(mustNamed(t, name).Layout()))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, name := range Names() {
		e := custom(name)
		if e.NumPlaces() >= BiggerPlaces {
			continue
		}
		if d := e.Defaults(); d.Episodes != 4 || d.Steps != 10000 || d.ClonesPerClass != 10 || d.ClonesByClass != nil {
			t.Errorf("%s (%d places): %+v, want the generic 4 x 10,000 steps and 10 clones per class", name, e.NumPlaces(), d)
		}
	}
	big := custom("big_room")
	want := mustNamed(t, "big_room").Defaults()
	got := big.Defaults()
	if got.Episodes != want.Episodes || got.Steps != want.Steps || !slices.Equal(got.Clones(10), want.Clones(10)) {
		t.Errorf("big_room's layout: %d x %d steps, clones %v; hand-set %d x %d, %v",
			got.Episodes, got.Steps, got.Clones(10), want.Episodes, want.Steps, want.Clones(10))
	}
	tiled := custom("tiled").Defaults() // 144 places, every class at 16: 40 clones each
	if tiled.Episodes != 1 || tiled.Steps != 144000 || !slices.Equal(tiled.Clones(9), []int{40, 40, 40, 40, 40, 40, 40, 40, 40}) {
		t.Errorf("tiled's layout: %+v", tiled)
	}
	four := custom("four_rooms")
	d := four.Defaults()
	if d.Episodes != 1 || d.Steps != 365000 {
		t.Errorf("four_rooms' layout: %d x %d steps, want 1 x 365,000", d.Episodes, d.Steps)
	}
	for c, n := range four.ClassPlaces() {
		if want := int(math.Ceil(2.5 * float64(n))); d.Clones(10)[c] != max(10, want) {
			t.Errorf("four_rooms' class %d at %d places: %d clones, want %d", c, n, d.Clones(10)[c], want)
		}
	}
}
