// Package settings reads the settings of a configuration struct from its struct tags,
// so that a setting's range is declared once, next to its field, and the validation,
// the generic "key=value" setter and the help listings all read that declaration.
//
// A setting is a field of a basic kind (int, uint64, float64, bool, string, or a
// named type of one) with a JSON name; nested structs give dotted paths
// ("joint.iters"). Its tags:
//
//	range:"[lo,hi]"   the allowed numbers; "(" and ")" exclude a bound. Required for
//	                  int and float64 fields: every number is bounded above and below.
//	enum:"a|b|c"      the allowed strings.
//	help:"…"          its effect, one line.
//	key:"name"        its name in the path, where it is not its JSON name.
//
// A field tagged json:"-", and a map or slice, is not a setting.
package settings

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A Key is one setting.
type Key struct {
	Path string // the JSON names from the root, joined by dots
	Kind string // "int", "uint", "float", "bool" or "string"
	Help string // its effect, one line

	index          []int        // reflect's index path from the root struct
	typ            reflect.Type // the field's type
	ranged         bool         // lo and hi bound a number
	lo, hi         float64      // the range of a number
	loOpen, hiOpen bool         // the bound itself is excluded
	enum           []string     // the values of a string (nil: any)
}

// Of returns the settings of the struct type t in field order. tags replaces the tags
// (other than json) of the fields under a path prefix: tags["vqvae."]["k"] declares
// vqvae.k, for a nested struct whose package declares no ranges. A malformed
// declaration panics: it is a programming error, found by any test that reads it.
func Of(t reflect.Type, tags map[string]map[string]reflect.StructTag) []Key {
	var out []Key
	walk(t, "", nil, tags, &out)
	return out
}

func walk(t reflect.Type, prefix string, idx []int, tags map[string]map[string]reflect.StructTag, out *[]Key) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" || !f.IsExported() || f.Type.Kind() == reflect.Map || f.Type.Kind() == reflect.Slice {
			continue
		}
		at := append(slices.Clone(idx), i)
		if f.Type.Kind() == reflect.Struct {
			walk(f.Type, prefix+name+".", at, tags, out)
			continue
		}
		tag := f.Tag
		if over, ok := tags[prefix]; ok {
			tag = over[name]
		}
		if k := tag.Get("key"); k != "" {
			name = k
		}
		*out = append(*out, newKey(prefix+name, f.Type, tag, at))
	}
}

func newKey(path string, t reflect.Type, tag reflect.StructTag, idx []int) Key {
	k := Key{Path: path, Help: tag.Get("help"), index: idx, typ: t}
	switch t.Kind() {
	case reflect.Int:
		k.Kind = "int"
	case reflect.Uint64:
		k.Kind = "uint"
	case reflect.Float64:
		k.Kind = "float"
	case reflect.Bool:
		k.Kind = "bool"
	case reflect.String:
		k.Kind = "string"
	default:
		panic(fmt.Sprintf("settings: %s: kind %s", path, t.Kind()))
	}
	if e := tag.Get("enum"); e != "" {
		k.enum = strings.Split(e, "|")
	}
	r := tag.Get("range")
	if r == "" {
		if k.Kind == "int" || k.Kind == "float" {
			panic(fmt.Sprintf("settings: %s has no range", path))
		}
		return k
	}
	lo, hi, ok := strings.Cut(strings.Trim(r, "[]()"), ",")
	var err1, err2 error
	k.lo, err1 = strconv.ParseFloat(strings.TrimSpace(lo), 64)
	k.hi, err2 = strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil || len(r) < 2 || !strings.ContainsAny(r[:1], "[(") || !strings.ContainsAny(r[len(r)-1:], "])") {
		panic(fmt.Sprintf("settings: %s: range %q", path, r))
	}
	k.ranged, k.loOpen, k.hiOpen = true, r[0] == '(', r[len(r)-1] == ')'
	return k
}

// Lookup returns the key called path in keys.
func Lookup(keys []Key, path string) (Key, bool) {
	for _, k := range keys {
		if k.Path == path {
			return k, true
		}
	}
	return Key{}, false
}

// Allowed describes the values k takes: "an integer in [0, 1000000]", "a number in
// (0, 1]", "gradient or em", "true or false".
func (k Key) Allowed() string {
	switch {
	case k.Kind == "bool":
		return "true or false"
	case k.enum != nil && len(k.enum) == 1:
		return k.enum[0]
	case k.enum != nil:
		return strings.Join(k.enum[:len(k.enum)-1], ", ") + " or " + k.enum[len(k.enum)-1]
	case k.Kind == "string":
		return "any text"
	case !k.ranged:
		return "a non-negative integer"
	}
	open, close := "[", "]"
	if k.loOpen {
		open = "("
	}
	if k.hiOpen {
		close = ")"
	}
	what := "a number"
	if k.Kind == "int" || k.Kind == "uint" {
		what = "an integer"
	}
	return fmt.Sprintf("%s in %s%s, %s%s", what, open, num(k.lo), num(k.hi), close)
}

// num formats a bound: integers in full up to 1e16, others as %g.
func num(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e16 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// field returns the field k of the struct *root points to.
func (k Key) field(root any) reflect.Value {
	return reflect.ValueOf(root).Elem().FieldByIndex(k.index)
}

// Get returns k's value in *root (root a pointer to the struct), as Set reads it.
func (k Key) Get(root any) string { return Format(k.field(root)) }

// Format formats a setting's value as Parse reads it.
func Format(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// Set parses s as a value of k, in its range, and stores it in *root.
func (k Key) Set(root any, s string) error {
	v, err := k.Parse(s)
	if err != nil {
		return err
	}
	k.field(root).Set(v)
	return nil
}

// Parse reads s as a value of k's type, in k's range; the error says what k takes.
func (k Key) Parse(s string) (reflect.Value, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("need %s", k.Allowed())
	var v reflect.Value
	switch k.Kind {
	case "int":
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || !k.contains(float64(x)) {
			return v, bad
		}
		v = reflect.ValueOf(int(x))
	case "uint":
		x, err := strconv.ParseUint(s, 10, 64)
		if err != nil || !k.contains(float64(x)) {
			return v, bad
		}
		v = reflect.ValueOf(x)
	case "float":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !k.contains(x) {
			return v, bad
		}
		v = reflect.ValueOf(x)
	case "bool":
		x, err := strconv.ParseBool(s)
		if err != nil {
			return v, bad
		}
		v = reflect.ValueOf(x)
	default:
		if k.enum != nil && !slices.Contains(k.enum, s) {
			return v, bad
		}
		v = reflect.ValueOf(s)
	}
	return v.Convert(k.typ), nil
}

// contains reports whether x is in k's range (NaN and ±Inf never are).
func (k Key) contains(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	if !k.ranged {
		return true
	}
	return (x > k.lo || !k.loOpen && x == k.lo) && (x < k.hi || !k.hiOpen && x == k.hi)
}

// Check reports whether k's value in *root is allowed, and if not, "path=value: need …".
func (k Key) Check(root any) (string, bool) {
	v := k.field(root)
	var ok bool
	switch k.Kind {
	case "int":
		ok = k.contains(float64(v.Int()))
	case "uint":
		ok = k.contains(float64(v.Uint()))
	case "float":
		ok = k.contains(v.Float())
	case "bool":
		ok = true
	default:
		ok = k.enum == nil || slices.Contains(k.enum, v.String())
	}
	return fmt.Sprintf("%s=%s: need %s", k.Path, Format(v), k.Allowed()), ok
}

// Bounds returns k's range (ok false for a key without one) and whether each bound
// is excluded.
func (k Key) Bounds() (lo, hi float64, loOpen, hiOpen, ok bool) {
	return k.lo, k.hi, k.loOpen, k.hiOpen, k.ranged
}

// Enum returns the strings k allows (nil: any).
func (k Key) Enum() []string { return slices.Clone(k.enum) }

// Suggest names the keys that path may have meant, as " (did you mean a or b?)": those
// whose last part is path's (a key given under another section, or without one), or
// at most two edits from path; "" if none or too many.
func Suggest(keys []Key, path string) string {
	last := path[strings.LastIndex(path, ".")+1:]
	var near []string
	for _, k := range keys {
		if strings.HasSuffix(k.Path, "."+last) || k.Path == last || editDistance(k.Path, path) <= 2 {
			near = append(near, k.Path)
		}
	}
	if len(near) == 0 || len(near) > 4 {
		return ""
	}
	return " (did you mean " + strings.Join(near, " or ") + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// A Listing row: a key's path, its type and range, its value in a configuration, and
// its effect; Help renders them as the aligned table "--set help" prints.
type Row struct{ Path, Allowed, Value, Help string }

// Rows returns one row per key, with its value in *root.
func Rows(keys []Key, root any) []Row {
	rows := make([]Row, len(keys))
	for i, k := range keys {
		rows[i] = Row{k.Path, k.Allowed(), k.Get(root), k.Help}
	}
	return rows
}

// Help renders rows as lines "path = value  (allowed)  help", the paths aligned.
func Help(rows []Row) string {
	w := 0
	for _, r := range rows {
		w = max(w, len(r.Path)+3+len(r.Value))
	}
	var b strings.Builder
	for _, r := range rows {
		kv := r.Path + " = " + r.Value
		fmt.Fprintf(&b, "  %-*s  %s; %s\n", w, kv, r.Help, r.Allowed)
	}
	return b.String()
}
