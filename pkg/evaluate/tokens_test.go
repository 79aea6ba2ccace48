package evaluate

import (
	"math"
	"testing"
)

// TestScoreTokens checks the token-quality metrics on hand-computed cases (and names).
func TestScoreTokens(t *testing.T) {
	// h2 is the entropy (nats) of a two-outcome distribution (p, 1-p).
	h2 := func(p float64) float64 { return -p*math.Log(p) - (1-p)*math.Log(1-p) }
	for _, tc := range []struct {
		name             string
		tokens, classes  []int
		purity           float64
		hTokGivenCls     float64
		hClsGivenTok     float64
		perplexity       float64
		active           int
		classMajority    []int     // per class in increasing order
		classShare       []float64 //
		classPurity      []float64 //
		tokenMajority    []int     // per token in increasing order
		tokenPurityCheck []float64 //
	}{
		{
			// Class 0 splits 3:1 over t5 and t7; t7 also holds both class-1 frames.
			name:    "split and merge",
			tokens:  []int{5, 5, 5, 7, 7, 7, 9, 9},
			classes: []int{0, 0, 0, 0, 1, 1, 2, 2},
			purity:  7.0 / 8,
			// H(token|class) = p(c=0)·H(3/4, 1/4); H(class|token) = p(t7)·H(1/3, 2/3).
			hTokGivenCls: 0.5 * h2(0.75),
			hClsGivenTok: 3.0 / 8 * h2(1.0/3),
			// token usage (3/8, 3/8, 2/8)
			perplexity:       math.Exp(-2*3.0/8*math.Log(3.0/8) - 2.0/8*math.Log(2.0/8)),
			active:           3,
			classMajority:    []int{5, 7, 9},
			classShare:       []float64{0.75, 1, 1},
			classPurity:      []float64{0.75, 1, 1},
			tokenMajority:    []int{0, 1, 2},
			tokenPurityCheck: []float64{1, 2.0 / 3, 1},
		},
		{
			// One token for two classes: a tie, broken towards the lower class.
			name:             "tie",
			tokens:           []int{4, 4},
			classes:          []int{2, 1},
			purity:           0.5,
			hTokGivenCls:     0,
			hClsGivenTok:     math.Log(2),
			perplexity:       1,
			active:           1,
			classMajority:    []int{4, 4},
			classShare:       []float64{1, 1},
			classPurity:      []float64{1, 0},
			tokenMajority:    []int{1},
			tokenPurityCheck: []float64{0.5},
		},
		{
			name:             "perfect",
			tokens:           []int{1, 0, 1, 0},
			classes:          []int{3, 6, 3, 6},
			purity:           1,
			perplexity:       2,
			active:           2,
			classMajority:    []int{1, 0},
			classShare:       []float64{1, 1},
			classPurity:      []float64{1, 1},
			tokenMajority:    []int{6, 3},
			tokenPurityCheck: []float64{1, 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := ScoreTokens(tc.tokens, tc.classes, nil)
			const tol = 1e-12
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"purity", q.Purity, tc.purity},
				{"H(token|class)", q.HTokenGivenClass, tc.hTokGivenCls},
				{"H(class|token)", q.HClassGivenToken, tc.hClsGivenTok},
				{"perplexity", q.Perplexity, tc.perplexity},
			} {
				if math.Abs(c.got-c.want) > tol {
					t.Errorf("%s = %.15g, want %.15g", c.what, c.got, c.want)
				}
			}
			if q.Active != tc.active {
				t.Errorf("active = %d, want %d", q.Active, tc.active)
			}
			if len(q.Classes) != len(tc.classMajority) || len(q.Tokens) != len(tc.tokenMajority) {
				t.Fatalf("%d class rows and %d token rows, want %d and %d", len(q.Classes), len(q.Tokens),
					len(tc.classMajority), len(tc.tokenMajority))
			}
			for i, c := range q.Classes {
				if c.MajorityToken != tc.classMajority[i] || math.Abs(c.Share-tc.classShare[i]) > tol ||
					math.Abs(c.Purity-tc.classPurity[i]) > tol {
					t.Errorf("class %d: majority t%d share %g purity %g, want t%d %g %g", c.Class, c.MajorityToken,
						c.Share, c.Purity, tc.classMajority[i], tc.classShare[i], tc.classPurity[i])
				}
			}
			for i, k := range q.Tokens {
				if k.MajorityClass != tc.tokenMajority[i] || math.Abs(k.Purity-tc.tokenPurityCheck[i]) > tol {
					t.Errorf("token %d: majority class %d purity %g, want %d %g", k.Token, k.MajorityClass, k.Purity,
						tc.tokenMajority[i], tc.tokenPurityCheck[i])
				}
			}
		})
	}
}

// TestScoreTokensNames checks class names, unnamed classes and mismatched lengths.
func TestScoreTokensNames(t *testing.T) {
	q := ScoreTokens([]int{0, 1, 1}, []int{1, 2, 2, 2}, []string{"zero", "one"})
	if len(q.Classes) != 2 || q.Classes[0].Name != "one" || q.Classes[1].Name != "2" || q.Classes[1].Frames != 2 {
		t.Errorf("classes %+v: want one (1 frame) and 2 (2 frames; the fourth class has no token)", q.Classes)
	}
	if q := ScoreTokens(nil, nil, nil); q.Active != 0 || q.Purity != 0 || q.Perplexity != 0 {
		t.Errorf("no frames: %+v", q)
	}
}
