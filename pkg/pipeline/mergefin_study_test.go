//go:build study

package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// TestMergedFinaliseStudy is a measurement, not a check (skipped unless MERGEFIN_RUN
// names DIR:FILE, a run directory and an encoder checkpoint in it): the encoder's
// codes of the training frames merged by context (chmm.MergeTokens at z <
// MERGEFIN_Z, default 100), the map finalised on the merged tokens as the run's config
// says, and scored by Evaluate with the encoder reading its codes through the merge
// (vqvae.Model.SetTokens, as a run with Config.Final.MergeTokens does), every EM round too.
// MERGEFIN_TRAINER=em|gradient sets the finalisation; MERGEFIN_AVG=1 instead counts
// the frames that keep their merged token under a codebook of the merged tokens' mean
// rows. Labels only to score.
//
//	MERGEFIN_RUN=DIR:vqvae.ckpt go test -tags study ./pkg/pipeline -run TestMergedFinaliseStudy -v -timeout 3h
func TestMergedFinaliseStudy(t *testing.T) {
	spec := os.Getenv("MERGEFIN_RUN")
	if spec == "" {
		t.Skip("a measurement: set MERGEFIN_RUN=DIR:FILE")
	}
	z := 100.0
	if v := os.Getenv("MERGEFIN_Z"); v != "" {
		var err error
		if z, err = strconv.ParseFloat(v, 64); err != nil || z <= 0 {
			t.Fatalf("MERGEFIN_Z=%q: want a number > 0", v)
		}
	}
	dir, file, _ := strings.Cut(spec, ":")
	cfg, d, load := studyRun(t, dir)
	m := load(file)
	if tr := os.Getenv("MERGEFIN_TRAINER"); tr != "" {
		cfg = cfg.WithFinalTrainer(tr)
	}
	codes, err := d.encodeAll(m)
	if err != nil {
		t.Fatal(err)
	}
	k0 := len(m.Codebook())
	group, k, err := chmm.MergeTokens(d.sequences(codes), k0, d.env.NumActions(), z)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int, len(codes))
	classes := make([]int, len(codes))
	share := make([]float64, k)
	for i, c := range codes {
		tokens[i] = group[c]
		share[tokens[i]] += 1 / float64(len(codes))
		classes[i] = d.train.Label(d.allFrames[i])
	}
	q := evaluate.ScoreTokens(tokens, classes, nil)
	fmt.Printf("%d codes → %d tokens at z < %g: purity %.3f H(class|token) %.3f H(token|class) %.3f\n", k0, k, z, q.Purity, q.HClassGivenToken, q.HTokenGivenClass)
	if os.Getenv("MERGEFIN_AVG") != "" {
		// The merged tokens as nearest rows of a codebook of the groups' frame-weighted
		// mean rows (what a merge inside the encoder would give): agreement.
		cb := m.Codebook()
		rows := make([][]float64, k)
		for g := range rows {
			rows[g] = make([]float64, len(cb[0]))
		}
		count := make([]float64, k0)
		for _, c := range codes {
			count[c]++
		}
		for c, row := range cb {
			for j, v := range row {
				rows[group[c]][j] += count[c] * float64(v) / (share[group[c]] * float64(len(codes)))
			}
		}
		zs, err := m.Latents(d.train.Floats(d.allFrames, nil))
		if err != nil {
			t.Fatal(err)
		}
		agree := 0
		for i, zi := range zs {
			best, bd := -1, math.Inf(1)
			for g, row := range rows {
				s := 0.0
				for j, v := range zi {
					s += (float64(v) - row[j]) * (float64(v) - row[j])
				}
				if s < bd {
					best, bd = g, s
				}
			}
			if best == tokens[i] {
				agree++
			}
		}
		fmt.Printf("mean rows: %.4f of the frames keep their merged token\n", float64(agree)/float64(len(zs)))
		return
	}

	// The encoder reads its codes through the merge, as a run with Config.Final.MergeTokens
	// saves it, so Evaluate scores the held-out episode with the merged tokens.
	if err := m.SetTokens(group); err != nil {
		t.Fatal(err)
	}
	score := func(what string, hmm *chmm.Model, conf [][]float64) {
		if conf != nil {
			b, err := json.Marshal(conf)
			if err != nil {
				t.Fatal(err)
			}
			hmm = hmm.Clone()
			hmm.Meta = map[string]string{ConfusionMeta: string(b)}
		}
		rep, err := Evaluate(m, hmm, d.env, cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := rep.OtherReadout
		fmt.Printf("%s, %d states, %s: F1 %.3f (P %.3f R %.3f), state→place purity %.3f, action accuracy %.3f\n", what, hmm.N(), rep.Decode,
			rep.ViterbiMap.F1, rep.ViterbiMap.Precision, rep.ViterbiMap.Recall, rep.StatePlacePurity, rep.ActionAccuracy)
		fmt.Printf("%s, %d states, %s: F1 %.3f (P %.3f R %.3f), state→place purity %.3f, action accuracy %.3f\n", what, hmm.N(), o.Decode,
			o.ViterbiMapF1, o.ViterbiMapPrecision, o.ViterbiMapRecall, o.StatePlacePurity, o.ActionAccuracy)
	}
	r := testFinaliser(cfg, d, os.Stderr, &hooks{})
	r.s.hooks.emRound = func(round int, m *chmm.Model, conf [][]float64) error {
		score(fmt.Sprintf("round %d", round), m, conf)
		return nil
	}
	start := time.Now()
	var hmm *chmm.Model
	seqs := d.sequences(tokens)
	if cfg.Final.Trainer == FinalEM {
		if hmm, err = r.em(seqs, k, d.env.NumActions()); err != nil {
			t.Fatal(err)
		}
	} else {
		from := chmm.New(chmm.UniformClones(k, 1), d.env.NumActions(), rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
		if hmm, err = r.gradient(seqs, share, from); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("finalisation: %d states, %.1f min\n", hmm.N(), time.Since(start).Minutes())

	score("final", hmm, r.st.Made.Confusion)
}
