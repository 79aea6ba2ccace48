package dataset

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTranslate(t *testing.T) {
	src := []float32{
		1, 2, 3,
		4, 5, 6,
		7, 8, 9,
	}
	for _, tc := range []struct {
		dx, dy int
		want   []float32
	}{
		{0, 0, src},
		{1, 0, []float32{0, 1, 2, 0, 4, 5, 0, 7, 8}},
		{-1, 0, []float32{2, 3, 0, 5, 6, 0, 8, 9, 0}},
		{0, 1, []float32{0, 0, 0, 1, 2, 3, 4, 5, 6}},
		{1, -1, []float32{0, 4, 5, 0, 7, 8, 0, 0, 0}},
		{3, 0, make([]float32, 9)},
		{0, -5, make([]float32, 9)},
	} {
		dst := slices.Repeat([]float32{-1}, 9)
		Translate(dst, src, 3, tc.dx, tc.dy)
		if !slices.Equal(dst, tc.want) {
			t.Errorf("Translate(dx=%d, dy=%d) = %v, want %v", tc.dx, tc.dy, dst, tc.want)
		}
	}
}

func TestJitter(t *testing.T) {
	const side, n = 5, 200
	imgs := make([]float32, n*side*side)
	for i := range n {
		imgs[i*side*side+2*side+2] = 1 // one lit pixel in the centre
	}
	Jitter(rand.New(rand.NewPCG(1, 2)), imgs, side, 2)
	seen := map[[2]int]bool{}
	for i := range n {
		img := imgs[i*side*side : (i+1)*side*side]
		var sum float32
		pos := -1
		for j, v := range img {
			sum += v
			if v != 0 {
				pos = j
			}
		}
		if sum != 1 {
			t.Fatalf("image %d: the lit pixel was lost or duplicated (sum %g)", i, sum)
		}
		dx, dy := pos%side-2, pos/side-2
		if dx < -2 || dx > 2 || dy < -2 || dy > 2 {
			t.Fatalf("image %d: offset (%d, %d) outside ±2", i, dx, dy)
		}
		seen[[2]int{dx, dy}] = true
	}
	if len(seen) != 25 {
		t.Errorf("200 draws hit %d of the 25 offsets", len(seen))
	}
	before := slices.Clone(imgs)
	Jitter(rand.New(rand.NewPCG(1, 2)), imgs, side, 0)
	if !slices.Equal(before, imgs) {
		t.Error("Jitter with max 0 changed the images")
	}
}
