package evaluate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCondEntropy: hand-computed cases, and random samples against the definition
// H(a | b) = −Σ p(a, b) log p(a | b) summed directly.
func TestCondEntropy(t *testing.T) {
	for _, c := range []struct {
		a, b []int
		want float64
	}{
		{nil, nil, 0},
		{[]int{0, 0, 0}, []int{1, 2, 3}, 0},                 // a constant
		{[]int{0, 1, 2}, []int{5, 5, 5}, math.Log(3)},       // b constant: H(a)
		{[]int{0, 1, 0, 1}, []int{0, 0, 1, 1}, math.Log(2)}, // independent fair bits
		{[]int{0, 0, 1, 1}, []int{0, 0, 1, 1}, 0},           // a = b
		// b = 0: a ∈ {0, 0, 1} (H = −⅔log⅔ − ⅓log⅓); b = 1: a = 2 (H = 0); weights ¾, ¼.
		{[]int{0, 0, 1, 2}, []int{0, 0, 0, 1}, 0.75 * (-(2.0/3)*math.Log(2.0/3) - (1.0/3)*math.Log(1.0/3))},
	} {
		if got := CondEntropy(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("H(%v | %v) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		n := 1 + rng.IntN(500)
		a, b := make([]int, n), make([]int, n)
		for i := range n {
			a[i], b[i] = rng.IntN(7), rng.IntN(5)
		}
		joint, marg := map[[2]int]float64{}, map[int]float64{}
		for i := range n {
			joint[[2]int{a[i], b[i]}]++
			marg[b[i]]++
		}
		want := 0.0
		for k, c := range joint {
			want -= c / float64(n) * math.Log(c/marg[k[1]])
		}
		if got := CondEntropy(a, b); math.Abs(got-want) > 1e-12 {
			t.Errorf("trial %d: %g, want %g", trial, got, want)
		}
	}
}
