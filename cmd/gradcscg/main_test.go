package main

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
)

// run executes the command line and returns its exit code and outputs.
func run(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	stdout, stderr = &o, &e
	defer func() { stdout, stderr = os.Stdout, os.Stderr }()
	code = realMain(args)
	return code, o.String(), e.String()
}

// oneCleanError checks that errOut is exactly one line holding want and no trace.
func oneCleanError(t *testing.T, errOut, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 {
		t.Errorf("want one error line, got %d:\n%s", len(lines), errOut)
	}
	if !strings.Contains(errOut, want) {
		t.Errorf("error %q does not mention %q", errOut, want)
	}
	for _, bad := range []string{"panic", "goroutine", ".go:"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("error output contains %q:\n%s", bad, errOut)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	code, _, errOut := run(t, "frobnicate")
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	oneCleanError(t, errOut, `unknown command "frobnicate"`)
}

func TestUnknownEnvironment(t *testing.T) {
	code, _, errOut := run(t, "symbolic", "--env", "nowhere", "--quiet")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	oneCleanError(t, errOut, "nowhere")
}

func TestBadFlag(t *testing.T) {
	code, _, _ := run(t, "symbolic", "--trainer", "sgd", "--quiet")
	if code != 1 {
		t.Errorf("--trainer sgd: exit code %d, want 1", code)
	}
	code, _, errOut := run(t, "symbolic", "--no-such-flag")
	if code != 2 || !strings.Contains(errOut, "no-such-flag") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, errOut)
	}
}

func TestMalformedLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "room.txt")
	if err := os.WriteFile(path, []byte("// a ragged room\n0 1 2\n3 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "symbolic", "--layout", path, "--quiet")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	oneCleanError(t, errOut, path+":3:")
}

func TestTrainSaveLoadAndMismatch(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "aliased.chmm")
	report := filepath.Join(dir, "report.json")
	code, out, errOut := run(t, "symbolic", "--env", "aliased", "--set", "episodes=4", "--set", "steps=5000",
		"--quiet", "--save", model, "--json", report)
	if code != 0 {
		t.Fatalf("training failed (%d): %s", code, errOut)
	}
	if !strings.Contains(out, "Viterbi map") {
		t.Errorf("no report table in output:\n%s", out)
	}
	rep, err := evaluate.ReadJSON(report)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Env != "aliased" || rep.Trainer != "gradient" || rep.NumStates != 17 { // grown by splitting: a clone per place and the sink
		t.Errorf("report identity: env %q trainer %q N %d", rep.Env, rep.Trainer, rep.NumStates)
	}
	if rep.ViterbiMap.Recall < 0.99 {
		t.Errorf("small aliased run: Viterbi-map recall %.3f", rep.ViterbiMap.Recall)
	}
	// A checkpoint that cannot be read is one clean error, and is left in place; once
	// a run's report is written its checkpoint is removed.
	ckpt := filepath.Join(dir, "aliased.ckpt")
	if err := os.WriteFile(ckpt, []byte("garbled"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "symbolic", "--env", "aliased", "--set", "episodes=4", "--set", "steps=5000", "--quiet", "--checkpoint", ckpt)
	if code == 0 {
		t.Fatal("a garbled checkpoint was accepted")
	}
	oneCleanError(t, errOut, "checkpoint "+ckpt+" cannot be read")
	// A budget that does not grow by splitting has no checkpoint: one error, the file kept.
	code, _, errOut = run(t, "symbolic", "--env", "aliased", "--quiet", "--set", "split_rounds=0", "--checkpoint", ckpt)
	if code == 0 {
		t.Fatal("--checkpoint with split_rounds=0 accepted")
	}
	oneCleanError(t, errOut, "--checkpoint "+ckpt+": only a budget grown by splitting")
	if err := os.Remove(ckpt); err != nil {
		t.Fatal(err)
	}
	split := filepath.Join(dir, "split.json")
	if code, _, errOut = run(t, "symbolic", "--env", "aliased", "--set", "episodes=4", "--set", "steps=5000", "--quiet",
		"--set", "iters=20", "--set", "split_rounds=1", "--checkpoint", ckpt, "--json", split); code != 0 {
		t.Fatalf("with --checkpoint (%d): %s", code, errOut)
	}
	if r, err := evaluate.ReadJSON(split); err != nil || r.Training.Doublings != 1 {
		t.Fatalf("with --checkpoint: %v, want one split (a checkpoint saved)", err)
	}
	if _, err := os.Stat(ckpt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the checkpoint is left after the run: %v", err)
	}
	// The label-free verdict is printed and stored: this map is recovered.
	if d := rep.Diagnosis; d == nil || d.Verdict == nil || !d.Verdict.Resolved || !regexp.MustCompile(`map verdict \(no labels\) +resolved \(`).MatchString(out) {
		t.Errorf("verdict: %+v\n%s", d, out)
	}

	// The saved model evaluates again on its own environment...
	if code, _, errOut := run(t, "symbolic", "--env", "aliased", "--load", model, "--set", "steps=2000", "--quiet"); code != 0 {
		t.Errorf("--load on aliased failed: %s", errOut)
	}
	// ...but not on another configuration.
	code, _, errOut = run(t, "symbolic", "--env", "two_rooms", "--load", model, "--quiet")
	if code != 1 {
		t.Errorf("mismatched model: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "does not fit environment two_rooms")
	if !strings.Contains(errOut, "the map was trained on aliased: give --env aliased") {
		t.Errorf("the error does not name the map's environment: %s", errOut)
	}

	// A corrupt model file is reported, not trusted.
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.chmm")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "symbolic", "--env", "aliased", "--load", bad, "--quiet")
	if code != 1 {
		t.Errorf("corrupt model: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "bad.chmm")
}

// TestFlagParseErrorsAreOneLine: a value a flag cannot hold and an unknown flag are
// one line naming the flag (and its range or kind), not the whole usage.
func TestFlagParseErrorsAreOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--seed", "-1"}, "--seed -1: must be a non-negative integer"},
		{[]string{"symbolic", "--seed", "1.5"}, "--seed 1.5: must be a non-negative integer"},
		{[]string{"symbolic", "--iters", "5"}, "flag provided but not defined: -iters"},
		{[]string{"plan", "--colour", "red"}, "flag provided but not defined: -colour"},
		{[]string{"envs", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", c.args, code)
		}
		oneCleanError(t, errOut, c.want)
		if strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: the usage was printed:\n%s", c.args, errOut)
		}
	}
	// -h still prints the usage, with its flags.
	if code, _, errOut := run(t, "plan", "-h"); code != 0 || !strings.Contains(errOut, "--layout FILE") || !strings.Contains(errOut, "Flags:") {
		t.Errorf("plan -h: exit %d\n%s", code, errOut)
	}
}

// TestEnvs: one line per built-in environment, each with a description; envs -h has
// no empty "Flags:" section.
func TestEnvs(t *testing.T) {
	code, out, _ := run(t, "envs")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 13 {
		t.Fatalf("envs printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) < 7 {
			t.Errorf("no description: %q", l)
		}
	}
	if _, _, errOut := run(t, "envs", "-h"); strings.Contains(errOut, "Flags:") {
		t.Errorf("envs -h:\n%s", errOut)
	}
}

// TestSymbolicImpossibleHeldOutKeepsTheMap: a map that calls a held-out step
// impossible is one clear error saying what to try, and --save still writes the map.
func TestSymbolicImpossibleHeldOutKeepsTheMap(t *testing.T) {
	dir := t.TempDir()
	m := chmm.New(chmm.UniformClones(4, 2), 4, nil)
	n := m.N()
	for i := range n { // action 0 reaches nothing but the sink
		for j := 1; j < n; j++ {
			m.ThetaLogits[i*n+j] = math.Inf(-1)
		}
	}
	in, saved := filepath.Join(dir, "zeros.model"), filepath.Join(dir, "kept.model")
	if err := m.Save(in); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "symbolic", "--env", "aliased", "--load", in, "--save", saved, "--set", "steps=200", "--set", "eval_steps=500", "--quiet")
	if code == 0 {
		t.Fatal("exit 0")
	}
	oneCleanError(t, errOut, "held-out walk impossible")
	if !strings.Contains(errOut, "saved in "+saved) {
		t.Errorf("error %q does not say where the map is", errOut)
	}
	if _, err := chmm.Load(saved); err != nil {
		t.Errorf("the map was not saved: %v", err)
	}
}

// symbolicDefaults are the options the symbolic command's flags give when only --env
// and --trainer are set (seed 1).
func symbolicDefaults(env, trainer string) symbolicOptions {
	return symbolicOptions{env: env, trainer: trainer, seed: 1, size: "full"}
}

// with returns o with the settings kvs (--set).
func (o symbolicOptions) with(kvs ...string) symbolicOptions {
	o.sets = append(append(setFlag(nil), o.sets...), kvs...)
	return o
}

// TestSymbolicGrowDefault: the reference budget may grow (experiment.DefaultBudgetDoublings)
// unless clones_per_class or --clones-for sets it, which then stays as given;
// budget_doublings set after it wins.
func TestSymbolicGrowDefault(t *testing.T) {
	base := symbolicDefaults("aliased", "em")
	base.preset = "fixed-budget"
	for _, c := range []struct {
		name   string
		change func(o symbolicOptions) symbolicOptions
		want   int
	}{
		{"defaults", func(o symbolicOptions) symbolicOptions { return o }, experiment.DefaultBudgetDoublings},
		{"clones_per_class=5", func(o symbolicOptions) symbolicOptions { return o.with("clones_per_class=5") }, 0},
		{"--clones-for 0=3", func(o symbolicOptions) symbolicOptions { o.clonesPerToken = "0=3"; return o }, 0},
		{"clones_per_class=5 budget_doublings=2", func(o symbolicOptions) symbolicOptions {
			return o.with("clones_per_class=5", "budget_doublings=2")
		}, 2},
		{"budget_doublings=0", func(o symbolicOptions) symbolicOptions { return o.with("budget_doublings=0") }, 0},
	} {
		s, _, err := symbolicConfig(c.change(base))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.GrowRounds != c.want {
			t.Errorf("%s: GrowRounds %d, want %d", c.name, s.GrowRounds, c.want)
		}
	}
}

// TestSymbolicViterbiIters: viterbi_iters sets EM's hard iterations (default 100),
// and a value outside its range is one clean error.
func TestSymbolicViterbiIters(t *testing.T) {
	o := symbolicDefaults("aliased", "em")
	o.preset = "fixed-budget"
	s, _, err := symbolicConfig(o)
	if err != nil || s.ViterbiIters != 100 {
		t.Fatalf("default: ViterbiIters %d, err %v", s.ViterbiIters, err)
	}
	if s, _, err = symbolicConfig(o.with("viterbi_iters=0")); err != nil || s.ViterbiIters != 0 {
		t.Fatalf("viterbi_iters=0: ViterbiIters %d, err %v", s.ViterbiIters, err)
	}
	code, _, errOut := run(t, "symbolic", "--env", "aliased", "--set", "viterbi_iters=-3")
	if code == 0 {
		t.Fatal("viterbi_iters=-3 accepted")
	}
	oneCleanError(t, errOut, "--set viterbi_iters=-3: need an integer in [0, 100000]")
}

// TestSymbolicChunkAbove: chunk_above sets when the gradient trainer reads random
// chunks (default experiment.SplitChunkAbove; with a fixed budget chmm.DefaultChunkAbove;
// 0 never) and fold_alike its folding of
// alike clones (default DefaultFoldAlike for the gradient trainer, none for EM); a
// value out of range is one clean error.
func TestSymbolicChunkAbove(t *testing.T) {
	o := symbolicDefaults("tiled", "gradient")
	s, _, err := symbolicConfig(o)
	if err != nil || s.ChunkAbove != experiment.SplitChunkAbove {
		t.Fatalf("default: ChunkAbove %g, err %v", s.ChunkAbove, err)
	}
	if s, _, err := symbolicConfig(o.with("clones_per_class=4")); err != nil || s.ChunkAbove != chmm.DefaultChunkAbove {
		t.Fatalf("fixed budget: ChunkAbove %g, err %v", s.ChunkAbove, err)
	}
	if s, _, err = symbolicConfig(o.with("chunk_above=0")); err != nil || s.ChunkAbove != 0 {
		t.Fatalf("chunk_above=0: ChunkAbove %g, err %v", s.ChunkAbove, err)
	}
	if s.FoldAlike != experiment.DefaultFoldAlike {
		t.Errorf("gradient default: FoldAlike %g, want %g", s.FoldAlike, experiment.DefaultFoldAlike)
	}
	if s, _, err = symbolicConfig(o.with("fold_alike=0")); err != nil || s.FoldAlike != 0 {
		t.Fatalf("fold_alike=0: FoldAlike %g, err %v", s.FoldAlike, err)
	}
	em := o
	em.trainer = "em"
	if s, _, err = symbolicConfig(em); err != nil || s.FoldAlike != 0 {
		t.Fatalf("EM: FoldAlike %g, err %v, want 0", s.FoldAlike, err)
	}
	for _, c := range []struct{ args, want string }{
		{"chunk_above=-3", "--set chunk_above=-3: need a number in [0, 1000000000000000]"},
		{"fold_alike=1", "--set fold_alike=1: need a number in [0, 1)"},
	} {
		code, _, errOut := run(t, "symbolic", "--env", "aliased", "--set", c.args)
		if code == 0 {
			t.Fatalf("%s accepted", c.args)
		}
		oneCleanError(t, errOut, c.want)
	}
	if s, _, err = symbolicConfig(o); err != nil || s.DropCost != experiment.DefaultDropCost {
		t.Fatalf("gradient default: DropCost %g, err %v", s.DropCost, err)
	}
	if s, _, err = symbolicConfig(o.with("drop_cost=0")); err != nil || s.DropCost != 0 {
		t.Fatalf("drop_cost=0: DropCost %g, err %v", s.DropCost, err)
	}
	if s, _, err = symbolicConfig(o); err != nil || s.FoldCost != experiment.DefaultFoldCost {
		t.Fatalf("gradient default: FoldCost %g, err %v, want %g", s.FoldCost, err, experiment.DefaultFoldCost)
	}
	for _, c := range []struct {
		name string
		o    symbolicOptions
	}{
		{"EM", em},
		{"split_rounds=0", o.with("split_rounds=0")},
		{"clones_per_class=20", o.with("clones_per_class=20")},
		{"fold_alike=0", o.with("fold_alike=0")},
		{"fold_cost=0", o.with("fold_cost=0")},
	} {
		if s, _, err = symbolicConfig(c.o); err != nil || s.FoldCost != 0 {
			t.Errorf("%s: FoldCost %g, err %v, want 0", c.name, s.FoldCost, err)
		}
	}
	if s, _, err = symbolicConfig(o.with("drop_floor=0.003", "split_share=0.01", "fold_cost=1")); err != nil ||
		s.DropFloor != 0.003 || s.SplitShare != 0.01 || s.FoldCost != 1 {
		t.Fatalf("drop_floor=0.003 split_share=0.01 fold_cost=1: DropFloor %g, SplitShare %g, FoldCost %g, err %v",
			s.DropFloor, s.SplitShare, s.FoldCost, err)
	}
	if s, _, err = symbolicConfig(o.with("split_surprised=true")); err != nil || !s.SplitSurprised {
		t.Fatalf("split_surprised=true: SplitSurprised %v, err %v", s.SplitSurprised, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "drop_cost=-0.5"}, "--set drop_cost=-0.5: need a number in [0, 10]"},
		{[]string{"--set", "drop_floor=2"}, "--set drop_floor=2: need a number in [0, 1]"},
		{[]string{"--trainer", "em", "--set", "drop_floor=0.003"}, "drop_floor=0.003: only the gradient trainer"},
		{[]string{"--set", "split_share=1"}, "--set split_share=1: need a number in [0, 1)"},
		{[]string{"--set", "split_rounds=0", "--set", "split_share=0.01"}, "split_share=0.01: only a budget grown by splitting"},
		{[]string{"--set", "fold_cost=1.5"}, "--set fold_cost=1.5: need a number in [0, 1]"},
		{[]string{"--set", "fold_cost=-0.5"}, "--set fold_cost=-0.5: need a number in [0, 1]"},
		{[]string{"--set", "fold_alike=0", "--set", "fold_cost=1"}, "fold_cost=1: only a budget grown by splitting, with fold_alike > 0"},
		{[]string{"--trainer", "em", "--set", "fold_cost=1"}, "fold_cost=1: only a budget grown by splitting, with fold_alike > 0"},
		{[]string{"--trainer", "em", "--set", "split_surprised=true"}, "split_surprised: only the gradient trainer's budget grown by splitting"},
		{[]string{"--set", "split_rounds=0", "--set", "split_surprised=true"}, "split_surprised: only the gradient trainer's budget grown by splitting"},
		{[]string{"--set", "split_surprised=true", "--set", "split_share=0.01"}, "split_surprised and split_share=0.01: choose one"},
		{[]string{"--set", "doublings=3"}, `--set doublings: no such setting`},
		{[]string{"--set", "seed=3"}, "--set seed: not a setting (it has a flag of its own)"},
	} {
		code, _, errOut := run(t, append([]string{"symbolic", "--env", "aliased"}, c.args...)...)
		if code == 0 {
			t.Fatalf("%v accepted", c.args)
		}
		oneCleanError(t, errOut, c.want)
	}
}

// TestGrowRoundsThatFit: growth is limited to the doublings whose budget would still fit
// in memory (machines sized from aliased's own estimate at 21, 41 and 81 states), to
// none when even one would not, and not at all when the memory is unknown.
func TestGrowRoundsThatFit(t *testing.T) {
	defer func(f func() float64) { memTotal = f }(memTotal)
	o := symbolicDefaults("aliased", "em")
	o.preset = "fixed-budget"
	s, env, err := symbolicConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 21
	for _, c := range []struct {
		mem  float64
		want int
	}{
		{0, experiment.DefaultBudgetDoublings}, // memory unknown: no limit
		{1e12, experiment.DefaultBudgetDoublings},
		{1.25 * symbolicBytes(s, env, 1+(n-1)<<2), 2},
		{1.25 * symbolicBytes(s, env, 1+(n-1)<<1), 1},
		{1.2 * symbolicBytes(s, env, n), 0},
	} {
		memTotal = func() float64 { return c.mem }
		if g := growRoundsThatFit(s, env, n); g != c.want {
			t.Errorf("memory %.3g B: %d rounds, want %d", c.mem, g, c.want)
		}
	}
}

// TestSplitStatesThatFit: a budget grown by splitting stops at the most states that fit
// in memory (MaxSplitStates halved), without limit when the memory is unknown; a run
// says so and stops splitting there.
func TestSplitStatesThatFit(t *testing.T) {
	defer func(f func() float64) { memTotal = f }(memTotal)
	o := symbolicDefaults("aliased", "em")
	s, env, err := symbolicConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5 // one clone for each of 4 tokens, and the sink
	for _, c := range []struct {
		mem  float64
		want int
	}{
		{0, experiment.MaxSplitStates},
		{1e15, experiment.MaxSplitStates},
		{1.25 * symbolicBytes(s, env, 512), 512},
		{1.25 * symbolicBytes(s, env, 8), 8},
		{1.25 * symbolicBytes(s, env, n), 4}, // n itself fits; halving stops below it
	} {
		memTotal = func() float64 { return c.mem }
		if g := splitStatesThatFit(s, env, n); g != c.want {
			t.Errorf("memory %.3g B: %d states, want %d", c.mem, g, c.want)
		}
	}
	memTotal = func() float64 { return 1.25 * symbolicBytes(s, env, 8) }
	code, _, errOut := run(t, "symbolic", "--env", "aliased", "--trainer", "em", "--seed", "1")
	if code != 0 || !strings.Contains(errOut, "grow by splitting to 8 states, not 2048") ||
		!strings.Contains(errOut, "splitting would pass 8 states") {
		t.Errorf("exit %d; stderr %q", code, errOut[max(0, len(errOut)-600):])
	}
}

// TestSymbolicDoublings: split_rounds grows a budget from one clone per token with one
// start, by default for both trainers; a budget given, budget doublings, starts above
// one or split_rounds 0 train the reference budget instead (--preset fixed-budget),
// from EM's 3 starts or the gradient trainer's up to 5.
func TestSymbolicDoublings(t *testing.T) {
	o := symbolicDefaults("aliased", "em").with("split_rounds=6")
	s, _, err := symbolicConfig(o)
	if err != nil || s.Doublings != 6 || s.Restarts != 1 || s.GrowRounds != 0 {
		t.Fatalf("split_rounds=6: Doublings %d, Restarts %d, GrowRounds %d, err %v", s.Doublings, s.Restarts, s.GrowRounds, err)
	}
	for _, c := range []struct {
		name                           string
		preset                         string
		sets                           []string
		clonesFor                      string
		doublings, restarts, growRound int
	}{
		{"defaults", "", nil, "", 16, 1, 0},
		{"restarts=1", "", []string{"restarts=1"}, "", 16, 1, 0},
		{"split_rounds=0", "", []string{"split_rounds=0"}, "", 0, -1, 3},
		{"--preset fixed-budget", "fixed-budget", nil, "", 0, -1, 3},
		{"clones_per_class=5", "", []string{"clones_per_class=5"}, "", 0, -1, 0},
		{"--clones-for 0=3", "", nil, "0=3", 0, -1, 0},
		{"budget_doublings=2", "", []string{"budget_doublings=2"}, "", 0, -1, 2},
		{"restarts=4", "", []string{"restarts=4"}, "", 0, 4, 3},
	} {
		for _, tr := range []string{"em", "gradient"} {
			o := symbolicDefaults("aliased", tr).with(c.sets...)
			o.preset, o.clonesPerToken = c.preset, c.clonesFor
			want := c.restarts
			if want < 0 {
				want = map[string]int{"em": 3, "gradient": 5}[tr]
			}
			s, _, err := symbolicConfig(o)
			if err != nil || s.Doublings != c.doublings || s.Restarts != want || s.GrowRounds != c.growRound || s.Validate() != nil ||
				s.UntilFit != (tr == "gradient" && c.doublings == 0) {
				t.Errorf("%s %s: Doublings %d, Restarts %d, GrowRounds %d, UntilFit %v (want %d, %d, %d), err %v, Validate %v", tr, c.name,
					s.Doublings, s.Restarts, s.GrowRounds, s.UntilFit, c.doublings, want, c.growRound, err, s.Validate())
			}
		}
	}
	o = symbolicDefaults("aliased", "gradient").with("tol=1e-5")
	if s, _, err := symbolicConfig(o); err != nil || s.Tol != 1e-5 {
		t.Errorf("tol=1e-5: Tol %g, err %v", s.Tol, err)
	}
	for _, c := range []struct{ args, want string }{
		{"tol=2", "--set tol=2: need a number in [0, 1]"},
		{"split_rounds=17", "--set split_rounds=17: need an integer in [0, 16]"},
	} {
		code, _, errOut := run(t, "symbolic", "--env", "aliased", "--trainer", "em", "--set", c.args)
		if code == 0 {
			t.Fatalf("%s accepted", c.args)
		}
		oneCleanError(t, errOut, c.want)
	}
}
