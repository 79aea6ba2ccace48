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
)

// Progress returns where a cell's long work reports its progress: under GoNB, one
// output block that is redrawn in place (each progress bar keeps one line, updated with
// its rate and ETA; other lines — the run directory, interventions, notes — are kept
// below one another), on the normal output rather than as a stream of red stderr
// lines; elsewhere os.Stderr.
func Progress() io.Writer {
	if !gonbui.IsNotebook {
		return os.Stderr
	}
	return newLiveLines(func(id, h string) { gonbui.UpdateHTML(id, h) }, gonbui.UniqueID())
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
		l.update(l.id, "<pre style=\"margin:0\">"+html.EscapeString(strings.Join(l.lines, "\n"))+"</pre>")
	}
	return len(p), nil
}
