package pipeline

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
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

// splitMinVisits is the fewest frames of a clone that splitToken groups.
const splitMinVisits = 30

type tokenSplit struct {
	group  map[int]int // clone → 0 or 1
	clones [2]int
	share  [2]float64   // of the grouped frames
	kappa  float64      // Cohen's κ: nearest group mean of a frame's latent vs its clone's group
	means  [2][]float64 // the groups' mean latents
}

// splitToken groups the clones of byClone (clone → frames) with at least
// splitMinVisits frames by weighted 2-means on their mean latents (from the farthest
// pair) and scores the split; nil with fewer than two such clones.
func splitToken(byClone map[int][]int, zs [][]float32) *tokenSplit {
	var cl []int
	for c, fs := range byClone {
		if len(fs) >= splitMinVisits {
			cl = append(cl, c)
		}
	}
	if len(cl) < 2 {
		return nil
	}
	sort.Ints(cl)
	dim := len(zs[0])
	mu := map[int][]float64{}
	for _, c := range cl {
		m := make([]float64, dim)
		for _, f := range byClone[c] {
			for j, v := range zs[f] {
				m[j] += float64(v) / float64(len(byClone[c]))
			}
		}
		mu[c] = m
	}
	sq := func(a []float64, b []float64) float64 {
		s := 0.0
		for j := range a {
			s += (a[j] - b[j]) * (a[j] - b[j])
		}
		return s
	}
	var c0, c1 []float64
	for best, i := -1.0, 0; i < len(cl); i++ {
		for _, y := range cl[i+1:] {
			if d := sq(mu[cl[i]], mu[y]); d > best {
				c0, c1, best = slices.Clone(mu[cl[i]]), slices.Clone(mu[y]), d
			}
		}
	}
	s := &tokenSplit{group: map[int]int{}}
	for range 20 {
		var w [2]float64
		next := [2][]float64{make([]float64, dim), make([]float64, dim)}
		for _, c := range cl {
			g := 0
			if sq(mu[c], c1) < sq(mu[c], c0) {
				g = 1
			}
			s.group[c] = g
			nf := float64(len(byClone[c]))
			w[g] += nf
			for j := range next[g] {
				next[g][j] += nf * mu[c][j]
			}
		}
		if w[0] == 0 || w[1] == 0 {
			break
		}
		for j := range c0 {
			c0[j], c1[j] = next[0][j]/w[0], next[1][j]/w[1]
		}
	}
	var n, agree float64
	var byClone2, byLatent [2]float64
	for _, c := range cl {
		g := s.group[c]
		s.clones[g]++
		for _, f := range byClone[c] {
			z := make([]float64, dim)
			for j, v := range zs[f] {
				z[j] = float64(v)
			}
			h := 0
			if sq(z, c1) < sq(z, c0) {
				h = 1
			}
			n++
			byClone2[g]++
			byLatent[h]++
			if h == g {
				agree++
			}
		}
	}
	s.share = [2]float64{byClone2[0] / n, byClone2[1] / n}
	s.means = [2][]float64{c0, c1}
	pe := (byClone2[0]*byLatent[0] + byClone2[1]*byLatent[1]) / (n * n)
	if pe < 1 {
		s.kappa = (agree/n - pe) / (1 - pe)
	}
	if math.IsNaN(s.kappa) {
		s.kappa = 0
	}
	return s
}
