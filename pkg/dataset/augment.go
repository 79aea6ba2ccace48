package dataset

import "math/rand/v2"

// Translate writes into dst the side×side image src shifted by dx columns (positive:
// to the right) and dy rows (positive: down); pixels shifted in from outside are 0.
// dst and src must not overlap.
func Translate(dst, src []float32, side, dx, dy int) {
	dst = dst[:side*side]
	for r := range side {
		row := dst[r*side : (r+1)*side]
		sr := r - dy
		if sr < 0 || sr >= side {
			clear(row)
			continue
		}
		srow := src[sr*side : (sr+1)*side]
		for c := range side {
			if sc := c - dx; sc >= 0 && sc < side {
				row[c] = srow[sc]
			} else {
				row[c] = 0
			}
		}
	}
}

// Jitter shifts every side×side image of the batch imgs in place by an offset drawn
// uniformly from [-max, max]² (label-free data augmentation: a digit moved by a pixel
// or two is the same observation). max ≤ 0 leaves imgs unchanged.
func Jitter(rng *rand.Rand, imgs []float32, side, max int) {
	if max <= 0 {
		return
	}
	p := side * side
	tmp := make([]float32, p)
	for i := 0; i+p <= len(imgs); i += p {
		dx, dy := rng.IntN(2*max+1)-max, rng.IntN(2*max+1)-max
		if dx == 0 && dy == 0 {
			continue
		}
		copy(tmp, imgs[i:i+p])
		Translate(imgs[i:i+p], tmp, side, dx, dy)
	}
}
