package chmm

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sharpModel is a small model whose rows are far from uniform, so that paths are not
// all ties.
func sharpModel(rng *rand.Rand) *Model {
	m := New([]int{3, 2, 4}, 4, rng)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] += 2 * rng.NormFloat64()
	}
	return m
}

// TestDecodeEmissionsAgree: one-hot log ρ and a confusion matrix that is the identity
// decode the hard tokens' path with Viterbi's score.
func TestDecodeEmissionsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	m := sharpModel(rng)
	T := 200
	seq := Sequence{}
	logRho := make(LogRho, T)
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
	identity := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for name, e := range map[string]Emissions{"tokens": Tokens(seq.Obs), "one-hot log ρ": logRho,
		"identity confusion": Confused{Tokens: seq.Obs, C: identity}} {
		got, gotLP, err := Decode(m, e, seq.Actions)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: path differs from Viterbi's", name)
		}
		if math.Abs(gotLP-wantLP) > 1e-9*math.Abs(wantLP) {
			t.Errorf("%s: score %.12g, want %.12g", name, gotLP, wantLP)
		}
		if _, _, err := Decode(m, e, seq.Actions[:10]); err == nil {
			t.Errorf("%s: wrong action count accepted", name)
		}
	}
}

// TestDecodeBruteForce: on a 6-step walk, Decode's path and score under soft and
// confused emissions are the best of all N^T paths, scored one by one.
func TestDecodeBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := New([]int{2, 2}, 2, rng)
	for i := range m.ThetaLogits {
		m.ThetaLogits[i] += 1.5 * rng.NormFloat64()
	}
	for i := range m.PiLogits {
		m.PiLogits[i] += rng.NormFloat64()
	}
	const T = 6
	actions := make([]int, T-1)
	for i := range actions {
		actions[i] = rng.IntN(2)
	}
	soft := make(LogRho, T)
	tokens := make([]int, T)
	for t := range T {
		p := rng.Float64()
		soft[t] = []float32{float32(math.Log(p)), float32(math.Log(1 - p))}
		tokens[t] = rng.IntN(2)
	}
	conf := Confused{Tokens: tokens, C: [][]float64{{0.8, 0.2}, {0.3, 0.7}}}
	pi, tr, omega, n := m.Pi(), m.Transitions(), m.StateTokens(), m.N()
	for name, e := range map[string]Emissions{"soft": soft, "confused": conf} {
		logE := func(step, s int) float64 {
			if omega[s] < 0 {
				return math.Inf(-1)
			}
			dst := make([]float64, 2)
			if err := e.LogTokens(step, dst); err != nil {
				t.Fatal(err)
			}
			return dst[omega[s]]
		}
		best, bestPath := math.Inf(-1), []int(nil)
		path := make([]int, T)
		var walk func(t int, score float64)
		walk = func(t int, score float64) {
			if t == T {
				if score > best {
					best, bestPath = score, slices.Clone(path)
				}
				return
			}
			for s := range n {
				var v float64
				if t == 0 {
					v = math.Log(pi[s]) + logE(0, s)
				} else {
					a := actions[t-1]
					v = score + math.Log(tr[(a*n+path[t-1])*n+s]) + logE(t, s)
				}
				path[t] = s
				walk(t+1, v)
			}
		}
		walk(0, 0)
		got, lp, err := Decode(m, e, actions)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if math.Abs(lp-best) > 1e-9 || !slices.Equal(got, bestPath) {
			t.Errorf("%s: Decode %v (%.12g), brute force %v (%.12g)", name, got, lp, bestPath, best)
		}
	}
}

// TestEmissionsBadInput: every emission type names the step it cannot read.
func TestEmissionsBadInput(t *testing.T) {
	dst := make([]float64, 3)
	nan := float32(math.NaN())
	for name, c := range map[string]struct {
		e    Emissions
		want string
	}{
		"token out of range":   {Tokens{0, 3}, "step 1: token 3"},
		"short log ρ":          {LogRho{{0, 0}}, "log ρ over 3 tokens, got 2 values"},
		"NaN log ρ":            {LogRho{{0, nan, 0}}, "log ρ[1] = NaN"},
		"log ρ all -Inf":       {LogRho{{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}}, "-Inf for every token"},
		"confusion wrong size": {Confused{Tokens: []int{0}, C: [][]float64{{1, 0}, {0, 1}}}, "2-row confusion matrix"},
	} {
		var err error
		for t := range c.e.Steps() {
			if err = c.e.LogTokens(t, dst); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestTokenLikelihoods: the hard emissions' likelihoods are the exponentials of their
// log-likelihoods (exactly the matrix entries for Confused).
func TestTokenLikelihoods(t *testing.T) {
	c := Confused{Tokens: []int{1, 0}, C: [][]float64{{0.9, 0.1}, {0.25, 0.75}}}
	lik, logLik := make([]float64, 2), make([]float64, 2)
	for step, want := range [][]float64{{0.1, 0.75}, {0.9, 0.25}} {
		if err := c.TokenLikelihoods(step, lik); err != nil || !slices.Equal(lik, want) {
			t.Errorf("confused step %d: %v %v, want %v", step, lik, err, want)
		}
		if err := c.LogTokens(step, logLik); err != nil || math.Abs(math.Exp(logLik[0])-want[0]) > 1e-15 || math.Abs(math.Exp(logLik[1])-want[1]) > 1e-15 {
			t.Errorf("confused step %d: log %v %v", step, logLik, err)
		}
	}
	if err := (Tokens{1}).TokenLikelihoods(0, lik); err != nil || !slices.Equal(lik, []float64{0, 1}) {
		t.Errorf("tokens: %v %v", lik, err)
	}
}
