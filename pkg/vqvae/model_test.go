package vqvae

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// tinyConfig is a small, fast model on 8×8 images.
func tinyConfig(k int) Config {
	c := DefaultConfig(k)
	c.Side, c.F, c.D = 8, 4, 4
	return c
}

// tinyImages returns n 8×8 images: one of four bar patterns (a "class") plus noise.
func tinyImages(rng *rand.Rand, n int) ([]float32, []int) {
	img := make([]float32, n*64)
	labels := make([]int, n)
	for i := range n {
		cls := rng.IntN(4)
		labels[i] = cls
		for y := range 8 {
			for x := range 8 {
				on := false
				switch cls {
				case 0:
					on = y < 3
				case 1:
					on = y > 4
				case 2:
					on = x < 3
				case 3:
					on = x > 4
				}
				v := 0.1 * rng.Float64()
				if on {
					v = 0.8 + 0.2*rng.Float64()
				}
				img[i*64+y*8+x] = float32(v)
			}
		}
	}
	return img, labels
}

// variables returns every variable value of the model's store by path.
func variables(t *testing.T, m *Model) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for v := range m.Store().IterVariables() {
		var b []byte
		if err := v.MustValue().ConstBytes(func(d []byte) { b = bytes.Clone(d) }); err != nil {
			t.Fatal(err)
		}
		out[v.Path()] = b
	}
	return out
}

// TestSaveLoadResume: 2 steps, save, load, 2 more steps == 4 uninterrupted steps,
// bit for bit (parameters, codebook, Adam state, RNG) — with k-means initialisation and
// dead-code revival, which use the Go-side and the graph RNG.
func TestSaveLoadResume(t *testing.T) {
	cfg := tinyConfig(4)
	cfg.Revive = 0.9 // revive often, so the graph RNG matters
	rng := rand.New(rand.NewPCG(21, 22))
	var batches [][]float32
	for range 4 {
		img, _ := tinyImages(rng, 16)
		batches = append(batches, img)
	}
	a, err := New(testBackend(), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	var wantMetrics []Metrics
	for _, bt := range batches {
		met, err := a.TrainStep(Batch{Images: bt})
		if err != nil {
			t.Fatal(err)
		}
		wantMetrics = append(wantMetrics, met)
	}

	b, err := New(testBackend(), cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, bt := range batches[:2] {
		if _, err := b.TrainStep(Batch{Images: bt}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "vq.ckpt")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	c, err := Load(testBackend(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i, bt := range batches[2:] {
		met, err := c.TrainStep(Batch{Images: bt})
		if err != nil {
			t.Fatal(err)
		}
		if w := wantMetrics[2+i]; met.Loss != w.Loss || met.Perplexity != w.Perplexity || met.Revived != w.Revived {
			t.Errorf("step %d after resume: loss %v ppl %v revived %d, uninterrupted %v %v %d",
				3+i, met.Loss, met.Perplexity, met.Revived, w.Loss, w.Perplexity, w.Revived)
		}
	}
	va, vc := variables(t, a), variables(t, c)
	if len(va) != len(vc) {
		t.Errorf("%d variables after resume, %d uninterrupted", len(vc), len(va))
	}
	for p, want := range va {
		if !bytes.Equal(vc[p], want) {
			t.Errorf("variable %s differs after save/load/resume", p)
		}
	}
	if len(c.History()) != 4 || c.History()[3].Loss != a.History()[3].Loss {
		t.Errorf("history after resume: %d records", len(c.History()))
	}
	revived := 0
	for _, h := range a.History() {
		revived += h.Revived
	}
	if revived == 0 {
		t.Error("no code was revived: the test does not exercise the graph RNG")
	}
}

// TestLoadErrors: damaged files give errors naming the file and the problem.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	m, err := New(testBackend(), tinyConfig(3), 1)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.ckpt")
	if err := m.Save(good); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("Save left temporary files: %v", entries)
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)-10] ^= 0xff
	version := bytes.Clone(raw)
	version[len(checkpointMagic)] = 99
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"notvq", []byte("hello world, not a checkpoint"), "bad magic"},
		{"header", raw[:len(checkpointMagic)+5], "truncated header"},
		{"truncated", raw[:len(raw)-100], "truncated"},
		{"flipped", flipped, "checksum mismatch"},
		{"version", version, "unsupported checkpoint version"},
		// Forged payloads with a valid checksum.
		{"nan", forge(t, raw, func(v *savedVar) bool {
			if !strings.HasSuffix(v.Path, "/embeddings") {
				return false
			}
			binary.LittleEndian.PutUint32(v.Data[4:], math.Float32bits(float32(math.NaN())))
			return true
		}), "element 1 is not finite"},
		{"dtype", forge(t, raw, func(v *savedVar) bool { v.DType = 999; return true }), "unknown dtype 999"},
		{"dims", forge(t, raw, func(v *savedVar) bool { v.Dims = []int{-1, 1 << 40}; return true }), "invalid dims"},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name+".ckpt")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(testBackend(), p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one naming %s and %q", tc.name, err, p, tc.want)
		}
	}
	if _, err := Load(testBackend(), filepath.Join(dir, "missing.ckpt")); err == nil {
		t.Error("missing file: no error")
	}
}

// forge decodes a checkpoint, applies change to its variables (the first for which it
// returns true) and frames the payload again with a valid checksum.
func forge(t *testing.T, raw []byte, change func(*savedVar) bool) []byte {
	t.Helper()
	p, err := decodeCheckpoint(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Vars {
		if change(&p.Vars[i]) {
			break
		}
	}
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(p); err != nil {
		t.Fatal(err)
	}
	return append(checkpointHeader(payload.Bytes()), payload.Bytes()...)
}

// TestBadInputs: wrong sizes and labels give errors, not panics.
func TestBadInputs(t *testing.T) {
	cfg := tinyConfig(3)
	cfg.Classify, cfg.NumClasses = true, 4
	m, err := New(testBackend(), cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	img, labels := tinyImages(rand.New(rand.NewPCG(1, 1)), 8)
	for _, tc := range []struct {
		name string
		b    Batch
		want string
	}{
		{"ragged", Batch{Images: img[:100], Labels: labels}, "multiple of 64"},
		{"empty", Batch{}, "multiple of 64"},
		{"labels", Batch{Images: img, Labels: labels[:3]}, "needs 8 labels"},
		{"range", Batch{Images: img, Labels: []int{0, 1, 2, 3, 4, 0, 0, 0}}, "outside [0,4)"},
	} {
		if _, err := m.TrainStep(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := m.Encode(img[:65]); err == nil {
		t.Error("Encode of a ragged buffer: no error")
	}
	bad := DefaultConfig(1)
	if _, err := New(testBackend(), bad, 1); err == nil || !strings.Contains(err.Error(), "K=1") {
		t.Errorf("New with K=1: %v", err)
	}
	if _, err := New(nil, DefaultConfig(4), 1); err == nil {
		t.Error("New with nil backend: no error")
	}
}

// TestTrainingLearns: 200 steps on the 4-pattern data lower the reconstruction
// error a lot, and inference (Encode, Reconstruct) reflects the
// trained weights (the go backend would bake stale weights into cached graphs
// outside training mode).
func TestTrainingLearns(t *testing.T) {
	m, err := New(testBackend(), tinyConfig(4), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetLearningRate(3e-3); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 24))
	test, _ := tinyImages(rng, 300) // more than one inference chunk
	recErr := func() float64 {
		r, tok, err := m.Reconstruct(test)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != 300 || len(r) != len(test) {
			t.Fatalf("Reconstruct returned %d tokens, %d values", len(tok), len(r))
		}
		s := 0.0
		for i := range r {
			d := float64(r[i] - test[i])
			s += d * d
		}
		return s / float64(len(r))
	}
	if _, err := m.TrainStep(Batch{Images: test[:32*64]}); err != nil {
		t.Fatal(err)
	}
	before := recErr()
	for range 199 {
		img, _ := tinyImages(rng, 32)
		if _, err := m.TrainStep(Batch{Images: img}); err != nil {
			t.Fatal(err)
		}
	}
	after := recErr()
	if !(after < 0.6*before) {
		t.Errorf("reconstruction MSE %g → %g after 200 steps, want a 40%% drop", before, after)
	}
	tok, logRho, err := m.Encode(test)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tok {
		if tok[i] < 0 || tok[i] >= 4 {
			t.Fatalf("token %d out of range", tok[i])
		}
		s, best := 0.0, 0
		for k, v := range logRho[i] {
			s += math.Exp(float64(v))
			if v > logRho[i][best] {
				best = k
			}
		}
		if math.Abs(s-1) > 1e-4 || best != tok[i] {
			t.Fatalf("image %d: Σρ = %g, argmax ρ = %d, token %d", i, s, best, tok[i])
		}
	}
	h := m.History()
	if len(h) != 200 || h[199].Step != 200 {
		t.Errorf("history has %d records", len(h))
	}
}

// TestInitCodebookFromData: after k-means initialisation every code is a centre of
// encoder outputs (so all codes are used on the initialisation batch).
func TestInitCodebookFromData(t *testing.T) {
	m, err := New(testBackend(), tinyConfig(4), 5)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := tinyImages(rand.New(rand.NewPCG(25, 26)), 64)
	if m.Initialised() {
		t.Fatal("model initialised from data before InitFromData")
	}
	if err := m.InitFromData(img); err != nil {
		t.Fatal(err)
	}
	tok, _, err := m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, k := range tok {
		used[k] = true
	}
	if len(used) != 4 {
		t.Errorf("%d of 4 codes used after k-means initialisation", len(used))
	}
	_, n, s := CodebookVars(m.Scope())
	sizes := tensors.MustCopyFlatData[float32](n.MustValue())
	total := float32(0)
	for _, v := range sizes {
		total += v
	}
	if total != 64 {
		t.Errorf("initial EMA sizes sum to %g, want 64 (the batch)", total)
	}
	_ = s
}

// TestClassifyOption: the reference's supervised head trains and reports accuracy.
func TestClassifyOption(t *testing.T) {
	cfg := tinyConfig(4)
	cfg.Classify, cfg.NumClasses = true, 4
	m, err := New(testBackend(), cfg, 9)
	if err != nil {
		t.Fatal(err)
	}
	_ = m.SetLearningRate(3e-3)
	rng := rand.New(rand.NewPCG(27, 28))
	var first, last Metrics
	for i := range 40 {
		img, lab := tinyImages(rng, 32)
		met, err := m.TrainStep(Batch{Images: img, Labels: lab})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = met
		}
		last = met
	}
	if !(last.CE < first.CE) || last.Accuracy < 0.5 {
		t.Errorf("classification CE %g → %g, final accuracy %g", first.CE, last.CE, last.Accuracy)
	}
}

// TestWarmupResume: a warm-up stopped mid-epoch (MaxSteps), saved and reloaded
// continues with the same batches: the result equals an uninterrupted run.
func TestWarmupResume(t *testing.T) {
	img, lab := tinyImages(rand.New(rand.NewPCG(29, 30)), 80)
	frames := SliceFrames{Pixels: img, Labels: lab, Side: 8}
	wc := WarmupConfig{Epochs: 3, Batch: 16, LR: 1e-3}

	a, err := New(testBackend(), tinyConfig(4), 11)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := Warmup(a, frames, wc, &log); err != nil {
		t.Fatal(err)
	}
	if len(a.History()) != 15 {
		t.Errorf("history: %d steps, want 3 epochs × 5 batches", len(a.History()))
	}
	if !strings.Contains(log.String(), "/s") || !strings.Contains(log.String(), "rec ") {
		t.Errorf("progress output lacks rate or losses:\n%s", log.String())
	}

	path := filepath.Join(t.TempDir(), "warm.ckpt")
	b, err := New(testBackend(), tinyConfig(4), 11)
	if err != nil {
		t.Fatal(err)
	}
	first := wc
	first.MaxSteps, first.Checkpoint = 7, path
	if err := Warmup(b, frames, first, nil); err != nil {
		t.Fatal(err)
	}
	if cur := b.WarmupCursor(); cur.Epoch != 1 || cur.Batch != 2 {
		t.Errorf("cursor after 7 steps: %+v, want epoch 1 batch 2", cur)
	}
	c, err := Load(testBackend(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Warmup(c, frames, wc, nil); err != nil {
		t.Fatal(err)
	}
	va, vc := variables(t, a), variables(t, c)
	for p, want := range va {
		if !bytes.Equal(vc[p], want) {
			t.Errorf("variable %s differs between resumed and uninterrupted warm-up", p)
		}
	}
	if len(c.History()) != 15 {
		t.Errorf("resumed history: %d steps", len(c.History()))
	}
	// A finished run does nothing more; a different batch size is refused.
	if err := Warmup(c, frames, wc, nil); err != nil || len(c.History()) != 15 {
		t.Errorf("re-running a finished warm-up: err %v, %d steps", err, len(c.History()))
	}
	other := wc
	other.Batch = 8
	if err := Warmup(c, frames, other, nil); err == nil || !strings.Contains(err.Error(), "batch 16") {
		t.Errorf("changing the batch size mid-run: %v", err)
	}
	fresh, _ := New(testBackend(), tinyConfig(4), 1)
	if err := Warmup(fresh, frames, WarmupConfig{Epochs: 1, Batch: 100, LR: 1e-3}, nil); err == nil ||
		!strings.Contains(err.Error(), "fewer than one batch") {
		t.Errorf("batch larger than the data: %v", err)
	}
}

// TestReviveCodes: after k-means initialisation, two codes are moved far from every
// latent (dead); ReviveCodes re-seeds exactly those two at latents of the images, after
// which the encoder uses them again and the live codes are untouched.
func TestReviveCodes(t *testing.T) {
	m, err := New(testBackend(), tinyConfig(4), 5)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := tinyImages(rand.New(rand.NewPCG(25, 26)), 64)
	if err := m.InitFromData(img); err != nil {
		t.Fatal(err)
	}
	cb := m.Codebook()
	e, _, _ := CodebookVars(m.Scope())
	flat := make([]float32, 0, 4*m.cfg.D)
	for c, row := range cb {
		for _, x := range row {
			if c >= 2 {
				x = 1e3 // dead: nearest to nothing
			}
			flat = append(flat, x)
		}
	}
	if err := e.SetValue(tensors.FromFlatDataAndDimensions(flat, 4, m.cfg.D)); err != nil {
		t.Fatal(err)
	}
	n, err := m.ReviveCodes(img, 0.1, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("revived %d codes, want 2", n)
	}
	after := m.Codebook()
	zs, err := m.Latents(img)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 4 {
		if c < 2 {
			if !slices.Equal(after[c], cb[c]) {
				t.Errorf("live code %d changed", c)
			}
			continue
		}
		found := false
		for _, z := range zs {
			found = found || slices.Equal(z, after[c])
		}
		if !found {
			t.Errorf("revived code %d = %v is not a latent of the images", c, after[c])
		}
	}
	tok, _, err := m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, k := range tok {
		used[k] = true
	}
	if !used[2] || !used[3] {
		t.Errorf("codes used after revival: %v, want 2 and 3 among them", used)
	}
	if n, err := m.ReviveCodes(img, 0.01, rand.New(rand.NewPCG(1, 2))); err != nil || n != 0 {
		t.Errorf("second revival: %d codes, %v; want none", n, err)
	}
}

// TestTokenMap: with SetTokens, Encode gives each image its code's token and ρ of a
// token is the sum of its codes' ρ (against the codes read without the map, summed
// here in float64); Reconstruct's tokens follow; Save and Load keep the map; bad maps
// are errors that leave the model as it was.
func TestTokenMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	img, _ := tinyImages(rng, 64)
	m, err := New(testBackend(), tinyConfig(4), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TrainStep(Batch{Images: img}); err != nil {
		t.Fatal(err)
	}
	codes, codeRho, err := m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumTokens() != 4 || m.Tokens() != nil {
		t.Fatalf("without a map: %d tokens, map %v", m.NumTokens(), m.Tokens())
	}
	tokenOf := []int{1, 0, 1, 2}
	for _, bad := range [][]int{{0, 1, 2}, {0, -1, 1, 2}, {0, 0, 2, 2}, {0, 1, 2, 1 << 40}} {
		if err := m.SetTokens(bad); err == nil {
			t.Errorf("SetTokens(%v): no error", bad)
		}
	}
	if m.Tokens() != nil {
		t.Fatalf("a refused map was kept: %v", m.Tokens())
	}
	if err := m.SetTokens(tokenOf); err != nil {
		t.Fatal(err)
	}
	check := func(what string, m *Model) {
		t.Helper()
		tokens, rho, err := m.Encode(img)
		if err != nil {
			t.Fatal(err)
		}
		_, rec, err := m.Reconstruct(img)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumTokens() != 3 {
			t.Errorf("%s: %d tokens, want 3", what, m.NumTokens())
		}
		for i, c := range codes {
			if tokens[i] != tokenOf[c] || rec[i] != tokenOf[c] {
				t.Fatalf("%s: image %d of code %d: Encode token %d, Reconstruct token %d, want %d", what, i, c, tokens[i], rec[i], tokenOf[c])
			}
			want := make([]float64, 3)
			for k, v := range codeRho[i] {
				want[tokenOf[k]] += math.Exp(float64(v))
			}
			if len(rho[i]) != 3 {
				t.Fatalf("%s: image %d: %d values of log ρ, want 3", what, i, len(rho[i]))
			}
			for g, v := range rho[i] {
				if math.Abs(float64(v)-math.Log(want[g])) > 1e-5 {
					t.Fatalf("%s: image %d token %d: log ρ %v, want %v", what, i, g, v, math.Log(want[g]))
				}
			}
		}
	}
	check("set", m)
	path := filepath.Join(t.TempDir(), "vq.ckpt")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	l, err := Load(testBackend(), path)
	if err != nil {
		t.Fatal(err)
	}
	check("loaded", l)
	if err := l.SetTokens(nil); err != nil || l.NumTokens() != 4 {
		t.Errorf("map removed: %v, %d tokens", err, l.NumTokens())
	}
}
