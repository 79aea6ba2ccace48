package tabulate

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Spec is one table: which reports, which columns, how rows are made. Its fields are
// the flags and arguments of `gradcscg tabulate` (Register, ParseArgs).
type Spec struct {
	// Columns are the column names of the menu (Columns), each optionally with
	// "@a" or "@b" (a paired table: that side's value alone) and ":N" (N decimals,
	// for a single-number column), in order.
	Columns []string
	// Reports are the report patterns, each "PATTERN" or "NAME=PATTERN" (NAME labels
	// its rows: the label column, and the side's name in a paired table's headers).
	// A pattern is a file path with shell wildcards (*, ?, [...]) and {a,b}
	// alternatives, relative to the reader's base directory; rows come in argument
	// order, each alternative's files in natural order (seed2 before seed10).
	Reports []string
	// Vs are the patterns of a second report set (B): each row of Reports (A) is
	// paired with the B report of the same environment and seed, and a column's cell
	// reads "A → B". Only with Rows "report".
	Vs []string
	// Rows: "report" ("": one row per report), "mean" or "list": one row per
	// argument and distinct values of the identifying columns asked for (label, file,
	// env, seed, run, dataset, trainer, steps), its reports' numbers averaged (counts
	// summed) or its reports' values listed, comma-separated.
	Rows string
	// Where keeps only the reports that satisfy it (Filters); "": all.
	Where string
}

// Row modes of Spec.Rows.
const (
	RowsReport = "report"
	RowsMean   = "mean"
	RowsList   = "list"
)

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// columnsFlag is the comma-separated column list.
type columnsFlag []string

func (c *columnsFlag) String() string { return strings.Join(*c, ",") }
func (c *columnsFlag) Set(s string) error {
	*c = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*c = append(*c, f)
		}
	}
	return nil
}

// Register defines s's flags on fs: --columns, --vs, --rows and --where.
func (s *Spec) Register(fs *flag.FlagSet) {
	fs.Var((*columnsFlag)(&s.Columns), "columns", "comma-separated `list` of columns (gradcscg tabulate -h lists them; NAME@a, NAME@b: one side of a paired table; NAME:N: N decimals)")
	fs.Var((*listFlag)(&s.Vs), "vs", "`pattern` of the reports to pair with by environment and seed (cells \"A → B\"); repeatable")
	fs.StringVar(&s.Rows, "rows", RowsReport, "`mode`: report (one row per report), mean (one row per pattern, numbers averaged) or list (one row per pattern, values listed)")
	fs.StringVar(&s.Where, "where", "", "keep only the reports that are `kind`: "+strings.Join(filterNames(), ", "))
}

// ParseArgs reads a Spec from the arguments of `gradcscg tabulate` (flags, then
// report patterns).
func ParseArgs(args []string) (Spec, error) {
	var s Spec
	fs := flag.NewFlagSet("tabulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Register(fs)
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	s.Reports = fs.Args()
	return s, nil
}

// Columns is the menu of columns, one "name: header" line each.
func Columns() string {
	var b strings.Builder
	for _, c := range menu {
		fmt.Fprintf(&b, "  %-18s %s", c.name, c.header)
		switch {
		case c.reads == planKind:
			b.WriteString(" (planning reports)")
		case c.reads == anyKind:
			b.WriteString(" (any report)")
		}
		b.WriteByte('\n')
	}
	b.WriteString("  min.PHASE, s.PHASE minutes or seconds of a phase of the report's seconds (total, warmup, joint, final, evaluate, train, eval, compact)\n")
	return b.String()
}

// colSpec is one parsed entry of Spec.Columns.
type colSpec struct {
	column
	side byte // 0: both sides; 'a' or 'b': that side only
	prec int
}

// lookup parses a column entry "NAME[@a|@b][:N]".
func lookup(entry string, paired bool) (colSpec, error) {
	name, precText, hasPrec := strings.Cut(entry, ":")
	name, side, hasSide := strings.Cut(name, "@")
	var cs colSpec
	found := false
	for _, c := range menu {
		if c.name == name {
			cs.column, found = c, true
			break
		}
	}
	if !found {
		if c, ok := timeColumn(name); ok {
			cs.column, found = c, true
		}
	}
	if !found {
		names := make([]string, len(menu))
		for i, c := range menu {
			names[i] = c.name
		}
		return cs, fmt.Errorf("--columns: unknown column %q (one of %s, min.PHASE, s.PHASE)", name, strings.Join(names, ", "))
	}
	if cs.reads == 0 {
		cs.reads = evalKind
	}
	cs.prec = cs.column.prec
	if hasPrec {
		p, err := strconv.Atoi(precText)
		if err != nil || p < 0 || p > 6 {
			return cs, fmt.Errorf("--columns: %q: decimals must be an integer 0..6", entry)
		}
		if cs.column.prec < 0 {
			return cs, fmt.Errorf("--columns: %q: column %s has a fixed format (no decimals to set)", entry, name)
		}
		cs.prec = p
	}
	if hasSide {
		if side != "a" && side != "b" {
			return cs, fmt.Errorf("--columns: %q: the side must be @a or @b", entry)
		}
		if !paired {
			return cs, fmt.Errorf("--columns: %q: a side needs a paired table (--vs)", entry)
		}
		cs.side = side[0]
	}
	return cs, nil
}

// row is the reports of one table row: one (RowsReport), one of each side (paired),
// or all of one argument's (RowsMean, RowsList).
type row struct {
	a, b []*run
}

// Table renders the markdown table of s from the reports (header, separator and one
// line per row, each line ending in a newline).
func (rd *Reader) Table(s Spec) (string, error) {
	if s.Rows == "" {
		s.Rows = RowsReport
	}
	if s.Rows != RowsReport && s.Rows != RowsMean && s.Rows != RowsList {
		return "", fmt.Errorf("--rows %q: must be %s, %s or %s", s.Rows, RowsReport, RowsMean, RowsList)
	}
	paired := len(s.Vs) > 0
	if paired && s.Rows != RowsReport {
		return "", fmt.Errorf("--vs pairs single reports: it needs --rows %s, not %s", RowsReport, s.Rows)
	}
	if len(s.Columns) == 0 {
		return "", errors.New("--columns: no column named")
	}
	if len(s.Reports) == 0 {
		return "", errors.New("no report pattern given")
	}
	keep := func(*run) bool { return true }
	if s.Where != "" {
		f, ok := filters[s.Where]
		if !ok {
			return "", fmt.Errorf("--where %q: must be one of %s", s.Where, strings.Join(filterNames(), ", "))
		}
		keep = f
	}
	cols := make([]colSpec, len(s.Columns))
	for i, e := range s.Columns {
		c, err := lookup(e, paired)
		if err != nil {
			return "", err
		}
		cols[i] = c
	}
	var groups [][]*run // per argument
	for _, arg := range s.Reports {
		runs, err := rd.expand(arg)
		if err != nil {
			return "", err
		}
		groups = append(groups, slices.DeleteFunc(runs, func(r *run) bool { return !keep(r) }))
	}
	var rows []row
	switch {
	case s.Rows == RowsReport:
		for _, g := range groups {
			for _, r := range g {
				rows = append(rows, row{a: []*run{r}})
			}
		}
	default:
		for _, g := range groups {
			rows = append(rows, groupRows(g, cols)...)
		}
	}
	var nameA, nameB string
	if paired {
		var err error
		if rows, nameB, err = rd.pair(rows, s.Vs, keep); err != nil {
			return "", err
		}
		nameA, _ = splitLabel(s.Reports[0])
	}
	var b strings.Builder
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.headerText(paired, nameA, nameB)
	}
	writeLine(&b, header)
	sep := make([]string, len(cols))
	for i := range sep {
		sep[i] = "---"
	}
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cell, err := c.cell(r, s.Rows, paired)
			if err != nil {
				return "", err
			}
			cells[i] = cell
		}
		writeLine(&b, cells)
	}
	return b.String(), nil
}

// groupRows splits one argument's reports into rows: one per distinct combination of
// the identifying columns asked for (env, seed, trainer, …), in order of first
// appearance.
func groupRows(runs []*run, cols []colSpec) []row {
	var rows []row
	index := map[string]int{}
	for _, r := range runs {
		var key strings.Builder
		for _, c := range cols {
			if c.ident && c.check(r) == nil {
				key.WriteString(c.combine([]value{c.get(r)}, RowsReport) + "\x00")
			}
		}
		i, ok := index[key.String()]
		if !ok {
			i = len(rows)
			index[key.String()] = i
			rows = append(rows, row{})
		}
		rows[i].a = append(rows[i].a, r)
	}
	return rows
}

// pair gives each row of A its B report of the same environment and seed, from the
// reports of the patterns vs that keep keeps; it returns the B side's name (the first
// pattern's NAME=).
func (rd *Reader) pair(rows []row, vs []string, keep func(*run) bool) ([]row, string, error) {
	type key struct {
		env  string
		seed uint64
	}
	keyOf := func(r *run) (key, error) {
		if r.rep == nil {
			return key{}, fmt.Errorf("%s: a planning report cannot be paired (--vs pairs evaluation reports by environment and seed)", r.path)
		}
		return key{r.rep.Env, r.rep.Seed}, nil
	}
	byKey := map[key]*run{}
	for _, arg := range vs {
		runs, err := rd.expand(arg)
		if err != nil {
			return nil, "", fmt.Errorf("--vs: %w", err)
		}
		for _, r := range runs {
			if !keep(r) {
				continue
			}
			k, err := keyOf(r)
			if err != nil {
				return nil, "", err
			}
			if o, ok := byKey[k]; ok {
				return nil, "", fmt.Errorf("--vs: %s and %s are both environment %s, seed %d: a pair needs one", o.path, r.path, k.env, k.seed)
			}
			byKey[k] = r
		}
	}
	for i, r := range rows {
		k, err := keyOf(r.a[0])
		if err != nil {
			return nil, "", err
		}
		p, ok := byKey[k]
		if !ok {
			return nil, "", fmt.Errorf("%s (environment %s, seed %d): no report of --vs %s has the same environment and seed",
				r.a[0].path, k.env, k.seed, strings.Join(vs, " "))
		}
		rows[i].b = []*run{p}
	}
	name, _ := splitLabel(vs[0])
	return rows, name, nil
}

// headerText is the column's header: in a paired table "HEADER, A → B" (NAME= of
// each side; "A" and "B" without), or "HEADER, A" for one side; identifying columns
// keep theirs.
func (c colSpec) headerText(paired bool, a, b string) string {
	if !paired || c.ident {
		return c.header
	}
	if a == "" {
		a = "A"
	}
	if b == "" {
		b = "B"
	}
	switch c.side {
	case 'a':
		return c.header + ", " + a
	case 'b':
		return c.header + ", " + b
	}
	return c.header + ", " + a + " → " + b
}

// cell renders the column for a row.
func (c colSpec) cell(r row, mode string, paired bool) (string, error) {
	side := func(runs []*run) (string, error) {
		vals := make([]value, len(runs))
		for i, x := range runs {
			if err := c.check(x); err != nil {
				return "", err
			}
			vals[i] = c.get(x)
		}
		return c.combine(vals, mode), nil
	}
	a, err := side(r.a)
	if err != nil || !paired || c.ident {
		return a, err
	}
	b, err := side(r.b)
	switch c.side {
	case 'a':
		return a, err
	case 'b':
		return b, err
	}
	return a + " → " + b, err
}

// check reports whether the column can read the report.
func (c colSpec) check(r *run) error {
	switch {
	case r.rep != nil && c.reads&evalKind == 0:
		return fmt.Errorf("%s: column %s reads planning reports, and this is an evaluation report", r.path, c.name)
	case r.plan != nil && c.reads&planKind == 0:
		return fmt.Errorf("%s: column %s reads evaluation reports, and this is a planning report", r.path, c.name)
	}
	return nil
}

// combine renders the values of a row's reports on one side: one value as it is;
// several as mode says (RowsMean: numbers averaged, counts summed, texts listed once
// each; RowsList: each value, comma-separated; identifying columns list distinct
// values in either).
func (c colSpec) combine(vals []value, mode string) string {
	render := func(v value, prec int) string {
		switch {
		case v.missing:
			return "–"
		case v.nums == nil:
			return v.text
		}
		return v.render(v.nums, prec)
	}
	if mode == RowsReport || len(vals) == 1 && (mode == RowsList || c.ident) {
		return render(vals[0], c.prec)
	}
	if mode == RowsList && !c.ident {
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = render(v, c.prec)
		}
		return strings.Join(s, ", ")
	}
	var numeric []value
	for _, v := range vals {
		if !v.missing && v.nums != nil {
			numeric = append(numeric, v)
		}
	}
	if len(numeric) == 0 || len(numeric) != len(vals) && !c.sum {
		var distinct []string
		for _, v := range vals {
			if s := render(v, c.prec); !slices.Contains(distinct, s) {
				distinct = append(distinct, s)
			}
		}
		return strings.Join(distinct, ", ")
	}
	agg := make([]float64, len(numeric[0].nums))
	for i := range agg {
		sum, n := 0.0, 0
		for _, v := range numeric {
			if i < len(v.nums) && !math.IsNaN(v.nums[i]) {
				sum += v.nums[i]
				n++
			}
		}
		switch {
		case c.sum:
			agg[i] = sum
		case n == 0:
			agg[i] = math.NaN()
		default:
			agg[i] = sum / float64(n)
		}
	}
	prec := c.prec
	if c.integer && !c.sum && prec == 0 {
		prec = 1 // a mean of integers
	}
	return numeric[0].render(agg, prec)
}

// writeLine writes one markdown table line, with "|" inside cells escaped.
func writeLine(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
	}
	b.WriteString("\n")
}
