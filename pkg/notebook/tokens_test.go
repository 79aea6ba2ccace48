package notebook

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/figures"
)

// TestFactsOfMatchesScoreTokens: purity and perplexity of a key agree with
// evaluate.ScoreTokens (a second implementation) on random episodes, and the token
// and class counts with a direct count.
func TestFactsOfMatchesScoreTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 1 + rng.IntN(400)
		tokens, classes := make([]int, n), make([]int, n)
		for i := range n {
			classes[i] = rng.IntN(1 + trial%10)
			tokens[i] = (classes[i] + rng.IntN(3)*rng.IntN(2)) % 7
		}
		key, err := figures.NewTokenKey(tokens, classes)
		if err != nil {
			t.Fatal(err)
		}
		f, err := FactsOf(key)
		if err != nil {
			t.Fatal(err)
		}
		q := evaluate.ScoreTokens(tokens, classes, nil)
		if math.Abs(f.Purity-q.Purity) > 1e-12 || math.Abs(f.Perplexity-q.Perplexity) > 1e-9 {
			t.Fatalf("trial %d: purity %v perplexity %v, ScoreTokens %v %v", trial, f.Purity, f.Perplexity, q.Purity, q.Perplexity)
		}
		if f.Frames != n || f.Tokens != q.Active {
			t.Fatalf("trial %d: %d frames %d tokens, want %d %d", trial, f.Frames, f.Tokens, n, q.Active)
		}
		var cls []int
		for _, c := range classes {
			if !slices.Contains(cls, c) {
				cls = append(cls, c)
			}
		}
		slices.Sort(cls)
		if !slices.Equal(f.Classes, cls) {
			t.Fatalf("trial %d: classes %v, want %v", trial, f.Classes, cls)
		}
	}
}

// TestFactsSharedAndSplit: a hand-made episode — token 0 holds class 2 only, token 1
// holds 3 (60 %) and 5 (40 %), token 2 holds class 5 and one stray 2 (under the key's
// 5 % share): t1 is shared, class 5 is spread over t1 and t2, class 2 is not spread
// (its frame on t2 is below the share), and the sentence says so with the names.
func TestFactsSharedAndSplit(t *testing.T) {
	var tokens, classes []int
	add := func(tok, cls, n int) {
		for range n {
			tokens, classes = append(tokens, tok), append(classes, cls)
		}
	}
	add(0, 2, 50)
	add(1, 3, 30)
	add(1, 5, 20)
	add(2, 5, 49)
	add(2, 2, 1)
	key, err := figures.NewTokenKey(tokens, classes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := FactsOf(key)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Shared) != 1 || f.Shared[0].Token != 1 {
		t.Fatalf("shared %+v, want token 1 alone", f.Shared)
	}
	if len(f.Split) != 1 || f.Split[0].Class != 5 || !slices.Equal(f.Split[0].Tokens, []int{1, 2}) {
		t.Fatalf("split %+v, want class 5 on tokens 1, 2", f.Split)
	}
	// Purity by hand: (50 + 30 + 49) / 150; classes per token (1 + 2 + 1) / 3.
	if want := 129.0 / 150; math.Abs(f.Purity-want) > 1e-12 {
		t.Errorf("purity %v, want %v", f.Purity, want)
	}
	if want := 4.0 / 3; math.Abs(f.ClassesPerToken-want) > 1e-12 {
		t.Errorf("classes per token %v, want %v", f.ClassesPerToken, want)
	}
	// exp H of the token shares 50/150 each.
	if math.Abs(f.Perplexity-3) > 1e-12 {
		t.Errorf("perplexity %v, want 3", f.Perplexity)
	}
	names := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal"}
	s := f.Sentence(names)
	for _, want := range []string{"3 tokens in use for 3 classes", "perplexity 3.00", "1.33 classes per token",
		"token class purity 0.86", "**Tokens shared by classes**: t1 holds 3 Dress (60%), 5 Sandal (40%).",
		"**Classes spread over tokens**: 5 Sandal on t1, t2."} {
		if !strings.Contains(s, want) {
			t.Errorf("sentence %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "Each token holds one class") {
		t.Errorf("sentence %q says each token holds one class", s)
	}
}

// TestFactsStrayFrame: one frame of a class on a token of its own (the quick start's
// 1-frame token) does not spread the class: the token holds under 5 % of its frames.
// The same class with 6 of its 105 frames on a second token is spread.
func TestFactsStrayFrame(t *testing.T) {
	var tokens, classes []int
	add := func(tok, cls, n int) {
		for range n {
			tokens, classes = append(tokens, tok), append(classes, cls)
		}
	}
	add(0, 1, 99)
	add(2, 1, 1)
	add(1, 0, 100)
	key, err := figures.NewTokenKey(tokens, classes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := FactsOf(key)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Split) != 0 || len(f.Shared) != 0 {
		t.Errorf("a stray frame: split %+v shared %+v, want none", f.Split, f.Shared)
	}
	if s := f.Sentence(nil); !strings.Contains(s, "Each token holds one class, and each class has one token.") {
		t.Errorf("sentence %q", s)
	}
	add(2, 1, 5) // now 6 of class 1's 105 frames on t2
	key, _ = figures.NewTokenKey(tokens, classes)
	if f, _ = FactsOf(key); len(f.Split) != 1 || f.Split[0].Class != 1 || !slices.Equal(f.Split[0].Tokens, []int{0, 2}) {
		t.Errorf("6 of 105 frames on a second token: split %+v, want class 1 on t0, t2", f.Split)
	}
}

// TestSentenceBounds: a token holding six classes names four and "2 more"; with more
// than five shared tokens and spread classes the sentence gives only their numbers.
func TestSentenceBounds(t *testing.T) {
	var tokens, classes []int
	for c := range 6 {
		for range 10 {
			tokens, classes = append(tokens, 0), append(classes, c)
		}
	}
	key, err := figures.NewTokenKey(tokens, classes)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := FactsOf(key)
	if s := f.Sentence(nil); !strings.Contains(s, "t0 holds 0 (17%), 1 (17%), 2 (17%), 3 (17%), 2 more.") {
		t.Errorf("one token of six classes: %q", s)
	}
	tokens, classes = nil, nil
	for k := range 6 { // token k holds classes k and k+1: six shared tokens, classes 1–5 spread
		for _, c := range []int{k, k + 1} {
			for range 10 {
				tokens, classes = append(tokens, k), append(classes, c)
			}
		}
	}
	key, _ = figures.NewTokenKey(tokens, classes)
	f, _ = FactsOf(key)
	s := f.Sentence(nil)
	if !strings.Contains(s, "**6 of the 6 tokens are shared by classes** (the key lists them).") ||
		!strings.Contains(s, "Classes spread over tokens**: 1 on t0, t1; 2 on t1, t2; 3 on t2, t3; 4 on t3, t4; 5 on t4, t5.") {
		t.Errorf("six shared tokens, five spread classes: %q", s)
	}
	for k := range 6 { // a seventh token for class 6: six spread classes
		for range 10 {
			tokens, classes = append(tokens, 6), append(classes, k+1)
		}
	}
	key, _ = figures.NewTokenKey(tokens, classes)
	f, _ = FactsOf(key)
	if s := f.Sentence(nil); !strings.Contains(s, "**6 of the 7 classes are spread over tokens.**") {
		t.Errorf("six spread classes: %q", s)
	}
}

// TestFactsOneTokenPerClass: a key whose tokens each hold one class, one token per
// class, says so and names no shared token.
func TestFactsOneTokenPerClass(t *testing.T) {
	key, err := figures.NewTokenKey([]int{4, 4, 7, 7, 7}, []int{1, 1, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	f, err := FactsOf(key)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Sentence(nil)
	if !strings.Contains(s, "2 tokens in use for 2 classes") || !strings.Contains(s, "Each token holds one class, and each class has one token.") ||
		strings.Contains(s, "shared") || f.Purity != 1 {
		t.Errorf("facts %+v, sentence %q", f, s)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 87000: "87,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := FactsOf(nil); err == nil {
		t.Error("FactsOf(nil) returned no error")
	}
	if _, err := FactsOf(&figures.TokenKey{}); err == nil {
		t.Error("FactsOf(empty key) returned no error")
	}
}
