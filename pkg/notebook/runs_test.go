package notebook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// TestShowPath: paths in an overriding runs root, in the repository and elsewhere, and
// the same rewriting inside a line of text.
func TestShowPath(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	t.Setenv(RunsEnv, runs)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(runs, "nb_x_ci"), "$GRADCSCG_RUNS_DIR/nb_x_ci"},
		{filepath.Join(root, "results", "runs", "a"), "results/runs/a"},
		{"/elsewhere/x", "/elsewhere/x"},
	} {
		if got := ShowPath(tc.path); got != tc.want {
			t.Errorf("ShowPath(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	line := "run directory " + filepath.Join(runs, "nb_x_ci") + ", layout " + filepath.Join(root, "layouts", "a.txt")
	if got, want := showPaths(line), "run directory $GRADCSCG_RUNS_DIR/nb_x_ci, layout layouts/a.txt"; got != want {
		t.Errorf("showPaths = %q, want %q", got, want)
	}
}

// TestShippedRunIsLoaded: at full size, a run directory without the run and a shipped
// run of the same configuration: the shipped run is loaded (nothing is trained or
// written); a damaged shipped run is refused in one line; at CI size the shipped run is
// not consulted.
func TestShippedRunIsLoaded(t *testing.T) {
	t.Setenv(SizeEnv, "ci")
	cfg, err := PipelineConfig("aliased") // smoke-sized: trains in seconds
	if err != nil {
		t.Fatal(err)
	}
	trained := t.TempDir()
	if _, err := PipelineIn(trained, cfg, nil); err != nil {
		t.Fatal(err)
	}
	shippedRoot := t.TempDir()
	old := shippedDir
	shippedDir = func(name string) (string, error) { return filepath.Join(shippedRoot, name), nil }
	defer func() { shippedDir = old }()
	if _, err := pipeline.Export(trained, filepath.Join(shippedRoot, "s")); err != nil {
		t.Fatal(err)
	}
	t.Setenv(SizeEnv, "full")
	empty := filepath.Join(t.TempDir(), "s")
	res, how, err := trainOrLoad("s", empty, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(how, "loaded the shipped full-size run ") || res.Report == nil || res.Config.Seed != cfg.Seed {
		t.Errorf("trainOrLoad: %q", how)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("loading the shipped run wrote the run directory")
	}
	report := filepath.Join(shippedRoot, "s", pipeline.ReportFile)
	raw, _ := os.ReadFile(report)
	if err := os.WriteFile(report, append(raw, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trainOrLoad("s", empty, cfg); err == nil || !strings.Contains(err.Error(), "report.json does not match") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a damaged shipped run: %v, want one line naming report.json", err)
	}
	t.Setenv(SizeEnv, "ci")
	if _, how, err := trainOrLoad("s", trained, cfg); err != nil || !strings.HasPrefix(how, "loaded the finished CI-size run") {
		t.Errorf("at CI size: %q, %v; want the run directory's run", how, err)
	}
}

// TestBeside: at full size the figure alone; at CI size the figure, the committed one
// and captions saying which is which; a committed figure that is not there is an
// error naming it.
func TestBeside(t *testing.T) {
	png := pngBytes(t, 3, 2)
	t.Setenv(SizeEnv, "full")
	buf := capture(t)
	if err := Beside(png, "figures/fig5.png"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "[PNG image") != 1 || strings.Contains(got, "CI-size") {
		t.Errorf("full size: %q", got)
	}
	t.Setenv(SizeEnv, "ci")
	buf.Reset()
	if err := Beside(png, "figures/fig5.png"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "[PNG image") != 2 || !strings.Contains(got, "CI-size run") ||
		!strings.Contains(got, "committed full-size figure, figures/fig5.png") {
		t.Errorf("CI size: %q", got)
	}
	if err := Beside(png, "figures/none.png"); err == nil || !strings.Contains(err.Error(), "none.png") {
		t.Errorf("a missing committed figure: %v", err)
	}
	if err := Beside([]byte("x"), "figures/fig5.png"); err == nil {
		t.Error("Beside of a non-PNG: no error")
	}
	buf.Reset()
	SizeNote()
	if !strings.Contains(buf.String(), "CI-size run") {
		t.Errorf("SizeNote at CI size: %q", buf.String())
	}
}

// TestBesideDrawn: at full size the figure alone and the full-size one not drawn; at
// CI size both, the full-size one captioned with what it is drawn from; a failing
// drawing is an error naming it.
func TestBesideDrawn(t *testing.T) {
	png := pngBytes(t, 3, 2)
	drawn := 0
	full := func() ([]byte, error) { drawn++; return pngBytes(t, 4, 4), nil }
	t.Setenv(SizeEnv, "full")
	buf := capture(t)
	if err := BesideDrawn(png, full, "drawn from `results/x.json`"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "[PNG image") != 1 || drawn != 0 {
		t.Errorf("full size: %q, drawn %d times", got, drawn)
	}
	t.Setenv(SizeEnv, "ci")
	buf.Reset()
	if err := BesideDrawn(png, full, "drawn from `results/x.json`"); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Count(got, "[PNG image") != 2 || drawn != 1 ||
		!strings.Contains(got, "The full-size figure, drawn from results/x.json:") || !strings.Contains(got, "CI-size run") {
		t.Errorf("CI size: %q", got)
	}
	bad := func() ([]byte, error) { return nil, errors.New("no reports") }
	if err := BesideDrawn(png, bad, "drawn from `results/x.json`"); err == nil || !strings.Contains(err.Error(), "results/x.json") {
		t.Errorf("a failing drawing: %v", err)
	}
	if got := codeSpans("a <b> `c&d` e"); got != "a &lt;b&gt; <code>c&amp;d</code> e" {
		t.Errorf("codeSpans: %q", got)
	}
}

func TestResultMarkdown(t *testing.T) {
	in := "# Table 3: maps (mean ± s.d.)\n\nGenerated by `x`.\n\n## Notes ##\n#hashtag\n####### seven\n```\n# code\n```\n| a |\n"
	want := "**Table 3: maps (mean ± s.d.)**\n\nGenerated by `x`.\n\n**Notes**\n#hashtag\n####### seven\n```\n# code\n```\n| a |\n"
	buf := capture(t)
	ResultMarkdown(in)
	if got := strings.TrimSuffix(buf.String(), "\n") + "\n"; got != want {
		t.Errorf("ResultMarkdown wrote\n%s\nwant\n%s", got, want)
	}
}
