package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

func TestTabulate(t *testing.T) {
	dir := t.TempDir()
	for seed, f1 := range map[uint64]float64{1: 0.5, 2: 1} {
		r := &evaluate.Report{Env: "room", Seed: seed, ViterbiMap: evaluate.CutoffScore{EdgeScore: evaluate.EdgeScore{F1: f1}}}
		if err := r.WriteJSON(filepath.Join(dir, "room_seed"+string(rune('0'+seed))+".json")); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "tabulate", "--columns", "seed,f1", filepath.Join(dir, "room_seed*.json"))
	if want := "| seed | map F1 |\n|---|---|\n| 1 | 0.500 |\n| 2 | 1.000 |\n"; code != 0 || out != want {
		t.Errorf("exit %d, output\n%s(stderr %s), want\n%s", code, out, errOut, want)
	}
	code, _, errOut = run(t, "tabulate", "--columns", "seed,nope", filepath.Join(dir, "room_seed1.json"))
	if code != 1 {
		t.Errorf("unknown column: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, `unknown column "nope"`)
	code, _, errOut = run(t, "tabulate", "--notes", dir, "x.json")
	if code != 1 {
		t.Errorf("--notes with a pattern: exit %d, want 1", code)
	}
	oneCleanError(t, errOut, "--notes takes no other flag and no pattern")
	code, _, errOut = run(t, "tabulate", "--notes", dir, "--where", "confused")
	if code != 1 {
		t.Errorf("--notes with --where: exit %d, want 1", code)
	}
	code, _, errOut = run(t, "tabulate", "--bogus")
	if code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	oneCleanError(t, errOut, "-bogus")
	code, _, errOut = run(t, "tabulate", "-h")
	if code != 0 || !strings.Contains(errOut, "states-used-folded") {
		t.Errorf("-h: exit %d, the menu of columns missing:\n%s", code, errOut)
	}

	note := filepath.Join(dir, "n.md")
	os.WriteFile(note, []byte("<!-- generated: gradcscg tabulate --columns seed "+filepath.Join(dir, "room_seed2.json")+" -->\n<!-- end generated -->\n"), 0o644)
	code, out, errOut = run(t, "tabulate", "--notes", dir)
	got, _ := os.ReadFile(note)
	if code != 0 || !strings.Contains(out, "1 generated blocks in 1 files") || !strings.Contains(string(got), "| seed |\n|---|\n| 2 |\n") {
		t.Errorf("--notes: exit %d, %q %q, note:\n%s", code, out, errOut, got)
	}
}
