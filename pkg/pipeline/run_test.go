package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// tinyConfig is a fast aliased configuration (MLP VQ-VAE, short episodes) for the
// mechanics of a run: phases, checkpoints, resume, the monitor.
func tinyConfig(t testing.TB) Config {
	t.Helper()
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data.Episodes, cfg.Data.Steps, cfg.Eval.Steps = 2, 600, 1000
	cfg.VQVAE.Arch, cfg.VQVAE.D = "mlp", 16
	cfg.Warmup.Epochs, cfg.Warmup.Batch = 2, 64
	cfg.Warmup.RecenterFrames = 1000
	cfg.Joint.Iters, cfg.Joint.ChunkLen, cfg.Joint.Batch, cfg.Joint.CheckpointEvery = 16, 64, 2, 5
	cfg.Final.Iters = 100
	return cfg
}

func progressOut() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return nil
}

func TestDefaultConfigs(t *testing.T) {
	for _, tc := range []struct {
		env            string
		k, clones, eps int
		budget         string
	}{
		{"aliased", 4, 5, 4, BudgetUniform},
		{"corridors", 7, 5, 4, BudgetUniform},
		// room's per-class budget (9 border digits × 4 + 20 interior = 56 clones) without
		// labels: 56 / 10 = 5.6 → 6 clones per token on average, by token share.
		{"room", 10, 6, 4, BudgetShare},
		{"two_rooms", 10, 15, 10, BudgetUniform},
	} {
		cfg, err := DefaultConfig(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", tc.env, err)
		}
		if cfg.Joint.Iters != 1500 || cfg.Joint.CollapseFrac != 0 || cfg.VQVAE.Tau != 0.2 || cfg.Joint.AlphaDiv != 1 || cfg.Joint.AlphaDivEnd != 0.03 {
			t.Errorf("%s: joint phase %d iterations, guard %g, τ %g, α_div %g → %g; want 1500, 0, 0.2, 1 → 0.03",
				tc.env, cfg.Joint.Iters, cfg.Joint.CollapseFrac, cfg.VQVAE.Tau, cfg.Joint.AlphaDiv, cfg.Joint.AlphaDivEnd)
		}
		if cfg.Final.BudgetDoublings != 2 || cfg.Final.Budget != BudgetShare || cfg.Final.Prune != 0.001 {
			t.Errorf("%s: finalisation budget %q growing %d times, pruning %g; want share, 2, 0.001", tc.env, cfg.Final.Budget, cfg.Final.BudgetDoublings, cfg.Final.Prune)
		}
		if cfg.Joint.Budget != tc.budget {
			t.Errorf("%s: budget %q, want %q", tc.env, cfg.Joint.Budget, tc.budget)
		}
		if cfg.VQVAE.K != tc.k || cfg.Joint.Clones != tc.clones || cfg.Data.Episodes != tc.eps || cfg.Data.Steps != 10000 || cfg.Joint.ChunkLen != 256 || cfg.Joint.Batch != 4 {
			t.Errorf("%s: K=%d clones=%d episodes=%d steps=%d chunk=%d batch=%d", tc.env, cfg.VQVAE.K, cfg.Joint.Clones, cfg.Data.Episodes, cfg.Data.Steps, cfg.Joint.ChunkLen, cfg.Joint.Batch)
		}
	}
	if _, err := DefaultConfig("nowhere"); err == nil {
		t.Error("unknown environment accepted")
	}
	// The arch-dependent defaults follow WithArch both ways.
	c, _ := DefaultConfig("room")
	mlp := c.WithArch("mlp")
	if mlp.Joint.AlphaDivEnd != 0.1 || mlp.Joint.GradFrames != 0 || mlp.Joint.CollapseLevel != 0.25 {
		t.Errorf("MLP: α_div end %g, grad frames %d, collapse level %g; want 0.1, 0, 0.25", mlp.Joint.AlphaDivEnd, mlp.Joint.GradFrames, mlp.Joint.CollapseLevel)
	}
	if back := mlp.WithArch("conv"); back != c {
		t.Errorf("conv → mlp → conv: %+v, want %+v", back, c)
	}
}

func TestConfigValidate(t *testing.T) {
	base, _ := DefaultConfig("aliased")
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"dataset", func(c *Config) { c.Dataset = "cifar" }, "dataset=cifar: need mnist or fashion"},
		{"chunk", func(c *Config) { c.Joint.ChunkLen = 1 }, "joint.chunk_len=1: need an integer in [2, 10000000]"},
		{"chunk above steps", func(c *Config) { c.Joint.ChunkLen = c.Data.Steps + 1 }, "joint.chunk_len=10001: need at most data.steps = 10000"},
		{"budget", func(c *Config) { c.Joint.Budget = "labels" }, "joint.budget=labels: need uniform or share"},
		{"lambda", func(c *Config) { c.Joint.Lambda = -1 }, "joint.lambda=-1: need a number in [0, 1000]"},
		{"collapse", func(c *Config) { c.Joint.CollapseFrac = 1 }, "joint.collapse_frac=1: need a number in [0, 1)"},
		{"k", func(c *Config) { c.VQVAE.K = 1 }, "vqvae.k=1: need an integer in [2, 4096]"},
		{"arch", func(c *Config) { c.VQVAE.Arch = "resnet" }, "vqvae.arch=resnet: need conv or mlp"},
		{"final trainer", func(c *Config) { c.Final.Trainer = "adam" }, "final.trainer=adam: need gradient or em"},
		{"split rounds", func(c *Config) { c.Final.SplitRounds = 17 }, "final.split_rounds=17: need an integer in [0, 16]"},
		{"EM iterations", func(c *Config) { *c = c.WithFinalTrainer(FinalEM); c.Final.Iters = 0 }, "final.iters=0: need at least 1 with final.trainer=em"},
		{"merge bar", func(c *Config) { c.Warmup.MergeCodes = math.NaN() }, "warmup.merge_codes=NaN"},
		{"merge size", func(c *Config) { c.VQVAE.K, c.Warmup.MergeCodes = 200, 30 }, "warmup.merge_codes=30 with vqvae.k=200: need k ≤ 128"},
		{"token merge bar", func(c *Config) { c.Final.MergeTokens = -1 }, "final.merge_tokens=-1: need a number in [0, 1000000]"},
		{"token merge size", func(c *Config) { c.VQVAE.K, c.Final.MergeTokens = 200, 30 }, "final.merge_tokens=30 with vqvae.k=200: need k ≤ 128"},
		{"token merge from joint", func(c *Config) { c.Final.MergeTokens, c.Final.Budget = 30, FinalFromJoint }, "final.merge_tokens=30 with final.budget=joint"},
		{"warm-up overflow", func(c *Config) { c.Warmup.Epochs = 1 << 62 }, "warmup.epochs=4611686018427387904: need an integer in [0, 1000]"},
	} {
		c := base
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestReadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ConfigFile)
	if err := os.WriteFile(p, []byte("{\n  \"env\": \"aliased\",\n  \"colour\": 3\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(p); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: %v", err)
	}
	if err := os.WriteFile(p, []byte("{\n  \"env\": \"aliased\",\n  \"k\": 6\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := DefaultConfig("aliased")
	want.VQVAE.K = 6
	if got, err := ReadConfig(p); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("partial file: %v, %+v; want the defaults with k=6", err, got)
	}
	if err := os.WriteFile(p, []byte("{\n  \"env\": \"aliased\",\n  \"k\": \"four\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(p); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("type error: %v, want line 3", err)
	}
}

func TestCloneBudget(t *testing.T) {
	if got := cloneBudget(5, BudgetUniform, []float64{0.5, 0.3, 0.2}); !slices.Equal(got, []int{5, 5, 5}) {
		t.Errorf("uniform: %v", got)
	}
	// 20 clones: 10, 6, 3.8 → 4, 0.2 → 1 (at least one)
	if got := cloneBudget(5, BudgetShare, []float64{0.5, 0.3, 0.19, 0.01}); !slices.Equal(got, []int{10, 6, 4, 1}) {
		t.Errorf("share: %v, want [10 6 4 1]", got)
	}
}

// TestMonitorRollsBackPerceptionOnly drives the collapse monitor with a perplexity
// trace: after the smoothed perplexity falls below CollapseFrac × best, the perception
// (/vqvae, with its Adam state) is back at the best snapshot, the HMM logits are those
// reached by training since (not discarded), and λ is throttled.
func TestMonitorRollsBackPerceptionOnly(t *testing.T) {
	be := testBackend(t)
	vc := vqvae.DefaultConfig(3)
	vc.Arch, vc.D = vqvae.ArchMLP, 8
	vq, err := vqvae.New(be.Backend, vc, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	j, err := NewJoint(vq, chmm.New([]int{2, 2, 2}, 4, rng), 0.25, 1e-3, 1e-1)
	if err != nil {
		t.Fatal(err)
	}
	st := &runState{LambdaScale: 1}
	r := &jointRun{s: &session{cfg: Config{Joint: JointConfig{CollapseFrac: 0.75, ThrottleFactor: 0.5}}}, ck: &checkpoint{st: st}, st: st, j: j}
	step := func(ppl float64) string {
		r.st.JointIter++
		ev, _, err := r.monitor(ppl)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	train := func(n int) {
		for range n {
			if _, err := j.Step(randomChunk(rng, vc.Side, []int{8, 8}, 8, 4), 1, 0.1); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range monitorWarmup {
		train(1)
		if ev := step(3); ev != "" {
			t.Fatalf("event at perplexity 3: %s", ev)
		}
	}
	best, err := snapshot(vq.Store(), "/vqvae/")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(best, r.st.Best) {
		t.Fatal("snapshot at the best perplexity does not match the perception then")
	}
	var ev string
	for i := 0; i < 30 && ev == ""; i++ {
		train(1)
		ev = step(1)
	}
	if ev == "" || !strings.Contains(ev, "collapse") {
		t.Fatal("no collapse detected after 30 steps at perplexity 1 (best 3)")
	}
	hmmBefore, _ := snapshot(vq.Store(), "/hmm/")
	now, _ := snapshot(vq.Store(), "/vqvae/")
	if !reflect.DeepEqual(now, best) {
		t.Error("perception not restored to the best snapshot")
	}
	hmmNow, _ := snapshot(vq.Store(), "/hmm/")
	if !reflect.DeepEqual(hmmNow, hmmBefore) {
		t.Error("HMM changed by the rollback")
	}
	for p := range best {
		if !strings.HasPrefix(p, "/vqvae/") {
			t.Errorf("perception snapshot holds %s", p)
		}
	}
	if r.st.LambdaScale != 0.5 || r.st.Rollbacks != 1 {
		t.Errorf("λ scale %v, rollbacks %d; want 0.5, 1", r.st.LambdaScale, r.st.Rollbacks)
	}
}

// TestForcedCollapseIsHandled forces collapse (λ = 300, no diversity term) in a short
// run and checks that the monitor detects it and rolls the perception back while the
// run completes.
func TestForcedCollapseIsHandled(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Joint.Lambda, cfg.Joint.AlphaDiv, cfg.Joint.AnnealFrac, cfg.Joint.LR = 300, 0, 0, 3e-3
	cfg.Joint.Iters = 40
	cfg.Joint.CollapseFrac = 0.75 // the guard is off by default
	cfg.Joint.CollapseLevel = 0   // the reference-like guard alone
	dir := t.TempDir()
	if _, err := Run(context.Background(), dir, cfg, progressOut()); err != nil {
		t.Fatal(err)
	}
	res, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, h := range res.History {
		if h.Event != "" {
			events = append(events, h.Event)
		}
	}
	t.Logf("events: %q", events)
	if len(events) == 0 {
		t.Fatal("forced collapse not detected")
	}
	if j := res.Report.Training.Joint; j.Rollbacks < 1 {
		t.Errorf("report: %d rollbacks", j.Rollbacks)
	}
}

// TestResumeMatchesUninterrupted stops a run mid-joint (between checkpoints), resumes
// it, and compares with an uninterrupted run: same joint history, same report.
func TestResumeMatchesUninterrupted(t *testing.T) {
	cfg := tinyConfig(t)
	a := t.TempDir()
	repA, err := Run(context.Background(), a, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	stop := cfg
	stop.StopAfterJoint = 7 // last checkpoint at 5: iterations 6 and 7 are redone
	if _, err := Run(context.Background(), b, stop, progressOut()); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v, want ErrStopped", err)
	}
	repB, err := Run(context.Background(), b, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := LoadRun(a)
	rb, _ := LoadRun(b)
	ha, hb := phaseRows(ra.History, PhaseJoint), phaseRows(rb.History, PhaseJoint)
	if len(ha) != cfg.Joint.Iters || len(hb) != cfg.Joint.Iters {
		t.Fatalf("joint rows %d and %d, want %d", len(ha), len(hb), cfg.Joint.Iters)
	}
	for i := range ha {
		if ha[i].Rec != hb[i].Rec || ha[i].NLLPerStep != hb[i].NLLPerStep || ha[i].Perplexity != hb[i].Perplexity {
			t.Fatalf("joint iteration %d differs: %+v vs %+v", i+1, ha[i], hb[i])
		}
	}
	if repA.ViterbiMap != repB.ViterbiMap || repA.StatePlacePurity != repB.StatePlacePurity || repA.HTokenGivenPlace != repB.HTokenGivenPlace {
		t.Errorf("reports differ: %+v / %+v", repA.ViterbiMap, repB.ViterbiMap)
	}
	// The label-free diagnosis covers every training step and the held-out episode.
	if d := repA.Diagnosis; d == nil || d.Verdict == nil || d.Steps != cfg.Data.Episodes*cfg.Data.Steps || d.HeldOutSteps != cfg.Eval.Steps ||
		d.Verdict.Text != d.Judge(true).Text {
		t.Errorf("diagnosis %+v, want %d training and %d held-out steps with a verdict", d, cfg.Data.Episodes*cfg.Data.Steps, cfg.Eval.Steps)
	}
	// A finished run is loaded, not retrained.
	info, _ := os.Stat(filepath.Join(a, CHMMFile))
	again, err := Run(context.Background(), a, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	info2, _ := os.Stat(filepath.Join(a, CHMMFile))
	if !info.ModTime().Equal(info2.ModTime()) || again.ViterbiMap != repA.ViterbiMap {
		t.Error("finished run was retrained")
	}
	// A different configuration is refused.
	other := cfg
	other.Joint.Lambda = 2
	if _, err := Run(context.Background(), a, other, nil); err == nil || !strings.Contains(err.Error(), "lambda") {
		t.Errorf("changed config: %v, want an error naming lambda", err)
	}
	other = cfg
	other.VQVAE.Tau = 1
	if _, err := Run(context.Background(), a, other, nil); err == nil || !strings.Contains(err.Error(), "vqvae.tau: 0.2 in the run, 1 now") {
		t.Errorf("changed VQ-VAE config: %v, want an error naming vqvae.tau", err)
	}
	// Only the last joint checkpoint is kept.
	if m, _ := filepath.Glob(filepath.Join(b, "joint-*.ckpt")); len(m) != 1 {
		t.Errorf("joint checkpoints left: %v", m)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, t.TempDir(), tinyConfig(t), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func phaseRows(h []Record, phase string) []Record {
	var out []Record
	for _, r := range h {
		if r.Phase == phase {
			out = append(out, r)
		}
	}
	return out
}

// TestAlphaAt: α_div is constant without AlphaDivEnd; with it, constant for the first
// half of the joint phase, then linear to AlphaDivEnd at the last iteration
// (hand values for 11 iterations: half = 5, slope (0.1−1)/5 per iteration).
func TestAlphaAt(t *testing.T) {
	r := struct {
		cfg Config
		st  *runState
	}{Config{Joint: JointConfig{Iters: 11, AlphaDiv: 1}}, &runState{}}
	for _, it := range []int{0, 5, 10} {
		if got := alphaAt(r.cfg, r.st, it); got != 1 {
			t.Errorf("no anneal: alphaAt(%d) = %g, want 1", it, got)
		}
	}
	r.cfg.Joint.AlphaDivEnd = 0.1
	for _, c := range []struct {
		it   int
		want float64
	}{{0, 1}, {4, 1}, {5, 1}, {6, 0.82}, {8, 0.46}, {10, 0.1}} {
		if got := alphaAt(r.cfg, r.st, c.it); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("alphaAt(%d) = %g, want %g", c.it, got, c.want)
		}
	}
	// After interventions (α scale 4): the schedule times 4; α_div = 0 becomes 0.1 × 4.
	r.st.AlphaScale = 4
	if got := alphaAt(r.cfg, r.st, 8); math.Abs(got-4*0.46) > 1e-12 {
		t.Errorf("scaled alphaAt(8) = %g, want %g", got, 4*0.46)
	}
	r.cfg.Joint.AlphaDiv, r.cfg.Joint.AlphaDivEnd = 0, 0
	if got := alphaAt(r.cfg, r.st, 3); math.Abs(got-0.4) > 1e-12 {
		t.Errorf("scaled alphaAt with α_div 0 = %g, want 0.4", got)
	}
}

// TestAlphaAtStopChurn: with the label-free stop the anneal lasts Joint.Iters/4 from the
// checkpoint that started it, or from Joint.Iters − Joint.Iters/4 when none has (hand
// values for 20 iterations: length 5, slope (0.1−1)/4 per iteration).
func TestAlphaAtStopChurn(t *testing.T) {
	r := struct {
		cfg Config
		st  *runState
	}{Config{Joint: JointConfig{Iters: 20, AlphaDiv: 1, AlphaDivEnd: 0.1, StopChurn: 0.01}}, &runState{}}
	check := func(it int, want float64) {
		t.Helper()
		if got := alphaAt(r.cfg, r.st, it); math.Abs(got-want) > 1e-12 {
			t.Errorf("AnnealStart %d: alphaAt(%d) = %g, want %g", r.st.AnnealStart, it, got, want)
		}
	}
	check(14, 1) // not started: the anneal is the last 5 iterations
	check(15, 1)
	check(17, 0.55)
	check(19, 0.1)
	r.st.AnnealStart = 8
	check(7, 1)
	check(8, 1)
	check(9, 0.775)
	check(12, 0.1)
	check(19, 0.1)
	if s, l := r.st.anneal(r.cfg); s != 8 || l != 5 {
		t.Errorf("anneal() = %d, %d, want 8, 5", s, l)
	}
}

// TestStopChurn: a run whose stop threshold every churn meets (1) starts its anneal at
// the first checkpoint after λ's ramp and ends at the first checkpoint after the
// anneal; the checkpoints' records carry the churn (a share in [0, 1]) and the two
// events; the report says how many iterations ran of how many; an interrupted run
// resumes to the same history and report.
func TestStopChurn(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Joint.Iters, cfg.Joint.CheckpointEvery, cfg.Joint.AnnealFrac, cfg.Joint.StopChurn = 40, 5, 0.25, 1
	// ramp ends at 10, the first churn is at 10 (5 has no previous tokens): anneal
	// 10..19, stop at the first checkpoint ≥ 20.
	a := t.TempDir()
	rep, err := Run(context.Background(), a, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	ra, err := LoadRun(a)
	if err != nil {
		t.Fatal(err)
	}
	h := phaseRows(ra.History, PhaseJoint)
	if len(h) != 20 {
		t.Fatalf("%d joint records, want 20 (stopped at 20 of 40)", len(h))
	}
	for _, rec := range h {
		measured := rec.Step >= 10 && rec.Step%5 == 0
		if (rec.Churn != nil) != measured || rec.Churn != nil && !(*rec.Churn >= 0 && *rec.Churn <= 1) {
			t.Errorf("iteration %d: churn %v, want a share at checkpoints from 10", rec.Step, rec.Churn)
		}
	}
	if !strings.Contains(h[9].Event, "α_div anneal starts") || !strings.Contains(h[19].Event, "joint phase ends") {
		t.Errorf("events %q / %q, want the anneal's start at 10 and the stop at 20", h[9].Event, h[19].Event)
	}
	if j := rep.Training.Joint; j.Iters != 20 || j.MaxIters != 40 || j.AnnealStart != 10 || j.StopChurn != 1 {
		t.Errorf("report: iters %d of %d, anneal from %d, stop_churn %g; want 20 of 40 from 10, 1", j.Iters, j.MaxIters, j.AnnealStart, j.StopChurn)
	}
	b := t.TempDir()
	stop := cfg
	stop.StopAfterJoint = 17
	if _, err := Run(context.Background(), b, stop, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v, want ErrStopped", err)
	}
	repB, err := Run(context.Background(), b, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := LoadRun(b)
	hb := phaseRows(rb.History, PhaseJoint)
	if len(hb) != len(h) {
		t.Fatalf("resumed: %d joint records, want %d", len(hb), len(h))
	}
	for i := range h {
		if h[i].Rec != hb[i].Rec || h[i].Event != hb[i].Event || (h[i].Churn == nil) != (hb[i].Churn == nil) ||
			h[i].Churn != nil && *h[i].Churn != *hb[i].Churn {
			t.Fatalf("resumed: iteration %d differs: %+v vs %+v", i+1, h[i], hb[i])
		}
	}
	if rep.ViterbiMap != repB.ViterbiMap || rep.HTokenGivenPlace != repB.HTokenGivenPlace {
		t.Errorf("resumed report differs: %+v / %+v", rep.ViterbiMap, repB.ViterbiMap)
	}
}

// TestCollapseInterventionRollsBack forces collapse (λ = 3, no diversity term, a high
// rate) with the anti-collapse response on: every intervention restores a healthy
// checkpoint (the history has no joint record past the rollback point before the event,
// and the steps are numbered without gaps or repeats), changes the settings, and is
// recorded in the state, the history and the report; the run ends with a report.
func TestCollapseInterventionRollsBack(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Joint.Lambda, cfg.Joint.AlphaDiv, cfg.Joint.AlphaDivEnd, cfg.Joint.AnnealFrac, cfg.Joint.LR = 3, 0, 0, 0, 3e-3
	cfg.Joint.Iters, cfg.Joint.CollapseLevel, cfg.Joint.MaxInterventions = 60, 0.25, 6
	dir := t.TempDir()
	rep, err := Run(context.Background(), dir, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("interventions: %+v", st.Interventions)
	if len(st.Interventions) == 0 {
		t.Fatal("forced collapse: no intervention")
	}
	alpha, lr := 1.0, 1.0
	for _, iv := range st.Interventions {
		alpha, lr = 2*alpha, lr/2
		if iv.AlphaScale != alpha || iv.LRScale != lr || iv.RolledBackTo >= iv.Iter || iv.RolledBackTo%cfg.Joint.CheckpointEvery != 0 {
			t.Errorf("intervention %+v: want α scale %g, rate scale %g, a checkpoint before the detection", iv, alpha, lr)
		}
	}
	events, next := 0, 1
	for _, h := range st.History {
		events += strings.Count(h.Event, "intervention:")
		if h.Phase != PhaseJoint {
			continue
		}
		if h.Step != next {
			t.Fatalf("joint history step %d after %d", h.Step, next-1)
		}
		next++
	}
	if next-1 != cfg.Joint.Iters {
		t.Errorf("joint history ends at step %d, want %d", next-1, cfg.Joint.Iters)
	}
	if events != len(st.Interventions) {
		t.Errorf("%d intervention events in the history, %d in the state", events, len(st.Interventions))
	}
	if g := rep.JointGuard(); g == nil || !reflect.DeepEqual(g.Interventions, st.Interventions) || g.SkippedSteps != st.Skipped {
		t.Errorf("report's guard %+v, want interventions %+v and %d skipped steps", g, st.Interventions, st.Skipped)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "joint-*.ckpt"))
	if len(files) > 2 {
		t.Errorf("%d joint checkpoints left: %v", len(files), files)
	}
}

// TestLegacyFlatConfig: a config.json written before Config.VQVAE (the VQ-VAE's fields
// at the top level, supervised_warmup for Classify) reads as the nested configuration,
// as a run's own file and as a user's; a file with both forms, or a run's file lacking
// one of the flat fields, is an error naming them.
func TestLegacyFlatConfig(t *testing.T) {
	cfg, err := DefaultConfig("two_rooms")
	if err != nil {
		t.Fatal(err)
	}
	cfg.VQVAE.Tau, cfg.VQVAE.Classify = 0.5, true
	nested, err := json.Marshal(v1Flat(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(nested, &m); err != nil {
		t.Fatal(err)
	}
	flat := map[string]any{}
	for k, v := range m {
		flat[k] = v
	}
	delete(flat, "vqvae")
	v := cfg.VQVAE
	for k, x := range map[string]any{"k": v.K, "d": v.D, "f": v.F, "arch": v.Arch, "beta": v.Beta, "gamma": v.Gamma,
		"eps": v.Eps, "tau": v.Tau, "revive": v.Revive, "supervised_warmup": v.Classify} {
		flat[k] = x
	}
	raw, _ := json.MarshalIndent(flat, "", "  ")
	got, err := parseRunConfig(raw, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	run := cfg
	run.Refine = DefaultRefine() // a version-1 run predates the refinement: off
	if !reflect.DeepEqual(got, run) {
		t.Errorf("run's flat config: %v", diffFields(got, run))
	}
	if got, err = parseConfig(raw, "user.json"); err != nil || !reflect.DeepEqual(got, cfg) {
		t.Errorf("user's flat config: %v %v", err, diffFields(got, cfg))
	}
	// A user's partial nested form overrides only what it names.
	got, err = parseConfig([]byte(`{"env": "two_rooms", "vqvae": {"tau": 0.5}}`), "user.json")
	want, _ := DefaultConfig("two_rooms")
	want.VQVAE.Tau = 0.5
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("partial vqvae: %v %v", err, diffFields(got, want))
	}
	flat["vqvae"] = m["vqvae"]
	both, _ := json.Marshal(flat)
	if _, err := parseRunConfig(both, "config.json"); err == nil || !strings.Contains(err.Error(), `belong in "vqvae"`) {
		t.Errorf("both forms: %v", err)
	}
	delete(flat, "vqvae")
	delete(flat, "tau")
	lacking, _ := json.Marshal(flat)
	if _, err := parseRunConfig(lacking, "config.json"); err == nil || !strings.Contains(err.Error(), "lacks field(s) tau") {
		t.Errorf("a run's flat config without tau: %v", err)
	}
}

// TestBackendNote: a run loaded on another backend says so; the go backend's options do
// not count (they give identical results), a run resumed across backends counts each.
func TestBackendNote(t *testing.T) {
	for _, c := range []struct {
		trained, loaded string
		note            bool
	}{
		{"go:parallelism=-1", "go:parallelism=-1", false},
		{"go:ops_sequential", "go:parallelism=-1", false},
		{"go:ops_sequential then go:parallelism=-1", "go:parallelism=2,ops_sequential", false},
		{"xla:cpu", "go:parallelism=-1", true},
		{"go:ops_sequential then xla:cuda", "go:parallelism=-1", true},
		{"go:ops_sequential", "xla:cuda", true},
		{"", "xla:cuda", false},
	} {
		r := &Result{Report: &evaluate.Report{Backend: c.trained}, Backend: c.loaded}
		if got := r.BackendNote(); (got != "") != c.note {
			t.Errorf("trained on %q, loaded on %q: note %q, want a note: %v", c.trained, c.loaded, got, c.note)
		}
	}
}

// cancelOn cancels a context at the first progress line that contains a word.
type cancelOn struct {
	word   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.word) {
		c.cancel()
	}
	return len(p), nil
}

// An interrupted warm-up keeps the seconds it ran in its committed state (they were
// lost: a run resumed four times reported a 66-second warm-up that took 20 minutes).
func TestInterruptedWarmupKeepsSeconds(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Warmup.Epochs = 6
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	if _, err := Run(ctx, dir, cfg, cancelOn{"warm-up", cancel}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Warmup == "" || !(st.Seconds[PhaseWarmup] > 0) {
		t.Errorf("interrupted in the warm-up: checkpoint %q, %v warm-up seconds committed", st.Warmup, st.Seconds[PhaseWarmup])
	}
}

// cancelAt is a progress writer that cancels its context once the output holds mark.
type cancelAt struct {
	mark   string
	cancel context.CancelFunc
	buf    strings.Builder
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.mark) {
		c.cancel()
	}
	return len(p), nil
}

// TestFinalEMResumesIdentically: an EM finalisation interrupted after a split round
// resumes at the next round from the checkpoint it committed, and ends with the same
// map, held-out ends and history as an uninterrupted run; its seconds so far are kept
// and its checkpoint files are gone at the end.
func TestFinalEMResumesIdentically(t *testing.T) {
	cfg, a, repA := finalEMRun(t)
	b := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Rounds 0 and 1 always split (two rounds without a gain stop it at round 2 at the
	// earliest), so a checkpoint for round 1 is committed before round 1's first
	// iteration sees the cancelled context; the split after round 1 then draws from the
	// restored generator.
	out := &cancelAt{mark: "round 0: ", cancel: cancel}
	if _, err := Run(ctx, b, cfg, out); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	st, err := readState(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhaseFinal || st.FinalEM == nil || st.FinalEM.Round != 1 || st.Seconds[PhaseFinal] <= 0 || len(st.Made.HeldOutBits) != 1 {
		t.Fatalf("interrupted state: phase %s, checkpoint %+v, final seconds %v, held-out ends %v; want round 1 of the finalisation with its seconds and round 0 scored",
			st.Phase, st.FinalEM, st.Seconds[PhaseFinal], st.Made.HeldOutBits)
	}
	for _, name := range []string{st.FinalEM.Start, st.FinalEM.Best} {
		if err := verify(b, st, name); err != nil {
			t.Errorf("checkpoint file: %v", err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(b, "final-em-*.model")); len(m) != 2 {
		t.Errorf("checkpoint files %v, want the start of round 1 and the best map", m)
	}
	// Round 1's split pairs are in the checkpoint: its judge reads them.
	if start, err := chmm.Load(filepath.Join(b, st.FinalEM.Start)); err != nil || !st.FinalEM.Selective || len(st.FinalEM.Siblings) != start.N() {
		t.Errorf("checkpoint: selective %v, %d pairs for the start of round 1 (%v)", st.FinalEM.Selective, len(st.FinalEM.Siblings), err)
	}
	refusesDamaged(t, b, st.FinalEM.Start, cfg)
	var resumed strings.Builder
	repB, err := Run(context.Background(), b, cfg, &resumed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resumed.String(), "resumed at round 1") {
		t.Errorf("resumed run's output does not say where it resumed:\n%s", resumed.String())
	}
	sameFinalisation(t, a, b)
	ta, tb := repA.Training, repB.Training
	if !slices.Equal(ta.HeldOutBits, tb.HeldOutBits) || ta.Doublings != tb.Doublings || len(ta.HeldOutBits) < 3 {
		t.Errorf("held-out ends %v (kept round %d) vs resumed %v (kept round %d); want the same, at least 3 rounds",
			ta.HeldOutBits, ta.Doublings, tb.HeldOutBits, tb.Doublings)
	}
	// The diagnosis counts the rounds split past the kept map; a finalisation stopped
	// before its last round stopped on SplitPatience rounds without a gain.
	past := len(ta.HeldOutBits) - 1 - ta.Doublings
	if d := repA.Diagnosis; d == nil || d.SplitsPast != past || len(ta.HeldOutBits)-1 < cfg.Final.SplitRounds && past < SplitPatience {
		t.Errorf("diagnosis %+v: want %d split rounds past the kept round %d of %v", d, past, ta.Doublings, ta.HeldOutBits)
	}
	if st, err := readState(b); err != nil || st.FinalEM != nil || len(st.Files) != len(mustState(t, a).Files) {
		t.Errorf("finished state: %v, checkpoint %+v, files %v", err, st.FinalEM, st.Files)
	}
}

// TestFinalEMResumesWithinRound: an EM finalisation interrupted within a round's EM
// (round 0, whose start is not a file, then round 1) resumes at the iteration it saved,
// not at the round's start, and ends with the map, held-out ends and history of the
// uninterrupted run; a damaged save is refused and no checkpoint file is left.
func TestFinalEMResumesWithinRound(t *testing.T) {
	cfg, a, repA := finalEMRun(t)
	h := &hooks{saveAlways: true}
	b := t.TempDir()
	stop := errors.New("interrupted")
	for _, at := range []struct{ round, iter int }{{0, 5}, {1, 7}} {
		first := ""
		h.finalSaved = func(name string) error {
			if first == "" {
				first = name
			}
			if name == fmt.Sprintf("final-em-train-%02d-%06d.gob", at.round, at.iter) {
				return stop
			}
			return nil
		}
		var out strings.Builder
		if _, err := run(context.Background(), b, cfg, &out, h); !errors.Is(err, stop) {
			t.Fatalf("run interrupted in round %d at iteration %d: %v", at.round, at.iter, err)
		}
		if at.round > 0 && first != "final-em-train-00-000006.gob" {
			t.Errorf("the resumed run saved %s first, want round 0's iteration 6", first)
		}
		if at.round > 0 && !strings.Contains(out.String(), "states), within its EM at iteration 5") {
			t.Errorf("resumed run's output does not say where it resumed:\n%s", out.String())
		}
		st := mustState(t, b)
		if st.FinalEM == nil || st.FinalEM.Round != at.round || st.FinalEM.Training == "" || len(st.Made.HeldOutBits) != at.round {
			t.Fatalf("state after the interruption: %+v, held-out ends %v", st.FinalEM, st.Made.HeldOutBits)
		}
		if files, _ := filepath.Glob(filepath.Join(b, "final-em-train-*.gob")); len(files) != 1 || filepath.Base(files[0]) != st.FinalEM.Training {
			t.Errorf("saves on disk %v, the state names %s", files, st.FinalEM.Training)
		}
	}
	refusesDamaged(t, b, mustState(t, b).FinalEM.Training, cfg)
	h.finalSaved = nil
	var out strings.Builder
	repB, err := run(context.Background(), b, cfg, &out, h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resumed at round 1") || !strings.Contains(out.String(), "within its EM at iteration 7") {
		t.Errorf("resumed run's output does not say where it resumed:\n%s", out.String())
	}
	sameFinalisation(t, a, b)
	if ta, tb := repA.Training, repB.Training; !slices.Equal(ta.HeldOutBits, tb.HeldOutBits) || ta.Doublings != tb.Doublings {
		t.Errorf("held-out ends %v (kept round %d) vs resumed %v (kept round %d)", ta.HeldOutBits, ta.Doublings, tb.HeldOutBits, tb.Doublings)
	}
	if st := mustState(t, b); st.FinalEM != nil || len(st.Files) != len(mustState(t, a).Files) {
		t.Errorf("finished state: checkpoint %+v, files %v", st.FinalEM, st.Files)
	}
}

// TestFinalEMLegacyResumes: an EM finalisation begun before the segmented E-step
// (its state without Segments) goes on as it began, cut into pieces with plain EM:
// interrupted after round 0 and resumed by today's code, it ends with the map and
// held-out ends of the uninterrupted one begun the old way, which differ from today's.
func TestFinalEMLegacyResumes(t *testing.T) {
	cfg := tinyConfig(t)
	// 80 iterations a round: SQUAREM's first jump comes at the 20th E-step of a round.
	cfg.Final.Trainer, cfg.Final.Iters, cfg.Final.SplitRounds = FinalEM, 80, 3
	today := t.TempDir()
	repToday, err := Run(context.Background(), today, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	repA := beganAndResumed(t, cfg, hooks{legacyEM: true}, func(s *finalEMState) bool { return s.Segments == 0 && s.Pieces >= 1 })
	if slices.Equal(repA.Training.HeldOutBits, repToday.Training.HeldOutBits) {
		t.Errorf("the old way's held-out ends %v equal today's (%s): the test cannot tell them apart", repA.Training.HeldOutBits, today)
	}
}

// TestFinalEMPatienceAsBegun: an EM finalisation begun before SplitPatience 1 and
// the SplitMinSteps stop (its state without Patience) goes on as it began: interrupted
// after round 0 and resumed by today's code, it ends with the rounds and map of the
// uninterrupted one begun so, which on these short walks runs more rounds than today's.
func TestFinalEMPatienceAsBegun(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Final.Trainer, cfg.Final.Iters, cfg.Final.SplitRounds = FinalEM, 20, 3
	repToday, err := Run(context.Background(), t.TempDir(), cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	repA := beganAndResumed(t, cfg, hooks{preStops: true}, func(s *finalEMState) bool { return s.Patience == 0 && s.Segments >= 1 })
	if len(repToday.Training.HeldOutBits) >= len(repA.Training.HeldOutBits) {
		t.Errorf("today's rounds %v, begun before Patience %v: want fewer today on 1,200 steps", repToday.Training.HeldOutBits, repA.Training.HeldOutBits)
	}
}

// beganAndResumed runs cfg's EM finalisation begun under hooks begun twice: once
// uninterrupted, and once interrupted after round 0 (its state checked by want) and
// resumed by today's code. The two must end with the same files, held-out ends and
// kept round; it returns the uninterrupted run's report.
func beganAndResumed(t *testing.T, cfg Config, begun hooks, want func(*finalEMState) bool) *evaluate.Report {
	t.Helper()
	a := t.TempDir()
	repA, err := run(context.Background(), a, cfg, progressOut(), &begun)
	if err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	stop := errors.New("interrupted")
	interrupt := begun
	interrupt.emRound = func(round int, _ *chmm.Model, _ [][]float64) error {
		if round == 1 {
			return stop
		}
		return nil
	}
	if _, err := run(context.Background(), b, cfg, progressOut(), &interrupt); !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v", err)
	}
	if st := mustState(t, b); st.FinalEM == nil || !want(st.FinalEM) {
		t.Fatalf("interrupted state %+v: not begun as asked", st.FinalEM)
	}
	repB, err := run(context.Background(), b, cfg, progressOut(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameFinalisation(t, a, b)
	if ta, tb := repA.Training, repB.Training; !slices.Equal(ta.HeldOutBits, tb.HeldOutBits) || ta.Doublings != tb.Doublings {
		t.Errorf("held-out ends %v (kept round %d) vs resumed %v (kept round %d)", ta.HeldOutBits, ta.Doublings, tb.HeldOutBits, tb.Doublings)
	}
	return repA
}

// finalEMRun runs the tiny config with the EM finalisation (20 iterations a round, at
// most 3 splits) in a new directory, uninterrupted: what the resume tests compare with.
func finalEMRun(t *testing.T) (Config, string, *evaluate.Report) {
	t.Helper()
	cfg := tinyConfig(t)
	cfg.Final.Trainer, cfg.Final.Iters, cfg.Final.SplitRounds = FinalEM, 20, 3
	cfg.Data.Steps = 2000 // SplitMinSteps per state for all 3 split rounds of 4 tokens (33 states)
	dir := t.TempDir()
	rep, err := Run(context.Background(), dir, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	return cfg, dir, rep
}

func mustState(t *testing.T, dir string) *runState {
	t.Helper()
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFinalGradResumesIdentically: the gradient finalisation, interrupted during a
// growth check's first budget, during its second, at the start of the next budget
// round and during its retraining, resumes each time after its last finished training, from the checkpoint it
// committed, and ends with the same map, record and history as an uninterrupted run;
// a damaged checkpoint is refused and no checkpoint file is left.
func TestFinalGradResumesIdentically(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Final.Clones = 1 // binds: the budget doubles at least once, given walks long enough
	cfg.Data.Steps, cfg.Warmup.Epochs = 3000, 1
	a := t.TempDir()
	var outA strings.Builder
	repA, err := Run(context.Background(), a, cfg, &outA)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outA.String(), "budget doubled") {
		t.Fatalf("the uninterrupted run did not grow its budget:\n%s", outA.String())
	}
	b := t.TempDir()
	resumedAt := ""
	for i, step := range []struct {
		mark        string // cancel once this is printed
		round, done int    // then the checkpoint is here
		resumedAt   string // and the next call says so
	}{
		{"does twice the budget", 0, gradPruned, "after pruning"},
		{"growth check, 2 clones per token", 0, gradChecked, "after the growth check's first budget"},
		{"budget doubled", 1, 0, "at its start"},
		{"pruned", 1, gradTrained, "after its training"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &cancelAt{mark: step.mark, cancel: cancel}
		_, err := Run(ctx, b, cfg, out)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interruption %d: %v, want context.Canceled", i, err)
		}
		if i > 0 && !strings.Contains(out.buf.String(), "finalisation resumed in round "+resumedAt) {
			t.Errorf("interruption %d: the call does not say it resumed %s:\n%s", i, resumedAt, out.buf.String())
		}
		resumedAt = fmt.Sprintf("%d (%d clones per token), %s", step.round, 1<<step.round, step.resumedAt)
		st := mustState(t, b)
		s := st.FinalGrad
		if st.Phase != PhaseFinal || s == nil || s.Round != step.round || s.Done != step.done || st.Seconds[PhaseFinal] <= 0 {
			t.Fatalf("interruption %d: phase %s, checkpoint %+v, final seconds %v; want round %d step %d with its seconds",
				i, st.Phase, s, st.Seconds[PhaseFinal], step.round, step.done)
		}
		if (s.Model != "") != (step.done > 0) || step.done == gradChecked && !(s.Bits > 0) {
			t.Errorf("interruption %d: checkpoint %+v", i, s)
		}
		want := st.finalFiles()
		if m, _ := filepath.Glob(filepath.Join(b, "final-*.model")); len(m) != len(want) {
			t.Errorf("interruption %d: checkpoint files %v, the state names %v", i, m, want)
		}
		for _, name := range want {
			if err := verify(b, st, name); err != nil {
				t.Errorf("interruption %d: checkpoint file: %v", i, err)
			}
		}
		if i == 0 {
			refusesDamaged(t, b, s.Model, cfg)
		}
	}
	var resumed strings.Builder
	repB, err := Run(context.Background(), b, cfg, &resumed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resumed.String(), "finalisation resumed in round "+resumedAt) {
		t.Errorf("the last call does not say where it resumed:\n%s", resumed.String())
	}
	sameGradFinalisation(t, a, b, repA, repB)
}

// TestFinalGradResumesWithinTraining: the gradient finalisation interrupted within each
// kind of training (the first, the retraining after pruning, both budgets of a growth
// check, the first training of the grown budget) resumes each time at the iteration it
// saved and ends with the map, record and history of the uninterrupted run.
func TestFinalGradResumesWithinTraining(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Final.Clones = 1 // binds: the budget doubles at least once, given walks long enough
	cfg.Data.Steps, cfg.Warmup.Epochs = 3000, 1
	a := t.TempDir()
	repA, err := Run(context.Background(), a, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hooks{saveAlways: true}
	b := t.TempDir()
	stop := errors.New("interrupted")
	said, next := "", "" // what the next call says, and the first file it saves
	for i, at := range []struct {
		file, label string // interrupted after saving file; label is the training's
	}{
		{"final-grad-train-00-0-000007.gob", "finalise"},
		{"final-grad-train-00-1-000005.gob", "retrain"},
		{"final-grad-train-00-2-000003.gob", "growth check, 1 clones per token"},
		{"final-grad-train-00-3-000003.gob", "growth check, 2 clones per token"},
		{"final-grad-train-01-0-000004.gob", "finalise (2× budget)"},
	} {
		first := ""
		h.finalSaved = func(name string) error {
			if first == "" {
				first = name
			}
			if name == at.file {
				return stop
			}
			return nil
		}
		var out strings.Builder
		if _, err := run(context.Background(), b, cfg, &out, h); !errors.Is(err, stop) {
			t.Fatalf("interruption %d (%s): %v", i, at.file, err)
		}
		if !strings.Contains(out.String(), said) {
			t.Errorf("interruption %d: the call does not say %q:\n%s", i, said, out.String())
		}
		if i > 0 && first != next {
			t.Errorf("interruption %d: the call saved %s first, want %s (the iteration after the resumed one)", i, first, next)
		}
		st := mustState(t, b)
		if st.FinalGrad == nil || st.FinalGrad.Training != at.file {
			t.Fatalf("interruption %d: checkpoint %+v, want the training saved in %s", i, st.FinalGrad, at.file)
		}
		if files, _ := filepath.Glob(filepath.Join(b, "final-*")); len(files) != len(st.finalFiles()) {
			t.Errorf("interruption %d: files %v, the state names %v", i, files, st.finalFiles())
		}
		iter, _ := strconv.Atoi(strings.TrimSuffix(at.file[len(at.file)-10:], ".gob"))
		said = fmt.Sprintf("%s resumed at iteration %d", at.label, iter)
		next = fmt.Sprintf("%s%06d.gob", at.file[:len(at.file)-10], iter+1)
	}
	h.finalSaved = nil
	var out strings.Builder
	repB, err := run(context.Background(), b, cfg, &out, h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), said) {
		t.Errorf("the last call does not say %q:\n%s", said, out.String())
	}
	sameGradFinalisation(t, a, b, repA, repB)
}

// sameGradFinalisation is sameFinalisation for the gradient finalisation, with its
// record (growth checks, rounds, pruning, runs) and a finished state without a
// checkpoint, for the reports ra of a and rb of b.
func sameGradFinalisation(t *testing.T, a, b string, ra, rb *evaluate.Report) {
	t.Helper()
	sameFinalisation(t, a, b)
	ta, tb := ra.Training, rb.Training
	if !reflect.DeepEqual(ta.GrowChecks, tb.GrowChecks) || ta.GrowRounds != tb.GrowRounds || ta.Pruned != tb.Pruned || !reflect.DeepEqual(ta.Runs, tb.Runs) {
		t.Errorf("record %+v vs resumed %+v", ta, tb)
	}
	if st := mustState(t, b); st.FinalGrad != nil || len(st.Files) != len(mustState(t, a).Files) {
		t.Errorf("finished state: checkpoint %+v, files %v", st.FinalGrad, st.Files)
	}
}

// refusesDamaged checks that a run refuses to resume from its checkpoint file name
// once damaged, and restores the file.
func refusesDamaged(t *testing.T, dir, name string, cfg Config) {
	t.Helper()
	p := filepath.Join(dir, name)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(slices.Clone(good), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), dir, cfg, nil); err == nil || !strings.Contains(err.Error(), "not the file this run wrote") {
		t.Errorf("damaged checkpoint %s: %v, want an error naming it", name, err)
	}
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameFinalisation checks that the finished runs in a (uninterrupted) and b (resumed)
// have the same map file and finalisation history rows, and that neither has a
// checkpoint file left.
func sameFinalisation(t *testing.T, a, b string) {
	t.Helper()
	ma, err := os.ReadFile(filepath.Join(a, CHMMFile))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(b, CHMMFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ma, mb) {
		t.Error("the resumed finalisation's map differs from the uninterrupted one's")
	}
	ra, errA := LoadRun(a)
	rb, errB := LoadRun(b)
	if errA != nil || errB != nil {
		t.Fatalf("loading the runs: %v; %v", errA, errB)
	}
	ha, hb := phaseRows(ra.History, PhaseFinal), phaseRows(rb.History, PhaseFinal)
	if len(ha) != len(hb) {
		t.Fatalf("finalisation rows %d vs resumed %d", len(ha), len(hb))
	}
	for i := range ha {
		if ha[i].Step != hb[i].Step || ha[i].NLLPerStep != hb[i].NLLPerStep || ha[i].Event != hb[i].Event {
			t.Fatalf("finalisation row %d differs: %+v vs %+v", i, ha[i], hb[i])
		}
	}
	for _, dir := range []string{a, b} {
		if m, _ := filepath.Glob(filepath.Join(dir, "final-*")); len(m) != 0 {
			t.Errorf("%s: checkpoint files left: %v", dir, m)
		}
	}
}

// TestPretrainStartsJointFromAMap: with Config.Joint.PretrainIters the joint phase starts
// from an HMM trained on the warm-up's tokens, which explains its first batch far
// better than chmm.New's near-uniform rows, and the report records the pre-training.
func TestPretrainStartsJointFromAMap(t *testing.T) {
	first := func(cfg Config) (nll float64, rep *evaluate.Report) {
		t.Helper()
		dir := t.TempDir()
		rep, err := Run(context.Background(), dir, cfg, progressOut())
		if err != nil {
			t.Fatal(err)
		}
		res, err := LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		return phaseRows(res.History, PhaseJoint)[0].NLLPerStep, rep
	}
	cfg := tinyConfig(t)
	cold, repCold := first(cfg)
	cfg.Joint.PretrainIters = 300
	warm, repWarm := first(cfg)
	t.Logf("HMM term of the first joint step: %.4f nats per step cold, %.4f pre-trained", cold, warm)
	if !(warm < cold-0.5) {
		t.Errorf("pre-trained first joint NLL %.4f, want at least 0.5 nats per step below the cold start's %.4f", warm, cold)
	}
	runs := func(rep *evaluate.Report) map[string]int {
		m := map[string]int{}
		for _, run := range rep.Training.Runs {
			m[run.Name] = run.Iterations
		}
		return m
	}
	if n, ok := runs(repWarm)["pretrain"]; !ok || n < 2 || n > cfg.Joint.PretrainIters+1 {
		t.Errorf("pre-trained run's training runs %v, want a pretrain run of at most %d iterations", runs(repWarm), cfg.Joint.PretrainIters+1)
	}
	if _, ok := runs(repCold)["pretrain"]; ok {
		t.Errorf("cold run records a pre-training: %v", runs(repCold))
	}
	if repWarm.Seconds["pretrain"] <= 0 || repCold.Seconds["pretrain"] != 0 {
		t.Errorf("pretrain seconds %g (pre-trained) and %g (cold), want > 0 and 0", repWarm.Seconds["pretrain"], repCold.Seconds["pretrain"])
	}
}

// runAndResume runs cfg to its end in a directory a, and in b stops it in the joint
// phase (iteration 7) and resumes it to its end; it returns both and a's report.
func runAndResume(t *testing.T, cfg Config) (a, b string, repA *evaluate.Report) {
	t.Helper()
	a, b = t.TempDir(), t.TempDir()
	repA, err := Run(context.Background(), a, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	stop := cfg
	stop.StopAfterJoint = 7
	if _, err := Run(context.Background(), b, stop, progressOut()); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v, want ErrStopped", err)
	}
	if _, err := Run(context.Background(), b, cfg, progressOut()); err != nil {
		t.Fatal(err)
	}
	return a, b, repA
}

// TestMergeCodesResumes: with more warm-up codes than classes and MergeCodes, the
// joint phase starts from fewer tokens than kept codes (recorded per code in the
// report), and a run stopped in the joint phase resumes to the same history: the
// diversity term's target shares come back from the state.
func TestMergeCodesResumes(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.VQVAE.K, cfg.Warmup.MergeCodes = 12, 3
	a, b, repA := runAndResume(t, cfg)
	j := repA.Training.Joint
	groups := slices.Max(j.CodesMerged) + 1
	t.Logf("kept codes %v merged into tokens %v", j.CodesKept, j.CodesMerged)
	if len(j.CodesMerged) != len(j.CodesKept) || groups >= len(j.CodesKept) || groups != repA.NumTokens || len(j.Clones) != groups {
		t.Fatalf("codes kept %v, merged %v, %d tokens, clones %v: want fewer tokens than kept codes, one clone count per token",
			j.CodesKept, j.CodesMerged, repA.NumTokens, j.Clones)
	}
	ra, _ := LoadRun(a)
	rb, _ := LoadRun(b)
	ha, hb := phaseRows(ra.History, PhaseJoint), phaseRows(rb.History, PhaseJoint)
	if len(ha) != cfg.Joint.Iters || len(hb) != len(ha) {
		t.Fatalf("joint rows %d and %d, want %d", len(ha), len(hb), cfg.Joint.Iters)
	}
	for i := range ha {
		if ha[i].Div != hb[i].Div || ha[i].NLLPerStep != hb[i].NLLPerStep || ha[i].Rec != hb[i].Rec {
			t.Fatalf("joint iteration %d differs after resuming: %+v vs %+v", i+1, ha[i], hb[i])
		}
	}
}

// TestMergeTokens: with more codes than classes, scaled emissions and MergeTokens, the
// map has fewer tokens than the joint phase (recorded per joint token in the report),
// the saved encoder reads its codes through that merge, and a run stopped in the joint
// phase resumes to the same map file and finalisation history.
func TestMergeTokens(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.VQVAE.K, cfg.Joint.ScaledEmissions, cfg.Final.MergeTokens = 12, true, 3
	a, b, repA := runAndResume(t, cfg)
	j := repA.Training.Joint
	groups := slices.Max(j.TokensMerged) + 1
	t.Logf("joint tokens %d merged into %v", len(j.CodesKept), j.TokensMerged)
	if len(j.TokensMerged) != len(j.CodesKept) || groups >= len(j.CodesKept) || groups != repA.NumTokens {
		t.Fatalf("codes kept %v, tokens merged %v, %d tokens: want fewer tokens than the joint phase's", j.CodesKept, j.TokensMerged, repA.NumTokens)
	}
	ra, err := LoadRun(a)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ra.VQVAE.Tokens(), j.TokensMerged) || ra.HMM.K() != groups {
		t.Fatalf("saved encoder's token map %v, map of %d tokens; report %v", ra.VQVAE.Tokens(), ra.HMM.K(), j.TokensMerged)
	}
	sameFinalisation(t, a, b)
	rb, err := LoadRun(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rb.VQVAE.Tokens(), j.TokensMerged) {
		t.Errorf("resumed run's token map %v, want %v", rb.VQVAE.Tokens(), j.TokensMerged)
	}
}

// TestScaledEmissionsConfig: a run's version-1 config.json written without
// scaled_emissions (every run before the option, and every run without it since: the
// field was omitted when false) reads as the posterior emissions; one written with it
// reads it back.
func TestScaledEmissionsConfig(t *testing.T) {
	for _, scaled := range []bool{false, true} {
		cfg, err := DefaultConfig("aliased")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Joint.ScaledEmissions = scaled
		flat := v1Flat(cfg)
		if !scaled {
			delete(flat, "scaled_emissions")
		}
		raw, err := json.Marshal(flat)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseRunConfig(raw, "config.json")
		cfg.Refine = DefaultRefine() // a version-1 run predates the refinement: off
		if err != nil || !reflect.DeepEqual(got, cfg) {
			t.Errorf("scaled %v: %v %v", scaled, err, diffFields(got, cfg))
		}
	}
}

// TestRecordSession: a session adds its backend and HMM kernel set where they are new;
// a run past its start with none recorded began before they were recorded, and says
// so rather than claim the whole run for this session's.
func TestRecordSession(t *testing.T) {
	for _, c := range []struct {
		name                   string
		st                     runState
		label, kernels         string
		wantBackends, wantKern []string
	}{
		{"new run", runState{Phase: PhaseWarmup}, "go:parallelism=-1", "avx2", []string{"go:parallelism=-1"}, []string{"avx2"}},
		{"same again", runState{Phase: PhaseJoint, Backends: []string{"go:parallelism=-1"}, HMMKernels: []string{"avx2"}}, "go:parallelism=-1", "avx2",
			[]string{"go:parallelism=-1"}, []string{"avx2"}},
		{"resumed on another CPU", runState{Phase: PhaseJoint, Backends: []string{"go:parallelism=-1"}, HMMKernels: []string{"go"}}, "go:parallelism=-1", "avx512",
			[]string{"go:parallelism=-1"}, []string{"go", "avx512"}},
		{"begun before the record", runState{Phase: PhaseJoint, Backends: []string{"go:parallelism=-1"}}, "go:parallelism=-1", "avx2",
			[]string{"go:parallelism=-1"}, []string{"unrecorded", "avx2"}},
		{"warm-up under way, nothing recorded", runState{Phase: PhaseWarmup, Warmup: "warmup-000100.ckpt"}, "xla:cpu", "go",
			[]string{"go:ops_sequential", "xla:cpu"}, []string{"unrecorded", "go"}},
	} {
		st := c.st
		st.recordSession(c.label, c.kernels)
		if !slices.Equal(st.Backends, c.wantBackends) || !slices.Equal(st.HMMKernels, c.wantKern) {
			t.Errorf("%s: backends %q, kernels %q; want %q, %q", c.name, st.Backends, st.HMMKernels, c.wantBackends, c.wantKern)
		}
	}
}

// TestPhaseBackends: a run stopped in its joint phase and resumed on another backend
// says so when it resumes, and its report names per phase the backends it ran on (both
// for the joint phase); the run's map is still made and scored.
func TestPhaseBackends(t *testing.T) {
	cfg := tinyConfig(t)
	dir := t.TempDir()
	stop := cfg
	stop.StopAfterJoint = 7
	t.Setenv("GOMLX_BACKEND", "go:parallelism=-1")
	if _, err := Run(context.Background(), dir, stop, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v, want ErrStopped", err)
	}
	t.Setenv("GOMLX_BACKEND", "go:ops_sequential")
	var out strings.Builder
	rep, err := Run(context.Background(), dir, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "note: resuming on go:ops_sequential a run that last ran on go:parallelism=-1") {
		t.Errorf("resumed run says %q, want the backend note", out.String())
	}
	want := map[string]string{PhaseWarmup: "go:parallelism=-1", PhaseJoint: "go:parallelism=-1 then go:ops_sequential",
		PhaseFinal: "go:ops_sequential", PhaseEval: "go:ops_sequential"}
	if !reflect.DeepEqual(rep.PhaseBackends, want) {
		t.Errorf("phase backends %v, want %v", rep.PhaseBackends, want)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "joint go:parallelism=-1 then go:ops_sequential") {
		t.Errorf("report table lacks the backends per phase:\n%s", table.String())
	}
	// Run again on the same backend: the finished run is loaded, nothing is added.
	again, err := Run(context.Background(), dir, cfg, nil)
	if err != nil || !reflect.DeepEqual(again.PhaseBackends, want) {
		t.Errorf("loaded again: %v, %v", again.PhaseBackends, err)
	}
}

// TestReportRecordsWorldChoices: a run on a custom world of 100 places, one class at
// 64 of them (big_room's layout renamed), records in its report the settings chosen
// for that world that it kept, with their reasons, and not those a setting replaced
// (the data size and the two merges here).
func TestReportRecordsWorldChoices(t *testing.T) {
	b, err := gridworld.Named("big_room")
	if err != nil {
		t.Fatal(err)
	}
	e, err := gridworld.ParseLayout("mine", strings.NewReader(b.Layout()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ConfigFor(e)
	tiny := tinyConfig(t)
	cfg.Data, cfg.Eval.Steps, cfg.Warmup.Epochs, cfg.Warmup.Batch, cfg.Warmup.RecenterFrames = tiny.Data, tiny.Eval.Steps, 1, 64, 1000
	cfg.VQVAE.Arch, cfg.VQVAE.D = "mlp", 16
	cfg.Joint.Iters, cfg.Joint.ChunkLen, cfg.Joint.Batch, cfg.Joint.CheckpointEvery, cfg.Joint.Clones = 4, 64, 2, 5, 2
	cfg.Final.Iters, cfg.Final.SplitRounds, cfg.Final.Clones = 5, 1, 2
	for _, kv := range []string{"warmup.merge_codes=0", "final.merge_tokens=0"} { // tiny walks tell few codes apart
		if err := cfg.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), dir, cfg, progressOut())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"joint.scaled_emissions=true: 100 places (bigger worlds: 100 or more): the joint phase holds apart tokens its early map cannot tell apart",
		"final.trainer=em: 100 places (bigger worlds: 100 or more): EM grows the budget by splitting and reads the tokens through a learned confusion matrix",
		"vqvae.k=40: class 0 is at 64 of the 100 places: the warm-up gives its frames most codes; 4 codes per class",
	}
	if !slices.Equal(rep.Chosen, want) {
		t.Errorf("chosen:\n%s\nwant\n%s", strings.Join(rep.Chosen, "\n"), strings.Join(want, "\n"))
	}
	raw, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"chosen": [`) || !strings.Contains(string(raw), "4 codes per class") {
		t.Errorf("report.json does not record the choices")
	}
}

// TestFinalEMEndsAMissEarly: a split round whose held-out ends stand above the bar and
// have stopped gaining is stopped before its EM converges (emRounds.missCheck, with a
// margin small enough for these short walks; its in-round splits are spent by then, so
// it ends), and the finalisation keeps what it keeps without that stop: the same rounds
// before it, held-out ends and map, with fewer E-steps in the missed round. A finalisation
// begun before the stop goes on without it when resumed.
func TestFinalEMEndsAMissEarly(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Data.Steps = 4000
	cfg.Final.Trainer, cfg.Final.Iters, cfg.Final.SplitRounds = FinalEM, 300, 4
	early := t.TempDir()
	repEarly, err := run(context.Background(), early, cfg, progressOut(), &hooks{missMargin: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	hk := hooks{noEarlyMiss: true, missMargin: 1e-4}
	repFull := beganAndResumed(t, cfg, hk, func(s *finalEMState) bool { return !s.EarlyMiss && s.Patience > 0 })
	re, rf := repEarly.Training, repFull.Training
	n := len(rf.HeldOutBits)
	if n < 2 || len(re.HeldOutBits) != n || len(re.Runs) != len(rf.Runs) {
		t.Fatalf("rounds: %v early, %v without the stop", re.HeldOutBits, rf.HeldOutBits)
	}
	last, lastFull := re.Runs[len(re.Runs)-1], rf.Runs[len(rf.Runs)-1]
	if last.Stop != "stopped by its check" || last.Iterations >= lastFull.Iterations {
		t.Errorf("the missed round: %+v early, %+v without the stop; want it ended early, with fewer E-steps", last, lastFull)
	}
	if !slices.Equal(re.HeldOutBits[:n-1], rf.HeldOutBits[:n-1]) || re.Doublings != rf.Doublings || !slices.Equal(re.Runs[:len(re.Runs)-1], rf.Runs[:len(rf.Runs)-1]) {
		t.Errorf("the rounds before the miss differ: %v and %v, kept round %d and %d", re.HeldOutBits, rf.HeldOutBits, re.Doublings, rf.Doublings)
	}
	if repEarly.NumStates != repFull.NumStates || repEarly.ViterbiMap != repFull.ViterbiMap || repEarly.StatePlacePurity != repFull.StatePlacePurity {
		t.Errorf("maps differ: %d states, %+v, purity %v early; %d, %+v, %v without the stop", repEarly.NumStates, repEarly.ViterbiMap, repEarly.StatePlacePurity,
			repFull.NumStates, repFull.ViterbiMap, repFull.StatePlacePurity)
	}
}
