package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEveryNumericFlagHasARange: every int and float flag of every command is in
// flagRanges (seeds, uint64, are the only unbounded numbers); train and symbolic take
// their numbers through --set, checked by the settings' own declarations.
func TestEveryNumericFlagHasARange(t *testing.T) {
	re := regexp.MustCompile(`(?m)^\s+-([a-z-]+) (int|float)\b`)
	for cmd := range flagRanges {
		_, _, help := run(t, cmd, "--help")
		found := re.FindAllStringSubmatch(help, -1)
		if len(found) == 0 {
			t.Errorf("%s --help lists no numeric flag:\n%s", cmd, help)
		}
		for _, m := range found {
			if _, ok := flagRanges[cmd][m[1]]; !ok {
				t.Errorf("%s --%s (%s) has no range", cmd, m[1], m[2])
			}
			if !strings.Contains(help, "must be") {
				t.Errorf("%s --help does not state the ranges", cmd)
			}
		}
	}
	for _, cmd := range []string{"figures", "data", "envs", "train", "symbolic"} {
		_, _, help := run(t, cmd, "--help")
		for _, m := range re.FindAllStringSubmatch(help, -1) {
			t.Errorf("%s --%s is numeric but the command has no ranges", cmd, m[1])
		}
	}
}

// TestFlagBounds: for every numeric flag, a value just outside its range, NaN and
// ±Inf (floats) and a huge value are one clear error naming the flag and the range;
// the bounds themselves pass the check (the command may then fail for other reasons,
// but not with the range error).
func TestFlagBounds(t *testing.T) {
	for cmd, ranges := range flagRanges {
		for name, r := range ranges {
			var bad []string
			below, above := r.lo, r.hi
			if r.integer {
				bad = append(bad, strconv.Itoa(int(r.lo)-1), strconv.Itoa(int(r.hi)+1), "9223372036854775807")
			} else {
				if !r.loOpen {
					below = math.Nextafter(r.lo, math.Inf(-1))
				}
				if !r.hiOpen {
					above = math.Nextafter(r.hi, math.Inf(1))
				}
				bad = append(bad, fmt.Sprint(below), fmt.Sprint(above), "NaN", "Inf", "-Inf", "1e308")
			}
			for _, v := range bad {
				code, _, errOut := run(t, cmd, "--"+name, v)
				if code == 0 {
					t.Errorf("%s --%s %s: exit 0", cmd, name, v)
					continue
				}
				want := fmt.Sprintf("--%s %s: must be %s", name, v, r)
				if strings.Contains(v, "e308") || v == "9223372036854775807" || strings.Contains(v, "Inf") {
					want = "--" + name // the flag package may print its own parse error for these
				}
				if !strings.Contains(errOut, want) || strings.Contains(errOut, "panic") {
					t.Errorf("%s --%s %s: stderr %q, want %q", cmd, name, v, errOut, want)
				}
			}
		}
	}
}

// TestRangeContains checks the interval arithmetic against hand-written cases.
func TestRangeContains(t *testing.T) {
	for _, c := range []struct {
		r    flagRange
		v    float64
		want bool
	}{
		{ints(1, 3), 1, true}, {ints(1, 3), 3, true}, {ints(1, 3), 0, false}, {ints(1, 3), 4, false}, {ints(1, 3), 2.5, false},
		{positive(1), 0, false}, {positive(1), 1e-300, true}, {positive(1), 1, true},
		{fractionBelow(0.5), 0, true}, {fractionBelow(0.5), 0.5, false}, {fractionBelow(0.5), 0.4999, true},
		{floats(0, 1), math.NaN(), false}, {floats(0, 1), math.Inf(1), false},
	} {
		if got := c.r.contains(c.v); got != c.want {
			t.Errorf("%s contains %g = %v, want %v", c.r, c.v, got, c.want)
		}
	}
}
