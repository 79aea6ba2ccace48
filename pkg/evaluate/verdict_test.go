package evaluate

import (
	"strings"
	"testing"
)

func TestRecoveredAndConfusion(t *testing.T) {
	r := &Report{StatePlacePurity: 0.95}
	r.ViterbiMap.Recall, r.ViterbiMap.F1 = 1, 0.98
	if !r.Recovered() {
		t.Error("at the bars: not recovered")
	}
	r.StatePlacePurity = 0.949
	if r.Recovered() {
		t.Error("purity 0.949: recovered")
	}
	// A held-out walk that crosses a true edge too rarely lowers the recall bar to
	// its own recall, and only that bar.
	r.StatePlacePurity = 0.95
	r.ViterbiMap.Recall, r.ViterbiMap.F1 = 0.993, 0.9966
	if r.Recovered() {
		t.Error("recall 0.993 without the walk's own score: recovered")
	}
	r.WalkMap = &CutoffScore{EdgeScore: EdgeScore{Recall: 0.993}}
	if !r.Recovered() {
		t.Error("recall 0.993 as the walk's own: not recovered")
	}
	r.WalkMap.Recall = 1
	if r.Recovered() {
		t.Error("recall 0.993, the walk's own 1: recovered")
	}
	r.WalkMap.Recall, r.ViterbiMap.Recall = 0.9, 0.9
	r.ViterbiMap.F1 = 0.947
	if r.Recovered() {
		t.Error("F1 0.947: recovered")
	}
	var c VerdictConfusion
	c.Add(true, true)
	c.Add(true, true)
	c.Add(false, false)
	c.Add(true, false)
	if md := c.Markdown(); !strings.Contains(md, "| flagged NOT resolved | 2 | 1 |") || !strings.Contains(md, "| passed as resolved | 0 | 1 |") {
		t.Errorf("table:\n%s", md)
	}
}
