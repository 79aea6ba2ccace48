package figures

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// checkPNG decodes data and checks that it is a PNG of the figure's natural size
// at DPI (2 pixels per point).
func checkPNG(t *testing.T, name string, data []byte, w, h vg.Length) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", name, err)
	}
	wantW := int(w/vg.Inch*DPI + 0.5)
	wantH := int(h/vg.Inch*DPI + 0.5)
	if b := img.Bounds(); b.Dx() != wantW || b.Dy() != wantH {
		t.Errorf("%s: PNG is %d×%d, want %d×%d", name, b.Dx(), b.Dy(), wantW, wantH)
	}
	// Something was drawn: not every pixel is white.
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != 0xffff || g != 0xffff || bl != 0xffff {
				return
			}
		}
	}
	t.Errorf("%s: blank image", name)
}

// perfectReadout builds a Readout of env from an untrained model whose clone
// (g mod clones) of the place's class decodes every visit of place g: with
// clones ≥ the number of places, a perfect, place-specific decoding.
func perfectReadout(t testing.TB, env *gridworld.Env, clones, steps int) (*Readout, *chmm.Model) {
	t.Helper()
	classes := env.ClassesUsed()
	tok := map[int]int{}
	for k, c := range classes {
		tok[c] = k
	}
	m := chmm.New(chmm.UniformClones(len(classes), clones), env.NumActions(), rand.New(rand.NewPCG(1, 1)))
	ep := env.Walk(gridworld.NewRand(7), steps)
	states := make([]int, len(ep.Places))
	for i, g := range ep.Places {
		states[i] = m.FirstState(tok[env.Class[g]]) + g%clones
	}
	r, err := NewReadout(env, m, ep.Places, states, ReadoutOptions{Cutoff: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// TestReadoutPerfectDecode: with a place-specific decoding every state maps to
// its place, the token colours are the classes, and the recovered graph, read at
// place level, is exactly the true map.
func TestReadoutPerfectDecode(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	// 16 clones per class: state FirstState(class) + g is unique to place g.
	r, m := perfectReadout(t, env, 16, 3000)
	if !reflect.DeepEqual(r.TokenClass, env.ClassesUsed()) {
		t.Errorf("token classes %v, want %v", r.TokenClass, env.ClassesUsed())
	}
	proj := map[[2]int]bool{}
	for _, e := range r.Graph.Edges {
		a, b := r.StatePlace[e[0]], r.StatePlace[e[1]]
		if a == b {
			t.Errorf("edge %v joins two states of place %d", e, a)
		}
		proj[[2]int{min(a, b), max(a, b)}] = true
	}
	for _, e := range env.Edges() {
		if !proj[e] {
			t.Errorf("true edge %v missing from the recovered graph", e)
		}
	}
	if len(proj) != len(env.Edges()) {
		t.Errorf("recovered %d place edges, true map has %d", len(proj), len(env.Edges()))
	}
	for _, s := range r.Graph.Nodes {
		g := r.StatePlace[s]
		if m.Token(s) != r.tokenOfClass(env.Class[g]) {
			t.Errorf("state %d (token %d) assigned to place %d of class %d", s, m.Token(s), g, env.Class[g])
		}
	}
	// The transition rule over the same nodes gives a graph too (untrained
	// model: near-uniform rows, so every pair of distinct visited states of
	// different tokens is above a tiny threshold).
	rt, err := NewReadout(env, m, []int{0, 1}, []int{m.FirstState(0), m.FirstState(1)}, ReadoutOptions{Edges: EdgesTransitions, Threshold: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Graph.Edges) != 1 {
		t.Errorf("transition graph over 2 states: %v", rt.Graph.Edges)
	}
	if _, err := NewReadout(env, m, []int{0}, []int{0}, ReadoutOptions{Edges: "magic"}); err == nil {
		t.Error("unknown edge rule: no error")
	}
	if _, err := NewReadout(env, m, []int{99}, []int{0}, ReadoutOptions{}); err == nil {
		t.Error("place out of range: no error")
	}
}

// tokenOfClass is the token whose colour class is c (test helper).
func (r *Readout) tokenOfClass(c int) int {
	for k, cc := range r.TokenClass {
		if cc == c {
			return k
		}
	}
	return -1
}

func TestMajorityClass(t *testing.T) {
	env, err := gridworld.NewGrid("line", 1, 3, []int{7, 7, 9})
	if err != nil {
		t.Fatal(err)
	}
	stateTokens := []int{0, 0, 1, -1}
	// Token 0 (states 0, 1) is at places 0, 1 (class 7) twice and place 2 (class 9)
	// once → 7; token 1 at place 2 once and place 0 once → tie, lowest class 7;
	// token 2 never → −1.
	places := []int{0, 1, 2, 2, 0}
	states := []int{0, 1, 0, 2, 2}
	got := MajorityClass(env, stateTokens, 3, places, states)
	if want := []int{7, 7, -1}; !reflect.DeepEqual(got, want) {
		t.Errorf("MajorityClass = %v, want %v", got, want)
	}
}

func TestClassColorsDistinct(t *testing.T) {
	seen := map[color.RGBA]int{}
	for c := range 200 {
		col := ClassColor(c)
		if prev, ok := seen[col]; ok {
			t.Fatalf("classes %d and %d share colour %v", prev, c, col)
		}
		seen[col] = c
		if col == wallColor || col == noneColor {
			t.Errorf("class %d has the wall/none colour", c)
		}
	}
	// The palette classes (MNIST digits among them) are far apart in RGB.
	dist := func(a, b color.RGBA) float64 {
		return math.Sqrt(sq(float64(a.R)-float64(b.R)) + sq(float64(a.G)-float64(b.G)) + sq(float64(a.B)-float64(b.B)))
	}
	for i := range basePalette {
		for j := i + 1; j < len(basePalette); j++ {
			// The ten digit classes are far apart; the pastel tail of the palette
			// less so (labels tell them apart).
			limit := 40.0
			if j < 10 {
				limit = 80
			}
			if d := dist(ClassColor(i), ClassColor(j)); d < limit {
				t.Errorf("classes %d and %d too close: RGB distance %.0f < %.0f", i, j, d, limit)
			}
		}
		if d := dist(ClassColor(i), wallColor); d < 60 {
			t.Errorf("class %d too close to the wall grey: %.0f", i, d)
		}
	}
	if ClassColor(-1) != noneColor {
		t.Error("no class is not light grey")
	}
	// Labels are legible: black on light, white on dark.
	if textOn(color.RGBA{0xff, 0xe1, 0x19, 0xff}) != color.Black || textOn(color.RGBA{0, 0, 0x75, 0xff}) != color.White {
		t.Error("textOn picks the wrong contrast")
	}
}

func sq(x float64) float64 { return x * x }

// TestFiguresRender draws every figure function on small inputs and checks PNGs
// of the natural size, SVG and PDF output, and atomic saving.
func TestFiguresRender(t *testing.T) {
	aliased, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	three, err := gridworld.Named("three_rooms")
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := perfectReadout(t, aliased, 16, 2000)
	rg, _ := perfectReadout(t, three, 16, 2000)
	side := 8
	ra.ImageSide = side
	for k := range 4 {
		img := make([]float32, side*side)
		for i := range img {
			img[i] = float32((i+k)%side) / float32(side)
		}
		ra.TokenImages = append(ra.TokenImages, img)
	}
	hist := syntheticHistory()
	reports := []*evaluate.Report{syntheticReport(1, 0.4), syntheticReport(2, 0.6)}
	in := make([]float32, 3*side*side)
	rec := make([]float32, len(in))

	type build func() (*Figure, error)
	for _, tc := range []struct {
		name string
		fn   build
	}{
		{"layouts", func() (*Figure, error) { return Layouts(aliased, three) }},
		{"map comparison", func() (*Figure, error) { return MapComparison(ra, rg) }},
		{"image maps", func() (*Figure, error) { return ImageMaps(ra, rg) }},
		{"reconstructions", func() (*Figure, error) { return ReconstructionFigure(in, rec, []int{0, 1, 2}, side, "recon", nil) }},
		{"training dynamics", func() (*Figure, error) { return TrainingDynamics(hist) }},
		{"threshold sweep", func() (*Figure, error) { return ThresholdSweep(reports...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fig, err := tc.fn()
			if err != nil {
				t.Fatal(err)
			}
			data, err := fig.PNG()
			if err != nil {
				t.Fatal(err)
			}
			checkPNG(t, tc.name, data, fig.Width, fig.Height)
		})
	}

	// Formats by extension, atomically; an unknown extension is refused.
	fig, err := Layouts(aliased)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for ext, magic := range map[string]string{".png": "\x89PNG", ".svg": "<?xml", ".pdf": "%PDF"} {
		path := filepath.Join(dir, "fig"+ext)
		if err := fig.Save(path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), magic) {
			t.Errorf("%s starts with %q, want %q", ext, data[:min(len(data), 8)], magic)
		}
	}
	if err := fig.Save(filepath.Join(dir, "fig.bmp")); err == nil || !strings.Contains(err.Error(), ".bmp") {
		t.Errorf("unknown format: error %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("directory holds %d files, want the 3 figures (no temporary leftovers)", len(entries))
	}
	// Bad sizes are errors, not panics.
	for _, sz := range [][2]vg.Length{{0, 10}, {10, -1}, {vg.Length(math.Inf(1)), 10}, {vg.Length(math.NaN()), 10}} {
		if _, err := PNG(fig, sz[0], sz[1]); err == nil {
			t.Errorf("size %v: no error", sz)
		}
	}
}

// TestFigureErrors: invalid input gives errors naming the problem.
func TestFigureErrors(t *testing.T) {
	env, _ := gridworld.Named("aliased")
	bad := &Readout{Env: env, StateTokens: []int{0, -1}, StatePlace: []int{0}, Visits: []int{1, 0}}
	for _, tc := range []struct {
		name string
		fn   func() error
		want string
	}{
		{"no env", func() error { _, err := Layouts(); return err }, "no environment"},
		{"nil env", func() error { _, err := Layouts(nil); return err }, "nil"},
		{"no readout", func() error { _, err := MapComparison(); return err }, "no readout"},
		{"bad readout", func() error { _, err := ImageMaps(bad); return err }, "assignments"},
		{"empty history", func() error { _, err := TrainingDynamics(nil); return err }, "empty history"},
		{"no report", func() error { _, err := ThresholdSweep(); return err }, "no report"},
		{"no sweep", func() error { _, err := ThresholdSweep(&evaluate.Report{Env: "x"}); return err }, "projected_map"},
		{"zero threshold", func() error {
			r := syntheticReport(1, 0.5)
			r.ProjectedMap[0].Threshold = 0
			_, err := ThresholdSweep(r)
			return err
		}, "positive"},
	} {
		err := tc.fn()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func syntheticHistory() []Record {
	var h []Record
	for i := range 60 {
		h = append(h, Record{Step: i + 1, Phase: "warmup", Rec: 0.1 - 0.0005*float64(i), Commit: 0.01, Perplexity: 3.5})
	}
	for i := range 30 {
		r := Record{Step: i + 1, Phase: "joint", Rec: 0.06, Commit: 0.03, NLLPerStep: 1.5 - 0.02*float64(i), Div: 0.1, Lambda: float64(i) / 30, Perplexity: 3.8}
		if i == 12 {
			r.Event = "collapse: smoothed perplexity 2.9 < 0.75 × best"
		}
		h = append(h, r)
	}
	for i := range 40 {
		h = append(h, Record{Step: i + 1, Phase: "final", NLLPerStep: 1 / float64(i+1)})
	}
	return h
}

func syntheticReport(seed uint64, p float64) *evaluate.Report {
	r := &evaluate.Report{Env: "aliased", Seed: seed}
	for i, eta := range []float64{0.01, 0.05, 0.1, 0.2, 0.3} {
		prec := p + 0.1*float64(i)
		r.ProjectedMap = append(r.ProjectedMap, evaluate.ThresholdScore{Threshold: eta,
			EdgeScore: evaluate.EdgeScore{Precision: prec, Recall: 1, F1: 2 * prec / (prec + 1)}})
	}
	r.ViterbiMap = evaluate.CutoffScore{CutoffFraction: 0.002, EdgeScore: evaluate.EdgeScore{Precision: 1, Recall: 1, F1: 1}}
	return r
}

func TestDecodeHistory(t *testing.T) {
	good := `{"step":1,"phase":"warmup","rec":0.1,"commit":0.01,"nll_per_step":0,"div":0,"lambda":0,"perplexity":3,"seconds":0.2}

{"step":1,"phase":"joint","rec":0.05,"commit":0.02,"nll_per_step":1.7,"div":0.05,"lambda":0.1,"perplexity":3.6,"seconds":1.4,"event":"collapse"}
`
	h, err := DecodeHistory(strings.NewReader(good), "h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Step: 1, Phase: "warmup", Rec: 0.1, Commit: 0.01, Perplexity: 3, Seconds: 0.2},
		{Step: 1, Phase: "joint", Rec: 0.05, Commit: 0.02, NLLPerStep: 1.7, Div: 0.05, Lambda: 0.1, Perplexity: 3.6, Seconds: 1.4, Event: "collapse"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("DecodeHistory = %+v, want %+v", h, want)
	}
	for _, tc := range []struct{ text, want string }{
		{"{\"step\":1,\"phase\":\"warmup\"}\n{\"step\":2,", "h.jsonl:2:"},
		{"{\"step\":1}", "h.jsonl:1: phase"},
		{"{\"step\":\"x\",\"phase\":\"a\"}", "h.jsonl:1:"},
	} {
		if _, err := DecodeHistory(strings.NewReader(tc.text), "h.jsonl"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, err := ReadHistory(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Error("missing file: no error")
	}
}

// fakeCodec is a VQ-VAE stand-in: an image's latent is its mean and its first
// pixel; reconstructions are constant images of value 10+token.
type fakeCodec struct {
	side   int
	book   [][]float32
	tokens []int
}

func (f fakeCodec) Tokens() []int { return f.tokens }

func (f fakeCodec) Latents(images []float32) ([][]float32, error) {
	p := f.side * f.side
	var z [][]float32
	for i := 0; i < len(images); i += p {
		var s float32
		for _, v := range images[i : i+p] {
			s += v
		}
		z = append(z, []float32{s / float32(p), images[i]})
	}
	return z, nil
}

func (f fakeCodec) Codebook() [][]float32 { return f.book }

func (f fakeCodec) Reconstruct(images []float32) ([]float32, []int, error) {
	z, _ := f.Latents(images)
	p := f.side * f.side
	out := make([]float32, len(images))
	tok := make([]int, len(z))
	for i, zi := range z {
		best := math.Inf(1)
		for k, e := range f.book {
			if d := dist2(zi, e); d < best {
				best, tok[i] = d, k
			}
		}
		for j := range p {
			out[i*p+j] = 10 + float32(tok[i])
		}
	}
	return out, tok, nil
}

func TestTokenImages(t *testing.T) {
	const side = 2
	codec := fakeCodec{side: side, book: [][]float32{{0, 0}, {1, 1}, {5, 5}}}
	img := func(v, first float32) []float32 {
		x := []float32{first, v, v, v}
		return x
	}
	// Latents: (0.25, 0.1)→code 0 at d²≈0.07; (0.1, 0.1)→code 0 at 0.02 (nearest);
	// (0.9, 0.9)→code 1. Code 2 gets nothing.
	var images []float32
	images = append(images, img(0.3, 0.1)...)
	images = append(images, img(0.1, 0.1)...)
	images = append(images, img(0.9, 0.9)...)
	decoded, nearest, err := TokenImages(codec, images, side)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(nearest[0], img(0.1, 0.1)) || !reflect.DeepEqual(nearest[1], img(0.9, 0.9)) || nearest[2] != nil {
		t.Errorf("nearest images %v", nearest)
	}
	if !reflect.DeepEqual(decoded[0], []float32{10, 10, 10, 10}) || !reflect.DeepEqual(decoded[1], []float32{11, 11, 11, 11}) || decoded[2] != nil {
		t.Errorf("decoded images %v", decoded)
	}
	if _, _, err := TokenImages(codec, images[:5], side); err == nil {
		t.Error("ragged images: no error")
	}
	// Codes 0 and 1 are token 0, code 2 token 1: token 0's image is the one nearest
	// to its own code, (0.95, 0.95) at d² 0.005 from code 1, decoded through code 1.
	codec.tokens = []int{0, 0, 1}
	images = append(images[:2*side*side], img(0.95, 0.95)...)
	decoded, nearest, err = TokenImages(codec, images, side)
	if err != nil {
		t.Fatal(err)
	}
	if len(nearest) != 2 || !reflect.DeepEqual(nearest[0], img(0.95, 0.95)) || nearest[1] != nil {
		t.Errorf("nearest images with a token map %v", nearest)
	}
	if len(decoded) != 2 || !reflect.DeepEqual(decoded[0], []float32{11, 11, 11, 11}) || decoded[1] != nil {
		t.Errorf("decoded images with a token map %v", decoded)
	}
	codec.tokens = []int{0, 1}
	if _, _, err := TokenImages(codec, images, side); err == nil {
		t.Error("a token map of 2 codes for 3: no error")
	}
}

// TestPNGHelper renders a bare panel through the package function at a chosen size.
func TestPNGHelper(t *testing.T) {
	env, _ := gridworld.Named("corridors")
	data, err := PNG(LayoutPanel{Env: env}, 100, 80)
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, "layout panel", data, 100, 80)
	if _, err := SVG(TrueGraphPanel{Env: env}, 100, 80); err != nil {
		t.Fatal(err)
	}
	img, err := Image(LayoutPanel{Env: env}, 50, 50)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 100 || b.Dy() != 100 {
		t.Errorf("image %v, want 100×100", b)
	}
	// Each class of corridors (0-6) and the walls fill cell interiors with their
	// exact colour; a class corridors lacks (9) appears nowhere.
	count := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	for c := range 7 {
		if count[ClassColor(c)] < 20 {
			t.Errorf("class %d colour covers %d pixels", c, count[ClassColor(c)])
		}
	}
	if count[wallColor] < 20 {
		t.Errorf("wall grey covers %d pixels", count[wallColor])
	}
	if count[ClassColor(9)] != 0 {
		t.Errorf("class 9's colour appears in corridors (%d pixels)", count[ClassColor(9)])
	}
}
