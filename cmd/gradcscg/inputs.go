package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
)

// checkInputDir refuses a directory flag name that was given but names no directory:
// a command that would read nothing from it must not end as if it had done its work.
// A flag left at its default may name a directory that does not exist yet.
func checkInputDir(fset *flag.FlagSet, name, dir string) error {
	if !flagGiven(fset, name) {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--%s %s: no such directory", name, dir)
	case err != nil:
		return fmt.Errorf("--%s %s: %w", name, dir, err)
	case !st.IsDir():
		return fmt.Errorf("--%s %s: not a directory", name, dir)
	}
	return nil
}

// checkCollectOut refuses reproduce --collect with an --out given that names no
// directory: collecting tabulates the reports there, and there are none. (--runs may
// be missing: the reports hold what the tables need.)
func checkCollectOut(fset *flag.FlagSet, collect bool, out string) error {
	if !collect {
		return nil
	}
	return checkInputDir(fset, "out", out)
}
