package vqvae

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// TestSaveWeights: a trained model with a token map and a variable of another scope
// saved with SaveWeights holds exactly the network's parameters and the codebook
// (named one by one here, from the architecture), is smaller than its full checkpoint,
// and loads into a model that encodes and reconstructs bit for bit as the original.
func TestSaveWeights(t *testing.T) {
	cfg := tinyConfig(4)
	rng := rand.New(rand.NewPCG(5, 6))
	m, err := New(testBackend(), cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		img, _ := tinyImages(rng, 16)
		if _, err := m.TrainStep(Batch{Images: img}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SetTokens([]int{0, 1, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store().RootScope().At("hmm").CreateVariable("theta", tensors.FromValue([]float32{1, 2})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full, weights := filepath.Join(dir, "full.ckpt"), filepath.Join(dir, "weights.ckpt")
	if err := m.Save(full); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveWeights(weights); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeCheckpoint(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range p.Vars {
		got = append(got, v.Path)
	}
	slices.Sort(got)
	// The default (conv) architecture's layers, each with w and b, and the codebook.
	var want []string
	for _, l := range []string{"encoder/conv1", "encoder/conv2", "encoder/conv3", "encoder/dense",
		"decoder/dense", "decoder/conv1", "decoder/up1", "decoder/up2"} {
		want = append(want, "/vqvae/"+l+"/w", "/vqvae/"+l+"/b")
	}
	want = append(want, "/vqvae/codebook/embeddings", "/vqvae/codebook/size", "/vqvae/codebook/sum")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("SaveWeights wrote variables\n  %s\nwant\n  %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	if len(p.History) != 0 || !slices.Equal(p.Tokens, []int{0, 1, 1, 2}) {
		t.Errorf("weights file: %d history records, tokens %v", len(p.History), p.Tokens)
	}
	if fi, err := os.Stat(full); err != nil || int64(len(raw))*2 > fi.Size() {
		t.Errorf("weights file %d bytes, full checkpoint %v (%v): want at most half", len(raw), fi.Size(), err)
	}

	loaded, err := Load(testBackend(), weights)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := tinyImages(rng, 12)
	wantTok, wantRho, err := m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	gotTok, gotRho, err := loaded.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotTok, wantTok) || len(gotRho) != len(wantRho) {
		t.Fatalf("loaded weights encode %v, the model %v", gotTok, wantTok)
	}
	for i := range wantRho {
		if !slices.Equal(gotRho[i], wantRho[i]) {
			t.Fatalf("frame %d: log ρ %v, the model %v", i, gotRho[i], wantRho[i])
		}
	}
	wantRec, _, err := m.Reconstruct(img)
	if err != nil {
		t.Fatal(err)
	}
	gotRec, _, err := loaded.Reconstruct(img)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotRec, wantRec) {
		t.Error("loaded weights reconstruct differently")
	}
}
