package pipeline

import (
	"errors"
	"fmt"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryNumberBounded: every numeric setting has a range, and the ranges of the
// settings the issues named are the ones stated here.
func TestEveryNumberBounded(t *testing.T) {
	want := map[string]string{
		"warmup.epochs": "an integer in [0, 1000]", "joint.iters": "an integer in [0, 1000000]",
		"joint.jitter": "an integer in [0, 27]", "data.steps": "an integer in [2, 10000000]",
		"joint.collapse_level": "a number in [0, 0.5)", "final.split_rounds": "an integer in [0, 16]",
		"final.budget_doublings": "an integer in [0, 6]", "vqvae.k": "an integer in [2, 4096]",
		"vqvae.side": "an integer in [4, 1024]", "final.trainer": "gradient or em", "seed": "a non-negative integer",
	}
	n := 0
	for _, k := range Keys() {
		if _, _, _, _, ok := k.Bounds(); !ok && (k.Kind == "int" || k.Kind == "float") {
			t.Errorf("%s has no range", k.Path)
		}
		if k.Help == "" {
			t.Errorf("%s has no help", k.Path)
		}
		if w, ok := want[k.Path]; ok {
			n++
			if k.Allowed() != w {
				t.Errorf("%s: %s, want %s", k.Path, k.Allowed(), w)
			}
		}
	}
	if n != len(want) {
		t.Errorf("%d of the %d keys found", n, len(want))
	}
}

// outside returns values just past k's bounds: one past an integer bound, the next
// float past a closed bound, the bound itself where it is open.
func outside(lo, hi float64, loOpen, hiOpen bool, integer bool) []float64 {
	if integer {
		return []float64{lo - 1, hi + 1}
	}
	below, above := lo, hi
	if !loOpen {
		below = math.Nextafter(lo, math.Inf(-1))
	}
	if !hiOpen {
		above = math.Nextafter(hi, math.Inf(1))
	}
	return []float64{below, above, math.NaN(), math.Inf(1)}
}

// TestBoundsRefused: for every numeric setting, a value one past each bound is refused
// by Set and by Validate (the Go API, a notebook), and by a config file, each error
// naming the key's path; the bounds themselves pass Set.
func TestBoundsRefused(t *testing.T) {
	base, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		lo, hi, loOpen, hiOpen, ok := k.Bounds()
		if !ok || !Settable(k.Path) {
			continue
		}
		integer := k.Kind == "int"
		for _, x := range outside(lo, hi, loOpen, hiOpen, integer) {
			s := strconv.FormatFloat(x, 'g', -1, 64)
			if integer {
				s = strconv.FormatInt(int64(x), 10)
			}
			c := base
			if err := c.Set(k.Path + "=" + s); err == nil || !strings.Contains(err.Error(), k.Path+"=") {
				t.Errorf("Set %s=%s: %v", k.Path, s, err)
			}
			c = base // the Go API: the field itself
			f := reflect.ValueOf(&c).Elem().FieldByIndex(fieldIndex(t, k.Path))
			if integer {
				f.SetInt(int64(x))
			} else {
				f.SetFloat(x)
			}
			var ce *ConfigError
			if err := c.Validate(); !errors.As(err, &ce) || !slices.ContainsFunc(ce.Problems, func(p Problem) bool { return p.Key == k.Path }) {
				t.Errorf("Validate with %s=%s: %v", k.Path, s, err)
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue // not JSON
			}
			section, name, _ := strings.Cut(k.Path, ".")
			file := fmt.Sprintf("{\"version\": 2, \"env\": \"aliased\",\n\"%s\": {\"%s\": %s}}", section, name, s)
			if _, err := parseConfig([]byte(file), "f.json"); err == nil || !strings.Contains(err.Error(), "f.json line 2: "+k.Path) {
				t.Errorf("file with %s=%s: %v", k.Path, s, err)
			}
		}
		for _, x := range []float64{lo, hi} {
			if (x == lo && loOpen) || (x == hi && hiOpen) {
				continue
			}
			c := base
			s := strconv.FormatFloat(x, 'f', -1, 64)
			if err := c.Set(k.Path + "=" + s); err != nil {
				t.Errorf("Set %s=%s at the bound: %v", k.Path, s, err)
			}
		}
	}
}

// fieldIndex is the index path of the field with the JSON path path.
func fieldIndex(t *testing.T, path string) []int {
	t.Helper()
	typ := reflect.TypeFor[Config]()
	var idx []int
	for _, name := range strings.Split(path, ".") {
		found := false
		for i := range typ.NumField() {
			if n, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); n == name {
				idx = append(idx, i)
				typ, found = typ.Field(i).Type, true
				break
			}
		}
		if !found {
			t.Fatalf("no field %s", path)
		}
	}
	return idx
}

// TestSetRoundTrip: every settable key, set to its value in a default configuration
// and to another allowed value, reads back as set, and changes nothing else but its
// declared dependents.
func TestSetRoundTrip(t *testing.T) {
	base, _ := DefaultConfig("two_rooms")
	other := map[string]string{"string": "", "bool": "true"}
	for _, k := range Keys() {
		if !Settable(k.Path) {
			continue
		}
		v, _ := base.Get(k.Path)
		c := base
		if err := c.Set(k.Path + "=" + v); err != nil || !reflect.DeepEqual(c, base) {
			t.Errorf("%s=%s (its own value): %v, changed %v", k.Path, v, err, diffFields(c, base))
		}
		w := other[k.Kind]
		switch {
		case k.Enum() != nil:
			w = k.Enum()[len(k.Enum())-1]
		case k.Kind == "int":
			lo, hi, _, _, _ := k.Bounds()
			w = strconv.FormatFloat(math.Floor((lo+hi)/2), 'f', -1, 64)
		case k.Kind == "float":
			lo, hi, _, _, _ := k.Bounds()
			w = strconv.FormatFloat((lo+hi)/2, 'g', -1, 64)
		case k.Kind == "uint":
			w = "12345"
		case k.Kind == "bool" && v == "true":
			w = "false"
		}
		c = base
		if err := c.Set(k.Path + "=" + w); err != nil {
			t.Errorf("%s=%s: %v", k.Path, w, err)
			continue
		}
		if got, _ := c.Get(k.Path); got != w {
			t.Errorf("%s=%s reads back %s", k.Path, w, got)
		}
		deps := map[string][]string{"final.trainer": {"final.iters"}, "data.steps": {"eval.steps", "joint.chunk_len"},
			"vqvae.arch": {"joint.grad_frames", "joint.collapse_level", "joint.alpha_div_end"}}
		for _, d := range diffFields(base, c) {
			key, _, _ := strings.Cut(d, ":")
			if key != k.Path && !slices.Contains(deps[k.Path], key) {
				t.Errorf("%s=%s also changed %s", k.Path, w, d)
			}
		}
	}
}

// TestSetErrors: a key that does not exist (with the keys it may have meant), one with a
// flag of its own, a value of the wrong kind, and no "=".
func TestSetErrors(t *testing.T) {
	c, _ := DefaultConfig("aliased")
	for kv, want := range map[string]string{
		"joint.iter=3":         "joint.iter: no such setting (did you mean joint.iters",
		"iters=3":              "iters: no such setting (did you mean joint.iters or final.iters?)",
		"env=tiled":            "env: not a setting (it has a flag of its own)",
		"joint.iters=many":     "joint.iters=many: need an integer in [0, 1000000]",
		"joint.iters=1e3":      "joint.iters=1e3: need an integer in [0, 1000000]",
		"joint.lambda=NaN":     "joint.lambda=NaN: need a number in [0, 1000]",
		"joint.freeze_vqvae=2": "joint.freeze_vqvae=2: need true or false",
		"eval.decode=fuzzy":    "eval.decode=fuzzy: need soft or hard",
		"joint.iters":          `"joint.iters": want key=value`,
	} {
		if err := c.Set(kv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", kv, err, want)
		}
	}
}

// TestPresets: each preset's difference from the defaults, written out by hand, on the
// conv and the MLP VQ-VAE.
func TestPresets(t *testing.T) {
	for _, c := range []struct {
		preset, arch string
		want         []string
	}{
		{"paper", "conv", []string{"eval.decode: soft in the run, hard now", "final.budget: share in the run, joint now",
			"final.budget_doublings: 2 in the run, 0 now", "final.lr: 0.1 in the run, 0.01 now", "final.prune: 0.001 in the run, 0 now",
			"joint.alpha_div: 1 in the run, 0.1 now", "joint.alpha_div_end: 0.03 in the run, 0 now", "joint.grad_frames: 256 in the run, 0 now",
			"joint.iters: 1500 in the run, 2000 now", "joint.jitter: 2 in the run, 0 now", "vqvae.tau: 0.2 in the run, 1 now"}},
		{"frozen", "conv", []string{"joint.freeze_vqvae: false in the run, true now"}},
		{"no-length-norm", "conv", []string{"joint.no_length_norm: false in the run, true now"}},
		{"no-diversity", "conv", []string{"joint.alpha_div: 1 in the run, 0 now"}},
		{"paper-joint", "conv", []string{"joint.alpha_div: 1 in the run, 0.1 now", "joint.alpha_div_end: 0.03 in the run, 0.1 now", "vqvae.tau: 0.2 in the run, 1 now"}},
		{"paper-joint", "mlp", []string{"joint.alpha_div: 1 in the run, 0.1 now", "vqvae.tau: 0.2 in the run, 1 now"}},
		{"no-jitter", "conv", []string{"joint.jitter: 2 in the run, 0 now"}},
		{"no-pruning", "conv", []string{"final.prune: 0.001 in the run, 0 now"}},
		{"other-grad-frames", "conv", []string{"joint.grad_frames: 256 in the run, 0 now"}},
		{"other-grad-frames", "mlp", []string{"joint.grad_frames: 0 in the run, 256 now"}},
		{"refine", "conv", []string{"refine.on: false in the run, true now"}},
		{"no-collapse-response", "conv", []string{"joint.collapse_level: 0.15 in the run, 0 now"}},
		{"no-collapse-response", "mlp", []string{"joint.collapse_level: 0.25 in the run, 0 now"}},
	} {
		base, _ := DefaultConfig("aliased")
		base = base.WithArch(c.arch)
		p, err := LookupPreset(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Apply(base)
		if err != nil || got.Preset != c.preset || got.Validate() != nil {
			t.Errorf("%s: %v, preset %q, Validate %v", c.preset, err, got.Preset, got.Validate())
		}
		got.Preset = ""
		if d := diffFields(base, got); !slices.Equal(d, c.want) {
			t.Errorf("%s on %s:\n got %q\nwant %q", c.preset, c.arch, d, c.want)
		}
	}
	if len(Presets()) != 10 {
		t.Errorf("%d presets, want 10 (each checked above)", len(Presets()))
	}
	if _, err := LookupPreset("best"); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestWorldSettings: the worlds of 100 places or more get the settings that recover
// big_room and tiled from pixels (the recipes, written out here), big_room with its
// codes since one class is at 64 of its 100 places; every smaller built-in world none;
// and a custom layout gets what a built-in of the same world gets.
func TestWorldSettings(t *testing.T) {
	bigger := []string{"final.merge_tokens: 0 in the run, 100 now", "final.trainer: gradient in the run, em now", "joint.scaled_emissions: false in the run, true now"}
	want := map[string][]string{
		"big_room": {"final.iters: 1000 in the run, 1000 now", "final.merge_tokens: 0 in the run, 100 now", "final.trainer: gradient in the run, em now",
			"joint.scaled_emissions: false in the run, true now", "vqvae.k: 10 in the run, 40 now", "warmup.merge_codes: 0 in the run, 30 now"},
		"tiled": bigger,
		"four_rooms": {"final.merge_tokens: 0 in the run, 100 now", "final.trainer: gradient in the run, em now", "joint.clones: 90 in the run, 40 now",
			"joint.scaled_emissions: false in the run, true now"},
	}
	for _, env := range gridworld.Names() {
		c, err := DefaultConfig(env)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := c.Environment()
		got := diffFields(GenericConfig(e), c)
		w := slices.DeleteFunc(slices.Clone(want[env]), func(s string) bool { return strings.HasPrefix(s, "final.iters") }) // FinalEMIters = FinalGradientIters
		if !slices.Equal(got, w) {
			t.Errorf("%s:\n got %q\nwant %q", env, got, w)
		}
		if ch := c.WorldChoices(); len(ch) != len(w) {
			t.Errorf("%s: %d choices recorded, want %d: %v", env, len(ch), len(w), ch)
		}
	}
	b, _ := gridworld.Named("big_room")
	e, err := gridworld.ParseLayout("mine", strings.NewReader(b.Layout()))
	if err != nil {
		t.Fatal(err)
	}
	builtin, _ := DefaultConfig("big_room")
	c := ConfigFor(e)
	if c.Layout == "" || c.Env != "mine" {
		t.Fatalf("custom layout: env %q, layout %d bytes", c.Env, len(c.Layout))
	}
	c.Env, c.Layout = builtin.Env, builtin.Layout
	if d := diffFields(builtin, c); len(d) != 0 {
		t.Errorf("big_room's layout as a custom one differs from big_room: %q", d)
	}
	c = ConfigFor(e)
	if err := c.Set("final.trainer=gradient"); err != nil {
		t.Fatal(err)
	}
	if ch := c.WorldChoices(); len(ch) != 7 || slices.ContainsFunc(ch, func(x Choice) bool { return x.Key == "final.trainer" }) {
		t.Errorf("a setting over a choice drops it: %v", ch)
	}
}

// TestWorldSettingsCrowdedClass: below gridworld.BiggerPlaces places, a world with one
// class at more than half of its places gets the EM finalisation alone; at half
// (cscg_empty: 24 of 48) or less it gets nothing.
func TestWorldSettingsCrowdedClass(t *testing.T) {
	// 3 × 5, class 0 at 8 of the 15 places.
	e, err := gridworld.ParseLayout("crowd", strings.NewReader("0 0 0 0 0\n1 0 2 0 3\n4 0 5 6 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := WorldSettings(e)
	if len(got) != 1 || got[0].KV() != "final.trainer=em" || !strings.Contains(got[0].Why, "class 0 is at 8 of the 15 places") {
		t.Errorf("class 0 at 8 of 15 places: %v, want final.trainer=em with its reason", got)
	}
	if c := ConfigFor(e); c.Final.Trainer != FinalEM || len(c.WorldChoices()) != 1 {
		t.Errorf("ConfigFor: trainer %q, choices %v", c.Final.Trainer, c.WorldChoices())
	}
	half, err := gridworld.ParseLayout("half", strings.NewReader("0 0 0 0\n1 2 3 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := WorldSettings(half); len(got) != 0 {
		t.Errorf("class 0 at 4 of 8 places: %v, want none", got)
	}
	for _, env := range []string{"cscg_empty", "room", "uniform_interior"} {
		b, _ := gridworld.Named(env)
		if got := WorldSettings(b); len(got) != 0 {
			t.Errorf("%s: %v, want none", env, got)
		}
	}
}

// TestWorldSettingsJointCap: where a world's clone budget would give the joint HMM
// more than JointMaxStates states, joint.clones is JointMaxStates over its classes
// (hand-computed here), built-in or custom; below, the budget stays the world's.
func TestWorldSettingsJointCap(t *testing.T) {
	// 20 × 20 open room, classes 0–9 in turn: 40 places a class, (5·40+1)/2 = 100
	// clones each, 1,000 states, so 400 / 10 = 40 clones per token.
	var b strings.Builder
	for r := range 20 {
		for c := range 20 {
			fmt.Fprintf(&b, "%d", (r*20+c)%10)
			if c < 19 {
				b.WriteString(" ")
			}
		}
		b.WriteString("\n")
	}
	e, err := gridworld.ParseLayout("open20", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := jointStates(e); got != 1000 {
		t.Fatalf("20 × 20 room: %d joint states, want 1000", got)
	}
	c := ConfigFor(e)
	if c.Joint.Clones != 40 {
		t.Errorf("20 × 20 room: joint.clones %d, want 40", c.Joint.Clones)
	}
	if !slices.ContainsFunc(c.WorldChoices(), func(x Choice) bool { return x.Key == "joint.clones" && x.Value == "40" }) {
		t.Errorf("20 × 20 room: the cap is not among the choices recorded: %v", c.WorldChoices())
	}
	for env, states := range map[string]int{"four_rooms": 900, "tiled": 360, "big_room": 250} {
		e, _ := gridworld.Named(env)
		if got := jointStates(e); got != states {
			t.Errorf("%s: %d joint states, want %d", env, got, states)
		}
		c, _ := DefaultConfig(env)
		capped := slices.ContainsFunc(WorldSettings(e), func(x Choice) bool { return x.Key == "joint.clones" })
		if capped != (states > JointMaxStates) {
			t.Errorf("%s: joint budget capped %v at %d states", env, capped, states)
		}
		if g := GenericConfig(e); !capped && c.Joint.Clones != g.Joint.Clones {
			t.Errorf("%s: joint.clones %d, want the world's %d", env, c.Joint.Clones, g.Joint.Clones)
		}
	}
}
