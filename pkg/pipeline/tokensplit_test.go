package pipeline

import (
	"math/rand/v2"
	"testing"
)

// TestSplitTokenKappa: a token whose four clones show one kind of image (latents from
// one Gaussian) scores κ near 0; one whose clones 0–1 and 2–3 show two kinds (means
// 3σ apart in one of 8 dimensions, so single frames overlap a little) scores high, and
// its groups are those clones. By Bayes' rule a frame is told right with probability
// Φ(1.5) = 0.933, so κ ≈ 2·0.933 − 1 = 0.87 with groups of equal size.
func TestSplitTokenKappa(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim, perClone = 8, 500
	build := func(shift [4]float64) (map[int][]int, [][]float32) {
		byClone := map[int][]int{}
		var zs [][]float32
		for c := range 4 {
			for range perClone {
				z := make([]float32, dim)
				for j := range z {
					z[j] = float32(r.NormFloat64())
				}
				z[0] += float32(shift[c])
				byClone[c] = append(byClone[c], len(zs))
				zs = append(zs, z)
			}
		}
		byClone[4] = []int{0} // a clone with too few frames is left out
		return byClone, zs
	}
	one := splitToken(build([4]float64{}))
	if one == nil || one.kappa > 0.1 || one.kappa < -0.1 {
		t.Fatalf("one kind of image: %+v, want κ near 0", one)
	}
	two := splitToken(build([4]float64{0, 0, 3, 3}))
	if two == nil || two.kappa < 0.8 || two.kappa > 0.94 || two.group[0] != two.group[1] || two.group[2] != two.group[3] || two.group[0] == two.group[2] {
		t.Fatalf("two kinds of image: κ %.3f, groups %v; want κ ≈ 0.87 and clones {0,1}, {2,3}", two.kappa, two.group)
	}
	if _, ok := two.group[4]; ok {
		t.Errorf("clone 4 (1 frame) grouped")
	}
	t.Logf("κ %.3f (one kind), %.3f (two kinds)", one.kappa, two.kappa)
	if s := splitToken(map[int][]int{0: make([]int, 40)}, nil); s != nil {
		t.Errorf("one clone: %+v, want nil", s)
	}
}
