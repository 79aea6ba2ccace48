package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestViterbiEOneHotIsHard: with one-hot ρ (log 1 = 0 on the token, −Inf elsewhere)
// the soft decoder returns chmm.Viterbi's path and score.
func TestViterbiEOneHotIsHard(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	m := New([]int{3, 2, 4}, 4, rng)
	for i := range m.ThetaLogits { // sharpen so that paths are not all ties
		m.ThetaLogits[i] += 2 * rng.NormFloat64()
	}
	T := 200
	seq := Sequence{}
	logRho := make([][]float32, T)
	for t := range T {
		o := rng.IntN(3)
		seq.Obs = append(seq.Obs, o)
		logRho[t] = []float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}
		logRho[t][o] = 0
		if t < T-1 {
			seq.Actions = append(seq.Actions, rng.IntN(4))
		}
	}
	want, wantLP, err := Viterbi(m, seq)
	if err != nil {
		t.Fatal(err)
	}
	got, gotLP, err := ViterbiE(m, logRho, seq.Actions)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("soft path differs from the hard path")
	}
	if math.Abs(gotLP-wantLP) > 1e-9*math.Abs(wantLP) {
		t.Errorf("score %.12g, want %.12g", gotLP, wantLP)
	}
	if _, _, err := ViterbiE(m, logRho, seq.Actions[:10]); err == nil {
		t.Error("wrong action count accepted")
	}
}
