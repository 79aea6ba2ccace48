package figures

import (
	"math/rand/v2"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// BenchmarkLayoutGraph lays out a two_rooms-sized recovered graph: the 87-place
// map with a duplicate clone for 64 places (151 nodes), node ids shuffled.
func BenchmarkLayoutGraph(b *testing.B) {
	env, err := gridworld.Named("two_rooms")
	if err != nil {
		b.Fatal(err)
	}
	n := env.NumPlaces()
	dup := 64
	perm := rand.New(rand.NewPCG(1, 1)).Perm(n + dup)
	var edges [][2]int
	for _, e := range env.Edges() {
		edges = append(edges, [2]int{perm[e[0]], perm[e[1]]})
		if e[0] < dup {
			edges = append(edges, [2]int{perm[n+e[0]], perm[e[1]]})
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := LayoutGraph(n+dup, edges, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImageMapsPNG renders Figure 5 of a perfect two_rooms readout to PNG.
func BenchmarkImageMapsPNG(b *testing.B) {
	env, err := gridworld.Named("two_rooms")
	if err != nil {
		b.Fatal(err)
	}
	r, _ := perfectReadout(b, env, 100, 20000)
	r.ImageSide = 28
	for range 10 {
		img := make([]float32, 28*28)
		for i := range img {
			img[i] = float32(i%28) / 28
		}
		r.TokenImages = append(r.TokenImages, img)
	}
	b.ResetTimer()
	for b.Loop() {
		fig, err := ImageMaps(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fig.PNG(); err != nil {
			b.Fatal(err)
		}
	}
}
