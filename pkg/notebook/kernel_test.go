package notebook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interruptChild is the variable that makes TestInterruptMeansStop's process the
// interrupted cell: it trains the run "x" and exits.
const interruptChild = "GRADCSCG_TEST_INTERRUPT_CHILD"

// TestInterruptMeansStop simulates Kernel → Interrupt during a training cell: a cell
// process of kernel A (GONB_TMP_DIR=A) trains the smoke-sized run "x" with
// notebook.Pipeline and gets SIGINT during its warm-up. A later call in kernel A must
// refuse to train, naming nb.Resume("x"), and leave the run unfinished; in kernel B
// (a fresh kernel) the same call resumes the run and finishes it; Resume("x") clears
// kernel A's marker.
func TestInterruptMeansStop(t *testing.T) {
	if os.Getenv(interruptChild) != "" {
		cfg, err := PipelineConfig("aliased")
		if err == nil {
			_, err = Pipeline("x", cfg)
		}
		if err != nil {
			os.Stderr.WriteString("child: " + err.Error() + "\n")
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("trains a smoke-sized pixel run")
	}
	runs, kernelA, kernelB := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv(SizeEnv, "ci")
	t.Setenv(RunsEnv, runs)
	cfg, err := PipelineConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := RunDir("x")
	if err != nil {
		t.Fatal(err)
	}

	cell := exec.Command(os.Args[0], "-test.run=^TestInterruptMeansStop$")
	cell.Env = append(os.Environ(), interruptChild+"=1", KernelEnv+"="+kernelA)
	stderrPipe, err := cell.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cell.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	training := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		sent := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !sent && strings.HasPrefix(sc.Text(), "warm-up ") {
				sent = true
				training <- true
			}
		}
		if !sent {
			training <- false
		}
	}()
	select {
	case ok := <-training:
		if !ok {
			_ = cell.Wait()
			t.Fatalf("the cell never started its warm-up:\n%s", log.String())
		}
	case <-time.After(5 * time.Minute):
		_ = cell.Process.Kill()
		t.Fatal("the cell did not start training within 5 minutes")
	}
	if err := cell.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = cell.Wait() // as GoNB, which kills the cell 5 s after the signal
	time.Sleep(100 * time.Millisecond)
	if runFinished(dir) {
		t.Fatalf("the run finished before the interrupt reached it:\n%s", log.String())
	}

	t.Setenv(KernelEnv, kernelA)
	start := time.Now()
	_, err = Pipeline("x", cfg)
	var intr *Interrupted
	if err == nil || !errors.As(err, &intr) || !intr.Later || !strings.Contains(err.Error(), `nb.Resume("x")`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a later cell of the interrupted kernel: %v; want one line naming nb.Resume(\"x\")", err)
	}
	if took := time.Since(start); took > 5*time.Second || runFinished(dir) {
		t.Errorf("the refusing call took %v, run finished %v: it trained", took, runFinished(dir))
	}

	t.Setenv(KernelEnv, kernelB)
	res, err := Pipeline("x", cfg)
	if err != nil || res == nil || !runFinished(dir) {
		t.Fatalf("a fresh kernel did not resume the run: %v", err)
	}

	t.Setenv(KernelEnv, kernelA)
	buf := capture(t)
	Resume("x")
	if _, err := os.Stat(interruptedMarker(filepath.Join(kernelA, kernelState), "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Resume left the marker: %v", err)
	}
	if !strings.Contains(buf.String(), "resumes it") {
		t.Errorf("Resume said %q", buf.String())
	}
	if _, err := Pipeline("x", cfg); err != nil {
		t.Errorf("after Resume, kernel A does not load the finished run: %v", err)
	}
}

// TestGuardTrainingSignal: a SIGINT to the process while a guarded training runs marks
// the kernel and cancels the training's context; a training that ignores the
// cancellation ends the cell after the grace period; a later call refuses; outside a
// kernel the training just runs.
func TestGuardTrainingSignal(t *testing.T) {
	kernel := t.TempDir()
	t.Setenv(KernelEnv, kernel)
	err := guardTraining("y", func(ctx context.Context) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("not cancelled")
		}
	})
	var intr *Interrupted
	if !errors.As(err, &intr) || intr.Later || intr.Name != "y" || !strings.Contains(err.Error(), `nb.Resume("y")`) {
		t.Fatalf("interrupted training: %v", err)
	}
	ran := false
	err = guardTraining("y", func(context.Context) error { ran = true; return nil })
	if !errors.As(err, &intr) || !intr.Later || ran {
		t.Errorf("a later call: %v (trained %v)", err, ran)
	}

	var exited error
	oldExit, oldGrace := exitInterrupted, stopGrace
	exitInterrupted, stopGrace = func(err error) { exited = err }, 50*time.Millisecond
	defer func() { exitInterrupted, stopGrace = oldExit, oldGrace }()
	err = guardTraining("z", func(context.Context) error {
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(500 * time.Millisecond) // ignores the cancellation
		return nil
	})
	if exited == nil || !strings.Contains(exited.Error(), `nb.Resume("z")`) || !errors.As(err, &intr) {
		t.Errorf("a training that ignores the interrupt: exit %v, returned %v", exited, err)
	}

	t.Setenv(KernelEnv, "")
	ran = false
	if err := guardTraining("y", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("outside a kernel: %v, ran %v", err, ran)
	}
}

// TestCheckShowsAnErrorOnce: in a kernel, an error is shown in full by the cell that
// meets it first and by that cell run again, as one short line by other cells; a
// refusal to resume an interrupted training is one line; both exit 0.
func TestCheckShowsAnErrorOnce(t *testing.T) {
	t.Setenv(KernelEnv, t.TempDir())
	var code int
	var msg bytes.Buffer
	oldExit, oldErr, oldProgram := exit, stderr, programDigest
	exit, stderr = func(c int) { code = c }, &msg
	defer func() { exit, stderr, programDigest = oldExit, oldErr, oldProgram }()
	program := "cell 1"
	programDigest = func() string { return program }
	long := errors.New("pipeline: runs/nb_my_room/config.json holds a different configuration:\n  seed: 1 in the run, 2 now\nresume it with its own settings")
	for _, tc := range []struct {
		program string
		err     error
		code    int
		want    string
	}{
		{"cell 1", long, 1, "error: " + long.Error() + "\n"},
		{"cell 1", long, 1, "error: " + long.Error() + "\n"}, // the same cell run again
		{"cell 2", long, 0, "no result (the error above): pipeline: runs/nb_my_room/config.json holds a different configuration:\n"},
		{"cell 2", errors.New("other"), 1, "error: other\n"},
		{"cell 3", &Interrupted{Name: "x", Later: true}, 0, `training of x was interrupted in this kernel; call nb.Resume("x") (or restart the kernel) to go on` + "\n"},
	} {
		program, code = tc.program, -1
		msg.Reset()
		Check(tc.err)
		if code != tc.code || msg.String() != tc.want {
			t.Errorf("%s, Check(%q): exit %d, wrote %q; want %d, %q", tc.program, tc.err, code, msg.String(), tc.code, tc.want)
		}
	}
	t.Setenv(KernelEnv, "")
	msg.Reset()
	program = "cell 4"
	Check(long)
	if code != 1 || !strings.HasPrefix(msg.String(), "error: ") {
		t.Errorf("outside a kernel: exit %d, %q", code, msg.String())
	}
}
