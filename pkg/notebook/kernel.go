package notebook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// KernelEnv is the variable GoNB sets in every cell's process to its kernel's
// temporary directory, created when the kernel starts and removed when it stops: the
// kernel's identity. The notebooks keep what a kernel remembers between cells (an
// interrupted training, an error already shown) in a folder inside it, so that a new
// or restarted kernel starts with none.
const KernelEnv = "GONB_TMP_DIR"

// kernelState is the folder of this kernel's markers inside KernelEnv's directory.
const kernelState = ".gradcscg"

// kernelDir returns this kernel's marker folder, or "" outside a GoNB kernel (the
// variable unset, or its directory gone).
func kernelDir() string {
	d := os.Getenv(KernelEnv)
	if d == "" {
		return ""
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Join(d, kernelState)
}

// Interrupted is the error of a training that a Kernel → Interrupt stopped, in the
// cell that ran it and in every later cell of the same kernel that would train it.
type Interrupted struct {
	Name  string // the run's name: the argument of Resume
	Later bool   // a later cell refused to go on (false: the interrupted cell itself)
}

func (e *Interrupted) Error() string {
	if e.Later {
		return fmt.Sprintf("training of %s was interrupted in this kernel; call nb.Resume(%q) (or restart the kernel) to go on", e.Name, e.Name)
	}
	return fmt.Sprintf("training of %s interrupted (the run directory keeps its last checkpoint); call nb.Resume(%q) (or restart the kernel) to go on", e.Name, e.Name)
}

// interruptedMarker is the marker file of the training called name in kernel dir.
func interruptedMarker(dir, name string) string {
	return filepath.Join(dir, "interrupted", name)
}

// Resume forgets that the training called name was interrupted in this kernel, so that
// the next cell that trains it resumes it from its run directory's last checkpoint.
// Outside a GoNB kernel it does nothing.
func Resume(name string) {
	dir := kernelDir()
	if dir == "" {
		return
	}
	if err := os.Remove(interruptedMarker(dir, name)); err == nil {
		Markdownf("The next call that trains `%s` resumes it.", name)
	} else if errors.Is(err, os.ErrNotExist) {
		Markdownf("No training of `%s` was interrupted in this kernel.", name)
	}
}

// stopGrace is how long a training is given to return after the interrupt has
// cancelled its context (GoNB kills the cell 5 seconds after the signal).
var stopGrace = 4 * time.Second

// exitInterrupted ends the cell when a training does not return within stopGrace of
// the interrupt; tests replace it.
var exitInterrupted = func(err error) {
	Sync()
	fmt.Fprintln(stderr, err)
	os.Exit(1)
}

// guardTraining runs train, the training of the run called name. Under a GoNB kernel:
// if an earlier cell of the kernel was interrupted while training name, it returns
// *Interrupted (Later) without training; and a SIGINT (Kernel → Interrupt) while train
// runs first marks name as interrupted in the kernel, then cancels train's context
// and returns *Interrupted once train returns — or ends the process after stopGrace.
// Outside a kernel it runs train with a background context and SIGINT keeps its
// default effect.
func guardTraining(name string, train func(ctx context.Context) error) error {
	dir := kernelDir()
	if dir == "" {
		return train(context.Background())
	}
	marker := interruptedMarker(dir, name)
	if _, err := os.Stat(marker); err == nil {
		return &Interrupted{Name: name, Later: true}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	done := make(chan struct{})
	var stopped atomic.Bool
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		_ = os.MkdirAll(filepath.Dir(marker), 0o755)
		_ = os.WriteFile(marker, []byte(name+"\n"), 0o644)
		stopped.Store(true)
		cancel()
		select {
		case <-done:
		case <-time.After(stopGrace):
			exitInterrupted(&Interrupted{Name: name})
		}
	}()
	err := train(ctx)
	close(done)
	if stopped.Load() {
		return &Interrupted{Name: name}
	}
	return err
}

// errorsShown is the folder of the errors Check has shown in this kernel: one file
// per error (named by its text's digest) holding the digest of the program that
// showed it.
func errorsShown(dir string) string { return filepath.Join(dir, "errors") }

// shownBefore reports whether another cell of this kernel already showed the error
// text msg; otherwise it records that this cell shows it. A cell run again (the same
// program) shows its error in full again.
func shownBefore(msg string) bool {
	dir := kernelDir()
	if dir == "" {
		return false
	}
	sum := sha256.Sum256([]byte(msg))
	path := filepath.Join(errorsShown(dir), hex.EncodeToString(sum[:16]))
	self := programDigest()
	if prev, err := os.ReadFile(path); err == nil {
		return string(prev) != self
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	_ = os.WriteFile(path, []byte(self), 0o644)
	return false
}

// programDigest identifies the running cell: the SHA-256 of its executable (GoNB
// compiles each cell into a program of its own).
var programDigest = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// shortError is the line a later cell shows for an error already shown above: its
// first line, cut to about 100 characters.
func shortError(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	if r := []rune(line); len(r) > 100 {
		line = string(r[:100]) + "…"
	}
	return "no result (the error above): " + line
}
