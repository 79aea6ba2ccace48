// Command gradcscg runs every stage of the gradcscg pipeline from the shell:
// grid worlds, symbolic cloned-HMM training (EM or gradient), evaluation,
// data preparation and the VQ-VAE front-end.
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
		fmt.Fprintf(fs.Output(), "Usage: gradcscg %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping flag errors to errUsage (already printed), and checks
// every given numeric flag against its range (flagRanges).
func parseFlags(fs *flag.FlagSet, args []string) error {
	describeRanges(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "gradcscg %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return checkRanges(fs)
}
