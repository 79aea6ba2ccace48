package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after a while (a read that
// blocks on a named pipe); it returns f's error.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: still running after 20 s (blocked on a special file?)", what)
		return nil
	}
}

// deadPid is the pid of a process that has ended.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip(err)
	}
	return c.Process.Pid
}

// TestSpecialRunFiles: a run-directory file or a --config file that is a named pipe,
// or a symbolic link to /dev/zero or /dev/urandom, is refused at once by every reader
// (Run, LoadRun, Reevaluate, Branch, ReadConfig) with an error naming the file — never
// read until memory runs out, never waited on.
func TestSpecialRunFiles(t *testing.T) {
	cfg := tinyConfig(t)
	finished := t.TempDir()
	if _, err := Run(context.Background(), finished, cfg, nil); err != nil {
		t.Fatal(err)
	}
	st := mustState(t, finished)
	special := map[string]func(t *testing.T, path string){
		"named pipe": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"/dev/zero": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
		"/dev/urandom": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/urandom", path); err != nil {
				t.Fatal(err)
			}
		},
	}
	readers := map[string]func(dir string) error{
		"Run": func(dir string) error { _, err := Run(context.Background(), dir, cfg, nil); return err },
		"LoadRun": func(dir string) error {
			_, err := LoadRun(dir)
			return err
		},
		"Reevaluate": func(dir string) error { _, err := Reevaluate(dir); return err },
		"Branch": func(dir string) error {
			return Branch(filepath.Join(t.TempDir(), "b"), dir, cfg)
		},
	}
	loaded := []string{ConfigFile, StateFile, VQVAEFile, CHMMFile, ReportFile} // by a finished run's readers
	reads := map[string][]string{"Run": loaded, "LoadRun": loaded, "Reevaluate": loaded,
		"Branch": {ConfigFile, StateFile, st.Checkpoint, st.Warmup}}
	for rname, read := range readers {
		for _, name := range reads[rname] {
			for kind, make := range special {
				t.Run(fmt.Sprintf("%s %s %s", rname, name, kind), func(t *testing.T) {
					d := copyDir(t, finished)
					p := filepath.Join(d, name)
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					make(t, p)
					err := within(t, rname, func() error { return read(d) })
					if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
						t.Errorf("err = %v; want one naming %s as not a regular file", err, p)
					}
				})
			}
		}
	}
	for kind, make := range special {
		p := filepath.Join(t.TempDir(), "user.json")
		make(t, p)
		_, err := ReadConfig(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadConfig of a %s: %v", kind, err)
		}
	}
}

// TestForeignCheckpointRefused: a finished run whose state.gob was deleted and into
// which another seed's warm-up checkpoint was copied as warmup.ckpt (the legacy name)
// is refused, not adopted and trained from; and under a legacy state (no digests) a
// checkpoint of another seed is refused too. A legacy directory whose files are its
// own still resumes (TestLegacyRunDirectory).
func TestForeignCheckpointRefused(t *testing.T) {
	cfg := tinyConfig(t)
	cfg2 := cfg
	cfg2.Seed = 2
	finished, other := t.TempDir(), t.TempDir()
	for _, r := range []struct {
		dir string
		cfg Config
	}{{finished, cfg}, {other, cfg2}} {
		if _, err := Run(context.Background(), r.dir, r.cfg, nil); err != nil {
			t.Fatal(err)
		}
	}
	foreign := mustState(t, other).Warmup
	copyFile := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	d := copyDir(t, finished)
	if err := os.Remove(filepath.Join(d, StateFile)); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(other, foreign), filepath.Join(d, WarmupFile))
	_, err := Run(context.Background(), d, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), WarmupFile) || !strings.Contains(err.Error(), "no "+StateFile) {
		t.Errorf("stateless directory with a foreign warmup.ckpt: %v; want a refusal naming it", err)
	}
	if _, err := os.Stat(filepath.Join(d, StateFile)); err == nil {
		t.Errorf("a state was written")
	}

	// A legacy state (a bare gob without identity) at the end of the warm-up, with
	// the other seed's checkpoint as its warm-up.
	stopped := cfg
	stopped.StopAfterJoint = 5
	p := t.TempDir()
	if _, err := Run(context.Background(), p, stopped, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	st := mustState(t, p)
	st.Identity, st.Files = "", nil
	copyFile(t, filepath.Join(other, foreign), filepath.Join(p, WarmupFile))
	os.Remove(filepath.Join(p, st.Warmup))
	st.Warmup = ""
	writeLegacyState(t, p, st)
	_, err = Run(context.Background(), p, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), WarmupFile) || !strings.Contains(err.Error(), "seed 2") {
		t.Errorf("legacy state with another seed's warm-up checkpoint: %v; want a refusal naming it and its seed", err)
	}
}

// TestLockKeepsUserFiles: taking a run directory removes only the temporary files of
// interrupted writes of this tool (atomicfile's names, of a process that ended), never
// a user's file that merely looks like one.
func TestLockKeepsUserFiles(t *testing.T) {
	d := t.TempDir()
	user := []string{".notes.tmp-1", ".state.gob.tmp-123", ".config.json.tmp-draft"}
	stale := fmt.Sprintf(".state.gob.gradcscg-tmp-%d-42", deadPid(t))
	for _, n := range append(user, stale) {
		if err := os.WriteFile(filepath.Join(d, n), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := lockDir(d)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for _, n := range user {
		if _, err := os.Stat(filepath.Join(d, n)); err != nil {
			t.Errorf("user file %s: %v", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d, stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file %s left: %v", stale, err)
	}
}

// TestBranchFromReadOnlySource: branching reads the source without writing to it: a
// source without a lock file gets none (the old exclusive lock created it, and failed
// on a read-only mount), no file of it changes, and a source whose directory this
// process may not write (not testable as root) branches.
func TestBranchFromReadOnlySource(t *testing.T) {
	cfg := tinyConfig(t)
	src := t.TempDir()
	if _, err := Run(context.Background(), src, cfg, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, LockFile)); err != nil {
		t.Fatal(err)
	}
	before := dirDigests(t, src)
	if os.Geteuid() != 0 {
		if err := os.Chmod(src, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(src, 0o755)
	}
	em := cfg
	em.Final.Trainer, em.Final.Iters, em.Final.SplitRounds = FinalEM, 20, 2
	dst := filepath.Join(t.TempDir(), "branch")
	if err := Branch(dst, src, em); err != nil {
		t.Fatalf("branch from a source without write access: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the source got a lock file: %v", err)
	}
	after := dirDigests(t, src)
	if len(after) != len(before) {
		t.Errorf("source files %v, were %v", after, before)
	}
	for name, d := range before {
		if after[name] != d {
			t.Errorf("source file %s changed", name)
		}
	}
	// A source being written (an exclusive lock held) is refused, naming the writer.
	if err := os.Chmod(src, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(src)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := Branch(filepath.Join(t.TempDir(), "b2"), src, em); err == nil || !strings.Contains(err.Error(), "being written by process") {
		t.Errorf("branch from a source being written: %v", err)
	}
}

// writeLegacyState writes st as a state of the versions before digests: a bare gob.
func writeLegacyState(t *testing.T, dir string, st *runState) {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
