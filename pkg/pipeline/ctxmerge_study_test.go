//go:build study

package pipeline

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// TestContextMergeStudy scores, against the frames' classes (labels: evaluation only),
// the hard tokens of a warm-up checkpoint before and after chmm.MergeTokens at several
// bars, with the warm-up's codebook and with a recentred one (Config.Warmup.Recenter).
//
//	CTX_RUN=runs/big_room_codes40:warmup-003124.ckpt go test -tags study ./pkg/pipeline -run TestContextMergeStudy -v
func TestContextMergeStudy(t *testing.T) {
	spec := os.Getenv("CTX_RUN")
	if spec == "" {
		t.Skip("a measurement: set CTX_RUN=DIR:FILE")
	}
	dir, file, _ := strings.Cut(spec, ":")
	cfg, d, load := studyRun(t, dir)
	m := load(file)
	classes := make([]int, len(d.allFrames))
	for i, f := range d.allFrames {
		classes[i] = d.train.Label(f)
	}
	for _, recenter := range []bool{false, true} {
		if recenter {
			n := min(len(d.allFrames), 8192)
			if err := m.InitCodebook(d.train.Floats(d.allFrames[:n], nil)); err != nil {
				t.Fatal(err)
			}
		}
		tokens, err := d.encodeAll(m)
		if err != nil {
			t.Fatal(err)
		}
		q := evaluate.ScoreTokens(tokens, classes, nil)
		fmt.Printf("recenter=%v: %d codes, purity %.3f H(class|token) %.3f\n", recenter, q.Active, q.Purity, q.HClassGivenToken)
		seqs := d.sequences(tokens)
		for _, thr := range []float64{3, 10, 30, 100} {
			group, _, err := chmm.MergeTokens(seqs, cfg.VQVAE.K, d.env.NumActions(), thr)
			if err != nil {
				t.Fatal(err)
			}
			merged := make([]int, len(tokens))
			for i, k := range tokens {
				merged[i] = group[k]
			}
			q := evaluate.ScoreTokens(merged, classes, nil)
			var parts []string
			for _, s := range q.Tokens {
				parts = append(parts, fmt.Sprintf("%d:%.0f%%/%d", s.MajorityClass, 100*s.Purity, s.Frames))
			}
			fmt.Printf("  z<%g: %d tokens, purity %.3f H(class|token) %.3f H(token|class) %.3f | %s\n", thr, q.Active, q.Purity,
				q.HClassGivenToken, q.HTokenGivenClass, strings.Join(parts, " "))
		}
	}
}
