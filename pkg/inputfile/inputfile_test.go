package inputfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var small = Limit{Format: "test file", Bytes: 10}

func TestRegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(p, small)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	d, err := Digest(p, small)
	// sha256 of "0123456789", from sha256sum
	if want := "84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882"; err != nil || d != want {
		t.Errorf("Digest = %s, %v; want %s", d, err, want)
	}
	link := p + ".link"
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(link, small); err != nil || string(b) != "0123456789" {
		t.Errorf("through a symbolic link to a regular file: %q, %v", b, err)
	}
}

func TestMissing(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "none"), small)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

// TestNotRegular: a named pipe (with no writer: a plain open would block), a device
// reached through a symbolic link, and a directory are refused at once, naming the
// file and what it is.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "a named pipe"},
		{zero, "(a symbolic link to /dev/zero) is a character device"},
		{dir, "a directory"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(c.path, small)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want ErrNotRegular naming it and %q", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", c.path)
		}
	}
}

func TestTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, []byte("0123456789A"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, small)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "has 11 bytes, more than the 10 bytes a test file may hold") {
		t.Errorf("err = %v", err)
	}
	if _, err := Digest(p, small); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Digest: err = %v", err)
	}
}

// TestBound: a stream is read up to the limit and fails past it (one byte more is
// enough); a stream of exactly the limit reads whole.
func TestBound(t *testing.T) {
	b, err := io.ReadAll(Bound(bytes.NewReader(make([]byte, 10)), "s", small))
	if err != nil || len(b) != 10 {
		t.Errorf("10 bytes: %d, %v", len(b), err)
	}
	_, err = io.ReadAll(Bound(bytes.NewReader(make([]byte, 11)), "s", small))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "s holds more than the 10 bytes a test file may hold") {
		t.Errorf("11 bytes: %v", err)
	}
	// An endless stream stops at the limit.
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if _, err := io.ReadAll(Bound(f, "/dev/zero", Limit{Format: "x", Bytes: 1 << 20})); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v", err)
	}
}
