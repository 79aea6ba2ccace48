package inputfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Limit is the most bytes a file of one format may hold.
type Limit struct {
	Format string // what the file is, for errors ("configuration file")
	Bytes  int64  // the most bytes it may hold (> 0)
}

// Errors wrapped by this package's errors, for errors.Is.
var (
	// ErrNotRegular marks a path that is not a regular file (after symbolic links).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge marks a file or stream longer than its Limit.
	ErrTooLarge = errors.New("larger than its format allows")
)

// File is a regular file open for reading, of at most its Limit's bytes.
type File struct {
	f    *os.File
	r    io.Reader
	size int64
}

// Read reads from the file; past the Limit it returns an error wrapping ErrTooLarge.
func (f *File) Read(p []byte) (int, error) { return f.r.Read(p) }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Size is the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Open opens path for reading if it is a regular file (symbolic links followed) of at
// most lim.Bytes bytes. A missing file gives the os package's error (errors.Is(err,
// fs.ErrNotExist)); every other refusal names path and the reason.
func Open(path string, lim Limit) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // as an open of a missing or unreadable file says
		}
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	// O_NONBLOCK: a file replaced by a named pipe since the Stat must not block the
	// open; it has no effect on a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, st.Mode())
	}
	if st.Size() > lim.Bytes {
		f.Close()
		return nil, tooLarge(path, st.Size(), lim)
	}
	return &File{f: f, r: Bound(f, path, lim), size: st.Size()}, nil
}

// ReadFile reads the whole of path, checked as Open checks it.
func ReadFile(path string, lim Limit) ([]byte, error) {
	f, err := Open(path, lim)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.Grow(int(f.size) + bytes.MinRead)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Digest returns the hex SHA-256 of the file at path, read as Open reads it.
func Digest(path string, lim Limit) (string, error) {
	f, err := Open(path, lim)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Bound returns a reader of r that fails with an error wrapping ErrTooLarge (naming
// name) once r holds more than lim.Bytes bytes.
func Bound(r io.Reader, name string, lim Limit) io.Reader {
	return &bounded{r: r, name: name, lim: lim, left: lim.Bytes}
}

type bounded struct {
	r    io.Reader
	name string
	lim  Limit
	left int64 // bytes still allowed
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than allowed is enough to tell.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, tooLarge(b.name, -1, b.lim)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// notRegular is the error for path whose file (after symbolic links) has mode m.
func notRegular(path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	}
	via := ""
	if target, err := os.Readlink(path); err == nil {
		via = fmt.Sprintf(" (a symbolic link to %s)", target)
	}
	return fmt.Errorf("%s%s is %s: %w", path, via, kind, ErrNotRegular)
}

// tooLarge is the error for path of size bytes (-1: it grew while read) over lim.
func tooLarge(path string, size int64, lim Limit) error {
	what := "holds more than"
	if size >= 0 {
		what = fmt.Sprintf("has %d bytes, more than", size)
	}
	return fmt.Errorf("%s %s the %s a %s may hold: %w", path, what, byteSize(lim.Bytes), lim.Format, ErrTooLarge)
}

// byteSize writes n bytes in binary units.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
