package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlanBadArguments(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.chmm")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no map", nil, "give either --run DIR"},
		{"run and model", []string{"--run", dir, "--model", model, "--env", "aliased"}, "give either --run DIR"},
		{"model without env", []string{"--model", model}, "--model needs --env"},
		{"run with env", []string{"--run", dir, "--env", "aliased"}, "--env and --layout go with --model"},
		{"bad mode", []string{"--model", model, "--env", "aliased", "--mode", "sideways"}, `--mode "sideways"`},
		{"bad planner", []string{"--model", model, "--env", "aliased", "--planner", "astar"}, `--planner "astar"`},
		{"bad prior", []string{"--model", model, "--env", "aliased", "--prior", "flat"}, `--prior "flat"`},
		{"no pairs", []string{"--model", model, "--env", "aliased", "--pairs", "0"}, "--pairs 0"},
		{"bad threshold", []string{"--model", model, "--env", "aliased", "--threshold", "1.5"}, "--threshold 1.5"},
		{"soft symbols", []string{"--model", model, "--env", "aliased", "--obs", "soft"}, "--obs soft needs an image run"},
		{"bad obs", []string{"--model", model, "--env", "aliased", "--obs", "fuzzy"}, `--obs "fuzzy"`},
		{"missing model file", []string{"--model", model, "--env", "aliased"}, "m.chmm"},
		{"missing run dir", []string{"--run", filepath.Join(dir, "nowhere")}, "nowhere"},
		{"not a run dir", []string{"--run", dir}, dir},
		{"soft with noise", []string{"--run", dir, "--obs", "soft", "--noise", "auto"}, "--noise applies to hard emissions only"},
		{"soft with learned noise", []string{"--run", dir, "--obs", "soft", "--noise", "learn"}, "--noise applies to hard emissions only"},
		{"soft with the map's noise", []string{"--run", dir, "--obs", "soft", "--noise", "map"}, "--noise applies to hard emissions only"},
		{"bad arrival mass", []string{"--model", model, "--env", "aliased", "--arrive-mass", "0"}, "--arrive-mass 0"},
		{"figure of a symbolic model", []string{"--model", model, "--env", "aliased", "--figure", filepath.Join(dir, "f.png")}, "--figure needs --run DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"plan", "--quiet"}, tc.args...)...)
			if code != 1 {
				t.Errorf("exit code %d, want 1 (stderr %q)", code, errOut)
			}
			oneCleanError(t, errOut, tc.want)
		})
	}
	code, _, errOut := run(t, "plan", "--no-such-flag")
	if code != 2 || !strings.Contains(errOut, "no-such-flag") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "plan", "--model", model, "--env", "aliased", "--noise", "lots")
	if code != 2 || !strings.Contains(errOut, "want a number, auto, learn or map") {
		t.Errorf("--noise lots: exit %d, stderr %q", code, errOut)
	}
}

func TestPlanSymbolicModel(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "aliased.chmm")
	if code, _, errOut := run(t, "symbolic", "--env", "aliased", "--trainer", "em", "--set", "episodes=2", "--set", "steps=3000",
		"--set", "restarts=1", "--quiet", "--save", model); code != 0 {
		t.Fatalf("training failed (%d): %s", code, errOut)
	}
	out := filepath.Join(dir, "plan.json")
	code, stdoutText, errOut := run(t, "plan", "--model", model, "--env", "aliased", "--pairs", "40", "--quiet", "--json", out)
	if code != 0 {
		t.Fatalf("plan failed (%d): %s", code, errOut)
	}
	for _, want := range []string{"aliased", "open", "mpc", "success", "path ratio"} {
		if !strings.Contains(stdoutText, want) {
			t.Errorf("table lacks %q:\n%s", want, stdoutText)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Env     string `json:"env"`
		Dataset string `json:"dataset"`
		Modes   []struct {
			Mode        string  `json:"mode"`
			Pairs       int     `json:"pairs"`
			SuccessRate float64 `json:"success_rate"`
			Trials      []any   `json:"trials"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Env != "aliased" || rep.Dataset != "symbolic" || len(rep.Modes) != 2 {
		t.Fatalf("report: env %q dataset %q, %d modes", rep.Env, rep.Dataset, len(rep.Modes))
	}
	for _, m := range rep.Modes {
		if m.Pairs != 40 || len(m.Trials) != 40 || m.SuccessRate < 0.9 {
			t.Errorf("%s: %d pairs, %d trials, success %.3f", m.Mode, m.Pairs, len(m.Trials), m.SuccessRate)
		}
	}

	// --noise auto: symbols are never misread, so the smallest ε explains them best.
	code, _, errOut = run(t, "plan", "--model", model, "--env", "aliased", "--pairs", "10", "--noise", "auto")
	if code != 0 || !strings.Contains(errOut, "noise auto: ε = 0.01 ") {
		t.Errorf("--noise auto: exit %d, stderr %q", code, errOut)
	}

	// --noise learn: symbols are never misread, so the learned confusion
	// matrix is nearly the identity (EM's pseudo-counts keep it off 1).
	jsonPath := filepath.Join(t.TempDir(), "learn.json")
	code, _, errOut = run(t, "plan", "--model", model, "--env", "aliased", "--pairs", "10", "--noise", "learn", "--json", jsonPath)
	if code != 0 || !strings.Contains(errOut, "noise learn: token confusion matrix") {
		t.Fatalf("--noise learn: exit %d, stderr %q", code, errOut)
	}
	raw, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var learned planReport
	if err := json.Unmarshal(raw, &learned); err != nil {
		t.Fatal(err)
	}
	if len(learned.Confusion) == 0 || !strings.Contains(learned.Filter, "confusion") {
		t.Fatalf("--noise learn report: filter %q, confusion %v", learned.Filter, learned.Confusion)
	}
	for k, row := range learned.Confusion {
		if row[k] < 0.95 {
			t.Errorf("symbols: learned confusion[%d][%d] = %.3f, want ≥ 0.95", k, k, row[k])
		}
	}

	// --noise map: a symbolic model was not trained through a confusion matrix.
	code, _, errOut = run(t, "plan", "--model", model, "--env", "aliased", "--pairs", "10", "--quiet", "--noise", "map")
	if code != 1 {
		t.Errorf("--noise map: exit %d", code)
	}
	oneCleanError(t, errOut, "has no confusion matrix")

	// The model does not fit another environment.
	code, _, errOut = run(t, "plan", "--model", model, "--env", "two_rooms", "--quiet")
	if code != 1 {
		t.Errorf("mismatched environment: exit %d", code)
	}
	oneCleanError(t, errOut, "does not fit environment two_rooms")
}
