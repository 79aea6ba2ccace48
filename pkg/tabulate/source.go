package tabulate

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
)

// run is one report file: an evaluation report (evaluate.Report) or a planning
// report (experiment.PlanReport), exactly one of them set.
type run struct {
	path  string // as matched: relative to the base directory, or absolute as the pattern was
	label string // the pattern's NAME= prefix, or ""
	rep   *evaluate.Report
	plan  *experiment.PlanReport
}

// name is the report file's base name without ".json".
func (r *run) name() string { return strings.TrimSuffix(filepath.Base(r.path), ".json") }

// env is the environment the report is about.
func (r *run) env() string {
	if r.plan != nil {
		return r.plan.Env
	}
	return r.rep.Env
}

// Reader reads report files and keeps each one read, so that tables sharing reports
// read them once. The zero value is not usable: use NewReader.
type Reader struct {
	base  string // directory the patterns are relative to
	cache map[string]*run
}

// NewReader reads reports at paths relative to base ("" or "."; the working
// directory), or absolute.
func NewReader(base string) *Reader {
	if base == "" {
		base = "."
	}
	return &Reader{base: base, cache: map[string]*run{}}
}

// full is path as the reader opens it: relative to the base directory, or absolute.
func (rd *Reader) full(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(rd.base, path)
}

// read reads the report at path (relative to the base directory): an evaluation
// report, or else a planning report.
func (rd *Reader) read(path string) (*run, error) {
	if r, ok := rd.cache[path]; ok {
		return r, nil
	}
	full := rd.full(path)
	rep, err := evaluate.ReadJSON(full)
	r := &run{path: path, rep: rep}
	if err != nil {
		p, perr := experiment.ReadPlanReport(full)
		if perr != nil {
			return nil, fmt.Errorf("%w (nor is it a planning report: %v)", err, perr)
		}
		r = &run{path: path, plan: p}
	}
	rd.cache[path] = r
	return r, nil
}

// splitLabel splits an argument "NAME=PATTERN" into its name and pattern; an
// argument without "=" has no name.
func splitLabel(arg string) (label, pattern string) {
	if i := strings.Index(arg, "="); i >= 0 {
		return arg[:i], arg[i+1:]
	}
	return "", arg
}

// expand reads the reports that the argument's pattern matches (NAME=PATTERN names
// them; see Spec), in natural order within each brace alternative; a pattern that
// matches no file is an error.
func (rd *Reader) expand(arg string) ([]*run, error) {
	label, pattern := splitLabel(arg)
	if pattern == "" {
		return nil, fmt.Errorf("report pattern %q: empty", arg)
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, fmt.Errorf("report pattern %q: %w", pattern, err)
	}
	var runs []*run
	for _, alt := range alts {
		matches, err := filepath.Glob(rd.full(alt))
		if err != nil {
			return nil, fmt.Errorf("report pattern %q: %w", alt, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("report pattern %q matches no file (in %s)", alt, rd.base)
		}
		slices.SortFunc(matches, naturalCompare)
		for _, m := range matches {
			rel := m
			if !filepath.IsAbs(alt) {
				if rel, err = filepath.Rel(rd.base, m); err != nil {
					rel = m
				}
			}
			r, err := rd.read(rel)
			if err != nil {
				return nil, err
			}
			rr := *r // the label is the argument's, the report shared
			rr.label = label
			runs = append(runs, &rr)
		}
	}
	return runs, nil
}

// expandBraces expands each {a,b,…} of pattern (nested braces allowed) into the
// alternatives, in order, as a shell does.
func expandBraces(pattern string) ([]string, error) {
	open := strings.Index(pattern, "{")
	if open < 0 {
		if strings.Contains(pattern, "}") {
			return nil, errors.New("a '}' without '{'")
		}
		return []string{pattern}, nil
	}
	depth, close := 0, -1
	var commas []int
	for i := open; i < len(pattern) && close < 0; i++ {
		switch pattern[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return nil, errors.New("a '{' without '}'")
	}
	var out []string
	start := open + 1
	for _, end := range append(commas, close) {
		rest, err := expandBraces(pattern[:open] + pattern[start:end] + pattern[close+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, rest...)
		start = end + 1
	}
	return out, nil
}

// naturalCompare orders strings with their runs of digits compared as numbers, so
// that seed2 comes before seed10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// filters are the predicates of Spec.Where.
var filters = map[string]func(r *run) bool{
	"confused": func(r *run) bool { return diag(r) != nil && diag(r).Confused },
	"flagged":  func(r *run) bool { return verdictOf(r) != nil && !verdictOf(r).Resolved },
	"resolved": func(r *run) bool { return verdictOf(r) != nil && verdictOf(r).Resolved },
	"recovered": func(r *run) bool {
		return r.rep != nil && r.rep.Recovered()
	},
	"failed": func(r *run) bool { return r.rep != nil && !r.rep.Recovered() },
}

// filterNames lists the predicates of Spec.Where.
func filterNames() []string {
	var names []string
	for n := range filters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
