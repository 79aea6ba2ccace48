package notebook

import (
	"fmt"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// MarkdownTable formats a markdown (GitHub) table. Every row must have one cell per
// header column; "|" inside cells becomes the HTML entity &#124; (Jupyter's renderer
// does not honour \|) and newlines become spaces.
func MarkdownTable(header []string, rows [][]string) (string, error) {
	if len(header) == 0 {
		return "", fmt.Errorf("notebook: table without columns")
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.ReplaceAll(c, "|", "&#124;")
			c = strings.ReplaceAll(c, "\n", " ")
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for i, r := range rows {
		if len(r) != len(header) {
			return "", fmt.Errorf("notebook: table row %d has %d cells, the header %d", i+1, len(r), len(header))
		}
		line(r)
	}
	return b.String(), nil
}

// Table displays a markdown table (MarkdownTable).
func Table(header []string, rows [][]string) error {
	md, err := MarkdownTable(header, rows)
	if err != nil {
		return err
	}
	Markdown(md)
	return nil
}

// reportRow is one metric of the report tables.
type reportRow struct {
	name string
	val  func(r *evaluate.Report) string
}

func f2(x float64) string { return fmt.Sprintf("%.2f", x) }

func edges(s evaluate.EdgeScore) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f", s.Precision, s.Recall, s.F1)
}

// reportRows are the headline metrics of the paper's Table 3 and 4 (Sec. 3.9), in
// the order the tables show them.
var reportRows = []reportRow{
	{"environment", func(r *evaluate.Report) string {
		return fmt.Sprintf("%s (%d places, %d edges)", r.Env, r.NumPlaces, r.TrueEdges)
	}},
	{"data / trainer / seed", func(r *evaluate.Report) string {
		return fmt.Sprintf("%s / %s / %d", orDash(r.Dataset), orDash(r.Trainer), r.Seed)
	}},
	{"tokens K (perplexity)", func(r *evaluate.Report) string { return fmt.Sprintf("%d (%.2f)", r.NumTokens, r.Perplexity) }},
	{"states N", func(r *evaluate.Report) string { return fmt.Sprint(r.NumStates) }},
	{"state→place purity", func(r *evaluate.Report) string { return f2(r.StatePlacePurity) }},
	{"clone purity", func(r *evaluate.Report) string { return f2(r.ClonePurity) }},
	{"clones per place", func(r *evaluate.Report) string { return f2(r.StatesPerPlace) }},
	{"action accuracy", func(r *evaluate.Report) string { return f2(r.ActionAccuracy) }},
	{"Viterbi-path map P / R / F1", func(r *evaluate.Report) string { return edges(r.ViterbiMap.EdgeScore) }},
	{"projected map P / R / F1 (η = 0.01)", func(r *evaluate.Report) string {
		for _, s := range r.ProjectedMap {
			if s.Threshold == 0.01 {
				return edges(s.EdgeScore)
			}
		}
		return "-"
	}},
	{"H(token∣place), nats", func(r *evaluate.Report) string { return fmt.Sprintf("%.3f", r.HTokenGivenPlace) }},
	{"map verdict (no labels)", func(r *evaluate.Report) string {
		if r.Diagnosis == nil || r.Diagnosis.Verdict == nil {
			return "-"
		}
		if v := r.Diagnosis.Verdict; !v.Resolved {
			return "not resolved (" + strings.Join(v.Problems, ", ") + ")"
		}
		return "resolved"
	}},
	{"seconds", func(r *evaluate.Report) string {
		if t, ok := r.Seconds["total"]; ok {
			return fmt.Sprintf("%.0f", t)
		}
		return "-"
	}},
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CompareMarkdown formats reports side by side: one row per headline metric, one
// column per report, headed by its label. Nil reports are shown as "-".
func CompareMarkdown(labels []string, reports []*evaluate.Report) (string, error) {
	if len(labels) != len(reports) {
		return "", fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	header := append([]string{"metric"}, labels...)
	rows := make([][]string, len(reportRows))
	for i, m := range reportRows {
		rows[i] = []string{m.name}
		for _, r := range reports {
			v := "-"
			if r != nil {
				v = m.val(r)
			}
			rows[i] = append(rows[i], v)
		}
	}
	return MarkdownTable(header, rows)
}

// Compare displays reports side by side (CompareMarkdown).
func Compare(labels []string, reports []*evaluate.Report) error {
	md, err := CompareMarkdown(labels, reports)
	if err != nil {
		return err
	}
	Markdown(md)
	return nil
}

// Report displays one report's headline metrics as a two-column table, then the
// map's label-free verdict in words when the report has one.
func Report(r *evaluate.Report) error {
	if r == nil {
		return fmt.Errorf("notebook: no report")
	}
	if err := Compare([]string{"value"}, []*evaluate.Report{r}); err != nil {
		return err
	}
	if r.Diagnosis != nil && r.Diagnosis.Verdict != nil {
		Markdownf("**Map verdict (no labels):** %s", r.Diagnosis.Verdict.Text)
	}
	return nil
}

// SummaryMarkdown formats one row per report with the headline columns of the
// paper's Table 3: states N, perplexity, clone purity, state→place purity, action
// accuracy, Viterbi-path map recall and F1, H(token | place) and training seconds.
func SummaryMarkdown(labels []string, reports []*evaluate.Report) (string, error) {
	if len(labels) != len(reports) {
		return "", fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	header := []string{"run", "N", "perplexity", "clone purity", "state→place purity", "action acc.",
		"map recall", "map F1", "H(token∣place)", "seconds"}
	rows := make([][]string, 0, len(reports))
	for i, r := range reports {
		if r == nil {
			return "", fmt.Errorf("notebook: report %q is nil", labels[i])
		}
		sec := "-"
		if t, ok := r.Seconds["total"]; ok {
			sec = fmt.Sprintf("%.0f", t)
		}
		rows = append(rows, []string{labels[i], fmt.Sprint(r.NumStates), f2(r.Perplexity), f2(r.ClonePurity),
			f2(r.StatePlacePurity), f2(r.ActionAccuracy), f2(r.ViterbiMap.Recall), f2(r.ViterbiMap.F1),
			fmt.Sprintf("%.3f", r.HTokenGivenPlace), sec})
	}
	return MarkdownTable(header, rows)
}

// Summary displays SummaryMarkdown.
func Summary(labels []string, reports []*evaluate.Report) error {
	md, err := SummaryMarkdown(labels, reports)
	if err != nil {
		return err
	}
	Markdown(md)
	return nil
}

// ReadoutMarkdown formats the paper's Table 4 (Sec. 5.3): per report, the precision
// and F1 of the projected map at threshold eta against the precision, recall and F1
// of the Viterbi-path map (edges traversed more than f·T times).
func ReadoutMarkdown(labels []string, reports []*evaluate.Report, eta float64) (string, error) {
	if len(labels) != len(reports) {
		return "", fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	header := []string{"run", fmt.Sprintf("projected P (η = %g)", eta), fmt.Sprintf("projected F1 (η = %g)", eta),
		"Viterbi-path P", "Viterbi-path R", "Viterbi-path F1", "cutoff f"}
	rows := make([][]string, 0, len(reports))
	for i, r := range reports {
		if r == nil {
			return "", fmt.Errorf("notebook: report %q is nil", labels[i])
		}
		p, f := "-", "-"
		for _, s := range r.ProjectedMap {
			if s.Threshold == eta {
				p, f = f2(s.Precision), f2(s.F1)
			}
		}
		v := r.ViterbiMap
		rows = append(rows, []string{labels[i], p, f, f2(v.Precision), f2(v.Recall), f2(v.F1),
			fmt.Sprintf("%g%%", 100*v.CutoffFraction)})
	}
	return MarkdownTable(header, rows)
}

// CutoffMarkdown formats the Viterbi-path map's F1 (and edge count) at every cutoff
// of the reports' sweeps (Sec. 5.3: the read-out is robust to the cutoff).
func CutoffMarkdown(labels []string, reports []*evaluate.Report) (string, error) {
	if len(labels) != len(reports) {
		return "", fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	var cutoffs []float64
	seen := map[float64]bool{}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, s := range r.ViterbiMapSweep {
			if !seen[s.CutoffFraction] {
				seen[s.CutoffFraction] = true
				cutoffs = append(cutoffs, s.CutoffFraction)
			}
		}
	}
	header := []string{"run"}
	for _, c := range cutoffs {
		header = append(header, fmt.Sprintf("F1 at f = %g%% (edges)", 100*c))
	}
	rows := make([][]string, 0, len(reports))
	for i, r := range reports {
		if r == nil {
			return "", fmt.Errorf("notebook: report %q is nil", labels[i])
		}
		row := []string{labels[i]}
		for _, c := range cutoffs {
			v := "-"
			for _, s := range r.ViterbiMapSweep {
				if s.CutoffFraction == c {
					v = fmt.Sprintf("%.2f (%d)", s.F1, s.Edges)
				}
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	return MarkdownTable(header, rows)
}

// TrainEntropyMarkdown formats one row per jointly trained run: H(token∣place) and
// H(class∣token) of its training frames' hard tokens after the warm-up and after the
// joint phase (evaluate.Joint), in nats. A report without a joint record shows "-".
func TrainEntropyMarkdown(labels []string, reports []*evaluate.Report) (string, error) {
	if len(labels) != len(reports) {
		return "", fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	rows := make([][]string, 0, len(reports))
	for i, r := range reports {
		if r == nil {
			return "", fmt.Errorf("notebook: report %q is nil", labels[i])
		}
		row := []string{labels[i], "-", "-", "-", "-"}
		if r.Training != nil && r.Training.Joint != nil {
			j := r.Training.Joint
			for c, x := range []float64{j.Warmup.HTokenGivenPlace, j.End.HTokenGivenPlace, j.Warmup.HClassGivenToken, j.End.HClassGivenToken} {
				row[c+1] = fmt.Sprintf("%.3f", x)
			}
		}
		rows = append(rows, row)
	}
	return MarkdownTable([]string{"run", "H(token∣place) after warm-up", "after joint", "H(class∣token) after warm-up", "after joint"}, rows)
}
