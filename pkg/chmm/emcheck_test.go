package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTrainEMCheck: plain EM on whole walks calls Check every CheckEvery iterations
// with the model of the E-step just done (its exact log-likelihood is that E-step's
// ℓ), and a Check that says stop ends the soft phase there with that model.
func TestTrainEMCheck(t *testing.T) {
	_, seqs := walkData(41, aliased3x3, 2, 600)
	steps := 0
	for _, s := range seqs {
		steps += s.Len()
	}
	start := New(UniformClones(3, 3), 4, rand.New(rand.NewPCG(41, 1)))
	var its []int
	var lls []float64
	var atStop []float64
	cfg := EMConfig{MaxIters: 200, Tol: -1, Pseudocount: 2e-3, FixedPi: true, Workers: 2, CheckEvery: 20}
	cfg.Check = func(m *Model, conf [][]float64, it int) (bool, error) {
		ll, err := LogLikelihood(m, seqs)
		if err != nil {
			return false, err
		}
		its, lls = append(its, it), append(lls, ll/float64(steps))
		atStop = append(atStop[:0], m.ThetaLogits...)
		return it == 120, nil
	}
	m := start.Clone()
	h, err := TrainEM(m, seqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{20, 40, 60, 80, 100, 120}; !slices.Equal(its, want) {
		t.Errorf("checked at %v, want %v", its, want)
	}
	if h.Stop != "stopped by its check" || len(h.LogLik) != 121 {
		t.Errorf("stop %q after %d E-steps, want the check's after 121", h.Stop, len(h.LogLik))
	}
	if !sameBits(m.ThetaLogits, atStop) {
		t.Error("the model trained is not the one the check stopped at")
	}
	for i, it := range its {
		if d := math.Abs(lls[i] - h.LogLik[it]); d > 1e-12 {
			t.Errorf("check at %d: the model's ℓ/T %.15f, the E-step's %.15f", it, lls[i], h.LogLik[it])
		}
	}
}
