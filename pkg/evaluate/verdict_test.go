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
	var c VerdictConfusion
	c.Add(true, true)
	c.Add(true, true)
	c.Add(false, false)
	c.Add(true, false)
	if md := c.Markdown(); !strings.Contains(md, "| flagged NOT resolved | 2 | 1 |") || !strings.Contains(md, "| passed as resolved | 0 | 1 |") {
		t.Errorf("table:\n%s", md)
	}
}
