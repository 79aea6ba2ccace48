// Package atomicfile is the one place gradcscg writes result files: every
// model, report, checkpoint, dataset file and figure goes through Write or
// WriteFile. The content goes to a temporary file in the target's directory,
// which is synced, given mode 0644 and renamed over the target; on any error
// the temporary file is removed and the target is left as it was, so an
// interrupted run never leaves a truncated file behind.
//
// A temporary file is named ".<target name>.gradcscg-tmp-<pid>-<random digits>",
// <pid> the writer's process id. RemoveStale removes those of writers that have
// ended (a write interrupted by a kill) and no other file.
package atomicfile
