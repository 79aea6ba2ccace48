package vqvae

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestUpdateCodebookMask: padded frames neither enter the EMA statistics nor serve
// as replacement rows for revived codes.
func TestUpdateCodebookMask(t *testing.T) {
	cfg := tinyConfig(3)
	cfg.D, cfg.Revive = 2, 0.99
	store := model.NewStore()
	scope := store.RootScope().At("vq")
	if err := cfg.InitVariables(scope, 1, dtypes.Float64); err != nil {
		t.Fatal(err)
	}
	if err := store.SetRNGStateFromSeed(3); err != nil {
		t.Fatal(err)
	}
	e, n, s := CodebookVars(scope)
	e.MustSetValue(tensors.FromFlatDataAndDimensions([]float64{0, 0, 10, 10, -10, -10}, 3, 2))
	n.MustSetValue(tensors.FromFlatDataAndDimensions([]float64{5, 5, 5}, 3))
	s.MustSetValue(tensors.FromFlatDataAndDimensions([]float64{0, 0, 50, 50, -50, -50}, 3, 2))
	exec := model.MustNewExec(testBackend(), store, func(root *model.Scope, z, tok, mask *Node) *Node {
		return cfg.UpdateCodebook(root.At("vq"), z, tok, mask)
	})
	// Only frame 1 is valid; it belongs to code 0. Codes 1 and 2 get nothing and decay.
	z := tensors.FromFlatDataAndDimensions([]float64{100, 100, 1, 2, -100, 7, 3, 3}, 4, 2)
	tok := tensors.FromValue([]int32{1, 0, 2, 1})
	mask := tensors.FromValue([]float64{0, 1, 0, 0})
	revived := 0.0
	for range 200 {
		revived += flat64(t, exec.MustCall(z, tok, mask)[0])[0]
		got := flat64(t, e.MustValue())
		for k := range 3 {
			x, y := got[2*k], got[2*k+1]
			// Every code is an EMA mix of its old value and frame 1, or a copy of frame 1.
			if x > 10.01 || x < -10.01 || x == 100 || y == 7 || (x == 3 && y == 3) {
				t.Fatalf("code %d = (%g, %g): a padded frame leaked into the codebook", k, x, y)
			}
		}
	}
	if revived == 0 {
		t.Fatal("no code revived in 200 steps")
	}
	final := flat64(t, e.MustValue())
	// Code 0 is the EMA mean of its start (0, 0) and frame 1: on the segment to (1, 2).
	if x, y := final[0], final[1]; math.Abs(y-2*x) > 1e-9 || x <= 0 || x > 1 {
		t.Errorf("code 0 = (%g, %g), want on the segment (0,0)–(1,2)", x, y)
	}
	// Codes 1 and 2 never get an assignment: they were revived from frame 1 (the only
	// valid one) and stay there.
	for k := 1; k < 3; k++ {
		if d := math.Hypot(final[2*k]-1, final[2*k+1]-2); d > 1e-3 {
			t.Errorf("code %d = %v, want the revived frame 1 (1, 2)", k, final[2*k:2*k+2])
		}
	}
}
