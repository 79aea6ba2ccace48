package evaluate

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestAssign(t *testing.T) {
	for _, tc := range []struct {
		name           string
		places, states []int
		n              int
		chi, visits    []int
	}{
		{
			// n(0,·) = {5:2, 7:1} → 5; n(1,·) = {7:1, 2:1} → tie, lowest 2;
			// state 2 never visited.
			name:   "majority and ties",
			places: []int{5, 5, 7, 7, 2},
			states: []int{0, 0, 0, 1, 1},
			n:      3,
			chi:    []int{5, 2, -1},
			visits: []int{3, 2, 0},
		},
		{
			name:   "one state everywhere",
			places: []int{3, 1, 3, 1, 1},
			states: []int{0, 0, 0, 0, 0},
			n:      1,
			chi:    []int{1},
			visits: []int{5},
		},
		{
			name: "empty path", n: 2,
			chi: []int{-1, -1}, visits: []int{0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chi, visits, err := Assign(tc.places, tc.states, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(chi, tc.chi) || !reflect.DeepEqual(visits, tc.visits) {
				t.Errorf("Assign = %v, %v; want %v, %v", chi, visits, tc.chi, tc.visits)
			}
		})
	}
	for _, bad := range []struct {
		places, states []int
		n              int
	}{
		{[]int{0}, []int{0, 1}, 2}, // lengths differ
		{[]int{0}, []int{2}, 2},    // state out of range
		{[]int{-1}, []int{0}, 2},   // negative place
		{nil, nil, 0},              // no states
	} {
		if _, _, err := Assign(bad.places, bad.states, bad.n); err == nil {
			t.Errorf("Assign(%v, %v, %d): no error", bad.places, bad.states, bad.n)
		}
	}
}

// TestAssignBruteForce compares Assign with the definition on random paths.
func TestAssignBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		T, n, P := 1+rng.IntN(40), 1+rng.IntN(6), 1+rng.IntN(5)
		places, states := make([]int, T), make([]int, T)
		for i := range T {
			places[i], states[i] = rng.IntN(P), rng.IntN(n)
		}
		chi, visits, err := Assign(places, states, n)
		if err != nil {
			t.Fatal(err)
		}
		for s := range n {
			best, bestN, total := -1, 0, 0
			for g := range P {
				c := 0
				for i := range T {
					if states[i] == s && places[i] == g {
						c++
					}
				}
				total += c
				if c > bestN { // increasing g: the first maximum is the lowest id
					best, bestN = g, c
				}
			}
			if chi[s] != best || visits[s] != total {
				t.Fatalf("state %d: χ %d, n %d; brute force %d, %d (places %v states %v)", s, chi[s], visits[s], best, total, places, states)
			}
		}
	}
}
