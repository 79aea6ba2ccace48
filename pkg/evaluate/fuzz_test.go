package evaluate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadJSON: no input panics the report reader. Seeds: a report of the repository's
// results and damaged copies.
func FuzzReadJSON(f *testing.F) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "results", "images", "aliased_mnist_seed1_mlp.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add([]byte(`{"env": 3}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = decodeJSON(raw, "report.json")
	})
}
