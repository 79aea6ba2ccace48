package notebook

import (
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// HeldOut is a pixel run's held-out episode decoded by its model
// (experiment.DecodedHeldOut).
type HeldOut = experiment.DecodedHeldOut

// DecodeHeldOut re-creates and decodes the held-out episode a finished pixel run's
// report scored, or says why it cannot (experiment.DecodeHeldOut).
func DecodeHeldOut(res *pipeline.Result) (*HeldOut, error) { return experiment.DecodeHeldOut(res) }
