//go:build study

package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestRecenterStudy compares ways to place the codebook on a warm-up checkpoint's
// encoder latents of 20,000 training frames, scored against their classes (labels:
// evaluation only): k-means on a uniform sample (Config.Warmup.Recenter) and on all of them,
// the classes' mean latents (an oracle: the best a codebook of class centres does with
// this encoder), k-means on a class-balanced sample (oracle), micro-clusters merged by
// linkage, and samples weighted towards sparse regions (k-th neighbour radius^p).
//
//	RECENTER_RUN=runs/big_room_mnist_seed1:warmup-003124.ckpt go test -tags study ./pkg/pipeline -run TestRecenterStudy -v
func TestRecenterStudy(t *testing.T) {
	spec := os.Getenv("RECENTER_RUN")
	if spec == "" {
		t.Skip("a measurement: set RECENTER_RUN=DIR:FILE")
	}
	dir, file, _ := strings.Cut(spec, ":")
	cfg, d, load := studyRun(t, dir)
	m := load(file)
	n := min(len(d.allFrames), 20000)
	idx := rand.New(rand.NewPCG(cfg.Seed, 0x5ce7)).Perm(len(d.allFrames))[:n]
	frames := make([]int, n)
	classes := make([]int, n)
	for i, s := range idx {
		frames[i] = d.allFrames[s]
		classes[i] = d.train.Label(frames[i])
	}
	var zs [][]float32
	for s := 0; s < n; s += 4096 {
		z, err := m.Latents(d.train.Floats(frames[s:min(s+4096, n)], nil))
		if err != nil {
			t.Fatal(err)
		}
		zs = append(zs, z...)
	}
	K := cfg.VQVAE.K
	report := func(name string, centers [][]float32) {
		tok := make([]int, n)
		for i, z := range zs {
			best, bd := 0, math.Inf(1)
			for k, c := range centers {
				if dd := sq(z, c); dd < bd {
					best, bd = k, dd
				}
			}
			tok[i] = best
		}
		q := evaluate.ScoreTokens(tok, classes, nil)
		maj := map[int]int{}
		var parts []string
		for _, s := range q.Tokens {
			maj[s.MajorityClass]++
			parts = append(parts, fmt.Sprintf("%d:%.0f%%/%d", s.MajorityClass, 100*s.Purity, s.Frames))
		}
		fmt.Printf("%-28s purity %.3f H(class|token) %.3f H(token|class) %.3f active %d, classes with a code %d | %s\n",
			name, q.Purity, q.HClassGivenToken, q.HTokenGivenClass, q.Active, len(maj), strings.Join(parts, " "))
	}
	rng := func(s uint64) *rand.Rand { return rand.New(rand.NewPCG(cfg.Seed, s)) }
	// current: k-means++ on a uniform sample
	c, _ := vqvae.KMeans(zs[:min(n, max(cfg.Warmup.RecenterFrames, K))], K, 20, rng(1))
	report("kmeans uniform sample", c)
	c, _ = vqvae.KMeans(zs, K, 50, rng(2))
	report("kmeans all 20000", c)
	// oracle: class means
	cm := map[int][]float64{}
	cn := map[int]int{}
	for i, z := range zs {
		if cm[classes[i]] == nil {
			cm[classes[i]] = make([]float64, len(z))
		}
		for j, v := range z {
			cm[classes[i]][j] += float64(v)
		}
		cn[classes[i]]++
	}
	var oc [][]float32
	for _, k := range slices.Sorted(func(yield func(int) bool) {
		for k := range cm {
			if !yield(k) {
				return
			}
		}
	}) {
		v := make([]float32, len(cm[k]))
		for j := range v {
			v[j] = float32(cm[k][j] / float64(cn[k]))
		}
		oc = append(oc, v)
	}
	report("oracle class means", oc)
	// oracle balanced sample
	per := map[int]int{}
	var bal [][]float32
	for i, z := range zs {
		if per[classes[i]] < 300 {
			per[classes[i]]++
			bal = append(bal, z)
		}
	}
	c, _ = vqvae.KMeans(bal, K, 50, rng(3))
	report("kmeans oracle-balanced", c)
	// micro-clusters + linkage
	for _, M := range []int{40, 100, 200} {
		mc, cnt := vqvae.KMeans(zs, M, 30, rng(4))
		for _, link := range []string{"average", "single", "ward-unweighted", "complete"} {
			report(fmt.Sprintf("micro %d + %s", M, link), agglomerate(mc, cnt, K, link))
		}
	}
	// inverse kNN density resampling
	for _, kk := range []int{10, 50} {
		s := zs[:4000]
		w := make([]float64, len(s))
		for i := range s {
			ds := make([]float64, len(s))
			for j := range s {
				ds[j] = sq(s[i], s[j])
			}
			slices.Sort(ds)
			w[i] = math.Sqrt(ds[kk]) // radius
		}
		// weight ∝ r^p for a few p
		for _, p := range []float64{2, 8, 32} {
			r := rng(5)
			tot := 0.0
			ww := make([]float64, len(s))
			for i := range w {
				ww[i] = math.Pow(w[i], p)
				tot += ww[i]
			}
			var smp [][]float32
			for range 2000 {
				u := r.Float64() * tot
				i := 0
				for ; i < len(ww)-1; i++ {
					u -= ww[i]
					if u < 0 {
						break
					}
				}
				smp = append(smp, s[i])
			}
			c, _ = vqvae.KMeans(smp, K, 50, rng(6))
			report(fmt.Sprintf("kNN%d density^-%g sample", kk, p), c)
		}
	}
}

func sq(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s
}

// agglomerate merges centres (with sizes cnt) into k groups by the linkage and returns
// the groups' size-weighted means.
func agglomerate(centers [][]float32, cnt []int, k int, link string) [][]float32 {
	type grp struct {
		members []int
	}
	gs := make([]grp, len(centers))
	for i := range gs {
		gs[i].members = []int{i}
	}
	mean := func(g grp, weighted bool) []float64 {
		m := make([]float64, len(centers[0]))
		tot := 0.0
		for _, i := range g.members {
			w := 1.0
			if weighted {
				w = float64(max(cnt[i], 1))
			}
			tot += w
			for j, v := range centers[i] {
				m[j] += w * float64(v)
			}
		}
		for j := range m {
			m[j] /= tot
		}
		return m
	}
	dist := func(a, b grp) float64 {
		switch link {
		case "ward-unweighted":
			ma, mb := mean(a, false), mean(b, false)
			s := 0.0
			for j := range ma {
				s += (ma[j] - mb[j]) * (ma[j] - mb[j])
			}
			na, nb := float64(len(a.members)), float64(len(b.members))
			return s * na * nb / (na + nb)
		}
		best := 0.0
		switch link {
		case "single":
			best = math.Inf(1)
		}
		sum := 0.0
		for _, i := range a.members {
			for _, j := range b.members {
				dd := sq(centers[i], centers[j])
				sum += dd
				switch link {
				case "single":
					best = min(best, dd)
				case "complete":
					best = max(best, dd)
				}
			}
		}
		if link == "average" {
			return sum / float64(len(a.members)*len(b.members))
		}
		return best
	}
	for len(gs) > k {
		bi, bj, bd := 0, 1, math.Inf(1)
		for i := range gs {
			for j := i + 1; j < len(gs); j++ {
				if dd := dist(gs[i], gs[j]); dd < bd {
					bi, bj, bd = i, j, dd
				}
			}
		}
		gs[bi].members = append(gs[bi].members, gs[bj].members...)
		gs = append(gs[:bj], gs[bj+1:]...)
	}
	out := make([][]float32, len(gs))
	for i, g := range gs {
		m := mean(g, true)
		out[i] = make([]float32, len(m))
		for j, v := range m {
			out[i][j] = float32(v)
		}
	}
	return out
}
