package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempMarker is in the name of every temporary file Write creates, followed by the
// writer's pid: ".<target name>.gradcscg-tmp-<pid>-<random digits>".
const tempMarker = ".gradcscg-tmp-"

// Write creates path with the bytes that write produces.
// Errors name path.
func Write(path string, write func(io.Writer) error) (err error) {
	prefix := "." + filepath.Base(path) + tempMarker + strconv.Itoa(os.Getpid()) + "-"
	f, err := os.CreateTemp(filepath.Dir(path), prefix+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteFile creates path with data.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// TempWriter returns the pid of the process that created name, a temporary file of
// Write, and whether name is one: a file name of Write's pattern, nothing else.
func TempWriter(name string) (pid int, ok bool) {
	i := strings.LastIndex(name, tempMarker)
	if i < 1 || !strings.HasPrefix(name, ".") {
		return 0, false
	}
	p, random, found := strings.Cut(name[i+len(tempMarker):], "-")
	if !found || !digits(p) || !digits(random) {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// RemoveStale removes from dir the temporary files of Write whose writer has ended
// (an interrupted write), and returns their names. Files of a running process (this
// one included) and every file of another name are left as they are.
func RemoveStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		pid, ok := TempWriter(e.Name())
		if !ok || !e.Type().IsRegular() || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

// alive reports whether a process pid exists (one of another user included).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
