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
