package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar reports the progress of a task of known length. It is safe for
// concurrent use. A nil *Bar ignores every call, so callers can pass nil to
// silence it.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	name     string
	total    int
	start    time.Time
	last     time.Time
	every    time.Duration
	tty      bool
	done     bool
	lastLine int
	printed  int  // last step printed
	ended    bool // Finish: the task is over at whatever step (no ETA)
	now      func() time.Time
	from     int // steps done before this bar started (From)
	// The rate and ETA of a line that is not the last are over the last RateWindow:
	// samples of (step, time) at most one a second, the first one the reference (the
	// first Update while the task is younger than the window), so that neither a slow
	// first step (graph compilation) nor steps that slow down as the task goes on
	// distort them. Before a second Update a line that is not the last has neither.
	samples []sample
	// A gap between two Updates longer than RateWindow and stallFactor times the
	// longest one before it (slowest: the first gap always counts, a stall's never)
	// is a stall: a stopped process, a sleeping machine. The window starts again
	// after it, so that the rate and ETA are the work's, not the stall's. The final
	// line's rate and time are still over the whole task, stalls included.
	prev    time.Time
	slowest time.Duration
}

// stallFactor: see Bar.slowest.
const stallFactor = 10

type sample struct {
	step int
	at   time.Time
}

// RateWindow is how far back the rate of a progress line looks.
const RateWindow = 30 * time.Second

// New returns a bar writing to w for a task of total steps. On a terminal
// it redraws one line; otherwise it prints a line at most every 2 seconds
// (set with Every).
func New(w io.Writer, name string, total int) *Bar {
	b := &Bar{w: w, name: name, total: total, every: 2 * time.Second, now: time.Now}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
			b.every = 200 * time.Millisecond
		}
	}
	b.start = b.now()
	return b
}

// Every sets the minimum interval between reports and returns b.
func (b *Bar) Every(d time.Duration) *Bar {
	if b != nil {
		b.every = d
	}
	return b
}

// From says that the task resumes with steps already done (before this process
// started), so that they count in the percentage but not in the rate, and returns b.
func (b *Bar) From(steps int) *Bar {
	if b != nil {
		b.from = max(steps, 0)
	}
	return b
}

// Update records that step (1-based count of finished steps) is done; the
// optional format and args describe the current state (e.g. a loss).
func (b *Bar) Update(step int, format string, args ...any) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total > 0 && step > b.total {
		step = b.total
	}
	now := b.now()
	if !b.prev.IsZero() {
		gap := now.Sub(b.prev)
		if b.slowest > 0 && gap > RateWindow && gap > stallFactor*b.slowest {
			b.samples = b.samples[:0]
		} else {
			b.slowest = max(b.slowest, gap)
		}
	}
	b.prev = now
	if len(b.samples) == 0 {
		b.samples = append(b.samples, sample{step, now})
	} else if now.Sub(b.samples[len(b.samples)-1].at) >= time.Second {
		b.samples = append(b.samples, sample{step, now})
		// Keep one sample at least RateWindow old as the reference.
		for len(b.samples) > 1 && now.Sub(b.samples[1].at) >= RateWindow {
			b.samples = b.samples[1:]
		}
	}
	if step < b.total && now.Sub(b.last) < b.every {
		return
	}
	b.last = now
	b.print(step, now, fmt.Sprintf(format, args...))
}

// Finish prints the final line (once) for a task that ended after step of its total
// steps — early, when step < total (say why in format) — with the time it took.
func (b *Bar) Finish(step int, format string, args ...any) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.ended = true
	b.final(min(max(step, 0), b.total), fmt.Sprintf(format, args...))
}

// final prints the last line and ends a terminal's redrawn line.
func (b *Bar) final(step int, msg string) {
	b.print(step, b.now(), msg)
	if b.tty {
		fmt.Fprintln(b.w)
	}
}

// Line formats the progress line for step at time now.
func (b *Bar) line(step int, now time.Time, msg string) string {
	el := now.Sub(b.start)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %d/%d", b.name, step, b.total)
	if b.total > 0 {
		fmt.Fprintf(&sb, " (%3.0f%%)", 100*float64(step)/float64(b.total))
	}
	if msg != "" {
		sb.WriteString(" ")
		sb.WriteString(msg)
	}
	final := step >= b.total || b.ended
	anchored := len(b.samples) > 0
	var ref sample
	if anchored {
		ref = b.samples[0]
	}
	if d := now.Sub(ref.at); step > b.from && el > 0 && (final || anchored && step > ref.step && d > 0) {
		rate, eta := float64(step-b.from)/el.Seconds(), false // a final line: over the whole task
		if !final {
			rate, eta = float64(step-ref.step)/d.Seconds(), true
		}
		fmt.Fprintf(&sb, " | %s/s", formatRate(rate))
		if eta {
			eta := time.Duration(float64(b.total-step) / rate * float64(time.Second))
			fmt.Fprintf(&sb, " ETA %s", formatDuration(eta))
		} else if step >= b.total || b.ended {
			fmt.Fprintf(&sb, " in %s", formatDuration(el))
		}
	}
	return sb.String()
}

func (b *Bar) print(step int, now time.Time, msg string) {
	l := b.line(step, now, msg)
	b.printed = step
	if b.tty {
		pad := ""
		if n := b.lastLine - len(l); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(b.w, "\r%s%s", l, pad)
		b.lastLine = len(l)
		return
	}
	fmt.Fprintln(b.w, l)
}

// Done prints the final line (once), unless the last step was already
// reported and there is nothing to add.
func (b *Bar) Done(format string, args ...any) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.printed == b.total && format == "" {
		if b.tty {
			fmt.Fprintln(b.w)
		}
		return
	}
	b.final(b.total, fmt.Sprintf(format, args...))
}

func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 1:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.3f", r)
	}
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
