package notebook

import (
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"

	"github.com/gradcscg/gradcscg/pkg/chmm"
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
