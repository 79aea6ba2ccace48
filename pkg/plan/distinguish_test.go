package plan

import (
	"errors"
	"slices"
	"testing"
)

// On the line map (tokens 0 1 0 1 2, action 0 right, 1 left, sticky ends)
// the distinguishing sequences are found by hand: places 0 and 2 show token
// 0 and differ after "left" (0 stays on token 0, 2 moves onto token 1);
// places 1 and 3 differ after "right" (onto tokens 0 and 2).
func TestDistinguishHandBuilt(t *testing.T) {
	mp := lineMap(t)
	// States: place 0 → 0, place 2 → 1, place 1 → 2, place 3 → 3, place 4 → 4.
	for _, tc := range []struct {
		name    string
		belief  map[int]float64
		actions []int
		states  []int
	}{
		{"places 0 and 2", map[int]float64{0: 0.6, 1: 0.4}, []int{1}, []int{0, 0}},
		{"places 2 and 0", map[int]float64{0: 0.3, 1: 0.7}, []int{1}, []int{1, 2}},
		{"places 1 and 3", map[int]float64{2: 0.5, 3: 0.4, 4: 0.1}, []int{0}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]float64, mp.N)
			for s, v := range tc.belief {
				b[s] = v
			}
			p, err := mp.Distinguish(b, PlanConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Actions, tc.actions) || !slices.Equal(p.States, tc.states) {
				t.Errorf("actions %v states %v, want %v %v", p.Actions, p.States, tc.actions, tc.states)
			}
		})
	}
	// One place: nothing to tell apart.
	if _, err := mp.Distinguish(onehot(mp.N, 4), PlanConfig{}); !errors.Is(err, ErrIndistinguishable) {
		t.Errorf("belief on one place: error %v, want ErrIndistinguishable", err)
	}
	if _, err := mp.Distinguish(make([]float64, 3), PlanConfig{}); err == nil {
		t.Error("a belief of the wrong length gave no error")
	}
}

// Two places that differ only through a transition below the planning
// threshold cannot be told apart: a 2-cycle of token 0, and a token-0 state
// that moves to a token-1 state with probability 0.55 (else stays).
func TestDistinguishIndistinguishable(t *testing.T) {
	const n = 5 // states 0, 1, 2 token 0; state 3 token 1; sink 4
	T := [][][]float64{make([][]float64, n)}
	for i := range T[0] {
		T[0][i] = make([]float64, n)
	}
	T[0][0][1], T[0][1][0] = 1, 1
	T[0][2][2], T[0][2][3] = 0.45, 0.55
	T[0][3][3] = 1
	T[0][4][4] = 1
	mp, err := NewMap(denseModel(t, []int{3, 1}, []float64{0.25, 0.25, 0.25, 0.25, 0}, T))
	if err != nil {
		t.Fatal(err)
	}
	b := []float64{0.5, 0, 0.5, 0, 0}
	if mp.Place[0] == mp.Place[2] {
		t.Fatal("refinement merged states 0 and 2, whose successors differ")
	}
	if _, err := mp.Distinguish(b, PlanConfig{Threshold: 0.6}); !errors.Is(err, ErrIndistinguishable) {
		t.Errorf("threshold 0.6: error %v, want ErrIndistinguishable", err)
	}
	// At the default threshold the 0.55 move tells them apart.
	p, err := mp.Distinguish(b, PlanConfig{})
	if err != nil || !slices.Equal(p.Actions, []int{0}) {
		t.Errorf("default threshold: %v, %v", p.Actions, err)
	}
}
