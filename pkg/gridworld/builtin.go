package gridworld

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Defaults are an environment's reference data size and clone budget (spec
// environments.md tables; paper Tables 2-3 and Section 5.3).
type Defaults struct {
	Episodes       int // training episodes (with Regions: round-robin over regions)
	Steps          int // observations per episode (T)
	ClonesPerClass int // uniform clone budget per observation class
	// ClonesByClass overrides ClonesPerClass for some classes (room: the
	// interior digit gets 20). Keyed by class label, so a benchmark-only
	// convenience; nil when the budget is uniform.
	ClonesByClass map[int]int
	// Pseudocount is the EM pseudocount of the original CSCG run (0: none given).
	Pseudocount float64
	Source      string // where the numbers come from
}

// BiggerPlaces is the size, in places, from which a world is bigger than the paper's
// benchmarks (the largest, two_rooms, has 87): its defaults are sized by the world
// (GenericDefaults) and, from pixels, it trains with the bigger worlds' settings
// (pipeline.WorldSettings).
const BiggerPlaces = 100

// GenericDefaults are the defaults of a custom layout e. Below BiggerPlaces places: 4
// episodes of 10,000 steps and 10 clones per class. From BiggerPlaces on, sized by the
// world as big_room is: one episode of 1,000 steps per place (the original CSCG's rate
// for its 48-place rooms), and max(10, ⌈2.5·n_c⌉) clones for a class at n_c places
// (what uniform_interior needs for its 16 interior places, and big_room's, tiled's and
// four_rooms' budgets).
func GenericDefaults(e *Env) Defaults {
	if e.NumPlaces() < BiggerPlaces {
		return Defaults{Episodes: 4, Steps: 10000, ClonesPerClass: 10, Source: "generic default for custom layouts"}
	}
	d := Defaults{Episodes: 1, Steps: 1000 * e.NumPlaces(), ClonesPerClass: 10,
		Source: fmt.Sprintf("custom layout of %d places (at least %d): 1,000 steps per place, 2.5 clones per place of a class (at least 10)", e.NumPlaces(), BiggerPlaces)}
	for c, n := range e.ClassPlaces() {
		if k := (5*n + 1) / 2; k > d.ClonesPerClass {
			if d.ClonesByClass == nil {
				d.ClonesByClass = map[int]int{}
			}
			d.ClonesByClass[c] = k
		}
	}
	return d
}

// ClassPlaces returns the number of places of each class id 0..NumClasses()-1.
func (e *Env) ClassPlaces() []int {
	n := make([]int, e.NumClasses())
	for _, c := range e.Class {
		n[c]++
	}
	return n
}

// Clones returns the clone budget of each class 0..numClasses-1.
func (d Defaults) Clones(numClasses int) []int {
	out := make([]int, numClasses)
	for k := range out {
		out[k] = d.ClonesPerClass
		if c, ok := d.ClonesByClass[k]; ok {
			out[k] = c
		}
	}
	return out
}

// NumStates returns N = 1 + Σ_k C_k, the clone states plus the sink.
func (d Defaults) NumStates(numClasses int) int {
	n := 1
	for _, c := range d.Clones(numClasses) {
		n += c
	}
	return n
}

func (d Defaults) clone() Defaults {
	d.ClonesByClass = maps.Clone(d.ClonesByClass)
	return d
}

// builtin describes one named environment.
type builtin struct {
	build    func() (*Env, error)
	defaults Defaults
}

// summaries are one line per built-in environment (gradcscg envs).
var summaries = map[string]string{
	"aliased":          "4x4 room, 4 classes in a repeating 2x2 pattern: every class at 4 places (paper benchmark)",
	"corridors":        "three corridors joined by two rows on a 5x5 grid, 7 classes, most at several places (paper benchmark)",
	"room":             "6x6 room, a 4x4 interior of one class and a border of 9 (paper benchmark)",
	"two_rooms":        "two 8x6 rooms sharing a 3x3 overlap, 10 classes scattered (paper benchmark)",
	"square":           "5x5 room, 25 distinct symbols: no aliasing (paper Figure 3)",
	"uniform_interior": "6x6 room, a 4x4 interior of one symbol and a border of 11 (paper Figure 3)",
	"three_rooms":      "three 5-place rooms in a ring, 8 symbols, not a grid (paper Figure 3)",
	"cscg_rectangular": "6x8 room, 4 symbols scattered (original CSCG, Fig. 2a/b)",
	"cscg_empty":       "6x8 room, a uniform 4x6 interior and 8 border symbols (original CSCG, Fig. 2c/d)",
	"cscg_stitched":    "two 8x6 rooms sharing a 3x3 overlap, one episode in each (original CSCG, Fig. 2e/f)",
	"cscg_maze5":       "5x5 room, 25 distinct symbols in row-major order (original CSCG notebook)",
	"cscg_cliques":     "the three-room ring of three_rooms with the original notebook's symbols",
	"big_room":         "10x10 room, a uniform 8x8 interior of one class and a border of 9 (bigger world)",
	"tiled":            "12x12 room tiled with one 3x3 motif of 9 classes: every class at 16 places (bigger world)",
	"four_rooms":       "20x20 world of four rooms joined by four doors, 10 classes scattered: 365 places (bigger world)",
}

// Summary returns a one-line description of a built-in environment ("" for
// any other name).
func Summary(name string) string { return summaries[name] }

// names in presentation order: image benchmarks, symbolic demonstrations,
// original CSCG demonstrations, bigger worlds.
var names = []string{
	"aliased", "corridors", "room", "two_rooms",
	"square", "uniform_interior", "three_rooms",
	"cscg_rectangular", "cscg_empty", "cscg_stitched", "cscg_maze5", "cscg_cliques",
	"big_room", "tiled", "four_rooms",
}

var builtins = map[string]builtin{
	"aliased": {grid("aliased", layoutAliased),
		Defaults{4, 10000, 5, nil, 0, "paper Table 3 (K=4, N=21); spec: 4 x 10,000 steps"}},
	"corridors": {grid("corridors", layoutCorridors),
		Defaults{4, 10000, 5, nil, 0, "paper Table 3 (K=6, N=31: 5 clones per token); spec: 4 x 10,000 steps"}},
	"room": {grid("room", layoutRoom),
		Defaults{4, 10000, 4, map[int]int{0: 20}, 0, "paper Section 5.3: 20 clones for the interior digit, 4 for the others (N=57)"}},
	"two_rooms": {grid("two_rooms", layoutTwoRooms),
		Defaults{10, 10000, 15, nil, 0, "paper Table 3 (K=10, N=151); spec: 10 x 10,000 steps"}},
	"square": {grid("square", layoutSquare),
		Defaults{1, 10000, 10, nil, 0, "spec: ~10 clones per symbol (paper Figure 3); data size as cscg_maze5 (our choice)"}},
	"uniform_interior": {grid("uniform_interior", layoutUniformInterior),
		Defaults{1, 50000, 40, nil, 0, "spec: ~20 clones per symbol (paper Figure 3); we use 40: with 20, gradient training stalled at purity 0.96 (EM: 1.00); data size as cscg_empty (our choice)"}},
	"three_rooms": {threeRooms("three_rooms", threeRoomsClasses),
		Defaults{1, 10000, 4, nil, 0, "spec: ~4 clones per symbol (paper Figure 3); data size as cscg_cliques (our choice)"}},
	"cscg_rectangular": {grid("cscg_rectangular", layoutCSCGRectangular),
		Defaults{1, 50000, 70, nil, 2e-3, "George et al. 2021 Fig. 2a/b notebook"}},
	"cscg_empty": {grid("cscg_empty", layoutCSCGEmpty),
		Defaults{1, 50000, 70, nil, 2e-3, "George et al. 2021 Fig. 2c/d notebook"}},
	"cscg_stitched": {stitched,
		Defaults{2, 50000, 20, nil, 2e-2, "George et al. 2021 Fig. 2e/f notebook (one episode per room)"}},
	"cscg_maze5": {grid("cscg_maze5", layoutCSCGMaze5),
		Defaults{1, 10000, 10, nil, 1e-2, "George et al. 2021 notebook (layout: symbols 0-24 in row-major order, our choice)"}},
	"cscg_cliques": {threeRooms("cscg_cliques", cliquesClasses),
		Defaults{1, 10000, 5, nil, 1.0, "George et al. 2021 notebook"}},
	// The bigger worlds: about 1,000 steps per place, the original CSCG's rate for its
	// 48-place rooms (50,000 steps), 2,000 for tiled, whose every place is aliased 16
	// times, and clone budgets of about 2.5 clones per place of a class, what
	// uniform_interior needs (40 for its 16 interior places).
	"big_room": {grid("big_room", layoutBigRoom),
		Defaults{1, 100000, 10, map[int]int{0: 160}, 2e-3, "our choice: 1,000 steps per place; 160 clones for the 64 interior places, 10 for the border's 4 per class"}},
	"tiled": {grid("tiled", layoutTiled),
		Defaults{1, 300000, 40, nil, 2e-3, "our choice: about 2,000 steps per place (at 1,000 gradient training recovered 6 seeds of 9, at 2,000 10 of 10); 40 clones for each class's 16 places"}},
	"four_rooms": {grid("four_rooms", layoutFourRooms),
		Defaults{4, 50000, 90, nil, 2e-3, "our choice: 4 x 50,000 steps (550 per place, to keep EM within minutes); 90 clones for each class's 35-38 places"}},
}

// Names returns the names of the built-in environments.
func Names() []string { return slices.Clone(names) }

// Named returns a fresh copy of a built-in environment.
func Named(name string) (*Env, error) {
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("gridworld: unknown environment %q (valid: %s; or a layout file path)", name, strings.Join(names, ", "))
	}
	e, err := b.build()
	if err != nil {
		return nil, fmt.Errorf("gridworld: built-in %s: %w", name, err)
	}
	e.defaults = b.defaults.clone()
	return e, nil
}

func grid(name, text string) func() (*Env, error) {
	return func() (*Env, error) { return ParseLayout(name, strings.NewReader(text)) }
}

// threeRoomsEdges returns the graph of spec "three_rooms": three rooms of
// five places ({0..4}, {5..9}, {10..14}), all pairs adjacent inside a room
// except (0,4), (5,9), (10,14), and the ring 4-5, 9-10, 14-0.
func threeRoomsEdges() [][2]int {
	var es [][2]int
	for r := range 3 {
		b := 5 * r
		for i := range 5 {
			for j := i + 1; j < 5; j++ {
				if i == 0 && j == 4 {
					continue
				}
				es = append(es, [2]int{b + i, b + j})
			}
		}
		es = append(es, [2]int{b + 4, (b + 5) % 15})
	}
	return es
}

// A..H = 0..7: room 1 [A B C D E], room 2 [F A D E B], room 3 [G B C E H].
var threeRoomsClasses = []int{0, 1, 2, 3, 4, 5, 0, 3, 4, 1, 6, 1, 2, 4, 7}

// cscg_cliques: the same graph, symbols by node as in the original notebook.
var cliquesClasses = []int{0, 1, 2, 3, 4, 5, 0, 3, 4, 1, 7, 1, 2, 4, 6}

func threeRooms(name string, classes []int) func() (*Env, error) {
	return func() (*Env, error) { return NewGraph(name, classes, threeRoomsEdges()) }
}

// Stitched-room geometry: room 2 sits at this offset of room 1 in the union.
const stitchedDR, stitchedDC = 5, 3

// stitched builds cscg_stitched: the 13x9 union of its two 8x6 rooms, with
// Regions = the rooms' place sets.
func stitched() (*Env, error) {
	r1, err := ParseLayout("cscg_stitched room 1", strings.NewReader(layoutStitchedRoom1))
	if err != nil {
		return nil, err
	}
	r2, err := ParseLayout("cscg_stitched room 2", strings.NewReader(layoutStitchedRoom2))
	if err != nil {
		return nil, err
	}
	rows, cols := stitchedDR+r2.Rows, stitchedDC+r2.Cols
	cells := make([]int, rows*cols)
	for i := range cells {
		cells[i] = Wall
	}
	for i, c := range r1.Cells {
		cells[(i/r1.Cols)*cols+i%r1.Cols] = c
	}
	for i, c := range r2.Cells {
		at := (i/r2.Cols+stitchedDR)*cols + i%r2.Cols + stitchedDC
		if cells[at] != Wall && cells[at] != c {
			return nil, fmt.Errorf("rooms disagree at row %d, col %d: %d vs %d", at/cols, at%cols, cells[at], c)
		}
		cells[at] = c
	}
	e, err := NewGrid("cscg_stitched", rows, cols, cells)
	if err != nil {
		return nil, err
	}
	var reg [2][]int
	for g, rc := range e.Coord {
		if rc[0] < r1.Rows && rc[1] < r1.Cols {
			reg[0] = append(reg[0], g)
		}
		if rc[0] >= stitchedDR && rc[1] >= stitchedDC {
			reg[1] = append(reg[1], g)
		}
	}
	return e, e.SetRegions(reg[:])
}

const layoutAliased = `// aliased: 4x4, 16 places, 24 edges, 4 classes
0 1 0 1
2 3 2 3
0 1 0 1
2 3 2 3
`

const layoutCorridors = `// corridors: 5x5, 19 places, 20 edges, 7 classes
0 1 1 1 2
3 # 0 # 4
3 # 0 # 4
3 # 0 # 4
6 6 1 1 5
`

const layoutRoom = `// room: 6x6, 36 places, 60 edges, 10 classes
1 1 3 2 2 2
1 0 0 0 0 2
8 0 0 0 0 6
8 0 0 0 0 7
9 0 0 0 0 7
9 4 4 5 5 7
`

const layoutTwoRooms = `// two_rooms: 13x9, 87 places, 152 edges, 10 classes
8 4 0 1 2 3 # # #
9 4 5 6 0 7 # # #
9 2 8 6 7 4 # # #
4 0 8 9 3 7 # # #
4 6 9 1 2 0 # # #
9 8 7 1 5 6 4 6 0
0 0 9 3 5 6 7 9 2
4 7 3 0 8 7 4 3 1
# # # 9 2 4 7 6 8
# # # 1 0 5 3 9 8
# # # 8 7 3 6 4 2
# # # 5 9 1 0 8 4
# # # 6 2 7 5 3 0
`

const layoutSquare = `// square: 5x5, 25 distinct symbols
21  3 11  1  7
12  0  8 13 16
14  9  2 17 22
20 24 23  4 10
19  5 18 15  6
`

const layoutUniformInterior = `// uniform_interior: 6x6, a 4x4 interior of symbol 20
 1  1  3  2  2  2
 1 20 20 20 20  2
 8 20 20 20 20 11
 8 20 20 20 20 16
 9 20 20 20 20 16
 9 15 10 13 17 16
`

const layoutCSCGRectangular = `// cscg_rectangular: 6x8, 4 symbols (George et al. 2021, Fig. 2a/b)
1 2 3 0 3 1 1 1
1 1 3 2 3 2 3 1
1 1 2 0 1 2 1 0
0 2 1 1 3 0 0 2
3 3 1 0 1 0 3 0
2 1 2 3 3 3 2 0
`

const layoutCSCGEmpty = `// cscg_empty: 6x8, uniform interior 0, 9 symbols (George et al. 2021, Fig. 2c/d)
1 5 5 5 5 5 5 2
7 0 0 0 0 0 0 8
7 0 0 0 0 0 0 8
7 0 0 0 0 0 0 8
7 0 0 0 0 0 0 8
3 6 6 6 6 6 6 4
`

const layoutCSCGMaze5 = `// cscg_maze5: 5x5, 25 unique symbols
 0  1  2  3  4
 5  6  7  8  9
10 11 12 13 14
15 16 17 18 19
20 21 22 23 24
`

const layoutStitchedRoom1 = `// cscg_stitched room 1 (8x6)
12  4  0  1 13  2
 7  3 12 11  0 10
 5 12 14 12  9  4
 5  0 14  7  4  8
 4 10  7  2 13  1
 3 14  8  3 12 11
 1  1  5 12 14 12
 5  9  3  0 14  7
`

const layoutStitchedRoom2 = `// cscg_stitched room 2 (8x6), at offset (+5, +3) of room 1
 3 12 11  4 11 11
12 14 12 11  9  1
 0 14  7  2  4  9
 0  0  9  8  2 11
 8 13  8  6  9  2
 0  5  4 13  2 14
14  4 13  7  9 14
11  1  3 13  3  0
`

const layoutBigRoom = `// big_room: 10x10, 100 places, 180 edges, 10 classes
1 1 1 1 2 2 2 2 3 3
9 0 0 0 0 0 0 0 0 3
9 0 0 0 0 0 0 0 0 3
9 0 0 0 0 0 0 0 0 4
9 0 0 0 0 0 0 0 0 4
8 0 0 0 0 0 0 0 0 4
8 0 0 0 0 0 0 0 0 4
8 0 0 0 0 0 0 0 0 5
8 0 0 0 0 0 0 0 0 5
7 7 7 7 6 6 6 6 5 5
`

// layoutTiled is the 3x3 motif repeated four times each way.
var layoutTiled = "// tiled: 12x12, 144 places, 264 edges, 9 classes\n" +
	strings.Repeat("0 1 2 0 1 2 0 1 2 0 1 2\n3 4 5 3 4 5 3 4 5 3 4 5\n6 7 8 6 7 8 6 7 8 6 7 8\n", 4)

// four_rooms' classes were drawn at random once, never equal to the class above or
// to the left, and balanced (35-38 places each).
const layoutFourRooms = `// four_rooms: 20x20, 365 places, 654 edges, 10 classes
1 6 9 8 1 4 9 6 9 7 # 7 3 0 2 1 5 1 8 0
8 7 3 2 8 3 4 3 5 1 # 6 0 6 4 9 2 6 0 9
7 3 4 8 5 1 8 6 7 4 # 9 2 5 9 6 5 2 8 4
3 5 7 0 4 3 0 2 8 9 # 2 8 3 7 0 7 6 9 6
4 7 2 5 2 5 3 5 0 4 1 0 1 4 9 8 5 3 5 9
3 6 7 4 8 0 6 2 7 0 # 2 6 1 3 4 9 5 0 7
2 8 1 5 7 2 4 0 1 2 # 8 5 2 7 1 3 0 1 9
9 3 8 9 6 7 2 1 7 9 # 6 1 6 1 5 4 6 2 7
6 1 3 5 9 5 8 0 8 0 # 8 0 3 4 1 0 9 5 4
0 2 7 4 3 6 9 6 1 9 # 7 5 6 8 2 3 5 4 3
# # # # 7 # # # # # # # # # # 6 # # # #
8 3 1 8 0 4 2 0 9 0 # 8 4 8 0 3 5 3 4 3
5 4 7 6 5 1 8 4 2 7 # 2 6 9 8 7 2 5 1 7
9 8 9 0 6 5 1 5 4 0 # 1 4 7 2 4 7 9 2 0
3 2 6 4 1 7 8 2 6 9 # 9 1 8 3 6 2 1 6 1
7 3 1 0 7 3 9 8 0 6 3 4 8 0 5 7 3 4 2 0
1 6 4 8 2 5 1 4 2 5 # 0 3 9 6 5 9 0 8 6
4 9 7 1 7 4 8 5 9 2 # 1 8 0 5 6 5 2 7 9
3 0 6 3 0 2 3 1 2 0 # 4 6 7 6 5 1 7 5 2
5 7 8 4 3 9 4 3 4 1 # 9 7 8 4 2 3 0 1 5
`
