package experiment

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestSymbolicKeysAgreeWithValidate: every numeric setting of Symbolic is bounded; a
// value one past a bound is refused by Set, naming the key; and where Validate bounds
// a setting too, it refuses nothing that Set allows at the bounds.
func TestSymbolicKeysAgreeWithValidate(t *testing.T) {
	e, _ := gridworld.Named("aliased")
	for _, trainer := range []string{TrainerGradient, TrainerEM} {
		base, err := DefaultSymbolic(e, trainer)
		if err != nil {
			t.Fatal(err)
		}
		base.Init = InitUniform
		for _, k := range SymbolicKeys() {
			lo, hi, loOpen, hiOpen, ok := k.Bounds()
			if !ok {
				if k.Kind == "int" || k.Kind == "float" {
					t.Errorf("%s has no range", k.Path)
				}
				continue
			}
			past := []float64{lo - 1, hi + 1}
			if k.Kind == "float" {
				past = []float64{math.Nextafter(lo, math.Inf(-1)), math.Nextafter(hi, math.Inf(1))}
				if loOpen {
					past[0] = lo
				}
				if hiOpen {
					past[1] = hi
				}
			}
			for _, x := range past {
				s := base
				v := strconv.FormatFloat(x, 'g', -1, 64)
				if err := s.Set(k.Path + "=" + v); err == nil || !strings.HasPrefix(err.Error(), k.Path+"=") {
					t.Errorf("%s=%s: %v", k.Path, v, err)
				}
			}
			for _, x := range []float64{lo, hi} {
				if x == lo && loOpen || x == hi && hiOpen {
					continue
				}
				s := base
				f := reflect.ValueOf(&s).Elem().FieldByName(goField(t, k.Path))
				if k.Kind == "int" {
					f.SetInt(int64(x))
				} else {
					f.SetFloat(x)
				}
				if err := s.Validate(); err != nil && strings.Contains(err.Error(), jsonName(k.Path)+"=") && strings.Contains(err.Error(), "need") {
					t.Errorf("%s %s=%g: Set allows it, Validate refuses: %v", trainer, k.Path, x, err)
				}
			}
		}
	}
}

// goField is the Go name of the setting path of Symbolic.
func goField(t *testing.T, path string) string {
	name := jsonName(path)
	typ := reflect.TypeFor[Symbolic]()
	for i := range typ.NumField() {
		if n, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); n == name {
			return typ.Field(i).Name
		}
	}
	t.Fatalf("no field %s", path)
	return ""
}

// jsonName is the JSON name of a setting whose key says what it does.
func jsonName(path string) string {
	return map[string]string{"split_rounds": "doublings", "budget_doublings": "grow_rounds"}[path] + map[bool]string{true: path}[path != "split_rounds" && path != "budget_doublings"]
}
