// Package notebook keeps the cells of the GoNB notebooks under notebooks/ short. It
// holds the notebooks' size knob, where their run directories live, train-or-load
// helpers for symbolic and pixel runs, and display helpers over
// github.com/janpfeifer/gonb/gonbui for PNG images, gonum plots, markdown tables and
// evaluation reports.
//
// # Size
//
// GRADCSCG_NB_SIZE selects the notebooks' configurations: "full" (the default: the
// paper's data sizes and budgets; a pixel run takes minutes) or "ci" (small enough that
// the whole notebook suite runs in a few minutes on two cores; the maps it learns are
// not the paper's). Size reads it and rejects other values.
//
// # Run directories
//
// Each notebook cell is a separate process, so a model does not survive from one cell to
// the next: cells train or load from a run directory instead (pipeline.Run resumes or
// loads; Symbolic does the same for symbolic runs). RunDir places a notebook's run under
// the runs root — GRADCSCG_RUNS_DIR, or runs/ at the repository root — with a "_ci"
// suffix at CI size so that CI-sized and full-size runs never share a directory.
// FinishedRun finds the full-size runs that `gradcscg` or a previous notebook produced.
//
// # Display
//
// Markdown, PNG, Image, Plot, Table, Report and Compare send rich output to the notebook
// when the program runs under GoNB (gonbui.IsNotebook) and print plain text to stdout
// otherwise, so the same code runs as a plain Go program. A displaying cell starts with
// `defer gonbui.Sync()` (or notebook.Sync) so that its last output is not lost.
package notebook
