package evaluate

import "fmt"

// MapScore is the score of the map a report is judged by: the Viterbi-path map's
// (ViterbiMap), or, with projected true, the projected map's at threshold 0.01 where the
// world has more true edges than 1/f for the cut-off fraction f, so that the held-out
// walk cannot cross every true edge more than f·T times and the Viterbi-path map
// cannot reach its cut-off (a report without that projection keeps ViterbiMap).
func (r *Report) MapScore() (s EdgeScore, projected bool) {
	f := r.ViterbiMap.CutoffFraction
	if f > 0 && float64(r.TrueEdges)*f > 1 {
		for _, p := range r.ProjectedMap {
			if p.Threshold == 0.01 {
				return p.EdgeScore, true
			}
		}
	}
	return r.ViterbiMap.EdgeScore, false
}

// Recovered reports whether the report's map meets the bars the suites hold maps to:
// map recall 1.00 (≥ 0.999), F1 ≥ 0.98 and state→place purity ≥ 0.95, the map being
// MapScore's. Where the held-out walk itself crosses a true edge too rarely for the
// cut-off (WalkMap) and the Viterbi-path map is scored, the recall bar is the walk's
// own recall: no map can pass 1.00 there.
func (r *Report) Recovered() bool {
	s, projected := r.MapScore()
	bar := 0.999
	if r.WalkMap != nil && !projected {
		bar = min(bar, r.WalkMap.Recall)
	}
	return s.Recall >= bar && s.F1 >= 0.98 && r.StatePlacePurity >= 0.95
}

// VerdictConfusion counts label-free verdicts (chmm.Verdict) against the truth
// (Recovered): [flagged][failed].
type VerdictConfusion [2][2]int

// Add counts one run.
func (c *VerdictConfusion) Add(flagged, failed bool) { c[b2i(flagged)][b2i(failed)]++ }

// Markdown is the confusion table.
func (c VerdictConfusion) Markdown() string {
	return fmt.Sprintf("| | failed | good |\n|---|---|---|\n| flagged NOT resolved | %d | %d |\n| passed as resolved | %d | %d |\n",
		c[1][1], c[1][0], c[0][1], c[0][0])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
