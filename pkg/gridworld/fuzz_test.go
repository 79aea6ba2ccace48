package gridworld

import (
	"strings"
	"testing"
)

// FuzzParseLayout: no input panics the layout parser, and a layout it accepts
// round-trips through Env.Layout. Seeds: every built-in layout and damaged variants.
func FuzzParseLayout(f *testing.F) {
	for _, name := range Names() {
		e, err := Named(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e.Layout())
		f.Add(strings.Replace(e.Layout(), "\n", "\n\n", 1))
		f.Add(e.Layout()[:len(e.Layout())/2])
	}
	f.Add("")
	f.Add("// only a comment\n")
	f.Add("0 1\n2\n")
	f.Add("99999999999999999999 1\n")
	f.Add("-1 . x\n")
	f.Fuzz(func(t *testing.T, text string) {
		e, err := ParseLayout("fuzz", strings.NewReader(text))
		if err != nil {
			return
		}
		again, err := ParseLayout("fuzz", strings.NewReader(e.Layout()))
		if err != nil {
			t.Fatalf("Layout() of an accepted layout does not parse: %v\n%q", err, e.Layout())
		}
		if again.Layout() != e.Layout() {
			t.Fatalf("layout does not round-trip:\n%q\n%q", e.Layout(), again.Layout())
		}
	})
}
