package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// flagRange is the allowed range of a numeric flag's value when it is given on the
// command line (a flag left out keeps its default, which may be a "use the
// environment's value" marker outside the range).
type flagRange struct {
	lo, hi         float64
	loOpen, hiOpen bool // the bound itself is excluded
	integer        bool
}

func ints(lo, hi int) flagRange          { return flagRange{lo: float64(lo), hi: float64(hi), integer: true} }
func floats(lo, hi float64) flagRange    { return flagRange{lo: lo, hi: hi} }
func positive(hi float64) flagRange      { return flagRange{lo: 0, hi: hi, loOpen: true} }
func fractionBelow(hi float64) flagRange { return flagRange{lo: 0, hi: hi, hiOpen: true} }

func (r flagRange) contains(v float64) bool {
	return (v > r.lo || !r.loOpen && v == r.lo) && (v < r.hi || !r.hiOpen && v == r.hi) && (!r.integer || v == math.Trunc(v))
}

func (r flagRange) String() string {
	if r.integer {
		return fmt.Sprintf("an integer in [%d, %d]", int64(r.lo), int64(r.hi))
	}
	open, close := "[", "]"
	if r.loOpen {
		open = "("
	}
	if r.hiOpen {
		close = ")"
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	return fmt.Sprintf("a number in %s%s, %s%s", open, f(r.lo), f(r.hi), close)
}

// Bounds shared by several commands. Sizes stop well before what a 24 GiB machine can
// hold; checkMemory estimates the rest.
var (
	rangeEpisodes = ints(1, 1000)
	rangeSteps    = ints(2, 10_000_000)
	rangeClones   = ints(1, 2000)
	rangeIters    = ints(1, 1_000_000)
	rangeSeeds    = ints(1, 100)
	rangeRestarts = ints(1, 100)
	rangePairs    = ints(1, 1_000_000)
)

// flagRanges is every numeric flag's range, by command: the one place flags are
// validated. parseFlags checks the flags given and appends the range to each usage.
var flagRanges = map[string]map[string]flagRange{
	"reproduce": {"pairs": rangePairs, "seeds": rangeSeeds, "restarts": ints(0, 100), "steps": rangeSteps},
	"vqvae":     {"seeds": rangeSeeds},
	"plan": {
		"pairs": rangePairs, "localize": ints(0, 1_000_000), "demo": ints(1, 1_000_000), "threshold": floats(0, 1),
		"min-prob": floats(0, 1), "goal-mass": positive(1), "arrive-mass": positive(1),
	},
}

// describeRanges appends each ranged flag's range to its usage text.
func describeRanges(fs *flag.FlagSet) {
	for name, r := range flagRanges[fs.Name()] {
		if f := fs.Lookup(name); f != nil && !strings.Contains(f.Usage, "must be") {
			f.Usage += "; must be " + r.String()
		}
	}
}

// checkRanges returns an error naming the first given flag whose value is outside its
// range (NaN and ±Inf included).
func checkRanges(fs *flag.FlagSet) error {
	ranges := flagRanges[fs.Name()]
	var err error
	fs.Visit(func(f *flag.Flag) {
		r, ok := ranges[f.Name]
		if !ok || err != nil {
			return
		}
		s := f.Value.String()
		v, perr := strconv.ParseFloat(s, 64)
		if perr != nil || math.IsNaN(v) || !r.contains(v) {
			err = fmt.Errorf("--%s %s: must be %s", f.Name, s, r)
		}
	})
	return err
}

// memTotal is the memory this process may use in bytes (0 when unknown): the machine's,
// or its cgroup's limit if smaller (memoryLimit); a variable for tests.
var memTotal = func() float64 { return memoryLimit(hostRoot) }

// checkMemory refuses a run whose estimated peak memory (bytes, with what needs it)
// exceeds 80% of the machine's, before anything large is allocated.
func checkMemory(bytes float64, what string) error {
	total := memTotal()
	if total == 0 || bytes <= 0.8*total {
		return nil
	}
	return fmt.Errorf("%s needs about %.1f GB; this process may use %.1f GB (the machine's memory, or its cgroup's limit): use fewer clones, steps or episodes", what, bytes/1e9, total/1e9)
}
