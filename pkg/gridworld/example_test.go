package gridworld_test

import (
	"fmt"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// A 3×4 room with a two-cell pillar, from the text of a layout file: places are
// numbered in row-major order of the non-wall cells, and a move into the pillar or off
// the grid leaves the agent where it is.
func ExampleParseLayout() {
	env, err := gridworld.ParseLayout("my_room", strings.NewReader(`
// a 3×4 room with a pillar
0 1 0 1
2 # # 3
0 1 0 1
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.NumPlaces(), "places,", len(env.Edges()), "edges, classes", env.ClassesUsed())
	g, _ := env.PlaceAt(1, 0) // the place of class 2, left of the pillar
	fmt.Println("from place", g, "up:", env.Next(g, gridworld.Up), "right:", env.Next(g, gridworld.Right))

	_, err = gridworld.ParseLayout("bad", strings.NewReader("0 1\n2\n"))
	fmt.Println(err)
	// Output:
	// 10 places, 10 edges, classes [0 1 2 3]
	// from place 4 up: 0 right: 4
	// bad:2: ragged rows: row 1 has 1 cells, row 0 (line 1) has 2
}
