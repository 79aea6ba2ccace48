package vqvae

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// NoTarget marks an image without a target code in TeachStep.
const NoTarget = -1

// teachGraph builds one step of TeachStep: Forward, the loss of trainGraph (without
// the classifier) plus weight × the targets' cross-entropy on the soft posterior,
// Adam, then the EMA codebook update and dead-code revival.
func (m *Model) teachGraph(root *model.Scope, inputs []*Node) []*Node {
	c := m.cfg
	scope := root.At(ScopeName)
	x, targets, weight := inputs[0], inputs[1], inputs[2]
	g := x.Graph()
	dt := x.DType()
	root.Store().SetTraining(g, true) // variables stay graph parameters (see varNode)
	out := c.Forward(scope, x, nil)
	has := GreaterOrEqual(targets, ScalarZero(g, dtypes.Int32))
	hasF := ConvertDType(has, dt)
	target := Where(has, targets, ZerosLike(targets))
	nll := Neg(ReduceSum(Mul(OneHot(target, c.K, dt), out.LogRho), 1)) // [B]
	n := MaxScalar(ReduceAllSum(hasF), 1)
	ce := Div(ReduceAllSum(Mul(nll, hasF)), n)
	acc := Div(ReduceAllSum(Mul(ConvertDType(Equal(out.Tokens, target), dt), hasF)), n)
	loss := Add(Add(out.Rec, MulScalar(out.Commit, c.Beta)), Mul(ConvertDType(weight, dt), ce))
	optimizer.Adam().LearningRate(m.lr).Done().UpdateGraph(scope, g, loss)
	counts := Usage(out.Tokens, c.K, nil, dt)
	revived := ScalarZero(g, dt)
	if m.teachEMA {
		revived = c.UpdateCodebook(scope, out.Z, out.Tokens, nil)
	}
	return []*Node{loss, out.Rec, out.Commit, Perplexity(counts), ActiveCodes(counts), counts, revived, ce, acc}
}

// SetTeachEMA sets whether TeachStep updates the codebook by EMA (false: it stays as
// it is; the default).
func (m *Model) SetTeachEMA(on bool) {
	if on != m.teachEMA {
		m.teachEMA, m.teachExec = on, nil
	}
}

// TeachStep runs one training step on images (n images) with a target code for each
// (targets[i] in [0, K), or NoTarget): the loss is TrainStep's, L_rec + β·L_commit,
// plus weight × the mean over the images with a target of the cross-entropy
// −log ρ(target) of the soft posterior (Sec. 3.2, temperature Config.Tau), which
// pulls an image's latent towards its target code and away from the others; then
// the EMA codebook update of TrainStep. Config.Classify is not read. Metrics.CE is
// the cross-entropy and Metrics.Accuracy the share of the targeted images whose hard
// token is their target (both 0 without targets). The step joins the history. Unlike
// TrainStep it never initialises from data: the codebook and networks are used as
// they are.
func (m *Model) TeachStep(images []float32, targets []int, weight float64) (Metrics, error) {
	n, x, err := m.imagesTensor(images, "TeachStep")
	if err != nil {
		return Metrics{}, err
	}
	if len(targets) != n {
		return Metrics{}, fmt.Errorf("vqvae: TeachStep: %d targets for %d images", len(targets), n)
	}
	if !(weight >= 0) || math.IsInf(weight, 0) {
		return Metrics{}, fmt.Errorf("vqvae: TeachStep: weight %g, need a finite value ≥ 0", weight)
	}
	tg := make([]int32, n)
	for i, k := range targets {
		if k != NoTarget && (k < 0 || k >= m.cfg.K) {
			return Metrics{}, fmt.Errorf("vqvae: TeachStep: target %d of image %d outside [0,%d) (or %d: none)", k, i, m.cfg.K, NoTarget)
		}
		tg[i] = int32(k)
	}
	if m.teachExec == nil {
		if m.teachExec, err = model.NewExec(m.backend, m.store, m.teachGraph); err != nil {
			return Metrics{}, err
		}
	}
	var out []*tensors.Tensor
	if err := catch("vqvae: TeachStep", func() (err error) {
		out, err = m.teachExec.Call(x, tensors.FromFlatDataAndDimensions(tg, n), tensors.FromValue(float32(weight)))
		return err
	}); err != nil {
		return Metrics{}, err
	}
	return m.recordStep(out), nil
}
