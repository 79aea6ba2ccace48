// Package notebooks holds the project's GoNB (Go kernel for Jupyter) notebooks, *.ipynb
// in this directory, and the test that executes every one of them headlessly.
//
// Set up once with scripts/setup.sh (Jupyter, the GoNB kernel, goimports). Then:
//
//	jupyter notebook --no-browser --ip=127.0.0.1 --port=8888 --allow-root --notebook-dir=notebooks
//
// The first cell of each notebook points GoNB's temporary module at this repository
// (go mod edit -replace); the helpers the cells call live in pkg/notebook.
// GRADCSCG_NB_SIZE=ci runs every notebook with small configurations; the default,
// full, uses the paper's.
//
// The notebooks are committed with their full-size outputs, written by `make
// notebooks-full`: it executes every notebook at full size — the runs load from runs/,
// else from the shipped final artefacts in results/runs/ (`make ship-runs`, `gradcscg
// export`), and what is missing is trained into runs/ — and writes each back through
// ipynb.Clean (`gradcscg nbclean`), which drops execution timings, kernel metadata,
// live progress blocks and absolute paths, numbers the executed cells 1, 2, … and
// writes nbformat's JSON layout, so that executing again changes only outputs that
// changed. The package's tests fail on a committed notebook saved from the Notebook
// UI without that filter: `bin/gradcscg nbclean notebooks/*.ipynb` fixes it.
//
// The package's test (`make notebooks`) runs each notebook with `jupyter nbconvert
// --execute` at CI size and fails on any error output or failed cell, on output on
// stderr, raw log lines and absolute paths in the outputs; it is skipped when jupyter
// or the gonb kernel is not installed. GRADCSCG_NB_OUT=DIR keeps the executed notebooks, their HTML exports and
// (with chromium installed) screenshots of them in DIR.
package notebooks
