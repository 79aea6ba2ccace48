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
// TestNotebooks runs each notebook with `jupyter nbconvert --execute` at CI size and
// fails on any error output or failed cell; it is skipped when jupyter or the gonb
// kernel is not installed. GRADCSCG_NB_OUT=DIR keeps the executed notebooks, their
// HTML exports and (with chromium installed) screenshots of them in DIR.
package notebooks
