package notebook

import (
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/progress"
)

// TestLiveLines: a progress bar's lines replace each other in the one block, other
// lines stay, partial writes wait for their newline, and HTML is escaped.
func TestLiveLines(t *testing.T) {
	var shown []string
	l := newLiveLines(func(id, h string) {
		if id != "block" {
			t.Errorf("id %q", id)
		}
		shown = append(shown, h)
	}, "block")
	b := progress.New(l, "warm-up", 10).Every(0)
	l.Write([]byte("run directory runs/x, backend go:ops_sequential\n"))
	for i := 1; i <= 10; i++ {
		b.Update(i, "rec %.2f", 0.1)
	}
	b.Done("")
	l.Write([]byte("note: <a> & b"))
	n := len(shown)
	l.Write([]byte("\n"))
	if len(shown) != n+1 {
		t.Fatalf("a partial line was shown, or the completed one was not")
	}
	last := shown[len(shown)-1]
	for _, want := range []string{"run directory runs/x", "warm-up 10/10 (100%)", "note: &lt;a&gt; &amp; b"} {
		if !strings.Contains(last, want) {
			t.Errorf("block lacks %q:\n%s", want, last)
		}
	}
	if strings.Count(last, "warm-up") != 1 {
		t.Errorf("the bar has more than one line:\n%s", last)
	}
}
