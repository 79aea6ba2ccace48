package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/tabulate"
)

func init() {
	register("tabulate", "markdown tables from committed JSON reports; --notes rewrites the notes' generated tables", runTabulate)
}

// runTabulate prints a table of the reports that its patterns name, or with --notes
// rewrites the generated blocks of the markdown files of a directory.
func runTabulate(args []string) error {
	fs := newFlagSet("tabulate", "--columns LIST [--vs PATTERN] [--rows MODE] [--where KIND] PATTERN... | --notes DIR")
	var spec tabulate.Spec
	spec.Register(fs)
	notes := fs.String("notes", "", "rewrite the generated blocks of the markdown files in `dir` from the reports (paths relative to the working directory)")
	out := fs.Output()
	fs.SetOutput(io.Discard) // a parse error is reported in one line below
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		fmt.Fprintf(out, "\nA PATTERN is a report file path with wildcards and {a,b} alternatives; NAME=PATTERN names its rows.\nColumns:\n%s",
			tabulate.Columns())
		return err
	}
	if err != nil {
		fmt.Fprintf(out, "gradcscg tabulate: %v (gradcscg tabulate -h lists the flags and columns)\n", err)
		return errUsage
	}
	spec.Reports = fs.Args()
	rd := tabulate.NewReader("")
	if *notes != "" {
		others := len(spec.Reports) > 0
		fs.Visit(func(f *flag.Flag) { others = others || f.Name != "notes" })
		if others {
			return errors.New("--notes takes no other flag and no pattern: each block names its own")
		}
		files, err := tabulate.NoteFiles(*notes)
		if err != nil {
			return err
		}
		changed, n, err := rd.Update(files)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d generated blocks in %d files; rewritten: %s\n", n, len(files), orNone(changed))
		return nil
	}
	table, err := rd.Table(spec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, table)
	return err
}

func orNone(files []string) string {
	if len(files) == 0 {
		return "none"
	}
	return strings.Join(files, ", ")
}
