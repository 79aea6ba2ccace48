package evaluate

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// ClassStat describes the tokens of one class's frames.
type ClassStat struct {
	Class         int     `json:"class"`
	Name          string  `json:"name"`
	Frames        int     `json:"frames"`
	MajorityToken int     `json:"majority_token"` // argmax_k n(k, c), ties to the lowest k
	Share         float64 `json:"share"`          // n(majority token, c) / n(c)
	Purity        float64 `json:"purity"`         // fraction of the class's frames whose token's majority class is c
}

// TokenStat describes the frames of one token.
type TokenStat struct {
	Token         int     `json:"token"`
	Frames        int     `json:"frames"`
	MajorityClass int     `json:"majority_class"` // argmax_c n(k, c), ties to the lowest c
	Purity        float64 `json:"purity"`         // n(k, majority class) / n(k)
}

// TokenQuality compares hard tokens with the true classes of the same frames
// (ScoreTokens). Entropies are in nats.
type TokenQuality struct {
	Purity           float64 // Σ_k max_c n(k,c) / n
	HTokenGivenClass float64 // 0 when every class maps to one token (splits raise it)
	HClassGivenToken float64 // 0 when every token holds one class (merges raise it)
	Perplexity       float64 // exp H(token)
	Active           int     // tokens used
	Classes          []ClassStat
	Tokens           []TokenStat // in increasing token order
}

// ScoreTokens scores the hard tokens of frames against their classes; names[c]
// names class c (nil or short: its number). Labels are used only here, to evaluate.
func ScoreTokens(tokens, classes []int, names []string) TokenQuality {
	var q TokenQuality
	n := min(len(tokens), len(classes))
	if n == 0 {
		return q
	}
	tokens, classes = tokens[:n], classes[:n]
	joint := map[[2]int]int{}
	tokN, clsN := map[int]int{}, map[int]int{}
	for i, k := range tokens {
		joint[[2]int{k, classes[i]}]++
		tokN[k]++
		clsN[classes[i]]++
	}
	toks, cls := slices.Sorted(maps.Keys(tokN)), slices.Sorted(maps.Keys(clsN))
	majClass := map[int]int{}
	for _, k := range toks {
		best := cls[0]
		for _, c := range cls {
			if joint[[2]int{k, c}] > joint[[2]int{k, best}] {
				best = c
			}
		}
		majClass[k] = best
		q.Purity += float64(joint[[2]int{k, best}]) / float64(n)
		q.Tokens = append(q.Tokens, TokenStat{Token: k, Frames: tokN[k], MajorityClass: best,
			Purity: float64(joint[[2]int{k, best}]) / float64(tokN[k])})
	}
	for _, c := range cls {
		best, right := toks[0], 0
		for _, k := range toks {
			if joint[[2]int{k, c}] > joint[[2]int{best, c}] {
				best = k
			}
			if majClass[k] == c {
				right += joint[[2]int{k, c}]
			}
		}
		name := fmt.Sprint(c)
		if c >= 0 && c < len(names) {
			name = names[c]
		}
		q.Classes = append(q.Classes, ClassStat{Class: c, Name: name, Frames: clsN[c], MajorityToken: best,
			Share: float64(joint[[2]int{best, c}]) / float64(clsN[c]), Purity: float64(right) / float64(clsN[c])})
	}
	q.HTokenGivenClass = CondEntropy(tokens, classes)
	q.HClassGivenToken = CondEntropy(classes, tokens)
	q.Perplexity = math.Exp(entropyOf(tokN, n))
	q.Active = len(toks)
	return q
}
