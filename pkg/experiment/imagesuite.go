package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// ErrInterrupted is returned by a suite whose context was cancelled: rerunning it
// resumes every unfinished run from its last checkpoint.
var ErrInterrupted = errors.New("interrupted: rerun the same command to resume")

// paperTable3 holds the paper's Table 3 (image observations): perplexity, clone purity,
// state→place purity, action accuracy, map recall, map F1.
var paperTable3 = map[string][6]float64{
	"aliased":   {4.00, 0.98, 0.98, 1.00, 1.00, 1.00},
	"corridors": {5.71, 0.86, 0.98, 1.00, 1.00, 0.98},
	"room":      {6.56, 0.83, 0.95, 0.97, 1.00, 0.98},
	"two_rooms": {9.46, 0.88, 0.98, 0.99, 1.00, 1.00},
}

// paperTable4 holds the paper's Table 4: projected P, F1 (threshold 0.01), Viterbi-path
// P, R, F1 (cutoff 0.002).
var paperTable4 = map[string][5]float64{
	"aliased":   {0.44, 0.62, 1.00, 1.00, 1.00},
	"corridors": {0.24, 0.39, 0.95, 1.00, 0.98},
	"room":      {0.27, 0.42, 0.95, 1.00, 0.98},
	"two_rooms": {0.16, 0.27, 1.00, 1.00, 1.00},
}

// ImageSuite is paper Tables 3 and 4 from pixels: Envs × seeds 1..Seeds, each run
// with its environment's defaults (ImageRun) in Runs/RunName, its report copied to
// Out/images/, the tables written to Out/[<dataset>_][<arch>_]table{3,4}.md (or into
// Tables) beside the paper's numbers.
type ImageSuite struct {
	Envs     []string  // nil: ImageBenchmarks
	Dataset  string    // "mnist" (""), or "fashion"
	Arch     string    // "conv" (""), or "mlp"
	Seeds    int       // seeds 1..Seeds; at least 1
	Runs     string    // run directories ("": runs)
	Out      string    // results root ("": results)
	Tables   string    // where the tables go ("": Out)
	Collect  bool      // train nothing: tabulate the reports in Out/images
	Progress io.Writer // each run's live progress (nil: none)
}

// resolved fills the defaults and checks the fields.
func (s ImageSuite) resolved() (ImageSuite, error) {
	if len(s.Envs) == 0 {
		s.Envs = ImageBenchmarks
	}
	if s.Dataset == "" {
		s.Dataset = "mnist"
	}
	if s.Arch == "" {
		s.Arch = "conv"
	}
	if s.Runs == "" {
		s.Runs = "runs"
	}
	if s.Out == "" {
		s.Out = "results"
	}
	if s.Tables == "" {
		s.Tables = s.Out
	}
	switch {
	case s.Dataset != "mnist" && s.Dataset != "fashion":
		return s, &FieldError{"Dataset", fmt.Sprintf("%q", s.Dataset), "must be mnist or fashion"}
	case s.Arch != "conv" && s.Arch != "mlp":
		return s, &FieldError{"Arch", fmt.Sprintf("%q", s.Arch), "must be conv or mlp"}
	case s.Seeds < 1:
		return s, &FieldError{"Seeds", s.Seeds, "need at least 1"}
	}
	for _, e := range s.Envs {
		if _, err := pipeline.DefaultConfig(e); err != nil {
			return s, err
		}
	}
	return s, nil
}

// TablePaths are where the suite writes Tables 3 and 4.
func (s ImageSuite) TablePaths() (t3, t4 string) {
	s, _ = s.resolved()
	prefix := ""
	if s.Dataset != "mnist" {
		prefix += s.Dataset + "_"
	}
	if s.Arch != "conv" {
		prefix += s.Arch + "_"
	}
	return filepath.Join(s.Tables, prefix+"table3.md"), filepath.Join(s.Tables, prefix+"table4.md")
}

// RunImageSuite runs (or loads, or with Collect only reads) every run and writes
// Tables 3 and 4, returning their markdown. A run that fails (diverges) is a result:
// the other runs go on, the table lists it, and the error says how many failed. One
// line per run goes to log (nil: none); a cancelled ctx returns ErrInterrupted.
func RunImageSuite(ctx context.Context, s ImageSuite, log io.Writer) (table3, table4 string, err error) {
	if s, err = s.resolved(); err != nil {
		return "", "", err
	}
	dir := filepath.Join(s.Out, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	groups := map[string][]*evaluate.Report{}
	var failed []string
	t0 := time.Now()
	total, done := len(s.Envs)*s.Seeds, 0
	for _, env := range s.Envs {
		for seed := 1; seed <= s.Seeds; seed++ {
			cfg, err := ImageRun(env, s.Dataset, s.Arch, seed)
			if err != nil {
				return "", "", err
			}
			name := RunName(cfg)
			jsonPath := filepath.Join(dir, name+".json")
			var rep *evaluate.Report
			if s.Collect {
				r, err := evaluate.ReadJSON(jsonPath)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return "", "", err
				}
				rep = r
			} else {
				r, err := pipeline.Run(ctx, filepath.Join(s.Runs, name), cfg, s.Progress)
				if errors.Is(err, context.Canceled) {
					return "", "", ErrInterrupted
				}
				if err != nil {
					logf(log, "%s: %v\n", name, err)
					failed = append(failed, fmt.Sprintf("%s: %v", name, err))
					continue
				}
				if err := r.WriteJSON(jsonPath); err != nil {
					return "", "", err
				}
				rep = r
			}
			done++
			groups[env] = append(groups[env], rep)
			logf(log, "[%d/%d] %-10s seed %d  recall %.2f F1 %.3f  purity %.3f  action %.3f  H(tok|place) %.3f  %.0fs  (elapsed %s)\n",
				done, total, env, seed, rep.ViterbiMap.Recall, rep.ViterbiMap.F1, rep.StatePlacePurity, rep.ActionAccuracy,
				rep.HTokenGivenPlace, rep.Seconds["total"], time.Since(t0).Round(time.Second))
		}
	}
	table3, table4 = imageTables(s.Envs, s.Dataset, s.Arch, groups)
	if len(failed) > 0 {
		table3 += "\nRuns that failed (not in the means above):\n\n- " + strings.Join(failed, "\n- ") + "\n"
	}
	p3, p4 := s.TablePaths()
	for path, text := range map[string]string{p3: table3, p4: table4} {
		if err := atomicfile.WriteFile(path, []byte(text)); err != nil {
			return "", "", err
		}
		logf(log, "table written to %s\n", path)
	}
	if len(failed) > 0 {
		return table3, table4, fmt.Errorf("%d of %d runs failed (listed under the table)", len(failed), total)
	}
	return table3, table4, nil
}

// imageTables renders Tables 3 and 4 of the paper for the reports, with the paper's
// numbers beside ours (ours: mean ± s.d. over seeds, "paper" rows in italics).
func imageTables(envs []string, dataset, arch string, groups map[string][]*evaluate.Report) (t3, t4 string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Table 3: maps from %s pixels, unsupervised, %s VQ-VAE trained jointly (mean ± s.d. over seeds)\n\n", dataset, arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite images --dataset %s --arch %s`. Held-out episode with test-split images; "+
		"Viterbi-path map at cutoff 0.002; purity visit-weighted. The paper's numbers (its Table 3: supervised warm-up, "+
		"evaluation on training images) are in the *paper* rows.\n\n", dataset, arch)
	// The token class columns and the refinement's minutes appear where a report has them.
	classes, refine := false, false
	for _, rs := range groups {
		for _, r := range rs {
			classes = classes || r.ClassesShown > 0
			_, ok := r.Seconds["refine"]
			refine = refine || ok
		}
	}
	classHead, classRule, classPaper := "", "", ""
	if classes {
		classHead, classRule, classPaper = " token class purity | class perplexity |", "---|---|", " | |"
	}
	b.WriteString("| env | seeds | K' | N | perplexity |" + classHead + " clone purity | state→place purity | action acc. | map recall | map F1 | H(token\\|place) | interventions | minutes/run |\n")
	b.WriteString("|---|---|---|---|---|" + classRule + "---|---|---|---|---|---|---|---|\n")
	for _, env := range envs {
		rs := groups[env]
		if len(rs) == 0 {
			continue
		}
		s := evaluate.Aggregate(rs)
		c := func(m string, p int) string { return s.Format(m, p) }
		mins := s.Get("seconds.total")
		class := ""
		if classes {
			class = fmt.Sprintf(" %s | %s |", c("token_class_purity", 3), c("class_perplexity", 2))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |%s %s | %s | %s | %s | %s | %s | %s | %.1f ± %.1f |\n", env, len(rs), rs[0].NumTokens, rs[0].NumStates,
			c("perplexity", 2), class, c("clone_purity", 3), c("state_place_purity", 3), c("action_accuracy", 3),
			c("viterbi_map.recall", 2), c("viterbi_map.f1", 3), c("h_token_given_place", 3), interventions(rs), mins.Mean/60, mins.SD/60)
		if p, ok := paperTable3[env]; ok && dataset == "mnist" {
			fmt.Fprintf(&b, "| *paper* | | | | *%.2f* |%s *%.2f* | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *0.09–0.18* | | *≈60* |\n", p[0], classPaper, p[1], p[2], p[3], p[4], p[5])
		}
	}
	b.WriteString("\nWall time per phase, minutes per run (mean ± s.d.; compaction and evaluation take seconds):\n\n")
	if refine {
		b.WriteString("| env | warm-up | joint | finalisation | refinement | total |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| env | warm-up | joint | finalisation | total |\n|---|---|---|---|---|\n")
	}
	for _, env := range envs {
		if rs := groups[env]; len(rs) > 0 {
			s := evaluate.Aggregate(rs)
			m := func(phase string) string {
				st := s.Get("seconds." + phase)
				return fmt.Sprintf("%.1f ± %.1f", st.Mean/60, st.SD/60)
			}
			if refine {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", env, m("warmup"), m("joint"), m("final"), m("refine"), m("total"))
			} else {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", env, m("warmup"), m("joint"), m("final"), m("total"))
			}
		}
	}
	t3 = b.String()
	b.Reset()
	fmt.Fprintf(&b, "# Table 4: projected vs Viterbi-path map read-out, %s pixels, %s VQ-VAE (mean ± s.d. over seeds)\n\n", dataset, arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite images --dataset %s --arch %s`. Projected graph: every place edge with weight > 0.01; "+
		"Viterbi-path graph: edges traversed in more than 0.2%% of the held-out steps.\n\n", dataset, arch)
	b.WriteString("| env | seeds | projected P | projected F1 | Viterbi-path P | Viterbi-path R | Viterbi-path F1 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, env := range envs {
		rs := groups[env]
		if len(rs) == 0 {
			continue
		}
		s := evaluate.Aggregate(rs)
		c := func(m string) string { return s.Format(m, 2) }
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", env, len(rs),
			c("projected_map@0.01.precision"), c("projected_map@0.01.f1"),
			c("viterbi_map.precision"), c("viterbi_map.recall"), c("viterbi_map.f1"))
		if p, ok := paperTable4[env]; ok && dataset == "mnist" {
			fmt.Fprintf(&b, "| *paper* | | *%.2f* | *%.2f* | *%.2f* | *%.2f* | *%.2f* |\n", p[0], p[1], p[2], p[3], p[4])
		}
	}
	t4 = b.String()
	return t3, t4
}

// interventions is the anti-collapse interventions of the runs in all ("?" for a report
// that predates their record).
func interventions(rs []*evaluate.Report) string {
	n := 0
	for _, r := range rs {
		g := r.JointGuard()
		if g == nil {
			return "?"
		}
		n += len(g.Interventions)
	}
	return strconv.Itoa(n)
}

// Ablations are the joint-phase variants of the ablation suite: the name of its table
// row and the preset (pipeline.Presets) it lays over a run's defaults ("" none).
var Ablations = []struct {
	Name   string
	Preset string
}{
	{"joint (default)", ""},
	{"frozen VQ-VAE", "frozen"},
	{"no length normalisation", "no-length-norm"},
	{"no diversity penalty", "no-diversity"},
	{"paper τ = 1, α_div = 0.1", "paper-joint"},
	{"no jitter", "no-jitter"},
	{"no pruning", "no-pruning"},
	{"other gradient frames (conv: all, MLP: 256)", "other-grad-frames"},
	{"no collapse response", "no-collapse-response"},
}

// AblationRun is the configuration of the ablation suite's run of the variant called
// preset: ImageRun with the preset laid over it.
func AblationRun(env, dataset, arch string, seed int, preset string) (pipeline.Config, error) {
	cfg, err := ImageRun(env, dataset, arch, seed)
	if err != nil {
		return cfg, err
	}
	p, err := pipeline.LookupPreset(preset)
	if err != nil {
		return cfg, err
	}
	return p.Apply(cfg)
}

// AblationSuite is every Ablations variant on Envs × seeds 1..Seeds: what each
// mechanism of the joint phase buys (collapse or not, token consistency, the map).
// Its table is Out/[<arch>_]ablation.md, one row per run.
type AblationSuite struct {
	Envs     []string  // nil: aliased and two_rooms
	Dataset  string    // "mnist" (""), or "fashion"
	Arch     string    // "conv" (""), or "mlp"
	Seeds    int       // seeds 1..Seeds; at least 1
	Runs     string    // run directories ("": runs)
	Out      string    // results root ("": results)
	Collect  bool      // train nothing: tabulate Runs/<name>/report.json
	Progress io.Writer // each run's live progress (nil: none)
}

// RunAblationSuite runs (or with Collect reads) every variant and writes the table,
// rewritten after every run so that an interrupted suite keeps the rows it finished.
// A variant that diverges is a row of the table, not an error. It returns the table's
// markdown and path; one line per run goes to log (nil: none).
func RunAblationSuite(ctx context.Context, a AblationSuite, log io.Writer) (table, path string, err error) {
	envs := a.Envs
	if len(envs) == 0 {
		envs = []string{"aliased", "two_rooms"}
	}
	s, err := ImageSuite{Envs: envs, Dataset: a.Dataset, Arch: a.Arch, Seeds: a.Seeds, Runs: a.Runs, Out: a.Out}.resolved()
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Ablation of the joint phase (%s pixels, %s VQ-VAE)\n\n", s.Dataset, s.Arch)
	fmt.Fprintf(&b, "Generated by `gradcscg reproduce --suite ablation --arch %s --seeds %d`. One row per run; "+
		"held-out evaluation with test-split images. *Interventions*: anti-collapse rollbacks to a healthy checkpoint; "+
		"*perplexity*: codebook perplexity on the held-out frames; F1 and purity from the default (soft) read-out, "+
		"*hard F1* from Viterbi on the hard tokens.\n\n", s.Arch, s.Seeds)
	b.WriteString("| env | variant | seed | K' | interventions | perplexity | H(token\\|place) | map recall | map F1 | hard F1 | state→place purity | action acc. | minutes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	path = filepath.Join(s.Out, "ablation.md")
	if s.Arch != "conv" {
		path = filepath.Join(s.Out, s.Arch+"_ablation.md")
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil { // before any run, not after the first
		return "", "", err
	}
	total, done := len(s.Envs)*len(Ablations)*s.Seeds, 0
	flush := func() error {
		text := b.String()
		if done < total {
			text += fmt.Sprintf("\n%d of %d runs so far; rerun the same command to resume.\n", done, total)
		}
		return atomicfile.WriteFile(path, []byte(text))
	}
	for _, env := range s.Envs {
		for _, ab := range Ablations {
			for seed := 1; seed <= s.Seeds; seed++ {
				cfg, err := AblationRun(env, s.Dataset, s.Arch, seed, ab.Preset)
				if err != nil {
					return "", "", err
				}
				name := RunName(cfg)
				done++
				if a.Collect {
					rep, err := evaluate.ReadJSON(filepath.Join(s.Runs, name, pipeline.ReportFile))
					switch {
					case errors.Is(err, fs.ErrNotExist): // not run, or failed
						fmt.Fprintf(&b, "| %s | %s | %d | – | – | – | – | – | – | – | – | – | no report in %s |\n",
							env, ab.Name, seed, filepath.Join(s.Runs, name))
					case err != nil:
						return "", "", err
					default:
						b.WriteString(ablationRow(env, ab.Name, seed, rep))
					}
					continue
				}
				logf(log, "%s: %s\n", name, ab.Name)
				rep, err := pipeline.Run(ctx, filepath.Join(s.Runs, name), cfg, a.Progress)
				switch {
				case errors.Is(err, context.Canceled):
					return "", "", ErrInterrupted
				case err != nil:
					// A variant that diverges is a result of the ablation, not a failure of it.
					logf(log, "%s: %v\n", name, err)
					msg := err.Error()
					if i := strings.Index(msg, " ("); i > 0 {
						msg = msg[:i] // e.g. "pipeline: joint iteration 1103 diverged"
					}
					fmt.Fprintf(&b, "| %s | %s | %d | – | – | – | – | – | – | – | – | – | failed: %s |\n",
						env, ab.Name, seed, strings.ReplaceAll(msg, "|", "/"))
				default:
					b.WriteString(ablationRow(env, ab.Name, seed, rep))
				}
				if err := flush(); err != nil {
					return "", "", err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return "", "", err
	}
	return b.String(), path, nil
}

// ablationRow is the ablation table's row of one finished run.
func ablationRow(env, variant string, seed int, rep *evaluate.Report) string {
	hardF1 := "–"
	if o := rep.OtherReadout; o != nil && o.Decode == pipeline.DecodeHard {
		hardF1 = fmt.Sprintf("%.3f", o.ViterbiMapF1)
	}
	return fmt.Sprintf("| %s | %s | %d | %d | %v | %.2f | %.3f | %.2f | %.3f | %s | %.3f | %.3f | %.1f |\n",
		env, variant, seed, rep.NumTokens, interventions([]*evaluate.Report{rep}), rep.Perplexity, rep.HTokenGivenPlace,
		rep.ViterbiMap.Recall, rep.ViterbiMap.F1, hardF1, rep.StatePlacePurity, rep.ActionAccuracy, rep.Seconds["total"]/60)
}
