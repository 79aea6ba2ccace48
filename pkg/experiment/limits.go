package experiment

import "github.com/gradcscg/gradcscg/pkg/inputfile"

// Bounds on the files the experiments read back (inputfile.Limit).
var (
	// jsonLimit bounds a report, manifest or failure note this package wrote: a plan
	// report holds every trial of up to a million pairs in two modes.
	jsonLimit = inputfile.Limit{Format: "experiment report", Bytes: 4 << 30}
	// checkpointLimit bounds a symbolic training checkpoint: the model being grown
	// and its trainer's state, for the largest maps the experiments grow.
	checkpointLimit = inputfile.Limit{Format: "symbolic training checkpoint", Bytes: 16 << 30}
)
