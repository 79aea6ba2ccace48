package vqvae

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Quantize assigns every latent to its nearest code (paper Sec. 3.2):
//
//	dist2[b,k] = ‖z_b‖² − 2⟨z_b, e_k⟩ + ‖e_k‖²,   tokens[b] = argmin_k dist2[b,k],   q_b = e_{tokens[b]}.
//
// z [B,D], codebook [K,D] → tokens [B] int32, q [B,D], dist2 [B,K]. dist2 is
// differentiable in z (it feeds SoftPosterior); tokens and q carry no gradient.
func Quantize(z, codebook *Node) (tokens, q, dist2 *Node) {
	checkFloat(z, "z")
	if z.Rank() != 2 || codebook.Rank() != 2 || z.Shape().Dimensions[1] != codebook.Shape().Dimensions[1] {
		exceptions.Panicf("vqvae.Quantize: want z [B,D] and codebook [K,D], got %s and %s", z.Shape(), codebook.Shape())
	}
	zz := ReduceAndKeep(Square(z), ReduceSum, 1)                      // [B,1]
	ee := ExpandAxes(ReduceSum(Square(codebook), 1), 0)               // [1,K]
	ze := Dot(z, codebook).General([]int{1}, nil, []int{1}, nil)      // [B,K]
	dist2 = Add(Sub(zz, MulScalar(ze, 2)), ee)                        // [B,K]
	tokens = ArgMin(StopGradient(dist2), 1, dtypes.Int32)             // [B]
	q = StopGradient(Gather(codebook, ExpandAxes(tokens, -1), false)) // [B,D]
	return tokens, q, dist2
}

// StraightThrough is the straight-through estimator q̃ = z + sg(q − z) (Sec. 3.2): its
// value is q and its Jacobian with respect to z is the identity. z, q [B,D].
func StraightThrough(z, q *Node) *Node {
	return Add(z, StopGradient(Sub(q, z)))
}

// SoftPosterior is the temperature-controlled posterior over the codebook (Sec. 3.2),
// log ρ[b,k] = log softmax_k(−dist2[b,k]/τ). dist2 [B,K] → log ρ [B,K].
// As τ → 0 it concentrates on the hard token argmin_k dist2.
func SoftPosterior(dist2 *Node, tau float64) *Node {
	if !(tau > 0) {
		exceptions.Panicf("vqvae.SoftPosterior: temperature must be > 0, got %g", tau)
	}
	return LogSoftmax(MulScalar(dist2, -1/tau), -1)
}

// maskedMean is Σ_b mask_b·v_b / Σ_b mask_b for v [B] (plain mean when mask is nil).
// A batch with no valid frame gives 0.
func maskedMean(v, mask *Node) *Node {
	if mask == nil {
		return ReduceAllMean(v)
	}
	mask = ConvertDType(mask, v.DType())
	den := MaxScalar(ReduceAllSum(mask), 1e-12)
	return Div(ReduceAllSum(Mul(v, mask)), den)
}

// ReconstructionLoss is the per-pixel mean squared error, averaged over the valid frames:
// x, xhat [B,...], optional mask [B] (1 = valid frame, 0 = padding) → scalar.
// (The paper writes the per-image sum; the reference and this package use the per-pixel
// mean, which only rescales the loss relative to the commitment term consistently with it.)
func ReconstructionLoss(x, xhat, mask *Node) *Node {
	b := x.Shape().Dimensions[0]
	perFrame := ReduceMean(Reshape(Square(Sub(x, xhat)), b, -1), 1) // [B]
	return maskedMean(perFrame, mask)
}

// CommitmentLoss is mean over the valid frames of mean_d (sg(q) − z)² (Sec. 3.2):
// z, q [B,D], optional mask [B] → scalar. Only z receives gradient.
func CommitmentLoss(z, q, mask *Node) *Node {
	perFrame := ReduceMean(Square(Sub(StopGradient(q), z)), 1) // [B]
	return maskedMean(perFrame, mask)
}

// Usage counts the assignments to every code: tokens [B] int32, optional mask [B] →
// counts [K] (float, dtype of the mask or Float32).
func Usage(tokens *Node, k int, mask *Node, dtype dtypes.DType) *Node {
	oh := OneHot(tokens, k, dtype) // [B,K]
	if mask != nil {
		oh = Mul(oh, ExpandAxes(ConvertDType(mask, dtype), -1))
	}
	return ReduceSum(oh, 0)
}

// Perplexity is exp(H(p)) of the usage distribution p = counts/Σcounts (0·log 0 = 0):
// counts [K] → scalar in [1, K] (1 when everything maps to one code, K at uniform use).
func Perplexity(counts *Node) *Node {
	total := MaxScalar(ReduceAllSum(counts), 1e-12)
	p := Div(counts, total)
	zero := ZerosLike(p)
	safe := Where(GreaterThan(p, zero), p, OnesLike(p))
	plogp := Where(GreaterThan(p, zero), Mul(p, Log(safe)), zero)
	return Exp(Neg(ReduceAllSum(plogp)))
}

// ActiveCodes counts the codes with a non-zero count: counts [K] → scalar (dtype of counts).
func ActiveCodes(counts *Node) *Node {
	return ReduceAllSum(ConvertDType(GreaterThan(counts, ZerosLike(counts)), counts.DType()))
}

// EMAState is the codebook state (Sec. 3.2): embeddings e [K,D], EMA cluster sizes
// n [K] and EMA vector sums m [K,D].
type EMAState struct {
	Codebook, Size, Sum *Node
}

// EMAUpdate performs one exponential-moving-average codebook update (Sec. 3.2):
//
//	n_k ← γ n_k + (1−γ) Σ_t 1[k_t = k]
//	m_k ← γ m_k + (1−γ) Σ_t 1[k_t = k] z_t
//	n̂_k = (n_k + ε) / (Σ_k' n_k' + K ε) · Σ_k' n_k'     (Laplace smoothing)
//	e_k ← m_k / n̂_k
//
// z [B,D] (gradients are stopped), tokens [B] int32, optional mask [B] (padded frames
// count nothing). Returns the new state; assign it to the variables in the same graph.
func EMAUpdate(s EMAState, z, tokens, mask *Node, gamma, eps float64) EMAState {
	k := s.Codebook.Shape().Dimensions[0]
	dtype := s.Codebook.DType()
	z = StopGradient(z)
	oh := OneHot(tokens, k, dtype) // [B,K]
	if mask != nil {
		oh = Mul(oh, ExpandAxes(ConvertDType(mask, dtype), -1))
	}
	counts := ReduceSum(oh, 0)                                     // [K]
	sums := Dot(oh, z).General([]int{0}, nil, []int{0}, nil)       // [K,D]
	n := Add(MulScalar(s.Size, gamma), MulScalar(counts, 1-gamma)) // [K]
	m := Add(MulScalar(s.Sum, gamma), MulScalar(sums, 1-gamma))    // [K,D]
	total := ReduceAllSum(n)
	nHat := Mul(Div(AddScalar(n, eps), AddScalar(total, float64(k)*eps)), total) // [K]
	e := Div(m, ExpandAxes(nHat, -1))
	return EMAState{Codebook: e, Size: n, Sum: m}
}

// ReviveDeadCodes re-seeds every "dead" code — one whose EMA size n_k is below
// threshold × (Σ_k' n_k')/K, a fraction of the uniform share — with an encoder output
// of the batch: e_k ← z[choice_k], and gives it the uniform share as its size
// (n_k ← Σn/K, m_k ← n_k·e_k) so it survives a few hundred steps without assignments.
// z [B,D], choice [K] int (row of z for each code, e.g. uniform random). threshold ≤ 0
// disables revival. Returns the new state and revived [K] (1 where re-seeded, dtype of
// the codebook).
func ReviveDeadCodes(s EMAState, z, choice *Node, threshold float64) (EMAState, *Node) {
	k := s.Codebook.Shape().Dimensions[0]
	dtype := s.Codebook.DType()
	if threshold <= 0 {
		return s, Zeros(z.Graph(), s.Size.Shape())
	}
	share := DivScalar(ReduceAllSum(s.Size), float64(k))  // scalar
	dead := LessThan(s.Size, MulScalar(share, threshold)) // [K] bool
	fresh := Gather(StopGradient(z), ExpandAxes(choice, -1), false)
	dead2 := BroadcastToShape(ExpandAxes(dead, -1), s.Codebook.Shape())
	shareK := BroadcastToShape(share, s.Size.Shape())
	out := EMAState{
		Codebook: Where(dead2, fresh, s.Codebook),
		Size:     Where(dead, shareK, s.Size),
		Sum:      Where(dead2, Mul(fresh, ExpandAxes(shareK, -1)), s.Sum),
	}
	return out, ConvertDType(dead, dtype)
}

// LogUniform is log K, the maximum entropy of a K-way distribution (for the diversity
// penalty log K − H(ρ̄) of Sec. 3.6).
func LogUniform(k int) float64 { return math.Log(float64(k)) }

// DiversityPenalty is log K − H(ρ̄) with ρ̄ the mean soft posterior over the valid
// frames (Sec. 3.6): logRho [B,K], optional mask [B] → scalar ≥ 0.
//
// ρ̄ is computed in log space, log ρ̄_k = lse_b(log ρ[b,k]) − log B_valid, and
// H = −Σ_k ρ̄_k log ρ̄_k from it, so the gradient −ρ̄_k(1 + log ρ̄_k) is finite for every
// ρ̄_k ≥ 0. (Averaging exp(log ρ) first made an unused code's ρ̄_k a float32 denormal
// at near-collapse; the 1/ρ̄_k of log's derivative overflowed to +Inf and met the
// exp(log ρ) = 0 of other frames as Inf·0 = NaN in the encoder gradient.)
func DiversityPenalty(logRho, mask *Node) *Node {
	rhoBar, logBar := meanPosterior(logRho, mask)
	h := Neg(ReduceAllSum(Mul(rhoBar, logBar)))
	return Sub(Scalar(logRho.Graph(), logRho.DType(), LogUniform(logRho.Shape().Dimensions[1])), h)
}

// DiversityPenaltyTo is KL(ρ̄ ‖ share) = Σ_k ρ̄_k (log ρ̄_k − log share_k) ≥ 0, the
// diversity penalty with a target usage instead of the uniform one (for which it is
// DiversityPenalty): logRho [B,K], optional mask [B], share [K] (each > 0, summing to 1)
// → scalar.
func DiversityPenaltyTo(logRho, mask *Node, share []float64) *Node {
	k := logRho.Shape().Dimensions[1]
	if len(share) != k {
		exceptions.Panicf("vqvae.DiversityPenaltyTo: %d shares for K=%d", len(share), k)
	}
	logS := make([]float64, k)
	for i, p := range share {
		logS[i] = math.Log(p)
	}
	rhoBar, logBar := meanPosterior(logRho, mask)
	target := ConvertDType(Const(logRho.Graph(), logS), logRho.DType())
	return ReduceAllSum(Mul(rhoBar, Sub(logBar, target)))
}

// LogMeanPosterior is log ρ̄ [K], the log of the mean soft posterior over the valid
// frames (logRho [B,K], optional mask [B]; 0 where ρ̄_k = 0), with its gradient.
func LogMeanPosterior(logRho, mask *Node) *Node {
	_, logBar := meanPosterior(logRho, mask)
	return logBar
}

// meanPosterior is ρ̄ [K] and log ρ̄ [K] (0 where ρ̄_k = 0) over the valid frames.
func meanPosterior(logRho, mask *Node) (rhoBar, logBar *Node) {
	g := logRho.Graph()
	dt := logRho.DType()
	b, k := logRho.Shape().Dimensions[0], logRho.Shape().Dimensions[1]
	x := logRho // [B,K]
	count := Scalar(g, dt, float64(b))
	if mask != nil {
		valid := GreaterThan(ConvertDType(mask, dt), ScalarZero(g, dt)) // [B]
		valid = BroadcastToDims(ExpandAxes(valid, -1), b, k)            // [B,K]
		x = Where(valid, logRho, Scalar(g, dt, -1e30))                  // padded frames: weight 0
		count = MaxScalar(ReduceAllSum(ConvertDType(GreaterThan(ConvertDType(mask, dt), ScalarZero(g, dt)), dt)), 1)
	}
	m := StopGradient(ReduceMax(x, 0))                                                 // [K] shift
	m = Where(IsFinite(m), m, ScalarZero(g, dt))                                       // an all −Inf column
	logBar = Sub(Add(m, Log(ReduceSum(Exp(Sub(x, ExpandAxes(m, 0))), 0))), Log(count)) // [K] log ρ̄
	finiteBar := IsFinite(logBar)
	logBar = Where(finiteBar, logBar, ScalarZero(g, dt)) // ρ̄_k = 0: contributes 0
	rhoBar = Where(finiteBar, Exp(logBar), ZerosLike(logBar))
	return rhoBar, logBar
}
