package vqvae

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/figures"
)

// TokenStats summarises how tokens relate to classes on labelled images.
type tokenStats struct {
	Purity          float64 // fraction of images whose token's majority class is their class
	HTokenGivenCls  float64 // H(token | class), bits
	HClsGivenToken  float64 // H(class | token), bits
	Perplexity      float64 // exp H(token)
	ActiveTokens    int
	MajorityByToken map[int]int
}

func computeTokenStats(tokens, classes []int) tokenStats {
	joint := map[[2]int]float64{}
	tokN, clsN := map[int]float64{}, map[int]float64{}
	n := float64(len(tokens))
	for i, k := range tokens {
		joint[[2]int{k, classes[i]}]++
		tokN[k]++
		clsN[classes[i]]++
	}
	st := tokenStats{MajorityByToken: map[int]int{}, ActiveTokens: len(tokN)}
	for k := range tokN {
		best, bestN := -1, -1.0
		for c := range clsN {
			if v := joint[[2]int{k, c}]; v > bestN || (v == bestN && c < best) {
				best, bestN = c, v
			}
		}
		st.MajorityByToken[k] = best
		st.Purity += bestN / n
	}
	h := func(m map[int]float64) float64 {
		s := 0.0
		for _, v := range m {
			p := v / n
			s -= p * math.Log2(p)
		}
		return s
	}
	hJoint := 0.0
	for _, v := range joint {
		p := v / n
		hJoint -= p * math.Log2(p)
	}
	st.HTokenGivenCls = hJoint - h(clsN)
	st.HClsGivenToken = hJoint - h(tokN)
	st.Perplexity = math.Pow(2, h(tokN))
	return st
}

// TestMNISTQuality is the report-only quality check of the warm-up (not part of the
// default suite): set GRADCSCG_LONG=1. It warms up on MNIST classes 0–3 with K = 4 and
// on all 10 classes with K = 10 (GRADCSCG_VQ_EPOCHS epochs, default 4; batch 128,
// Adam 3e-4), then reports token purity, H(token|class), perplexity and test MSE on
// the held-out test images, and writes reconstruction figures to GRADCSCG_OUT
// (default: the system temp dir). GRADCSCG_VQ_CLASSIFY=1 adds the reference's
// supervised head for comparison.
func TestMNISTQuality(t *testing.T) {
	if os.Getenv("GRADCSCG_LONG") != "1" {
		t.Skip("set GRADCSCG_LONG=1 to run the MNIST quality check")
	}
	epochs := 4
	if v, err := strconv.Atoi(os.Getenv("GRADCSCG_VQ_EPOCHS")); err == nil && v > 0 {
		epochs = v
	}
	classify := os.Getenv("GRADCSCG_VQ_CLASSIFY") == "1"
	out := os.Getenv("GRADCSCG_OUT")
	if out == "" {
		out = os.TempDir()
	}
	train, err := dataset.Load("mnist", dataset.Train)
	if err != nil {
		t.Skipf("MNIST not available: %v", err)
	}
	test, err := dataset.Load("mnist", dataset.Test)
	if err != nil {
		t.Fatal(err)
	}
	trainBank, err := dataset.NewBank(train)
	if err != nil {
		t.Fatal(err)
	}
	testBank, err := dataset.NewBank(test)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name    string
		classes int
		k       int
	}{{"mnist4", 4, 4}, {"mnist10", 10, 10}} {
		t.Run(run.name, func(t *testing.T) {
			var trIdx, teIdx []int
			for i := range trainBank.Len() {
				if trainBank.Label(i) < run.classes {
					trIdx = append(trIdx, i)
				}
			}
			for i := range testBank.Len() {
				if testBank.Label(i) < run.classes {
					teIdx = append(teIdx, i)
				}
			}
			cfg := DefaultConfig(run.k)
			cfg.Classify = classify
			if v, err := strconv.ParseFloat(os.Getenv("GRADCSCG_VQ_REVIVE"), 64); err == nil {
				cfg.Revive = v
			}
			m, err := New(testBackend(), cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			wc := DefaultWarmupConfig()
			wc.Epochs = epochs
			if v, err := strconv.ParseFloat(os.Getenv("GRADCSCG_VQ_LR"), 64); err == nil {
				wc.LR = v
			}
			start := time.Now()
			if err := Warmup(m, BankFrames{Bank: trainBank, Index: trIdx}, wc, testWriter{t}); err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			imgs := testBank.Floats(teIdx, nil)
			recon, tokens, err := m.Reconstruct(imgs)
			if err != nil {
				t.Fatal(err)
			}
			classes := make([]int, len(teIdx))
			for i, j := range teIdx {
				classes[i] = testBank.Label(j)
			}
			st := computeTokenStats(tokens, classes)
			mse := 0.0
			for i := range recon {
				d := float64(recon[i] - imgs[i])
				mse += d * d
			}
			mse /= float64(len(recon))
			h := m.History()
			last := h[len(h)-1]
			t.Logf("%s: %d train frames, %d epochs, %d steps in %s (%.2f ms/step); classify=%v",
				run.name, len(trIdx), epochs, len(h), elapsed.Round(time.Second), float64(elapsed.Milliseconds())/float64(len(h)), classify)
			t.Logf("%s: last train step rec %.4f commit %.4f ppl %.2f active %d", run.name, last.Rec, last.Commit, last.Perplexity, last.Active)
			t.Logf("%s test (%d images): purity %.3f  H(token|class) %.3f bits  H(class|token) %.3f bits  perplexity %.2f  active tokens %d/%d  MSE %.4f",
				run.name, len(teIdx), st.Purity, st.HTokenGivenCls, st.HClsGivenToken, st.Perplexity, st.ActiveTokens, run.k, mse)
			t.Logf("%s majority class by token: %v", run.name, st.MajorityByToken)
			// Figure: two test images of each class.
			var sel []int
			for c := range run.classes {
				cnt := 0
				for i := range teIdx {
					if classes[i] == c && cnt < 2 {
						sel = append(sel, i)
						cnt++
					}
				}
			}
			p := cfg.Pixels()
			var fin, frec []float32
			var ftok []int
			for _, i := range sel {
				fin = append(fin, imgs[i*p:(i+1)*p]...)
				frec = append(frec, recon[i*p:(i+1)*p]...)
				ftok = append(ftok, tokens[i])
			}
			suffix := ""
			if classify {
				suffix = "-classify"
			}
			path := filepath.Join(out, fmt.Sprintf("vqvae-recon-%s%s.png", run.name, suffix))
			if err := figures.WriteReconstructionsPNG(path, fin, frec, ftok, cfg.Side); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s reconstructions: %s", run.name, path)
		})
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
