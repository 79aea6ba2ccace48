package dataset

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLoadBank: the test split indexed by class, and a class without images refused.
func TestLoadBank(t *testing.T) {
	b, err := LoadBank("mnist", Test, []int{0, 9})
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() == 0 || b.Count(0) == 0 || b.Count(0) >= b.Len() || b.Label(b.Sample(rand.New(rand.NewPCG(1, 2)), 9)) != 9 {
		t.Errorf("bank of %d images, %d zeros", b.Len(), b.Count(0))
	}
	if _, err := LoadBank("mnist", Test, []int{12}); err == nil || !strings.Contains(err.Error(), "12") {
		t.Errorf("class 12: %v", err)
	}
}
