package settings

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Rate float64 `json:"rate" range:"(0,1]" help:"a rate"`
}

type sample struct {
	N     int               `json:"n" range:"[1,10]" help:"a count"`
	Mode  string            `json:"mode" enum:"a|b|c" help:"a mode"`
	On    bool              `json:"on" help:"a switch"`
	Seed  uint64            `json:"seed" help:"a seed"`
	In    inner             `json:"in"`
	Named int               `json:"old_name" key:"new_name" range:"[0,3)" help:"renamed"`
	Skip  int               `json:"-"`
	Map   map[string]string `json:"map"`
}

// TestKeys: paths, kinds and allowed values read from the tags, written out here.
func TestKeys(t *testing.T) {
	keys := Of(reflect.TypeFor[sample](), nil)
	want := map[string]string{"n": "an integer in [1, 10]", "mode": "a, b or c", "on": "true or false",
		"seed": "a non-negative integer", "in.rate": "a number in (0, 1]", "new_name": "an integer in [0, 3)"}
	if len(keys) != len(want) {
		t.Fatalf("%d keys, want %d", len(keys), len(want))
	}
	for _, k := range keys {
		if want[k.Path] != k.Allowed() {
			t.Errorf("%s: %q, want %q", k.Path, k.Allowed(), want[k.Path])
		}
	}
}

// TestSetAndCheck: values inside the range are set and read back; values outside it,
// NaN, ±Inf and values of the wrong kind are refused by Set and by Check.
func TestSetAndCheck(t *testing.T) {
	keys := Of(reflect.TypeFor[sample](), nil)
	var s sample
	for kv, ok := range map[string]bool{"n=1": true, "n=10": true, "n=0": false, "n=11": false, "n=2.5": false,
		"in.rate=1": true, "in.rate=0": false, "in.rate=1e-300": true, "in.rate=NaN": false, "in.rate=Inf": false,
		"mode=b": true, "mode=d": false, "on=true": true, "on=yes": false, "seed=0": true, "seed=-1": false,
		"new_name=2": true, "new_name=3": false} {
		path, v, _ := strings.Cut(kv, "=")
		k, found := Lookup(keys, path)
		if !found {
			t.Fatalf("no key %s", path)
		}
		err := k.Set(&s, v)
		if (err == nil) != ok {
			t.Errorf("%s: %v", kv, err)
		}
		if err == nil && k.Get(&s) != v && path != "in.rate" {
			t.Errorf("%s reads back %s", kv, k.Get(&s))
		}
	}
	s = sample{N: 11, Mode: "z", In: inner{Rate: math.Inf(1)}, Named: -1}
	var bad []string
	for _, k := range keys {
		if msg, ok := k.Check(&s); !ok {
			bad = append(bad, msg)
		}
	}
	want := []string{"n=11: need an integer in [1, 10]", "mode=z: need a, b or c", "in.rate=+Inf: need a number in (0, 1]", "new_name=-1: need an integer in [0, 3)"}
	if !reflect.DeepEqual(bad, want) {
		t.Errorf("Check:\n got %q\nwant %q", bad, want)
	}
}

// TestSuggest: a key under another section, or a near miss.
func TestSuggest(t *testing.T) {
	keys := Of(reflect.TypeFor[sample](), nil)
	if got := Suggest(keys, "rate"); got != " (did you mean in.rate?)" {
		t.Errorf("rate: %q", got)
	}
	if got := Suggest(keys, "mdoe"); got != " (did you mean mode?)" {
		t.Errorf("mdoe: %q", got)
	}
	if got := Suggest(keys, "zzzzzz"); got != "" {
		t.Errorf("zzzzzz: %q", got)
	}
}

// TestMalformedDeclaration: an int without a range, or a malformed range, panics.
func TestMalformedDeclaration(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct {
			N int `json:"n"`
		}](),
		reflect.TypeFor[struct {
			N int `json:"n" range:"1,2"`
		}](),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: no panic", typ)
				}
			}()
			Of(typ, nil)
		}()
	}
}
