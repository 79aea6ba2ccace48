package experiment

import (
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestSymbolicFigureEnvsAliased: paper Figure 3's caption speaks of heavily aliased
// rooms; every environment it draws shows some symbol at several places, and its
// first (George et al.'s Fig. 2a,b room) at least four places per symbol.
func TestSymbolicFigureEnvsAliased(t *testing.T) {
	for i, name := range SymbolicFigureEnvs {
		env, err := gridworld.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		places, symbols := env.NumPlaces(), len(env.ClassesUsed())
		if places <= symbols {
			t.Errorf("%s: %d places, %d symbols: no aliasing", name, places, symbols)
		}
		if i == 0 && places < 4*symbols {
			t.Errorf("%s: %d places for %d symbols, want heavy aliasing (≥ 4 per symbol)", name, places, symbols)
		}
	}
}
