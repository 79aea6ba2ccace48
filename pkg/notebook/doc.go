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
// Pipeline and Benchmark load a finished run from its run directory; at full size they
// then look for a shipped run of the same configuration in results/runs/<name> (the
// final artefacts of a full-size run, committed: pipeline.Export, LoadShipped); only
// then do they train, or resume, the run.
//
// # Interrupts and errors in a kernel
//
// GoNB runs each cell as a process of its own and stops it with SIGINT on Kernel →
// Interrupt. A training interrupted so is marked in the kernel (in GoNB's per-kernel
// temporary directory, GONB_TMP_DIR): later cells of the same kernel refuse to resume it
// and say, in one line, to call Resume(name) or to restart the kernel. A new kernel has
// no marks. Check shows an error in full in the cell that meets it first; another cell
// of the kernel that meets the same error (a cell that depends on a failed run) shows
// one short line.
//
// # Tokens and rooms
//
// Figures that show tokens carry a token key (figures.TokenKey: the classes each token
// holds on the held-out walk); KeyFacts reads it for the prose beside them — tokens in
// use, perplexity, classes per token, token class purity, the tokens shared by classes
// and the classes spread over tokens — so that no text claims more than the run shows
// (Figure4, MapTokens, VQTokens). A Room is a custom room defined in one cell; its run
// is named from its configuration's digest, so an edited room is a new run.
//
// # Display
//
// Markdown, PNG, Image, Plot, Table, Report and Compare send rich output to the notebook
// when the program runs under GoNB (gonbui.IsNotebook) and print plain text to stdout
// otherwise, so the same code runs as a plain Go program. A displaying cell starts with
// `defer gonbui.Sync()` (or notebook.Sync) so that its last output is not lost. Long
// work reports in one live block (Progress) that committed notebooks leave out; paths
// are shown relative (ShowPath); results documents show their headings as bold lines
// (ResultMarkdown). At CI size, SizeNote says that the notebook shows CI-size runs and
// Beside shows each figure beside the committed full-size one.
package notebook
