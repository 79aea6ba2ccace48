package tabulate

import (
	"path/filepath"
	"testing"
)

// TestNotesUpToDate regenerates every generated block of the committed notes from the
// committed reports and fails on any difference: a number pasted or left stale.
func TestNotesUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := NoteFiles(filepath.Join(root, "results", "notes"))
	if err != nil {
		t.Fatal(err)
	}
	stale, n, err := NewReader(root).Check(files)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no generated block found in results/notes")
	}
	for _, s := range stale {
		t.Errorf("%v\n(make notes rewrites it from the reports)", s)
	}
}
