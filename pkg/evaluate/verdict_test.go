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
	// A world of more true edges than 1/f is judged by its projected map at 0.01,
	// whatever the Viterbi-path map and the walk's own score (0 there).
	r = &Report{StatePlacePurity: 0.9998, TrueEdges: 760, WalkMap: &CutoffScore{CutoffFraction: 0.002}}
	r.ViterbiMap.CutoffFraction = 0.002
	r.ProjectedMap = []ThresholdScore{{Threshold: 0.01, EdgeScore: EdgeScore{Recall: 1, F1: 0.998}},
		{Threshold: 0.05, EdgeScore: EdgeScore{Recall: 0.5, F1: 0.5}}}
	if s, projected := r.MapScore(); !projected || s.F1 != 0.998 {
		t.Errorf("760 true edges at cut-off 0.002: map score %+v, projected %v; want the projection at 0.01", s, projected)
	}
	if !r.Recovered() {
		t.Error("projected recall 1, F1 0.998: not recovered")
	}
	r.ProjectedMap[0].Recall = 0.998
	if r.Recovered() {
		t.Error("projected recall 0.998: recovered")
	}
	r.ProjectedMap[0].Recall, r.ProjectedMap[0].F1 = 1, 0.979
	if r.Recovered() {
		t.Error("projected F1 0.979: recovered")
	}
	r.ProjectedMap[0].F1, r.TrueEdges = 0.998, 500 // 500 · 0.002 = 1: the Viterbi-path map
	if _, projected := r.MapScore(); projected || r.Recovered() {
		t.Errorf("500 true edges at cut-off 0.002: projected %v, recovered %v; want the Viterbi-path map's F1 0", projected, r.Recovered())
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
