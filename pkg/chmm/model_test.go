package chmm

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		clones     []int
		n, sink    int
		first      []int
		stateToken []int
	}{
		{[]int{2, 1}, 4, 3, []int{0, 2}, []int{0, 0, 1, -1}},
		{[]int{1, 3, 2}, 7, 6, []int{0, 1, 4}, []int{0, 1, 1, 1, 2, 2, -1}},
		{UniformClones(3, 2), 7, 6, []int{0, 2, 4}, []int{0, 0, 1, 1, 2, 2, -1}},
	} {
		m := New(tc.clones, 2, nil)
		if m.N() != tc.n || m.Sink() != tc.sink || m.K() != len(tc.clones) {
			t.Errorf("clones %v: N %d sink %d K %d, want %d %d %d", tc.clones, m.N(), m.Sink(), m.K(), tc.n, tc.sink, len(tc.clones))
		}
		for k, f := range tc.first {
			if got := m.FirstState(k); got != f {
				t.Errorf("clones %v: FirstState(%d) = %d, want %d", tc.clones, k, got, f)
			}
		}
		for s, want := range tc.stateToken {
			if got := m.Token(s); got != want {
				t.Errorf("clones %v: Token(%d) = %d, want %d", tc.clones, s, got, want)
			}
		}
		if got := m.StateTokens(); !slices.Equal(got, tc.stateToken) {
			t.Errorf("clones %v: StateTokens = %v, want %v", tc.clones, got, tc.stateToken)
		}
		if m.Token(-1) != -1 || m.Token(tc.n) != -1 {
			t.Errorf("Token out of range should be -1")
		}
	}
}

func TestNewInit(t *testing.T) {
	m := New([]int{3, 2}, 4, rand.New(rand.NewPCG(1, 2)))
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	n := m.N()
	for i := range n {
		for j := range n {
			v := m.ThetaLogits[i*n+j]
			if j == n-1 {
				if v != math.Log(10) {
					t.Errorf("Θ[0,%d,sink] = %v, want log 10", i, v)
				}
			} else if math.Abs(v) > 0.1 {
				t.Errorf("Θ[0,%d,%d] = %v, want |.| <= 0.1", i, j, v)
			}
			for a := 1; a < 4; a++ {
				if m.ThetaLogits[(a*n+i)*n+j] != v {
					t.Fatalf("Θ differs between actions 0 and %d at (%d,%d)", a, i, j)
				}
			}
		}
	}
	// Rows sum to one, sink gets 10/(10+Σ e^{±0.1}) ≈ 10/(10+(N-1)).
	tr := m.Transitions()
	for r := 0; r < len(tr); r += n {
		var s float64
		for _, v := range tr[r : r+n] {
			s += v
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("row %d sums to %v", r/n, s)
		}
		if p := tr[r+n-1]; math.Abs(p-10.0/(10+float64(n-1))) > 0.01 {
			t.Errorf("sink probability %v, want ≈ %v", p, 10.0/(10+float64(n-1)))
		}
	}
	c := m.Clone()
	c.ThetaLogits[0] = 7
	c.Clones[0] = 9
	if m.ThetaLogits[0] == 7 || m.Clones[0] == 9 {
		t.Error("Clone shares memory with the original")
	}
}

func TestValidateErrors(t *testing.T) {
	good := func() *Model { return New([]int{2, 1}, 2, nil) }
	for _, tc := range []struct {
		name   string
		edit   func(m *Model)
		substr string
	}{
		{"no tokens", func(m *Model) { m.Clones = nil }, "no tokens"},
		{"zero clones", func(m *Model) { m.Clones = []int{2, 0} }, "Clones[1] = 0"},
		{"actions", func(m *Model) { m.NumActions = 0 }, "NumActions = 0"},
		{"pi length", func(m *Model) { m.PiLogits = m.PiLogits[:3] }, "len(PiLogits) = 3"},
		{"theta length", func(m *Model) { m.ThetaLogits = m.ThetaLogits[:5] }, "len(ThetaLogits) = 5"},
		{"nan", func(m *Model) { m.ThetaLogits[4*4+2*4+1] = math.NaN() }, "ThetaLogits[1][2]: entry 1 is NaN"},
		{"+inf", func(m *Model) { m.PiLogits[2] = math.Inf(1) }, "PiLogits: entry 2 is +Inf"},
		{"dead row", func(m *Model) {
			for j := range 4 {
				m.ThetaLogits[4+j] = math.Inf(-1)
			}
		}, "ThetaLogits[0][1]: every entry is -Inf"},
	} {
		m := good()
		tc.edit(m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.substr)
		}
		if _, err := LogLikelihood(m, nil); err == nil {
			t.Errorf("%s: LogLikelihood accepted an invalid model", tc.name)
		}
	}
	if New([]int{2, -1}, 2, nil).Validate() == nil || New([]int{2}, 0, nil).Validate() == nil {
		t.Error("New with invalid arguments gave a valid model")
	}
}

func TestCheckErrors(t *testing.T) {
	m := New([]int{2, 1}, 2, nil)
	ok := Sequence{Obs: []int{0, 1, 0}, Actions: []int{1, 0}}
	for _, tc := range []struct {
		name   string
		seq    Sequence
		substr string
	}{
		{"empty", Sequence{}, "sequence 1: no observations"},
		{"lengths", Sequence{Obs: []int{0, 1}, Actions: []int{0, 0}}, "sequence 1: 2 actions for 2 observations, want 1"},
		{"token", Sequence{Obs: []int{0, 1, 2}, Actions: []int{0, 0}}, "sequence 1, step 2: token 2 outside [0, 2)"},
		{"negative token", Sequence{Obs: []int{-1}, Actions: []int{}}, "sequence 1, step 0: token -1"},
		{"action", Sequence{Obs: []int{0, 1, 1}, Actions: []int{0, 2}}, "sequence 1, step 1: action 2 outside [0, 2)"},
	} {
		err := m.Check([]Sequence{ok, tc.seq})
		if err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.substr)
		}
		if _, _, _, err := Gradient(m, []Sequence{ok, tc.seq}); err == nil {
			t.Errorf("%s: Gradient accepted bad data", tc.name)
		}
		if _, err := TrainEM(m.Clone(), []Sequence{ok, tc.seq}, DefaultEMConfig()); err == nil {
			t.Errorf("%s: TrainEM accepted bad data", tc.name)
		}
	}
	if err := m.Check([]Sequence{ok}); err != nil {
		t.Errorf("valid sequence rejected: %v", err)
	}
	if err := m.CheckCompatible(2, 2); err != nil {
		t.Error(err)
	}
	if err := m.CheckCompatible(3, 2); err == nil || !strings.Contains(err.Error(), "2 tokens, data has 3") {
		t.Errorf("CheckCompatible tokens: %v", err)
	}
	if err := m.CheckCompatible(2, 4); err == nil || !strings.Contains(err.Error(), "2 actions, data has 4") {
		t.Errorf("CheckCompatible actions: %v", err)
	}
}

// TestNewRandom: the original CSCG's start — every real destination's weight in
// (0, 1] (so its logit ≤ 0 and finite), different per action and per row, the sink
// and π as New's, and the same model for the same seed.
func TestNewRandom(t *testing.T) {
	clones := []int{3, 2}
	m := NewRandom(clones, 2, rand.New(rand.NewPCG(5, 6)))
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	n := m.N()
	distinct := map[float64]bool{}
	for a := range 2 {
		for i := range n {
			row := m.ThetaLogits[(a*n+i)*n:][:n]
			for j, v := range row[:n-1] {
				if !(v <= 0) || math.IsInf(v, 0) {
					t.Fatalf("logit [%d,%d,%d] = %g, want log u with u in (0, 1]", a, i, j, v)
				}
				distinct[v] = true
			}
			if row[n-1] != math.Log(initSinkWeight) {
				t.Fatalf("sink logit %g", row[n-1])
			}
		}
	}
	if len(distinct) < 2*n*(n-1)-2 {
		t.Errorf("only %d distinct logits of %d", len(distinct), 2*n*(n-1))
	}
	again := NewRandom(clones, 2, rand.New(rand.NewPCG(5, 6)))
	if !reflect.DeepEqual(m.ThetaLogits, again.ThetaLogits) || !reflect.DeepEqual(m.PiLogits, again.PiLogits) {
		t.Error("same seed, different model")
	}
	ref := New(clones, 2, rand.New(rand.NewPCG(5, 6)))
	if !reflect.DeepEqual(m.PiLogits, ref.PiLogits) {
		t.Error("π differs from New's")
	}
}

// TestPassCost: Σ_t C_{o_t}·C_{o_{t+1}} by hand, over every sequence.
func TestPassCost(t *testing.T) {
	m := New([]int{2, 5, 3}, 2, rand.New(rand.NewPCG(1, 1)))
	seqs := []Sequence{
		{Obs: []int{0, 1, 1, 2}, Actions: []int{0, 1, 0}}, // 2·5 + 5·5 + 5·3 = 50
		{Obs: []int{2}},                       // no transition
		{Obs: []int{2, 0}, Actions: []int{1}}, // 3·2 = 6
	}
	if got := PassCost(m, seqs); got != 56 {
		t.Errorf("PassCost = %v, want 56", got)
	}
}
