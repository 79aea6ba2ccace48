//go:build study

package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestTokenSplitStudy asks, of finished pixel runs (SPLIT_RUNS: comma-separated run
// directories), whether a token's frames are two kinds of image kept at different
// clones, without labels: the clones the Viterbi paths of the training walks put a
// token's frames at (those with at least splitMinVisits frames) are split in two by
// 2-means on their mean encoder latents, and each frame is given the group whose mean
// latent is nearer. Cohen's κ between that and the group of its clone is near 0 when
// the token is one kind of image at many places and high when its places show two
// kinds. The classes of each group are printed from the labels, for evaluation only.
// With SPLIT_REFINALISE=1, every token with κ ≥ splitKappa (and at least 5% of its
// frames in each group) becomes two codes at its groups' mean latents, the training
// frames are re-encoded by the nearest code, and a map is finalised on them with the
// run's config and scored (SPLIT_JSON=FILE: the report; an absolute path). Results:
// results/notes/bigger-pixels.md.
//
//	SPLIT_REFINALISE=1 SPLIT_RUNS=$PWD/runs/big_room_mnist_seed1 go test -tags study ./pkg/pipeline -run TestTokenSplitStudy -v -timeout 1h
func TestTokenSplitStudy(t *testing.T) {
	dirs := os.Getenv("SPLIT_RUNS")
	if dirs == "" {
		t.Skip("set SPLIT_RUNS to finished run directories")
	}
	for _, dir := range strings.Split(dirs, ",") {
		res, d, tokens := finishedRun(t, dir)
		var zs [][]float32
		for s := 0; s < len(d.allFrames); s += 4096 {
			z, err := res.VQVAE.Latents(d.train.Floats(d.allFrames[s:min(s+4096, len(d.allFrames))], nil))
			if err != nil {
				t.Fatal(err)
			}
			zs = append(zs, z...)
		}
		paths, _, err := chmm.ViterbiAll(res.HMM, d.sequences(tokens), 0)
		if err != nil {
			t.Fatal(err)
		}
		clone := slices.Concat(paths...)
		fmt.Printf("%s (%d training frames)\n", dir, len(tokens))
		rows := res.VQVAE.Codebook()
		for i := range rows {
			rows[i] = slices.Clone(rows[i])
		}
		for k := range res.HMM.K() {
			byClone := map[int][]int{}
			n := 0
			for f, tk := range tokens {
				if tk == k {
					byClone[clone[f]] = append(byClone[clone[f]], f)
					n++
				}
			}
			s := splitToken(byClone, zs)
			if s == nil {
				fmt.Printf("  token %d: %d frames, fewer than 2 clones with %d visits\n", k, n, splitMinVisits)
				continue
			}
			classes := [2]map[int]int{{}, {}}
			for c, g := range s.group {
				for _, f := range byClone[c] {
					classes[g][d.train.Label(d.allFrames[f])]++
				}
			}
			fmt.Printf("  token %d: %d frames at %d clones, groups of %d and %d clones (%.2f/%.2f of the frames): κ %.3f | classes %s | %s\n",
				k, n, len(s.group), s.clones[0], s.clones[1], s.share[0], s.share[1], s.kappa, topClasses(classes[0]), topClasses(classes[1]))
			if s.kappa >= splitKappa && min(s.share[0], s.share[1]) >= 0.05 {
				rows[k] = toF32(s.means[0])
				rows = append(rows, toF32(s.means[1]))
			}
		}
		if os.Getenv("SPLIT_REFINALISE") == "" || len(rows) == res.HMM.K() {
			continue
		}
		refinalise(t, res, d, rows)
	}
}

// refinalise gives res's encoder the codebook rows, re-encodes the training frames,
// finalises a map on them as res's config does and prints its report.
func refinalise(t *testing.T, res *Result, d *data, rows [][]float32) {
	cfg := res.Config
	vq, err := withCodebook(res.VQVAE, rows, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := d.encodeAll(vq)
	if err != nil {
		t.Fatal(err)
	}
	k := len(rows)
	share := make([]float64, k)
	for _, x := range tokens {
		share[x] += 1 / float64(len(tokens))
	}
	fmt.Printf("refinalising with %d codes (was %d); token shares %.3f\n", k, res.HMM.K(), share)
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
	rep.Trainer, rep.Training = "joint (tokens split, finalisation redone)", &made
	if err := rep.WriteTable(os.Stdout); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("SPLIT_JSON"); out != "" {
		if err := rep.WriteJSON(out); err != nil {
			t.Fatal(err)
		}
	}
}

// withCodebook copies src's networks into a VQ-VAE whose codebook is rows.
func withCodebook(src *vqvae.Model, rows [][]float32, seed uint64) (*vqvae.Model, error) {
	keep := make([]int, len(rows)) // compact copies the networks; the codebook is replaced below
	for i := range keep {
		keep[i] = min(i, src.Config().K-1)
	}
	dst, err := compact(src, keep, seed)
	if err != nil {
		return nil, err
	}
	ones := make([]float64, len(rows))
	for i := range ones {
		ones[i] = 1
	}
	return dst, dst.SetCodebook(rows, ones)
}

// splitKappa is the κ at which the study splits a token.
const splitKappa = 0.5

// topClasses names the three largest classes of counts with their shares.
func topClasses(counts map[int]int) string {
	type kv struct{ k, v int }
	var xs []kv
	tot := 0
	for k, v := range counts {
		xs = append(xs, kv{k, v})
		tot += v
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || xs[i].v == xs[j].v && xs[i].k < xs[j].k })
	var parts []string
	for _, x := range xs[:min(3, len(xs))] {
		parts = append(parts, fmt.Sprintf("%d %.2f", x.k, float64(x.v)/float64(tot)))
	}
	return strings.Join(parts, ", ")
}
