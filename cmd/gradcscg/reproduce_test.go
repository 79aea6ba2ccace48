package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReproduceSubsetKeepsTable: a run of a subset of the symbolic suite (--envs,
// --trainers) writes a table with every report of the suite, not only its own rows.
func TestReproduceSubsetKeepsTable(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "symbolic")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aliased_gradient_seed1", "room_em_seed1"} {
		src := filepath.Join("..", "..", "results", "symbolic", name+".json")
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The aliased report exists, so nothing is trained.
	code, _, errOut := run(t, "reproduce", "--suite", "symbolic", "--envs", "aliased", "--trainers", "gradient",
		"--seeds", "1", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "symbolic.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| aliased | gradient | 1 |", "| room | em | 1 |"} {
		if !strings.Contains(string(md), row) {
			t.Errorf("table lacks row %q:\n%s", row, md)
		}
	}
	if strings.Contains(string(md), "| room | gradient |") {
		t.Errorf("table has a row without reports:\n%s", md)
	}
}

// TestReproduceImagesGoesOnAfterAFailure: a run of the images suite that fails (here
// its directory holds another configuration) is listed under the table, the other
// runs go on, and the command exits non-zero.
func TestReproduceImagesGoesOnAfterAFailure(t *testing.T) {
	out, runs := t.TempDir(), t.TempDir()
	for _, seed := range []string{"1", "2"} {
		dir := filepath.Join(runs, "aliased_mnist_seed"+seed+"_mlp")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"env": "aliased", "seed": 99}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := run(t, "reproduce", "--suite", "images", "--envs", "aliased", "--arch", "mlp", "--seeds", "2",
		"--runs", runs, "--out", out, "--quiet")
	if code == 0 || !strings.Contains(errOut, "2 of 2 runs failed") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "mlp_table3.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aliased_mnist_seed1_mlp", "aliased_mnist_seed2_mlp"} {
		if !strings.Contains(string(md), "- "+name+": ") {
			t.Errorf("table does not list the failed run %s:\n%s", name, md)
		}
	}
}

// TestReproduceStressCountsFailures: the stress suite loads the reports it has, records
// a run that ends in an error as a failed run (the others go on), counts both in its
// table, and a rerun with --collect finds the failure again without training.
func TestReproduceStressCountsFailures(t *testing.T) {
	out, runs := t.TempDir(), t.TempDir()
	dir := filepath.Join(out, "stress")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The mlp run has a report; the two conv runs' directories hold another configuration.
	b, err := os.ReadFile(filepath.Join("..", "..", "results", "images", "aliased_mnist_seed1_mlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "aliased_mnist_seed1_mlp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aliased_mnist_seed1", "aliased_fashion_seed1"} {
		d := filepath.Join(runs, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"env": "aliased", "seed": 99}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, extra := range [][]string{nil, {"--collect"}} {
		args := append([]string{"reproduce", "--suite", "stress", "--envs", "aliased", "--seeds", "1", "--runs", runs, "--out", out, "--quiet"}, extra...)
		code, _, errOut := run(t, args...)
		if code == 0 || !strings.Contains(errOut, "2 of 3 runs failed") {
			t.Fatalf("%v: exit %d, stderr:\n%s", extra, code, errOut)
		}
		md, err := os.ReadFile(filepath.Join(out, "stress.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range []string{"| conv | mnist | aliased | 1 | 1 | 0 | 0 (max 0) | – |", "| mlp | mnist | aliased | 1 | 0 | 0 | 0 (max 0), 1 run(s) without a record |",
			"| conv | fashion | aliased | 1 | 1 |", "3 of 3 runs done: 2 failed", "- aliased_fashion_seed1: "} {
			if !strings.Contains(string(md), row) {
				t.Errorf("%v: table lacks %q:\n%s", extra, row, md)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "aliased_mnist_seed1.failed")); err != nil {
		t.Errorf("no failure record: %v", err)
	}
}

// TestReproduceAblationCollect: --collect trains nothing: it tabulates the finished
// runs' reports and names the run directories without one.
func TestReproduceAblationCollect(t *testing.T) {
	out, runs := t.TempDir(), t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "results", "images", "aliased_mnist_seed1_mlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runs, "aliased_mnist_seed1_mlp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "reproduce", "--suite", "ablation", "--envs", "aliased", "--arch", "mlp", "--seeds", "1",
		"--collect", "--runs", runs, "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "mlp_ablation.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| aliased | joint (default) | 1 | 4 |") {
		t.Errorf("no row from the finished run:\n%s", md)
	}
	if want := "| aliased | frozen VQ-VAE | 1 | – |"; !strings.Contains(string(md), want) ||
		!strings.Contains(string(md), "no report in "+filepath.Join(runs, "aliased_mnist_seed1_mlp_frozen")) {
		t.Errorf("a run without a report is not named:\n%s", md)
	}
	entries, _ := os.ReadDir(runs)
	if len(entries) != 1 {
		t.Errorf("--collect created run directories: %d entries in %s", len(entries), runs)
	}
}

// TestReproduceSteps: --steps reads and tabulates the reports of that data size under
// their own names (the defaults' table is left alone), and is an error for a suite
// that has no data size to set.
func TestReproduceSteps(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "bigger")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "results", "archive", "tiled-150000", "bigger", "tiled_gradient_seed1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tiled_gradient_seed1_steps150000.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "reproduce", "--suite", "bigger", "--envs", "tiled", "--trainers", "gradient",
		"--seeds", "1", "--steps", "150000", "--collect", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "bigger_steps150000.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--steps 150000", "| tiled | gradient | 1 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "bigger.md")); !os.IsNotExist(err) {
		t.Errorf("the defaults' table was written: %v", err)
	}
	code, _, errOut = run(t, "reproduce", "--suite", "images", "--steps", "5000", "--collect", "--out", out)
	if code == 0 {
		t.Fatal("--steps with the images suite: exit 0")
	}
	oneCleanError(t, errOut, "--steps with --suite images")
}
