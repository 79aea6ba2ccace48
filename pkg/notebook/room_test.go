package notebook

import (
	"strings"
	"testing"
)

// TestNewRoomNamesRunFromContent: the same room gives the same run name; an edited
// layout, another data set or another setting gives another; errors name the line
// or the setting and give advice for the notebook, never a command-line flag.
func TestNewRoomNamesRunFromContent(t *testing.T) {
	t.Setenv(SizeEnv, SizeCI)
	t.Setenv(RunsEnv, t.TempDir())
	const layout = "// r\n0 1 1\n8 # 8\n0 7 0\n"
	a, err := NewRoom("my_room", layout, "fashion")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := NewRoom("my_room", layout, "fashion"); err != nil || b.Run != a.Run {
		t.Fatalf("the same room: run %q (%v), want %q", b.Run, err, a.Run)
	}
	if !strings.HasPrefix(a.Run, "my_room_") || len(a.Run) != len("my_room_")+8 || !strings.HasSuffix(a.Dir, a.Run+"_ci") {
		t.Errorf("run %q in %q: want my_room_ and 8 hex digits, in RunDir", a.Run, a.Dir)
	}
	if a.Config.Dataset != "fashion" || a.Config.Layout == "" {
		t.Errorf("config dataset %q layout %q", a.Config.Dataset, a.Config.Layout)
	}
	seen := map[string]string{a.Run: "original"}
	for what, room := range map[string]func() (*Room, error){
		"edited layout": func() (*Room, error) {
			return NewRoom("my_room", strings.Replace(layout, "0 7 0", "0 7 7", 1), "fashion")
		},
		"data set": func() (*Room, error) { return NewRoom("my_room", layout, "mnist") },
		"setting":  func() (*Room, error) { return NewRoom("my_room", layout, "fashion", "joint.iters=200") },
	} {
		r, err := room()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if prev, ok := seen[r.Run]; ok {
			t.Errorf("%s: run %q, the same as the %s room's", what, r.Run, prev)
		}
		seen[r.Run] = what
	}
	for _, tc := range []struct{ name, layout, dataset, set, want string }{
		{"my_room", "0 1\n2 x\n", "fashion", "", "my_room:2"},
		{"my room", layout, "fashion", "", "the room's name"},
		{"my_room", layout, "fashion", "data.steps=1", "data.steps"},
		{"my_room", layout, "cifar", "", "dataset"},
	} {
		var sets []string
		if tc.set != "" {
			sets = []string{tc.set}
		}
		_, err := NewRoom(tc.name, tc.layout, tc.dataset, sets...)
		if err == nil {
			t.Errorf("NewRoom(%q, %q, %q, %q): no error", tc.name, tc.layout, tc.dataset, tc.set)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, roomAdvice) || strings.Contains(msg, "--") {
			t.Errorf("error %q: want %q, the cell advice, and no flag", msg, tc.want)
		}
	}
}
