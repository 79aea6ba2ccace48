package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "train", 100)
	clock := b.start
	b.now = func() time.Time { return clock }
	b.Every(time.Second)
	for i := 1; i <= 100; i++ {
		clock = clock.Add(100 * time.Millisecond) // 10 steps per second
		b.Update(i, "loss %.1f", float64(i))
	}
	b.Done("final")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// The first step, then one line per simulated second (every 10 steps), then Done.
	if len(lines) != 12 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if want := "train 1/100 (  1%) loss 1.0"; lines[0] != want { // no rate or ETA from one step
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "train 11/100 ( 11%) loss 11.0 | 10.0/s ETA 8.9s"; lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	if !strings.Contains(lines[len(lines)-1], "100/100 (100%) final | 10.0/s in 10.0s") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}

// TestSlowFirstStep: a first step that takes 30 s (graph compilation) followed by
// 10 steps per second gives the rate and ETA of the 10 steps per second, not of
// the average since the start (which said 36 minutes for a 21-second task).
func TestSlowFirstStep(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "joint", 1000)
	clock := b.start
	b.now = func() time.Time { return clock }
	b.Every(time.Second)
	clock = clock.Add(30 * time.Second)
	b.Update(1, "")
	for i := 2; i <= 11; i++ {
		clock = clock.Add(100 * time.Millisecond)
		b.Update(i, "")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := "joint 11/1000 (  1%) | 10.0/s ETA 1m38s"; lines[len(lines)-1] != want {
		t.Errorf("line %q, want %q", lines[len(lines)-1], want)
	}
}

func TestNilBar(t *testing.T) {
	var b *Bar
	b.Update(1, "x")
	b.Done("")
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{500 * time.Millisecond, "500ms"},
		{1500 * time.Millisecond, "1.5s"},
		{90 * time.Second, "1m30s"},
		{2*time.Hour + 5*time.Minute, "2h05m"},
	} {
		if got := formatDuration(c.d); got != c.want {
			t.Errorf("formatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestFinishEarly: a task that stops before its total says where it stopped, why and
// how long it took — not 100% and no ETA.
func TestFinishEarly(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "gradient", 2000)
	clock := b.start
	b.now = func() time.Time { return clock }
	clock = clock.Add(2 * time.Second)
	b.Update(400, "ll/step -0.02")
	clock = clock.Add(2 * time.Second)
	b.Finish(640, "stopped: patience")
	b.Done("") // no second final line
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := "gradient 640/2000 ( 32%) stopped: patience | 160/s in 4.0s"; len(lines) != 2 || lines[1] != want {
		t.Fatalf("lines %q, want the last to be %q", lines, want)
	}
	var nb *Bar
	nb.Finish(1, "x")
}

// TestFrom: a task resumed at step 500 of 1000 that then does 10 steps per second
// shows 10/s, not 500 steps over the first second.
func TestFrom(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "warm-up", 1000).From(500)
	clock := b.start
	b.now = func() time.Time { return clock }
	b.Every(time.Second)
	for i := 501; i <= 1000; i++ {
		clock = clock.Add(100 * time.Millisecond)
		b.Update(i, "")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := "warm-up 501/1000 ( 50%)"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "warm-up 1000/1000 (100%) | 10.0/s in 50.0s"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
}

// walk drives a Bar on a fake clock.
type walk struct {
	buf   bytes.Buffer
	b     *Bar
	clock time.Time
	step  int
}

func newWalk(name string, total int) *walk {
	w := &walk{}
	w.b = New(&w.buf, name, total).Every(time.Second)
	w.clock = w.b.start
	w.b.now = func() time.Time { return w.clock }
	return w
}

// run does n steps of each.
func (w *walk) run(n int, each time.Duration) {
	for range n {
		w.clock = w.clock.Add(each)
		w.step++
		w.b.Update(w.step, "")
	}
}

// last is the last line printed.
func (w *walk) last() string {
	lines := strings.Split(strings.TrimSpace(w.buf.String()), "\n")
	return lines[len(lines)-1]
}

// TestRecentRate: a task whose steps slow down tenfold (100/s for 10 s, then 10/s for
// 60 s) shows the rate of the last RateWindow and its ETA, not the average since the
// start (22.9/s, ETA 1m01s).
func TestRecentRate(t *testing.T) {
	w := newWalk("gradient", 3000)
	w.run(1000, 10*time.Millisecond)
	w.run(600, 100*time.Millisecond)
	if got, want := w.last(), "gradient 1591/3000 ( 53%) | 10.0/s ETA 2m20s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	w.b.Finish(w.step, "stopped")
	if got, want := w.last(), "gradient 1600/3000 ( 53%) stopped | 22.9/s in 1m10s"; got != want { // the final line: the whole task
		t.Errorf("final line %q, want %q", got, want)
	}
}

// TestStall: a task stopped for 4 hours (SIGSTOP, a sleeping machine) between steps of
// 0.1 s shows no rate on the line after it, then the rate of the steps since (10.0/s),
// not one over a window that holds the stall; a task whose every step takes a minute
// (past RateWindow) is not taken for stalled.
func TestStall(t *testing.T) {
	w := newWalk("em", 2000)
	w.run(600, 100*time.Millisecond)
	w.run(1, 4*time.Hour)
	if got, want := w.last(), "em 601/2000 ( 30%)"; got != want {
		t.Errorf("line after the stall %q, want %q", got, want)
	}
	w.run(20, 100*time.Millisecond)
	if got, want := w.last(), "em 621/2000 ( 31%) | 10.0/s ETA 2m17s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}

	w = newWalk("slow", 10)
	w.run(5, time.Minute)
	if got, want := w.last(), "slow 5/10 ( 50%) | 0.017/s ETA 5m00s"; got != want {
		t.Errorf("slow steps: line %q, want %q", got, want)
	}
}
