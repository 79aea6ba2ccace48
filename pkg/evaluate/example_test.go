package evaluate_test

import (
	"fmt"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// A corridor of three places shows 0, 1, 0: places A and C look alike. A map with two
// clones of token 0 (states 0 and 1), one of token 1 (state 2) and the sink (3) is
// scored on a held-out walk A B C B A B C, decoded once with A and C told apart and
// once with both read as state 0. The transitions T[a,i,j] are the map's: Left and
// Right move along the corridor, Up and Down stay.
func ExampleEvaluate() {
	env, err := gridworld.ParseLayout("corridor", strings.NewReader("0 1 0\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	const n = 4 // states: A's clone, C's clone, B's clone, sink
	trans := make([]float64, 4*n*n)
	set := func(a, i, j int) { trans[(a*n+i)*n+j] = 1 }
	for i := range n {
		set(gridworld.Up, i, i)
		set(gridworld.Down, i, i)
	}
	set(gridworld.Left, 0, 0)
	set(gridworld.Right, 0, 2)
	set(gridworld.Left, 2, 0)
	set(gridworld.Right, 2, 1)
	set(gridworld.Left, 1, 2)
	set(gridworld.Right, 1, 1)
	set(gridworld.Left, 3, 3)
	set(gridworld.Right, 3, 3)

	places := []int{0, 1, 2, 1, 0, 1, 2}
	tokens := []int{0, 1, 0, 1, 0, 1, 0}
	for _, decoded := range [][]int{{0, 2, 1, 2, 0, 2, 1}, {0, 2, 0, 2, 0, 2, 0}} {
		rep, err := evaluate.Evaluate(evaluate.Input{Env: env, Places: places, States: decoded, Tokens: tokens,
			Trans: trans, NumStates: n, NumTokens: 2}, evaluate.DefaultOptions())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("recall %.2f, F1 %.3f, state→place purity %.3f, places represented %d of 3\n",
			rep.ViterbiMap.Recall, rep.ViterbiMap.F1, rep.StatePlacePurity, rep.RepresentedPlaces)
	}
	// Output:
	// recall 1.00, F1 1.000, state→place purity 1.000, places represented 3 of 3
	// recall 0.50, F1 0.667, state→place purity 0.714, places represented 2 of 3
}
