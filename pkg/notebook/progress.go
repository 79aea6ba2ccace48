package notebook

import (
	"bytes"
	"html"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"

	"github.com/gradcscg/gradcscg/pkg/ipynb"
)

// Progress returns where a cell's long work reports its progress: under GoNB, one
// output block that is redrawn in place (each progress bar keeps one line, updated with
// its rate and ETA; other lines — interventions, notes — are kept below one another;
// paths are shown as ShowPath shows them), on the normal output rather than as a
// stream of red stderr lines, and marked as transient (ipynb.ProgressKey) so that
// committed notebooks leave it out; elsewhere os.Stderr.
func Progress() io.Writer {
	w, _ := trainingProgress()
	return w
}

// trainingProgress is Progress with a function that ends the block: under GoNB it
// replaces the block's lines with one summary line (an empty summary keeps them);
// elsewhere it does nothing.
func trainingProgress() (io.Writer, func(summary string)) {
	if !gonbui.IsNotebook {
		return os.Stderr, func(string) {}
	}
	l := newLiveLines(showProgress, gonbui.UniqueID())
	return l, l.finish
}

// showProgress displays (first) or redraws (later) the progress block id.
func showProgress(id, h string) {
	gonbui.SendData(&protocol.DisplayData{
		Data:      map[protocol.MIMEType]any{protocol.MIMETextHTML: h},
		Metadata:  map[string]any{ipynb.ProgressKey: ipynb.ProgressValue},
		DisplayID: id,
	})
}

// barLine matches a progress line: its bar's name, then "done/total".
var barLine = regexp.MustCompile(`^(.+?) \d+/\d+ `)

// liveLines collects written lines into one block shown with update(id, html) after
// every complete line: a line of a progress bar replaces that bar's previous line.
type liveLines struct {
	mu      sync.Mutex
	update  func(id, html string)
	id      string
	partial []byte
	lines   []string
	bars    map[string]int // bar name → index in lines
}

func newLiveLines(update func(id, html string), id string) *liveLines {
	return &liveLines{update: update, id: id, bars: map[string]int{}}
}

func (l *liveLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	changed := false
	for {
		i := bytes.IndexAny(l.partial, "\n\r")
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		if line == "" {
			continue
		}
		changed = true
		line = showPaths(line)
		if m := barLine.FindStringSubmatch(line); m != nil {
			if j, ok := l.bars[m[1]]; ok {
				l.lines[j] = line
				continue
			}
			l.bars[m[1]] = len(l.lines)
		}
		l.lines = append(l.lines, line)
	}
	if changed {
		l.show()
	}
	return len(p), nil
}

// show draws the block's lines.
func (l *liveLines) show() {
	l.update(l.id, "<pre style=\"margin:0\">"+html.EscapeString(strings.Join(l.lines, "\n"))+"</pre>")
}

// finish replaces the block's lines by summary (when not empty).
func (l *liveLines) finish(summary string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if summary == "" {
		return
	}
	l.lines, l.bars, l.partial = []string{summary}, map[string]int{}, nil
	l.show()
}
