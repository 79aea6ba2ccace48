package vqvae

import "math/rand/v2"

// KMeans clusters points into k groups: k-means++ seeding (each new centre drawn with
// probability proportional to its squared distance to the nearest chosen centre)
// followed by at most iters Lloyd iterations. It returns the centres and the number of
// points assigned to each; a cluster that empties keeps its previous centre. It needs
// len(points) ≥ k ≥ 1 and points of equal length.
func KMeans(points [][]float32, k, iters int, rng *rand.Rand) (centers [][]float32, counts []int) {
	n := len(points)
	d := len(points[0])
	centers = make([][]float32, 0, k)
	centers = append(centers, append([]float32(nil), points[rng.IntN(n)]...))
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = sqDist(points[i], centers[0])
	}
	for len(centers) < k {
		total := 0.0
		for _, v := range dist {
			total += v
		}
		next := 0
		if total > 0 {
			u := rng.Float64() * total
			for next = 0; next < n-1; next++ {
				u -= dist[next]
				if u < 0 {
					break
				}
			}
		} else {
			next = rng.IntN(n) // all points coincide with chosen centres
		}
		c := append([]float32(nil), points[next]...)
		centers = append(centers, c)
		for i := range dist {
			dist[i] = min(dist[i], sqDist(points[i], c))
		}
	}
	assign := make([]int, n)
	counts = make([]int, k)
	sums := make([][]float64, k)
	for j := range sums {
		sums[j] = make([]float64, d)
	}
	for it := 0; it <= iters; it++ {
		changed := false
		for i, p := range points {
			best, bestD := 0, sqDist(p, centers[0])
			for j := 1; j < k; j++ {
				if dd := sqDist(p, centers[j]); dd < bestD {
					best, bestD = j, dd
				}
			}
			if it == 0 || assign[i] != best {
				changed = true
			}
			assign[i] = best
		}
		clear(counts)
		for j := range sums {
			clear(sums[j])
		}
		for i, p := range points {
			counts[assign[i]]++
			for t, v := range p {
				sums[assign[i]][t] += float64(v)
			}
		}
		if !changed || it == iters {
			break
		}
		for j := range centers {
			if counts[j] == 0 {
				continue
			}
			for t := range centers[j] {
				centers[j][t] = float32(sums[j][t] / float64(counts[j]))
			}
		}
	}
	return centers, counts
}

func sqDist(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s
}
