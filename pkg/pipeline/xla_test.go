package pipeline

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/internal/xlabuild"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// TestXLABuildsJointStep: go-xla v0.4.13's own StableHLO builder (driven without a PJRT plugin)
// accepts the joint step's graph (conv and MLP VQ-VAE, all frames or a gradient subset, scaled
// emissions, frozen VQ-VAE, a share target): the graph that stopped at the first joint iteration
// on a GPU because the HMM pass's While bodies held reductions.
func TestXLABuildsJointStep(t *testing.T) {
	if !xlabuild.Available {
		t.Skip("go-xla is compiled in only with cgo")
	}
	be, err := xlabuild.New("cuda", false)
	if err != nil {
		t.Fatal(err)
	}
	const B, T, k = 2, 8, 4
	for _, tc := range []struct {
		name string
		arch vqvae.Arch
		set  func(j *Joint)
	}{
		{"conv", vqvae.ArchConv, func(*Joint) {}},
		{"conv subset scaled", vqvae.ArchConv, func(j *Joint) { j.GradFrames, j.Scaled = 6, true }},
		{"mlp frozen share", vqvae.ArchMLP, func(j *Joint) { j.FreezeVQ, j.Share = true, []float64{0.1, 0.2, 0.3, 0.4} }},
	} {
		vc := vqvae.DefaultConfig(k)
		vc.Arch = tc.arch
		vq, err := vqvae.New(testBackend(t).Backend, vc, 1)
		if err != nil {
			t.Fatal(err)
		}
		j, err := NewJoint(vq, chmm.New(chmm.UniformClones(k, 3), 4, rand.New(rand.NewPCG(1, 2))), 0.25, 3e-4, 3e-2)
		if err != nil {
			t.Fatal(err)
		}
		tc.set(j)
		e, err := model.NewExec(be, vq.Store(), j.graph)
		if err != nil {
			t.Fatal(err)
		}
		s := vc.Side
		_, err = e.Compile(shapes.Make(dtypes.Float32, B*T, s, s, 1), shapes.Make(dtypes.Int32, B*T),
			shapes.Make(dtypes.Int32, B, T-1), shapes.Make(dtypes.Float32, B, T),
			shapes.Make(dtypes.Float32), shapes.Make(dtypes.Float32))
		if _, err := xlabuild.ProgramOf(err); err != nil {
			t.Errorf("%s: go-xla refuses the joint step: %v", tc.name, err)
		}
	}
}
