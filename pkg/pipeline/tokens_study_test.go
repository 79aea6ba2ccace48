//go:build study

package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestTokensStudy scores the hard tokens that VQ-VAE checkpoints of a run directory
// give its training frames against their classes (labels: evaluation only), one line
// per token and per class. TOKENS_RUN=DIR:FILE,FILE (warm-up, joint or final
// checkpoints; a warm-up checkpoint's codebook is the one before recentring).
//
//	TOKENS_RUN=runs/big_room_mnist_seed1:warmup-003124.ckpt,vqvae.ckpt go test -tags study ./pkg/pipeline -run TestTokensStudy -v
func TestTokensStudy(t *testing.T) {
	spec := os.Getenv("TOKENS_RUN")
	if spec == "" {
		t.Skip("a measurement: set TOKENS_RUN=DIR:FILE,FILE")
	}
	dir, files, ok := strings.Cut(spec, ":")
	if !ok {
		t.Fatalf("TOKENS_RUN=%q: want DIR:FILE,FILE", spec)
	}
	_, d, load := studyRun(t, dir)
	classes := make([]int, len(d.allFrames))
	for i, f := range d.allFrames {
		classes[i] = d.train.Label(f)
	}
	for _, f := range strings.Split(files, ",") {
		tokens, err := d.encodeAll(load(f))
		if err != nil {
			t.Fatal(err)
		}
		q := evaluate.ScoreTokens(tokens, classes, nil)
		fmt.Printf("%s: purity %.3f, H(token | class) %.3f, H(class | token) %.3f nats, perplexity %.2f, %d active codes\n",
			f, q.Purity, q.HTokenGivenClass, q.HClassGivenToken, q.Perplexity, q.Active)
		for _, s := range q.Tokens {
			fmt.Printf("  token %d: %d frames, %.3f of them class %d\n", s.Token, s.Frames, s.Purity, s.MajorityClass)
		}
		for _, c := range q.Classes {
			fmt.Printf("  class %d: %d frames, %.3f of them token %d\n", c.Class, c.Frames, c.Share, c.MajorityToken)
		}
		if os.Getenv("TOKENS_TABLE") != "" {
			printClassTokenTable(tokens, classes)
		}
	}
}

// studyRun reads a run directory's config and data for a measurement, and returns a
// loader of its VQ-VAE checkpoints by file name.
func studyRun(t *testing.T, dir string) (Config, *data, func(file string) *vqvae.Model) {
	t.Helper()
	cfg, err := readRunConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	backend, _, err := hmmgraph.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	return cfg, d, func(file string) *vqvae.Model {
		t.Helper()
		m, err := vqvae.Load(backend, filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// printClassTokenTable prints, for every class, the share of its frames read as
// each token (rows sum to 1): the emission rows a map of that class's places
// would have to learn.
func printClassTokenTable(tokens, classes []int) {
	nt, nc := 0, 0
	for i := range tokens {
		nt = max(nt, tokens[i]+1)
		nc = max(nc, classes[i]+1)
	}
	counts := make([][]float64, nc)
	for c := range counts {
		counts[c] = make([]float64, nt)
	}
	for i := range tokens {
		counts[classes[i]][tokens[i]]++
	}
	fmt.Printf("  class \\ token")
	for k := range nt {
		fmt.Printf(" %5d", k)
	}
	fmt.Println()
	for c, row := range counts {
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		fmt.Printf("  %13d", c)
		for _, v := range row {
			fmt.Printf(" %5.2f", v/max(sum, 1))
		}
		fmt.Println()
	}
}
