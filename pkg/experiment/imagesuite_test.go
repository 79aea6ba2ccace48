package experiment

import (
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// TestImageTablesClassColumns: Table 3 shows the token class purity and the class
// perplexity, and the refinement's minutes, only where a report has them; reports
// written before them give the table as it was.
func TestImageTablesClassColumns(t *testing.T) {
	old := &evaluate.Report{Env: "aliased", NumTokens: 4, NumStates: 21, Perplexity: 4,
		Seconds: map[string]float64{"warmup": 60, "joint": 120, "final": 30, "total": 210}}
	t3, _ := imageTables([]string{"aliased"}, "mnist", "conv", map[string][]*evaluate.Report{"aliased": {old}})
	if strings.Contains(t3, "class purity") || strings.Contains(t3, "refinement") {
		t.Errorf("reports without them got the new columns:\n%s", t3)
	}
	if !strings.Contains(t3, "| env | seeds | K' | N | perplexity | clone purity |") || !strings.Contains(t3, "| env | warm-up | joint | finalisation | total |\n|---|---|---|---|---|\n| aliased | 1.0 ± 0.0 | 2.0 ± 0.0 | 0.5 ± 0.0 | 3.5 ± 0.0 |") {
		t.Errorf("the table of old reports changed:\n%s", t3)
	}
	now := &evaluate.Report{Env: "aliased", NumTokens: 4, NumStates: 21, Perplexity: 4, TokenClassPurity: 0.95, ClassPerplexity: 3.99, ClassesShown: 4,
		Seconds: map[string]float64{"warmup": 60, "joint": 120, "final": 30, "refine": 90, "total": 300}}
	t3, _ = imageTables([]string{"aliased"}, "mnist", "conv", map[string][]*evaluate.Report{"aliased": {now}})
	for _, want := range []string{
		"| env | seeds | K' | N | perplexity | token class purity | class perplexity | clone purity |",
		"| aliased | 1 | 4 | 21 | 4.00 ± 0.00 | 0.950 ± 0.000 | 3.99 ± 0.00 | 0.000 ± 0.000 |",
		"| *paper* | | | | *4.00* | | | *0.98* |",
		"| env | warm-up | joint | finalisation | refinement | total |",
		"| aliased | 1.0 ± 0.0 | 2.0 ± 0.0 | 0.5 ± 0.0 | 1.5 ± 0.0 | 5.0 ± 0.0 |",
	} {
		if !strings.Contains(t3, want) {
			t.Errorf("table lacks %q:\n%s", want, t3)
		}
	}
}
