//go:build study

package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// TestPseudoClassStudy reads pseudo-classes from finished runs' maps (REFINE_RUNS:
// comma-separated run directories, only read): the training walks decoded by the
// map, states grouped by the mean image of their frames (pseudoClasses), and prints
// the groups with the classes of their frames (labels: scoring only), then the token
// class purity of the training frames under the run's codebook and under a codebook
// at the groups' mean latents. REFINE_BAR (default 4) and REFINE_MIN (default 20) set
// the merge bar and the fewest visits of a grouped state. With REFINE_REFINALISE=1 the
// map is finalised again on the latter tokens and scored (refinalise).
//
//	REFINE_RUNS=/work/runs/tokens/before/room_mnist_seed1 go test -tags study ./pkg/pipeline -run TestPseudoClassStudy -v -timeout 2h
func TestPseudoClassStudy(t *testing.T) {
	dirs := os.Getenv("REFINE_RUNS")
	if dirs == "" {
		t.Skip("set REFINE_RUNS to finished run directories")
	}
	bar, minVisits := 4.0, 20
	if v := os.Getenv("REFINE_BAR"); v != "" {
		var err error
		if bar, err = strconv.ParseFloat(v, 64); err != nil {
			t.Fatal(err)
		}
	}
	if v := os.Getenv("REFINE_MIN"); v != "" {
		var err error
		if minVisits, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range strings.Split(dirs, ",") {
		res, d, tokens := finishedRun(t, dir)
		paths, _, err := chmm.ViterbiAll(res.HMM, d.sequences(tokens), 0)
		if err != nil {
			t.Fatal(err)
		}
		states := slices.Concat(paths...)
		side := d.side
		pc, err := pseudoClasses(states, res.HMM.N(), side*side, func(i int, dst []float32) { d.train.Float(d.allFrames[i], dst) }, minVisits, bar)
		if err != nil {
			t.Fatal(err)
		}
		classes := make([]int, len(states))
		for i, f := range d.allFrames {
			classes[i] = d.train.Label(f)
		}
		if out := os.Getenv("REFINE_DUMP"); out != "" {
			dumpStates(t, out+"/"+strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_")+".json", states, classes, res.HMM.N(), side*side, d)
		}
		fmt.Printf("%s: %d frames, %d states, %d pseudo-classes (codebook %d), merged up to %.2f, apart from %.2f, seeded from %d frames, left out %v, %d frames unlabelled\n",
			dir, len(states), res.HMM.N(), len(pc.Groups), res.Config.VQVAE.K, pc.Merged, pc.Apart, pc.Seeded, pc.LeftOut, pc.Unlabelled)
		var lab, labClass []int
		for i, l := range pc.Label {
			if l >= 0 {
				lab = append(lab, l)
				labClass = append(labClass, classes[i])
			}
		}
		q := evaluate.ScoreTokens(lab, labClass, nil)
		fmt.Printf("  pseudo-labels: purity %.4f, H(class|label) %.3f, H(label|class) %.3f\n", q.Purity, q.HClassGivenToken, q.HTokenGivenClass)
		for k, g := range pc.Groups {
			counts := map[int]int{}
			for i, l := range pc.Label {
				if l == k {
					counts[classes[i]]++
				}
			}
			fmt.Printf("  group %d: %d states, %d frames, classes %s\n", k, len(g), pc.Frames[k], topClasses(counts))
		}
		if os.Getenv("REFINE_DEBUG") != "" {
			debugGroups(states, res.HMM.N(), side, d, pc)
		}
		q = evaluate.ScoreTokens(tokens, classes, nil)
		fmt.Printf("  run's tokens: purity %.4f, perplexity %.2f\n", q.Purity, q.Perplexity)
		zs, err := latentsOf(d, res)
		if err != nil {
			t.Fatal(err)
		}
		rows := groupMeans(zs, pc.Label, len(pc.Groups))
		near := nearestRows(zs, rows)
		q = evaluate.ScoreTokens(near, classes, nil)
		agree := 0
		for i, l := range pc.Label {
			if l == near[i] {
				agree++
			}
		}
		fmt.Printf("  codebook at the groups' mean latents: purity %.4f, perplexity %.2f, %.4f of the frames on their pseudo-label\n",
			q.Purity, q.Perplexity, float64(agree)/float64(len(near)))
		if os.Getenv("REFINE_REFINALISE") != "" && os.Getenv("REFINE_EPOCHS") == "" {
			refinalise(t, res, d, rows)
		}
		if v := os.Getenv("REFINE_EPOCHS"); v != "" {
			epochs, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			weight := 1.0
			if w := os.Getenv("REFINE_WEIGHT"); w != "" {
				if weight, err = strconv.ParseFloat(w, 64); err != nil {
					t.Fatal(err)
				}
			}
			tau := res.Config.VQVAE.Tau
			if os.Getenv("REFINE_FIT") != "" {
				rows = fitCodebook(zs, rows, pc.Label, tau)
				fmt.Printf("  fitted codebook on the run's latents: %.4f of the labelled frames on their pseudo-label\n", onLabel(zs, rows, pc.Label))
			}
			vq, err := withCodebook(res.VQVAE, rows, res.Config.Seed)
			if err != nil {
				t.Fatal(err)
			}
			vq.SetTeachEMA(os.Getenv("REFINE_EMA") != "")
			start := time.Now()
			batch := 128
			for ep := range epochs {
				perm := rand.New(rand.NewPCG(res.Config.Seed, uint64(ep))).Perm(len(d.allFrames))
				var sum vqvae.Metrics
				steps := 0
				for s := 0; s+batch <= len(perm); s += batch {
					idx := make([]int, batch)
					tg := make([]int, batch)
					for i, f := range perm[s : s+batch] {
						idx[i] = d.allFrames[f]
						tg[i] = pc.Label[f]
					}
					imgs := d.train.Floats(idx, nil)
					dataset.Jitter(rand.New(rand.NewPCG(res.Config.Seed, uint64(ep<<20+s))), imgs, d.side, res.Config.Joint.Jitter)
					met, err := vq.TeachStep(imgs, tg, weight)
					if err != nil {
						t.Fatal(err)
					}
					sum.Rec += met.Rec
					sum.CE += met.CE
					sum.Accuracy += met.Accuracy
					steps++
				}
				fmt.Printf("  teach epoch %d: rec %.4f CE %.4f accuracy %.4f (%.0f s)\n", ep+1, sum.Rec/float64(steps), sum.CE/float64(steps), sum.Accuracy/float64(steps), time.Since(start).Seconds())
			}
			zs, err := latentsOfVQ(d, vq)
			if err != nil {
				t.Fatal(err)
			}
			fitted := fitCodebook(zs, vq.Codebook(), pc.Label, tau)
			fmt.Printf("  taught: %.4f of the labelled frames on their pseudo-label; re-seeded %.4f, fitted %.4f\n",
				onLabel(zs, vq.Codebook(), pc.Label), onLabel(zs, groupMeans(zs, pc.Label, len(pc.Groups)), pc.Label), onLabel(zs, fitted, pc.Label))
			taught := nearestRows(zs, vq.Codebook())
			q = evaluate.ScoreTokens(taught, classes, nil)
			agree = 0
			for i, l := range pc.Label {
				if l == taught[i] {
					agree++
				}
			}
			fmt.Printf("  taught codebook: purity %.4f, perplexity %.2f, %.4f of the frames on their pseudo-label\n",
				q.Purity, q.Perplexity, float64(agree)/float64(len(taught)))
			rows = groupMeans(zs, pc.Label, len(pc.Groups))
			if os.Getenv("REFINE_FIT") != "" {
				rows = fitted
			}
			sizes := make([]float64, len(rows))
			for i := range sizes {
				sizes[i] = float64(max(pc.Frames[i], 1))
			}
			if err := vq.SetCodebook(rows, sizes); err != nil {
				t.Fatal(err)
			}
			near := nearestRows(zs, rows)
			q = evaluate.ScoreTokens(near, classes, nil)
			agree := 0
			for i, l := range pc.Label {
				if l == near[i] {
					agree++
				}
			}
			fmt.Printf("  taught, codebook at the groups' mean latents: purity %.4f, perplexity %.2f, %.4f of the frames on their pseudo-label\n",
				q.Purity, q.Perplexity, float64(agree)/float64(len(near)))
			fmt.Printf("  held-out token class purity: run's %.4f, taught %.4f\n", heldOutPurity(t, res, res.VQVAE), heldOutPurity(t, res, vq))
			if os.Getenv("REFINE_REFINALISE") != "" {
				finaliseWith(t, res, d, vq)
			}
		}
	}
}

// latentsOf returns the encoder latents of every training frame.
func latentsOf(d *data, res *Result) ([][]float32, error) { return latentsOfVQ(d, res.VQVAE) }

// latentsOfVQ returns vq's latents of every training frame.
func latentsOfVQ(d *data, vq *vqvae.Model) ([][]float32, error) {
	var zs [][]float32
	for s := 0; s < len(d.allFrames); s += 4096 {
		z, err := vq.Latents(d.train.Floats(d.allFrames[s:min(s+4096, len(d.allFrames))], nil))
		if err != nil {
			return nil, err
		}
		zs = append(zs, z...)
	}
	return zs, nil
}

// groupMeans returns the mean of zs over the frames of each label 0..k-1.
func groupMeans(zs [][]float32, label []int, k int) [][]float32 {
	dim := len(zs[0])
	sum := make([][]float64, k)
	n := make([]int, k)
	for i := range sum {
		sum[i] = make([]float64, dim)
	}
	for i, l := range label {
		if l < 0 {
			continue
		}
		n[l]++
		for j, v := range zs[i] {
			sum[l][j] += float64(v)
		}
	}
	rows := make([][]float32, k)
	for i := range rows {
		rows[i] = make([]float32, dim)
		for j := range rows[i] {
			rows[i][j] = float32(sum[i][j] / float64(max(n[i], 1)))
		}
	}
	return rows
}

// nearestRows returns the nearest row of every z.
func nearestRows(zs, rows [][]float32) []int {
	out := make([]int, len(zs))
	for i, z := range zs {
		best := 0.0
		for k, r := range rows {
			d := 0.0
			for j, v := range z {
				x := float64(v - r[j])
				d += x * x
			}
			if k == 0 || d < best {
				out[i], best = k, d
			}
		}
	}
	return out
}

// debugGroups prints every group's spread, frames and blend distance to the larger ones.
func debugGroups(states []int, numStates, side int, d *data, pc *PseudoClasses) {
	gs := make([]*protoGroup, len(pc.Groups))
	buf := make([]float32, side*side)
	for k := range gs {
		gs[k] = &protoGroup{sum: make([]float64, side*side)}
	}
	for i, l := range pc.Label {
		if l < 0 {
			continue
		}
		d.train.Float(d.allFrames[i], buf)
		g := gs[l]
		g.n++
		for j, v := range buf {
			g.sum[j] += float64(v)
			g.sq += float64(v) * float64(v)
		}
	}
	for k, g := range gs {
		fmt.Printf("  group %d: n %d spread %.2f noise %.4f; distances", k, g.n, g.spread(), g.spread()/float64(g.n))
		for j := range k {
			fmt.Printf(" %.1f", protoDistance(g, gs[j]))
		}
		fmt.Println()
	}
}

// finaliseWith finalises a map on vq's tokens of the training frames as res's config
// does, scores it on the held-out episode and prints the report (REFINE_JSON=FILE
// also writes it).
func finaliseWith(t *testing.T, res *Result, d *data, vq *vqvae.Model) {
	cfg := res.Config
	if tr := os.Getenv("REFINE_TRAINER"); tr != "" {
		cfg = cfg.WithFinalTrainer(tr)
	}
	tokens, err := d.encodeAll(vq)
	if err != nil {
		t.Fatal(err)
	}
	k := vq.NumTokens()
	share := make([]float64, k)
	for _, x := range tokens {
		share[x] += 1 / float64(len(tokens))
	}
	r := testFinaliser(cfg, d, os.Stderr, nil)
	start := time.Now()
	var hmm *chmm.Model
	if cfg.Final.Trainer == FinalEM {
		hmm, err = r.em(d.sequences(tokens), k, res.HMM.NumActions)
	} else {
		hmm, err = r.gradient(d.sequences(tokens), share, chmm.New(chmm.UniformClones(k, 1), res.HMM.NumActions, rand.New(rand.NewPCG(1, 1))))
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.st.Made.Confusion != nil {
		b, _ := json.Marshal(r.st.Made.Confusion)
		hmm.Meta = map[string]string{ConfusionMeta: string(b)}
	}
	final := time.Since(start).Seconds()
	rep, err := Evaluate(vq, hmm, d.env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diagnosis, err = diagnose(d, cfg, vq, hmm, &r.st.Made, nil); err != nil {
		t.Fatal(err)
	}
	rep.Seconds = map[string]float64{PhaseFinal: final}
	made := r.st.Made
	made.Episodes, made.Steps, made.Clones = cfg.Data.Episodes, cfg.Data.Steps, hmm.Clones
	rep.Trainer, rep.Training = "joint (taught, finalisation redone)", &made
	if err := rep.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("REFINE_JSON"); out != "" {
		if err := rep.WriteJSON(out); err != nil {
			t.Fatal(err)
		}
	}
}

// heldOutPurity is the token class purity of vq's hard tokens on res's held-out episode.
func heldOutPurity(t *testing.T, res *Result, vq *vqvae.Model) float64 {
	env, err := res.Config.Environment()
	if err != nil {
		t.Fatal(err)
	}
	held, err := NewHeldOut(res.Config, env)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _, err := vq.Encode(held.Images)
	if err != nil {
		t.Fatal(err)
	}
	classes := make([]int, len(tokens))
	for i, g := range held.Episode.Places {
		classes[i] = env.Class[g]
	}
	return evaluate.ScoreTokens(tokens, classes, nil).Purity
}

// dumpStates writes, per visited state, its frames' count, pixel sums, sum of
// squares and class counts (labels: scoring only) as JSON to path.
func dumpStates(t *testing.T, path string, states, classes []int, numStates, pixels int, d *data) {
	type st struct {
		State   int         `json:"state"`
		N       int         `json:"n"`
		Sq      float64     `json:"sq"`
		Sum     []float64   `json:"sum"`
		Classes map[int]int `json:"classes"`
	}
	by := make([]*st, numStates)
	buf := make([]float32, pixels)
	for i, s := range states {
		g := by[s]
		if g == nil {
			g = &st{State: s, Sum: make([]float64, pixels), Classes: map[int]int{}}
			by[s] = g
		}
		d.train.Float(d.allFrames[i], buf)
		g.N++
		g.Classes[classes[i]]++
		for j, v := range buf {
			g.Sum[j] += float64(v)
			g.Sq += float64(v) * float64(v)
		}
	}
	var out []*st
	for _, g := range by {
		if g != nil {
			out = append(out, g)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
