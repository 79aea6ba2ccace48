package evaluate

import "fmt"

// Recovered reports whether the report's map meets the bars the suites hold maps to:
// Viterbi-path map recall 1.00 (≥ 0.999), F1 ≥ 0.98 and state→place purity ≥ 0.95.
// Where the held-out walk itself crosses a true edge too rarely for the cut-off
// (WalkMap), the recall bar is the walk's own recall: no map can pass 1.00 there.
func (r *Report) Recovered() bool {
	bar := 0.999
	if r.WalkMap != nil {
		bar = min(bar, r.WalkMap.Recall)
	}
	return r.ViterbiMap.Recall >= bar && r.ViterbiMap.F1 >= 0.98 && r.StatePlacePurity >= 0.95
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
