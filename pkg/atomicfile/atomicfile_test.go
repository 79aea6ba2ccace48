package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := WriteFile(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read back %q, %v", b, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := WriteFile(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want boom naming %s", err, p)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "old" {
		t.Errorf("target changed to %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestMissingDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "a.txt")
	if err := WriteFile(p, nil); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want one naming %s", err, p)
	}
}

// TestRemoveStale: only Write's own temporary files of an ended writer are removed;
// a file of a running writer, and a user's file whatever its name, stay.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Skip(err)
	}
	dead := ended.Process.Pid
	names := map[string]bool{ // name → removed
		fmt.Sprintf(".state.gob.gradcscg-tmp-%d-123456", dead):      true,
		fmt.Sprintf(".config.json.gradcscg-tmp-%d-9", dead):         true,
		fmt.Sprintf(".state.gob.gradcscg-tmp-%d-123", os.Getpid()):  false, // this process
		fmt.Sprintf(".state.gob.gradcscg-tmp-%d-123", os.Getppid()): false, // running
		".notes.tmp-1":                             false, // a user's file
		".state.gob.tmp-123":                       false,
		fmt.Sprintf(".gradcscg-tmp-%d-1", dead):    false, // no target name
		fmt.Sprintf("x.gradcscg-tmp-%d-1", dead):   false, // not hidden
		fmt.Sprintf(".x.gradcscg-tmp-%d-1a", dead): false,
		fmt.Sprintf(".x.gradcscg-tmp-%d", dead):    false,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := RemoveStale(dir); err != nil {
		t.Fatal(err)
	}
	for n, gone := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if gone != errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: removed %v, want %v", n, !gone, gone)
		}
	}
}

// TestTempName: Write's temporary file is named by TempWriter's pattern with this
// process's pid, and is gone after the write.
func TestTempName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	err := Write(p, func(io.Writer) error {
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			return fmt.Errorf("%d files during the write", len(ents))
		}
		if pid, ok := TempWriter(ents[0].Name()); !ok || pid != os.Getpid() {
			return fmt.Errorf("temporary file %s: pid %d, %v", ents[0].Name(), pid, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
