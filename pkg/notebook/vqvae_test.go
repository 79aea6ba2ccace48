package notebook

import (
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
)

// TestVQStudySizes checks the notebook study at both sizes and its run directory.
func TestVQStudySizes(t *testing.T) {
	t.Setenv(RunsEnv, t.TempDir())
	t.Setenv(SizeEnv, SizeFull)
	full, err := VQStudy("two_rooms", "fashion", 2)
	if err != nil {
		t.Fatal(err)
	}
	if full.Steps != experiment.DefaultVQSteps || full.Batch != 128 || full.Curve != 100 || full.Seed != 2 ||
		full.Dataset != "fashion" || full.Episodes != 0 {
		t.Errorf("full-size study %+v", full)
	}
	t.Setenv(SizeEnv, SizeCI)
	ci, err := VQStudy("two_rooms", "fashion", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := experiment.SizeSmoke.VQStudy(full)
	want.Env, want.Dir = ci.Env, ci.Dir
	if ci != want || ci.Dir == full.Dir || ci.Env.Name != "two_rooms" {
		t.Errorf("CI-size study %+v is not the smoke size of the full one in its own directory", ci)
	}
	if err := ci.Check(); err != nil {
		t.Error(err)
	}
	if _, err := VQStudy("nowhere", "mnist", 1); err == nil {
		t.Error("unknown environment: no error")
	}
	suite, err := VQSuite()
	if err != nil || suite.Seeds != 2 || len(suite.Envs) != 1 || suite.Base.Steps != 150 {
		t.Errorf("CI suite %+v (%v)", suite, err)
	}
}

// TestVQCurvePlot checks the plot's inputs.
func TestVQCurvePlot(t *testing.T) {
	r := &experiment.VQReport{Curve: []experiment.VQCurvePoint{{Step: 10, Purity: 0.5, HTokenGivenClass: 2}, {Step: 20, Purity: 0.6, HTokenGivenClass: 1.5}}}
	p, err := VQCurvePlot("t", []string{"a"}, []*experiment.VQReport{r})
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max <= 2 || p.Y.Min != 0 {
		t.Errorf("y range [%g, %g] does not hold the curves and the legend", p.Y.Min, p.Y.Max)
	}
	if _, err := VQCurvePlot("t", []string{"a", "b"}, []*experiment.VQReport{r}); err == nil {
		t.Error("2 labels for 1 report: no error")
	}
	if _, err := VQCurvePlot("t", []string{"a"}, []*experiment.VQReport{{}}); err == nil {
		t.Error("a report without a curve: no error")
	}
}

// TestNotebookPlotsInFigureStyle: the notebooks' line plots take the figures' text
// style (figures.NewPlot: a sans-serif face), not gonum's serif default.
func TestNotebookPlotsInFigureStyle(t *testing.T) {
	r := &experiment.VQReport{Curve: []experiment.VQCurvePoint{{Step: 10, Purity: 0.5, HTokenGivenClass: 2}}}
	vq, err := VQCurvePlot("t", []string{"a"}, []*experiment.VQReport{r})
	if err != nil {
		t.Fatal(err)
	}
	run := &SymbolicRun{History: &chmm.History{LogLik: []float64{-2, -1}, Seconds: []float64{0, 1}}}
	ll, err := LikelihoodPlot("t", []string{"g"}, []*SymbolicRun{run})
	if err != nil {
		t.Fatal(err)
	}
	want := figures.NewPlot("t")
	for name, p := range map[string]*plot.Plot{"VQCurvePlot": vq, "LikelihoodPlot": ll} {
		for part, got := range map[string][2]font.Font{
			"title":       {p.Title.TextStyle.Font, want.Title.TextStyle.Font},
			"axis label":  {p.X.Label.TextStyle.Font, want.X.Label.TextStyle.Font},
			"tick labels": {p.Y.Tick.Label.Font, want.Y.Tick.Label.Font},
			"legend":      {p.Legend.TextStyle.Font, want.Legend.TextStyle.Font},
		} {
			if got[0] != got[1] {
				t.Errorf("%s: %s font %+v, want the figures' %+v", name, part, got[0], got[1])
			}
		}
	}
	if v := want.Title.TextStyle.Font.Variant; v != "Sans" {
		t.Errorf("figures.NewPlot's variant is %q, want Sans", v)
	}
}

// TestVQTokens: classes grouped by their majority token; a report whose classes each
// have their own token says so.
func TestVQTokens(t *testing.T) {
	r := &experiment.VQReport{NumTokens: 4, ActiveCodes: 3, Perplexity: 2.5, Purity: 0.75, Classes: []evaluate.ClassStat{
		{Class: 0, Name: "0", MajorityToken: 2}, {Class: 1, Name: "1", MajorityToken: 0},
		{Class: 2, Name: "2", MajorityToken: 2}, {Class: 3, Name: "3", MajorityToken: 1}}}
	buf := capture(t)
	if err := VQTokens(r); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "**Classes sharing their majority token**: t2 ← 0, 2.") ||
		!strings.Contains(got, "3 of 4 codes active (perplexity 2.50), token class purity 0.75") {
		t.Errorf("VQTokens: %q", got)
	}
	r.Classes[2].MajorityToken = 3
	buf.Reset()
	if err := VQTokens(r); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "Every class has a majority token of its own.") || strings.Contains(got, "sharing") {
		t.Errorf("VQTokens, one token per class: %q", got)
	}
	if err := VQTokens(&experiment.VQReport{}); err == nil {
		t.Error("VQTokens of no classes: no error")
	}
}
