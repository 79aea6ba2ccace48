package pipeline

import (
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Bounds on the files a run reads (inputfile.Limit): a larger file, or one that is not
// a regular file, is refused before it is read.
var (
	// configLimit bounds config.json and a --config file: the settings and a custom
	// layout's text.
	configLimit = inputfile.Limit{Format: "configuration file", Bytes: gridworld.LayoutLimit.Bytes + 1<<20}
	// stateLimit bounds state.gob: a history record of a few dozen bytes per warm-up
	// step, joint iteration and finalisation iteration, and the files' digests.
	stateLimit = inputfile.Limit{Format: "run state", Bytes: 1 << 30}
	// trainingLimit bounds a finalisation checkpoint's training in progress: the
	// trainer's state (the model's logits and their Adam moments, or EM's counts).
	trainingLimit = inputfile.Limit{Format: "finalisation checkpoint", Bytes: 4 * chmm.FileLimit.Bytes}
	// runFileLimit bounds any file of a run directory whose digest is checked: the
	// largest of the formats it holds.
	runFileLimit = inputfile.Limit{Format: "run-directory file",
		Bytes: max(configLimit.Bytes, stateLimit.Bytes, trainingLimit.Bytes, vqvae.CheckpointLimit.Bytes, chmm.FileLimit.Bytes, evaluate.ReportLimit.Bytes)}
)
