package notebook

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		err       bool
	}{
		{"", SizeFull, false},
		{"full", SizeFull, false},
		{"ci", SizeCI, false},
		{" ci\n", SizeCI, false},
		{"CI", "", true},
		{"small", "", true},
	} {
		t.Setenv(SizeEnv, tc.env)
		got, err := Size()
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s=%q: Size() = %q, %v; want %q, error %v", SizeEnv, tc.env, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%s=%q: error %q does not name the value", SizeEnv, tc.env, err)
		}
	}
}

// fakeRepo makes a directory with a go.mod of module mod and moves the test into
// its subdirectory sub.
func fakeRepo(t *testing.T, mod string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+mod+"\n\ngo 1.27\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "notebooks", "deeper")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	return root
}

func TestRepoRootAndRunDir(t *testing.T) {
	root := fakeRepo(t, Module)
	got, err := RepoRoot()
	if err != nil || got != root {
		t.Fatalf("RepoRoot() = %q, %v; want %q", got, err, root)
	}
	t.Setenv(RunsEnv, "")
	for _, tc := range []struct {
		size, name, want string
		err              bool
	}{
		{"full", "nb_quickstart", filepath.Join(root, "runs", "nb_quickstart"), false},
		{"ci", "nb_quickstart", filepath.Join(root, "runs", "nb_quickstart_ci"), false},
		{"full", "a/b", "", true},
		{"full", "..", "", true},
		{"full", "", "", true},
		{"huge", "x", "", true},
	} {
		t.Setenv(SizeEnv, tc.size)
		got, err := RunDir(tc.name)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("size %s: RunDir(%q) = %q, %v; want %q, error %v", tc.size, tc.name, got, err, tc.want, tc.err)
		}
	}
	other := t.TempDir()
	t.Setenv(RunsEnv, other)
	t.Setenv(SizeEnv, "ci")
	if got, err := RunDir("x"); err != nil || got != filepath.Join(other, "x_ci") {
		t.Errorf("with %s=%s: RunDir(x) = %q, %v", RunsEnv, other, got, err)
	}
}

func TestRepoRootOtherModule(t *testing.T) {
	fakeRepo(t, "example.com/other") // under the temp dir: no go.mod of ours above
	if root, err := RepoRoot(); err == nil {
		t.Errorf("RepoRoot() = %q in a module named example.com/other, want an error", root)
	}
}

func TestFinishedRun(t *testing.T) {
	root := fakeRepo(t, Module)
	dir := filepath.Join(root, "runs", "aliased_mnist_seed1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{"config.json", "report.json", "chmm.model", "vqvae.ckpt"}
	for i, f := range files {
		if got, done := FinishedRun("aliased_mnist_seed1"); done || got != dir {
			t.Errorf("with %d of its files: FinishedRun = %q, %v; want %q, false", i, got, done, dir)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, done := FinishedRun("aliased_mnist_seed1"); !done || got != dir {
		t.Errorf("FinishedRun = %q, %v; want %q, true", got, done, dir)
	}
}

func TestMarkdownTable(t *testing.T) {
	got, err := MarkdownTable([]string{"a", "b|c"}, [][]string{{"1", "x|y"}, {"two\nlines", ""}})
	if err != nil {
		t.Fatal(err)
	}
	want := "| a | b&#124;c |\n| --- | --- |\n| 1 | x&#124;y |\n| two lines |  |\n"
	if got != want {
		t.Errorf("MarkdownTable =\n%q\nwant\n%q", got, want)
	}
	if _, err := MarkdownTable([]string{"a", "b"}, [][]string{{"1", "2"}, {"3"}}); err == nil || !strings.Contains(err.Error(), "row 2 has 1 cells") {
		t.Errorf("ragged table: error %v, want it to name row 2", err)
	}
	if _, err := MarkdownTable(nil, nil); err == nil {
		t.Error("table without columns: no error")
	}
}

// testReport is a hand-made report with distinct values.
func testReport() *evaluate.Report {
	return &evaluate.Report{
		Env: "aliased", Dataset: "mnist", Trainer: "joint", Seed: 2, NumTokens: 4, NumStates: 21,
		ClonePurity: 0.875, StatePlacePurity: 0.984, StatesPerPlace: 1.25, ActionAccuracy: 0.96,
		ViterbiMap:       evaluate.CutoffScore{CutoffFraction: 0.002, EdgeScore: evaluate.EdgeScore{Precision: 0.96, Recall: 1, F1: 0.9796, Edges: 25}},
		ViterbiMapSweep:  []evaluate.CutoffScore{{CutoffFraction: 0.001, EdgeScore: evaluate.EdgeScore{F1: 0.8, Edges: 36}}, {CutoffFraction: 0.005, EdgeScore: evaluate.EdgeScore{F1: 1, Edges: 24}}},
		ProjectedMap:     []evaluate.ThresholdScore{{Threshold: 0.01, EdgeScore: evaluate.EdgeScore{Precision: 0.338, Recall: 1, F1: 0.505}}, {Threshold: 0.1, EdgeScore: evaluate.EdgeScore{Precision: 0.5}}},
		HTokenGivenPlace: 0.1632, Perplexity: 2.9234, NumPlaces: 16, TrueEdges: 24,
		Seconds: map[string]float64{"total": 812.6},
		Training: &evaluate.Training{Joint: &evaluate.Joint{Warmup: evaluate.TokenEntropies{HTokenGivenPlace: 0.4702, HClassGivenToken: 0.1},
			End: evaluate.TokenEntropies{HTokenGivenPlace: 0.2, HClassGivenToken: 0.0504}}},
	}
}

func TestReportTables(t *testing.T) {
	r := testReport()
	md, err := CompareMarkdown([]string{"A", "B"}, []*evaluate.Report{r, nil})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| metric | A | B |",
		"| environment | aliased (16 places, 24 edges) | - |",
		"| data / trainer / seed | mnist / joint / 2 | - |",
		"| tokens K (perplexity) | 4 (2.92) | - |",
		"| state→place purity | 0.98 | - |",
		"| Viterbi-path map P / R / F1 | 0.96 / 1.00 / 0.98 | - |",
		"| projected map P / R / F1 (η = 0.01) | 0.34 / 1.00 / 0.51 | - |",
		"| seconds | 813 | - |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("CompareMarkdown lacks row %q:\n%s", row, md)
		}
	}
	sum, err := SummaryMarkdown([]string{"run 1"}, []*evaluate.Report{r})
	if err != nil {
		t.Fatal(err)
	}
	if want := "| run 1 | 21 | 2.92 | 0.88 | 0.98 | 0.96 | 1.00 | 0.98 | 0.163 | 813 |\n"; !strings.HasSuffix(sum, want) {
		t.Errorf("SummaryMarkdown =\n%s\nwant last row %q", sum, want)
	}
	ro, err := ReadoutMarkdown([]string{"x"}, []*evaluate.Report{r}, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if want := "| x | 0.34 | 0.51 | 0.96 | 1.00 | 0.98 | 0.2% |\n"; !strings.HasSuffix(ro, want) {
		t.Errorf("ReadoutMarkdown =\n%s\nwant last row %q", ro, want)
	}
	cut, err := CutoffMarkdown([]string{"x"}, []*evaluate.Report{r})
	if err != nil {
		t.Fatal(err)
	}
	if want := "| x | 0.80 (36) | 1.00 (24) |\n"; !strings.HasSuffix(cut, want) || !strings.Contains(cut, "F1 at f = 0.1% (edges)") {
		t.Errorf("CutoffMarkdown =\n%s\nwant last row %q", cut, want)
	}
	ex, err := TrainEntropyMarkdown([]string{"x", "symbolic"}, []*evaluate.Report{r, {}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "| x | 0.470 | 0.200 | 0.100 | 0.050 |\n| symbolic | - | - | - | - |\n"; !strings.HasSuffix(ex, want) {
		t.Errorf("TrainEntropyMarkdown =\n%s\nwant last rows %q", ex, want)
	}
	for name, err := range map[string]error{
		"Compare":  errOf(CompareMarkdown([]string{"a"}, nil)),
		"Summary":  errOf(SummaryMarkdown([]string{"a"}, []*evaluate.Report{nil})),
		"Readout":  errOf(ReadoutMarkdown(nil, []*evaluate.Report{r}, 0.01)),
		"Cutoff":   errOf(CutoffMarkdown([]string{"a", "b"}, []*evaluate.Report{r})),
		"Entropy":  errOf(TrainEntropyMarkdown([]string{"a", "b"}, []*evaluate.Report{r})),
		"Report":   Report(nil),
		"no PNG":   PNG([]byte("GIF89a")),
		"plot 0×1": errOf(PlotPNG(plot.New(), 0, 1)),
	} {
		if err == nil {
			t.Errorf("%s: bad input gave no error", name)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

// capture redirects Output's plain-text form to a buffer.
func capture(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := Stdout
	Stdout = &buf
	t.Cleanup(func() { Stdout = old })
	return &buf
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.White)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDisplayPlainText(t *testing.T) {
	buf := capture(t)
	Markdownf("**%d** done", 3)
	b := pngBytes(t, 5, 7)
	if err := PNG(b); err != nil {
		t.Fatal(err)
	}
	if err := Image(image.NewGray(image.Rect(0, 0, 2, 3))); err != nil {
		t.Fatal(err)
	}
	if err := Table([]string{"k"}, [][]string{{"v"}}); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"**3** done\n", "[PNG image 5×7, ", "[PNG image 2×3, ", "| k |\n| --- |\n| v |\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
}

func TestPlotPNG(t *testing.T) {
	p := plot.New()
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	b, err := PlotPNG(p, 4*vg.Inch, 2*vg.Inch)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 2*cfg.Height || cfg.Width < 100 {
		t.Errorf("4×2 inch plot rendered %d×%d pixels", cfg.Width, cfg.Height)
	}
	buf := capture(t)
	if err := Plot(p, 4*vg.Inch, 2*vg.Inch); err != nil || !strings.Contains(buf.String(), "[PNG image") {
		t.Errorf("Plot: %v, output %q", err, buf.String())
	}
}

func TestCheck(t *testing.T) {
	var code int
	var msg bytes.Buffer
	oldExit, oldErr := exit, stderr
	exit, stderr = func(c int) { code = c }, &msg
	defer func() { exit, stderr = oldExit, oldErr }()
	Check(nil)
	if code != 0 || msg.Len() != 0 {
		t.Fatalf("Check(nil) exited %d, wrote %q", code, msg.String())
	}
	if got := Must(7, nil); got != 7 {
		t.Errorf("Must(7, nil) = %d", got)
	}
	Must(0, errors.New("no such run"))
	if code != 1 || msg.String() != "error: no such run\n" {
		t.Errorf("Must(_, err) exited %d, wrote %q; want 1, \"error: no such run\\n\"", code, msg.String())
	}
}

func TestWriteLayout(t *testing.T) {
	t.Setenv(RunsEnv, t.TempDir())
	path, err := WriteLayout("room", "0 1\n# 0\n")
	if err != nil {
		t.Fatal(err)
	}
	e, err := gridworld.LoadLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.NumPlaces() != 3 || len(e.Edges()) != 2 {
		t.Errorf("layout has %d places and %d edges, want 3 and 2", e.NumPlaces(), len(e.Edges()))
	}
	if _, err := WriteLayout("../x", "0"); err == nil {
		t.Error("WriteLayout(../x): no error")
	}
}

func TestHistoryJSON(t *testing.T) {
	h := &chmm.History{Phase: []string{"em", "viterbi"}, Iter: []int{0, 0}, LogLik: []float64{-1.5, math.Inf(-1)},
		Seconds: []float64{0.1, 0.2}, Entropy: []float64{math.NaN(), 0.25}, Stop: "converged", Splits: []chmm.Split{{Iter: 3, States: 2}}}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := writeJSON(path, toJSONHistory(h)); err != nil {
		t.Fatal(err)
	}
	got, err := readHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.LogLik[0] != -1.5 || !math.IsNaN(got.LogLik[1]) || !math.IsNaN(got.Entropy[0]) || got.Entropy[1] != 0.25 ||
		got.Stop != "converged" || len(got.Splits) != 1 || got.Phase[1] != "viterbi" {
		t.Errorf("history after the JSON round trip: %+v", got)
	}
}

// TestJupyterMarkdown: an escaped pipe in a table cell becomes an entity, so Jupyter
// keeps the cell whole; nothing else changes.
func TestJupyterMarkdown(t *testing.T) {
	in := "| env | H(token\\|place) |\n|---|---|\n| a | 0.1 |\n"
	want := "| env | H(token&#124;place) |\n|---|---|\n| a | 0.1 |\n"
	if got := jupyterMarkdown(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
