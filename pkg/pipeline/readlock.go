package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// openLock opens (creating it) the lock file path for lockDir: a regular file.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("pipeline: %s is not a regular file: remove it", path)
	}
	return f, nil
}

// lockOwner names the process whose pid the lock file f holds, if it still runs.
func lockOwner(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return "another process"
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return "another process" // the last writer ended; a reader holds it
	}
	return fmt.Sprintf("process %d", pid)
}

// shareDir takes the run directory dir for reading: a shared flock on dir/.lock, so
// that no process starts writing it meanwhile, or an error naming the process that
// writes it. It needs no write access: a directory without a lock file, or one whose
// lock file this process may not open, is read unlocked, the digests of its state
// guarding each file read (readVerified). The returned function releases it.
func shareDir(dir string) (func(), error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("pipeline: %s is not a regular file: remove it", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		owner := lockOwner(f)
		f.Close()
		return nil, fmt.Errorf("pipeline: run directory %s is being written by %s; wait for it to end", dir, owner)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// readVerified returns the bytes of the run-directory file name of dir, checked
// against the digest st recorded for it: one read, so the bytes returned are the bytes
// checked.
func readVerified(dir string, st *runState, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	want, ok := st.Files[name]
	if !plainName(name) || !ok {
		return nil, fmt.Errorf("pipeline: %s is not recorded in the run's state", path)
	}
	raw, err := inputfile.ReadFile(path, runFileLimit)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != want {
		return nil, fmt.Errorf("pipeline: %s is not the file this run wrote (damaged, or copied from another run)", path)
	}
	return raw, nil
}
