package vqvae

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Outputs are the nodes of one VQ-VAE forward pass (Algorithm 1, steps 1–4).
type Outputs struct {
	Z        *Node    // encoder outputs z [B,D]
	Codebook EMAState // codebook state read by this pass (before any update)
	Tokens   *Node    // hard tokens k_t [B] int32
	Q        *Node    // assigned codes q_t = e_{k_t} [B,D] (no gradient)
	Dist2    *Node    // squared distances ‖z − e_k‖² [B,K]
	LogRho   *Node    // soft posterior log ρ [B,K] at temperature Config.Tau
	XHat     *Node    // reconstructions D(q̃) [B,Side,Side,1], q̃ = z + sg(q − z)
	Rec      *Node    // reconstruction loss (scalar)
	Commit   *Node    // commitment loss (scalar; multiply by Config.Beta)
}

// Forward builds one forward pass of the VQ-VAE on images x [B,Side,Side,1] in [0,1]
// with an optional validity mask [B] (padded frames count in no loss): encode,
// quantise, soft posterior, straight-through, decode and the two losses of Sec. 3.2.
// It reads the variables under scope and changes nothing.
func (c Config) Forward(scope *model.Scope, x, mask *Node) Outputs {
	var o Outputs
	o.Z = c.Encode(scope, x)
	o.Codebook = CodebookState(scope, x.Graph())
	o.Tokens, o.Q, o.Dist2 = Quantize(o.Z, o.Codebook.Codebook)
	o.LogRho = SoftPosterior(o.Dist2, c.Tau)
	o.XHat = c.Decode(scope, StraightThrough(o.Z, o.Q))
	o.Rec, o.Commit = Losses(x, o.XHat, o.Z, o.Q, mask)
	return o
}

// Losses returns the reconstruction and commitment losses (Sec. 3.2) over the valid
// frames: x, xhat [B,...], z, q [B,D], optional mask [B].
func Losses(x, xhat, z, q, mask *Node) (rec, commit *Node) {
	return ReconstructionLoss(x, xhat, mask), CommitmentLoss(z, q, mask)
}

// UpdateCodebook performs the EMA codebook update of Sec. 3.2 with the batch's
// latents z [B,D] and tokens [B] (padded frames, mask 0, count nothing), then the
// dead-code revival of Config.Revive (drawing the replacement rows with the store's
// random number generator), and assigns the result to the codebook variables in the
// graph being built. It returns the number of revived codes (scalar, z's dtype).
func (c Config) UpdateCodebook(scope *model.Scope, z, tokens, mask *Node) *Node {
	g := z.Graph()
	st := CodebookState(scope, g)
	next := EMAUpdate(st, z, tokens, mask, c.Gamma, c.Eps)
	revived := Zeros(g, shapes.Make(z.DType(), c.K))
	if c.Revive > 0 {
		b := z.Shape().Dimensions[0]
		choice := scope.RandomIntN(g, int32(b), shapes.Make(dtypes.Int32, c.K))
		if mask != nil {
			// Draw replacements among valid frames only: redirect a padded pick to the
			// first valid frame (rows are uniform among valid ones when B is all valid).
			valid := GreaterThan(ConvertDType(mask, z.DType()), ScalarZero(g, z.DType()))
			first := ArgMax(ConvertDType(valid, dtypes.Int32), 0, dtypes.Int32)
			picked := Gather(valid, ExpandAxes(choice, -1), false)
			choice = Where(picked, choice, BroadcastToShape(first, choice.Shape()))
		}
		next, revived = ReviveDeadCodes(next, z, choice, c.Revive)
	}
	SetCodebookState(scope, next)
	return ReduceAllSum(revived)
}
