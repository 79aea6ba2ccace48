// Package tabulate makes markdown tables from committed JSON reports, and keeps the
// tables of markdown notes that were made that way up to date.
//
// Inputs are report files named by patterns (Spec.Reports: shell wildcards and
// {a,b} alternatives, relative to a base directory): evaluation reports
// (evaluate.Report, read by evaluate.ReadJSON, older report forms included) and
// planning reports (experiment.PlanReport). A table has one row per report, or
// one per pattern (its reports averaged or listed), and the columns of a fixed
// menu (Columns) in the order asked; with a second set of reports (Spec.Vs) each
// row is paired with the report of the same environment and seed, and its cells
// read "A → B".
//
// A markdown file holds generated blocks between the lines
//
//	<!-- generated: gradcscg tabulate ARGS -->
//	<!-- end generated -->
//
// where ARGS are the command's flags and patterns (quoted as for a shell). Update
// rewrites every block from the reports (the line naming the command, then the
// table, indented as the opening marker is); Check regenerates them in memory and
// returns each block that differs. Nothing else of the file changes.
//
// Invariants: a table is a function of its Spec and the report files; values are
// formatted with a fixed number of decimals per column (Columns); a pattern that
// matches no file, an unknown column, a report of the wrong kind for a column, or
// a row of a paired table without its one partner is an error naming it.
package tabulate
