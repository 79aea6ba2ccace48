package tabulate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// report is a small evaluation report whose every tabulated value is set by hand.
func report(env string, seed uint64) *evaluate.Report {
	return &evaluate.Report{
		Env: env, Dataset: "mnist", Trainer: "joint", Seed: seed, NumTokens: 8, NumStates: 285,
		ClonePurity: 0.98765, StatePlacePurity: 0.99995, ActionAccuracy: 0.9126,
		ViterbiMap:       evaluate.CutoffScore{CutoffFraction: 0.002, EdgeScore: evaluate.EdgeScore{Precision: 0.854, Recall: 0.489, F1: 0.6219}},
		ProjectedMap:     []evaluate.ThresholdScore{{Threshold: 0.01, EdgeScore: evaluate.EdgeScore{Precision: 0.97, Recall: 1, F1: 0.9848}}},
		TrueEdges:        264,
		HTokenGivenPlace: 0.21149, Perplexity: 7.7261, ActiveCodes: 9, PlacesPerTokenMax: 32,
		VisitedStates: 164,
		Seconds:       map[string]float64{"warmup": 744, "joint": 693, "final": 3780, "total": 30843.9},
		Diagnosis: &chmm.Diagnosis{
			TrainBits: 0.00012, HeldOutBits: 0.01994, UsedClones: 137, Clones: 284,
			Steps: 100000, Walks: 1, Misses: 0.0307, Surprises: 0.0323,
			SurprisesAfterMiss: []int{3906, 88, 36, 33, 23, 13, 14, 161},
			Verdict:            &chmm.Verdict{Problems: []string{"data", "merged"}},
		},
		OtherReadout: &evaluate.Readout{Decode: "hard", ViterbiMapF1: 1, StatePlacePurity: 0.9771},
		Chosen:       []string{"joint.scaled_emissions=true: 144 places", "final.trainer=em: 144 places: EM grows"},
		Training: &evaluate.Training{
			Steps: 150000, Episodes: 1, Doublings: 2, Folded: 107, Clones: []int{18, 19, 21}, Pruned: 1,
			HeldOutBits: []float64{0.68412, 0.42779, 0.33043, 0.28371},
			Compared:    &evaluate.MapChoice{Steps: 10000, GradientBits: 0.35493, EMBits: -1, Kept: "gradient"},
			GrowChecks:  []evaluate.GrowCheck{{Clones: 20, Bits: 0.29991, GrownBits: 0.17558, Grown: true}},
			Joint: &evaluate.Joint{Iters: 1500, CodesKept: []int{0, 1, 2, 3, 4}, TokensMerged: []int{0, 1, 0, 2},
				Guard: &evaluate.Guard{Interventions: []evaluate.Intervention{{Iter: 1120, RolledBackTo: 1050}, {Iter: 1400, RolledBackTo: 1350}}}},
		},
	}
}

// writeReports writes each report to dir/name.json.
func writeReports(t *testing.T, dir string, reps map[string]*evaluate.Report) {
	t.Helper()
	for name, r := range reps {
		if err := r.WriteJSON(filepath.Join(dir, name+".json")); err != nil {
			t.Fatal(err)
		}
	}
}

// table makes the table of args (flags and patterns) over the reports in dir.
func table(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	spec, err := ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	return NewReader(dir).Table(spec)
}

// rows are the table's body lines.
func rows(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n")[2:] }

func TestColumnValues(t *testing.T) {
	dir := t.TempDir()
	writeReports(t, dir, map[string]*evaluate.Report{"room_mnist_seed1": report("room", 1)})
	// Each value worked out by hand from report's fields.
	cases := []struct{ col, want string }{
		{"run", "room, 1"}, {"label", "room_mnist_seed1"}, {"file", "`room_mnist_seed1`"}, {"steps", "150,000"},
		{"f1", "0.622"}, {"recall:2", "0.49"}, {"map", "0.489, 0.622"}, {"f1pr", "0.622 (0.854, 0.489)"},
		{"purity", "1.000"}, {"purity:4", "1.0000"}, {"clone-purity", "0.988"}, {"action", "0.913"},
		{"readout", "hard: 1.000, 0.977"}, {"h", "0.211"}, {"joint-tokens", "9, 7.73, 0.211, 32"},
		{"codes-tokens", "4 → 8"}, {"interventions", "2"}, {"rolled-back", "120"}, {"joint-iters", "1500"}, {"joint-run", "1620"},
		{"states-used-folded", "285 (137), 107"}, {"states-used", "285 (137)"}, {"kept", "2 splits, 285 states"},
		{"clones", "58 of 59"}, {"grow-check", "20 → 40: 0.300 → 0.176, doubled"},
		{"held-out", "0.6841 0.4278 **0.3304** 0.2837"}, {"bits", "0.0001 / 0.0199"},
		// Late surprises: 0.0323 × 99,999 steps after the first = 3229.97, less 10 for the walk, over 100,000.
		{"late", "3.220%"}, {"surprises:2", "3.23%"}, {"surprises-misses", "3.23% / 3.07%"},
		{"after-miss", "3906 88 36 33 23 13 14 161"},
		{"unexplained", "0.151%"}, // (161 − 10) / 100,000
		{"verdict", "`data`, `merged`"}, {"truth", "failed"},
		{"min.warmup", "12.4"}, {"min.total:0", "514"}, {"s.final", "3780"}, {"min.evaluate", "–"},
		{"failed-flagged", "1"}, {"good-passed", "0"},
		{"chosen", "joint.scaled_emissions=true final.trainer=em"},
		{"compared", "**0.3549**, ∞"},
	}
	for _, c := range cases {
		got, err := table(t, dir, "--columns", c.col, "room_mnist_seed1.json")
		if err != nil {
			t.Errorf("%s: %v", c.col, err)
			continue
		}
		if r := rows(got); len(r) != 1 || r[0] != "| "+c.want+" |" {
			t.Errorf("column %s: got %q, want %q", c.col, r, "| "+c.want+" |")
		}
	}
}

// A hard-token map's merged-places columns read its reading through a fitted confusion
// matrix (Diagnosis.Reread); a map read through its own C, or one without a reading, its
// own diagnosis.
func TestRereadColumns(t *testing.T) {
	dir := t.TempDir()
	hard := report("three52", 1)
	hard.Diagnosis.Reread = &chmm.Diagnosis{Confused: true, Steps: 40000, Walks: 4, Surprises: 0.0358, Misses: 0.0133,
		SurprisesAfterMiss: []int{525, 45, 25, 25, 25, 26, 16, 744}}
	own := report("tiled", 2)
	own.Diagnosis.Confused = true
	writeReports(t, dir, map[string]*evaluate.Report{"hard": hard, "own": own, "plain": report("room", 1)})
	got, err := table(t, dir, "--columns", "reading,surprises:2,misses:2,after-miss,unexplained", "{hard,own,plain}.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| through a fitted C | 3.58% | 1.33% | 525 45 25 25 25 26 16 744 | 1.760% |", // (744 − 4·10) / 40,000
		"| through its C | 3.23% | 3.07% | 3906 88 36 33 23 13 14 161 | 0.151% |",
		"| hard | 3.23% | 3.07% | 3906 88 36 33 23 13 14 161 | 0.151% |",
	}
	if r := rows(got); !slices.Equal(r, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(r, "\n"), strings.Join(want, "\n"))
	}
}

func TestMapScoreAndBold(t *testing.T) {
	dir := t.TempDir()
	rec := report("tiled", 1)
	rec.ViterbiMap.EdgeScore = evaluate.EdgeScore{Precision: 1, Recall: 1, F1: 1}
	big := report("four_rooms", 1)
	big.TrueEdges = 654 // 654 × 0.002 > 1: the Viterbi-path cut-off cannot keep every edge
	writeReports(t, dir, map[string]*evaluate.Report{"rec": rec, "big": big, "merged": report("tiled", 3)})
	got, err := table(t, dir, "--columns", "map,f1pr", "{rec,big,merged}.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| **1.000, 1.000** | 1.000 |",
		"| **1.000, 0.985 (projected)** | 0.622 (0.854, 0.489) |",
		"| 0.489, 0.622 | 0.622 (0.854, 0.489) |",
	}
	if r := rows(got); !slices.Equal(r, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(r, "\n"), strings.Join(want, "\n"))
	}
}

func TestPairing(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.MkdirAll(filepath.Join(dir, "b"), 0o755)
	a1, a2, b1, b2, b3 := report("room", 1), report("room", 2), report("room", 1), report("room", 2), report("corridors", 1)
	a2.HTokenGivenPlace, b1.HTokenGivenPlace, b2.HTokenGivenPlace = 0.3, 0.1, 0.05
	writeReports(t, dir, map[string]*evaluate.Report{"a/room_1": a1, "a/room_2": a2, "b/room_1": b1, "b/room_2": b2, "b/corr_1": b3})
	got, err := table(t, dir, "--columns", "run,h,min.total@b:0,f1@a", "--vs", "new=b/*.json", "old=a/*.json")
	if err != nil {
		t.Fatal(err)
	}
	want := "| env, seed | H(token\\|place), old → new | minutes, new | map F1, old |\n|---|---|---|---|\n" +
		"| room, 1 | 0.211 → 0.100 | 514 | 0.622 |\n| room, 2 | 0.300 → 0.050 | 514 | 0.622 |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := table(t, dir, "--columns", "h", "--vs", "b/room_1.json", "a/*.json"); err == nil || !strings.Contains(err.Error(), "a/room_2.json (environment room, seed 2)") {
		t.Errorf("a row without a partner: %v", err)
	}
	if _, err := table(t, dir, "--columns", "h", "--vs", "{a,b}/room_1.json", "a/room_1.json"); err == nil || !strings.Contains(err.Error(), "a pair needs one") {
		t.Errorf("two partners: %v", err)
	}
}

func TestRowsMeanAndList(t *testing.T) {
	dir := t.TempDir()
	reps := map[string]*evaluate.Report{}
	for i, env := range []string{"room", "room", "tiled"} {
		r := report(env, uint64(i+1))
		r.ActionAccuracy = float64(i+1) / 10 // 0.1, 0.2, 0.3
		if i == 0 {
			r.ViterbiMap.EdgeScore = evaluate.EdgeScore{Precision: 1, Recall: 1, F1: 1}
			r.StatePlacePurity = 1
		}
		reps["r"+string(rune('1'+i))] = r
	}
	writeReports(t, dir, reps)
	got, err := table(t, dir, "--rows", "mean", "--columns", "label,env,runs,action,interventions,good-flagged,failed-flagged", "x=r*.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"| x | room | 2 | 0.150 | 2.0 | 1 | 1 |", "| x | tiled | 1 | 0.300 | 2.0 | 0 | 1 |"}
	if r := rows(got); !slices.Equal(r, want) {
		t.Errorf("mean: got\n%s\nwant\n%s", strings.Join(r, "\n"), strings.Join(want, "\n"))
	}
	got, err = table(t, dir, "--rows", "list", "--columns", "label,action,verdict", "x=r*.json")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"| x | 0.100, 0.200, 0.300 | `data`, `merged`, `data`, `merged`, `data`, `merged` |"}
	if r := rows(got); !slices.Equal(r, want) {
		t.Errorf("list: got %q, want %q", r, want)
	}
	got, err = table(t, dir, "--where", "recovered", "--columns", "seed", "r*.json")
	if err != nil || !slices.Equal(rows(got), []string{"| 1 |"}) {
		t.Errorf("--where recovered: %q, %v", got, err)
	}
}

func TestPlanReports(t *testing.T) {
	dir := t.TempDir()
	for i, m := range [][3]float64{{0.9, 0.95, 1.1}, {0.8, 0.85, 1.3}} {
		rep := &experiment.PlanReport{Report: &plan.Report{Env: "room", Modes: []plan.ModeResult{
			{Mode: plan.OpenLoop, SuccessRate: m[0], Successes: 1, PathRatioMean: 1},
			{Mode: plan.MPC, SuccessRate: m[1], Successes: 1, PathRatioMean: m[2]},
		}}}
		if err := experiment.WritePlanReport(filepath.Join(dir, "p"+string(rune('1'+i))+".json"), rep); err != nil {
			t.Fatal(err)
		}
	}
	got, err := table(t, dir, "--rows", "mean", "--columns", "label,env,runs,plan", "v=p*.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"| v | room | 2 | 0.850 / 0.900 (1.200) |"}; !slices.Equal(rows(got), want) {
		t.Errorf("got %q, want %q", rows(got), want)
	}
	if _, err := table(t, dir, "--columns", "f1", "p1.json"); err == nil || !strings.Contains(err.Error(), "column f1 reads evaluation reports") {
		t.Errorf("an evaluation column on a planning report: %v", err)
	}
}

func TestBadSpecs(t *testing.T) {
	dir := t.TempDir()
	writeReports(t, dir, map[string]*evaluate.Report{"r": report("room", 1)})
	os.WriteFile(filepath.Join(dir, "junk.json"), []byte(`{"env": "room"}`), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--columns", "nope", "r.json"}, `unknown column "nope"`},
		{[]string{"--columns", "f1:9", "r.json"}, "decimals must be an integer 0..6"},
		{[]string{"--columns", "map:2", "r.json"}, "fixed format"},
		{[]string{"--columns", "f1@a", "r.json"}, "a side needs a paired table"},
		{[]string{"--columns", "f1@c", "--vs", "r.json", "r.json"}, "the side must be @a or @b"},
		{[]string{"--columns", "f1", "--rows", "some", "r.json"}, `--rows "some"`},
		{[]string{"--columns", "f1", "--rows", "mean", "--vs", "r.json", "r.json"}, "--vs pairs single reports"},
		{[]string{"--columns", "f1", "--where", "good", "r.json"}, `--where "good"`},
		{[]string{"--columns", "f1", "missing_*.json"}, `"missing_*.json" matches no file`},
		{[]string{"--columns", "f1", "r{.json"}, "a '{' without '}'"},
		{[]string{"--columns", "f1", "junk.json"}, "junk.json: missing keys"},
		{[]string{"--columns", "f1"}, "no report pattern"},
		{[]string{"r.json"}, "no column named"},
	}
	for _, c := range cases {
		_, err := table(t, dir, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	got, err := expandBraces("r/{a,b{1,2}}_{x,y}.json")
	want := []string{"r/a_x.json", "r/a_y.json", "r/b1_x.json", "r/b1_y.json", "r/b2_x.json", "r/b2_y.json"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"a{b", "a}b"} {
		if _, err := expandBraces(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNaturalOrder(t *testing.T) {
	names := []string{"s_seed10.json", "s_seed2.json", "s_seed1_x.json", "s_seed1.json", "s_seed02b.json"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"s_seed1.json", "s_seed1_x.json", "s_seed2.json", "s_seed02b.json", "s_seed10.json"}
	if !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}
