package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// TestSymbolicTableVerdict: the verdict column appears when some report has a verdict,
// counting the resolved ones, and shows "–" for a row without one.
func TestSymbolicTableVerdict(t *testing.T) {
	judged := func(ok bool) *evaluate.Report {
		return &evaluate.Report{NumStates: 7, Diagnosis: &chmm.Diagnosis{Verdict: &chmm.Verdict{Resolved: ok}}}
	}
	order := []string{"tiled/em", "tiled/gradient"}
	md := symbolicTable("bigger", 0, order, map[string][]*evaluate.Report{
		"tiled/em":       {judged(true), judged(false), judged(true)},
		"tiled/gradient": {{NumStates: 7}},
	})
	for _, want := range []string{"| verdict: resolved | seconds/run |", "| tiled | em | 3 | 7 |", "| 2/3 |", "| tiled | gradient | 1 | 7 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| tiled | gradient |") && !strings.Contains(line, "| – |") {
			t.Errorf("the row without a verdict does not show –: %s", line)
		}
	}
	plain := symbolicTable("symbolic", 0, order[1:], map[string][]*evaluate.Report{"tiled/gradient": {{NumStates: 7}}})
	if strings.Contains(plain, "verdict") {
		t.Errorf("a table without verdicts has the column:\n%s", plain)
	}
	// The bigger worlds' table adds the projected map's F1, before the verdict.
	if !strings.Contains(md, "| action acc. | projected F1 | verdict: resolved |") || strings.Contains(plain, "projected") {
		t.Errorf("projected F1 column: bigger\n%s\nsymbolic\n%s", md, plain)
	}
}

// TestRunName: the defaults name a run <env>_<dataset>_seed<N>, and every setting that
// differs from them, joint iterations included, changes the name.
func TestRunName(t *testing.T) {
	cfg, err := ImageRun("aliased", "mnist", "conv", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := RunName(cfg); got != "aliased_mnist_seed1" {
		t.Errorf("defaults: %q", got)
	}
	seen := map[string]string{"aliased_mnist_seed1": "defaults"}
	for _, c := range []struct {
		what   string
		change func(*pipeline.Config)
		want   string
	}{
		{"joint iterations", func(c *pipeline.Config) { c.Joint.Iters = 1000 }, "aliased_mnist_seed1_joint1000"},
		{"λ", func(c *pipeline.Config) { c.Joint.Lambda = 2 }, "aliased_mnist_seed1_lambda2"},
		{"HMM pre-training", func(c *pipeline.Config) { c.Joint.PretrainIters = 500 }, "aliased_mnist_seed1_pretrain500"},
		{"merged warm-up codes", func(c *pipeline.Config) { c.VQVAE.K, c.Warmup.MergeCodes = 16, 30 }, "aliased_mnist_seed1_codes16_merge30"},
		{"merged joint tokens", func(c *pipeline.Config) { c.Final.MergeTokens = 100 }, "aliased_mnist_seed1_mergetokens100"},
		{"τ", func(c *pipeline.Config) { c.VQVAE.Tau = 1 }, "aliased_mnist_seed1_tau1"},
		{"MLP", func(c *pipeline.Config) { *c = c.WithArch("mlp") }, "aliased_mnist_seed1_mlp"},
		{"CI size", func(c *pipeline.Config) { *c = SizeCI.Pipeline(*c) }, "aliased_mnist_seed1_mlp_ci"},
		{"supervised warm-up", func(c *pipeline.Config) { c.VQVAE.Classify = true }, "aliased_mnist_seed1_supervised"},
		{"the MLP's collapse level on conv", func(c *pipeline.Config) { c.Joint.CollapseLevel = 0.25 }, "aliased_mnist_seed1_cl0.25"},
		{"conv's collapse level on the MLP", func(c *pipeline.Config) { *c = c.WithArch("mlp"); c.Joint.CollapseLevel = 0.15 }, "aliased_mnist_seed1_mlp_cl0.15"},
		{"the MLP's α_div end on conv", func(c *pipeline.Config) { c.Joint.AlphaDivEnd = 0.1 }, "aliased_mnist_seed1_divend0.1"},
		{"conv's α_div end on the MLP", func(c *pipeline.Config) { *c = c.WithArch("mlp"); c.Joint.AlphaDivEnd = 0.03 }, "aliased_mnist_seed1_mlp_divend0.03"},
		{"a fixed finalisation budget", func(c *pipeline.Config) { c.Final.BudgetDoublings = 0 }, "aliased_mnist_seed1_grow0"},
		{"the EM finalisation", func(c *pipeline.Config) { *c = c.WithFinalTrainer(pipeline.FinalEM) }, "aliased_mnist_seed1_finalem"},
		{"the EM finalisation, 4 doublings", func(c *pipeline.Config) { *c = c.WithFinalTrainer(pipeline.FinalEM); c.Final.SplitRounds = 4 }, "aliased_mnist_seed1_finalem_doublings4"},
		{"the EM finalisation, 300 iterations per round", func(c *pipeline.Config) { *c = c.WithFinalTrainer(pipeline.FinalEM); c.Final.Iters = 300 }, "aliased_mnist_seed1_finalem_iters300"},
	} {
		c2 := cfg
		c.change(&c2)
		got := RunName(c2)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%s and %s share the name %q", c.what, prev, got)
		}
		seen[got] = c.what
	}
}

// TestRunNameEnvironmentSettings: the settings chosen for big_room's and tiled's
// worlds (pipeline.WorldSettings) are their defaults, so a run with no other setting has the plain name,
// and a setting changed back to the generic default is what the name says.
func TestRunNameEnvironmentSettings(t *testing.T) {
	for _, c := range []struct {
		env    string
		change func(*pipeline.Config)
		want   string
	}{
		{"big_room", func(*pipeline.Config) {}, "big_room_mnist_seed1"},
		{"tiled", func(*pipeline.Config) {}, "tiled_mnist_seed1"},
		{"tiled", func(c *pipeline.Config) { *c = c.WithFinalTrainer(pipeline.FinalGradient) }, "tiled_mnist_seed1_finalgradient"},
		{"big_room", func(c *pipeline.Config) { c.Joint.ScaledEmissions = false }, "big_room_mnist_seed1_noscaled"},
		{"big_room", func(c *pipeline.Config) { c.VQVAE.K = 10 }, "big_room_mnist_seed1_codes10"},
	} {
		cfg, err := ImageRun(c.env, "mnist", "conv", 1)
		if err != nil {
			t.Fatal(err)
		}
		c.change(&cfg)
		if got := RunName(cfg); got != c.want {
			t.Errorf("%s: %q, want %q", c.env, got, c.want)
		}
	}
}

// TestAblationRunNames: the ablation suite's run directories keep the names the
// previous version gave them (copied from its `reproduce --suite ablation --collect`
// listing of missing runs), on both architectures.
func TestAblationRunNames(t *testing.T) {
	want := map[string][]string{
		"conv": {"aliased_mnist_seed1", "aliased_mnist_seed1_frozen", "aliased_mnist_seed1_nolennorm", "aliased_mnist_seed1_nodiv",
			"aliased_mnist_seed1_div0.1_divend0.1_tau1", "aliased_mnist_seed1_jitter0", "aliased_mnist_seed1_prune0",
			"aliased_mnist_seed1_grad0", "aliased_mnist_seed1_cl0"},
		"mlp": {"aliased_mnist_seed1_mlp", "aliased_mnist_seed1_mlp_frozen", "aliased_mnist_seed1_mlp_nolennorm",
			"aliased_mnist_seed1_mlp_nodiv", "aliased_mnist_seed1_mlp_div0.1_tau1", "aliased_mnist_seed1_mlp_jitter0",
			"aliased_mnist_seed1_mlp_prune0", "aliased_mnist_seed1_mlp_grad256", "aliased_mnist_seed1_mlp_cl0"},
	}
	for arch, names := range want {
		for i, ab := range Ablations {
			cfg, err := AblationRun("aliased", "mnist", arch, 1, ab.Preset)
			if err != nil {
				t.Fatal(err)
			}
			if got := RunName(cfg); got != names[i] {
				t.Errorf("%s %s: %q, want %q", arch, ab.Name, got, names[i])
			}
		}
	}
	// A setting without a name of its own is named generically; a preset names the
	// settings it explains that have none.
	cfg, _ := ImageRun("aliased", "mnist", "conv", 1)
	cfg.Final.LR = 0.05
	if got := RunName(cfg); got != "aliased_mnist_seed1_final.lr0.05" {
		t.Errorf("final.lr 0.05: %q", got)
	}
	p, _ := pipeline.LookupPreset("paper")
	paper, _ := p.Apply(cfg)
	if got := RunName(paper); got != "aliased_mnist_seed1_div0.1_divend0_tau1_jitter0_prune0_grow0_grad0_joint2000_paper" {
		t.Errorf("paper: %q", got)
	}
}

// TestAblationSuiteCreatesOut: the ablation suite writes its table into an output
// directory that does not exist yet (it used to fail there after its first run).
func TestAblationSuiteCreatesOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "new", "results")
	table, path, err := RunAblationSuite(context.Background(), AblationSuite{Envs: []string{"aliased"}, Seeds: 1,
		Runs: t.TempDir(), Out: out, Collect: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(out, "ablation.md") {
		t.Errorf("path %s, want %s", path, filepath.Join(out, "ablation.md"))
	}
	raw, err := os.ReadFile(path)
	if err != nil || string(raw) != table {
		t.Fatalf("table file: %v (%d bytes, want %d)", err, len(raw), len(table))
	}
	if n := strings.Count(table, "| aliased |"); n != len(Ablations) {
		t.Errorf("%d aliased rows, want %d:\n%s", n, len(Ablations), table)
	}
}

// TestSymbolicSuiteCheckpoint: a suite run finds its seed's checkpoint beside the
// report (a garbled one is an error naming it, never overwritten), starts over with
// Force, and leaves none once the report is written.
func TestSymbolicSuiteCheckpoint(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "symbolic")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "aliased_gradient_seed1.ckpt")
	if err := os.WriteFile(ckpt, []byte("garbled"), 0o644); err != nil {
		t.Fatal(err)
	}
	suite := SymbolicSuite{Name: "symbolic", Envs: []string{"aliased"}, Trainers: []string{"gradient"}, Seeds: 1, Out: out}
	if _, _, err := RunSymbolicSuite(suite, nil); err == nil || !strings.Contains(err.Error(), ckpt) {
		t.Fatalf("garbled checkpoint: %v, want an error naming %s", err, ckpt)
	}
	suite.Force = true
	if _, _, err := RunSymbolicSuite(suite, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := evaluate.ReadJSON(filepath.Join(dir, "aliased_gradient_seed1.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
		t.Errorf("checkpoint left after the report: %v", err)
	}
}

// TestSymbolicSuiteSteps: a suite with its data size given trains walks of that
// length, and its reports and table sit beside the defaults' under their own names;
// a size out of range is an error naming the field.
func TestSymbolicSuiteSteps(t *testing.T) {
	out := t.TempDir()
	suite := SymbolicSuite{Name: "symbolic", Envs: []string{"aliased"}, Trainers: []string{"gradient"}, Seeds: 1, Out: out, Steps: 2000}
	table, path, err := RunSymbolicSuite(suite, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "symbolic_steps2000.md"); path != want {
		t.Errorf("table at %s, want %s", path, want)
	}
	if !strings.Contains(table, "--steps 2000") || !strings.Contains(table, "| aliased | gradient | 1 |") {
		t.Errorf("table does not name the data size or lacks the run:\n%s", table)
	}
	dir := filepath.Join(out, "symbolic")
	rep, err := evaluate.ReadJSON(filepath.Join(dir, "aliased_gradient_seed1_steps2000.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps != 2000 {
		t.Errorf("report of %d training steps, want 2000", rep.Steps)
	}
	if _, err := os.Stat(filepath.Join(dir, "aliased_gradient_seed1.json")); !os.IsNotExist(err) {
		t.Errorf("a default-named report was written: %v", err)
	}
	for _, steps := range []int{-1, 1, maxSuiteSteps + 1} {
		suite.Steps = steps
		if _, _, err := RunSymbolicSuite(suite, nil); err == nil || !strings.Contains(err.Error(), "Steps") {
			t.Errorf("Steps %d: %v, want an error naming Steps", steps, err)
		}
	}
}

// TestSymbolicSuiteStaleReport: a stored report whose training walks are not the
// suite's (tiled's report from when its reference walk was 150,000 steps) is left
// out of the table with a line naming it, or re-run, never tabulated as the
// reference's; one of the suite's data size is read.
func TestSymbolicSuiteStaleReport(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "bigger")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyReport := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", "results", from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyReport("archive/tiled-150000/bigger/tiled_gradient_seed1.json", "tiled_gradient_seed1.json")
	copyReport("bigger/tiled_gradient_seed2.json", "tiled_gradient_seed2.json")
	var log strings.Builder
	suite := SymbolicSuite{Name: "bigger", Envs: []string{"tiled"}, Trainers: []string{"gradient"}, Seeds: 2, Out: out, Collect: true}
	table, _, err := RunSymbolicSuite(suite, &log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "left out " + filepath.Join(dir, "tiled_gradient_seed1.json") + ": its training walks are 1 × 150000 steps, the suite's 1 × 300000"; !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks %q", log.String(), want)
	}
	if !strings.Contains(table, "| tiled | gradient | 1 |") {
		t.Errorf("table should hold the one 300,000-step report:\n%s", table)
	}
	if _, err := readSuiteReport(filepath.Join(dir, "tiled_gradient_seed1.json"), "tiled", 150000); err != nil {
		t.Errorf("read at --steps 150000: %v", err)
	}
}
