package notebook

import (
	"os"
	"path/filepath"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
)

// ImageSuite returns Tables 3 and 4 as the notebooks reproduce them: the images suite
// (`gradcscg reproduce --suite images`) collecting the committed reports of the
// repository's results/images, so no run is trained. At full size it rewrites
// results/table3.md and table4.md; at CI size the tables go to RunDir("tables").
func ImageSuite() (experiment.ImageSuite, error) {
	return withTables(experiment.ImageSuite{Seeds: 3, Collect: true}, func(s *experiment.ImageSuite, out, tables string) {
		s.Out, s.Tables = out, tables
	})
}

// SymbolicSuite returns the symbolic suite (`gradcscg reproduce --suite symbolic`,
// results/symbolic.md) collecting the committed reports, like ImageSuite.
func SymbolicSuite() (experiment.SymbolicSuite, error) {
	// Seeds 1–10: the gradient rows have ten, the EM rows three (make reproduce-symbolic).
	return withTables(experiment.SymbolicSuite{Name: "symbolic", Seeds: 10, Collect: true}, func(s *experiment.SymbolicSuite, out, tables string) {
		s.Out, s.Tables = out, tables
	})
}

// withTables points a collecting suite at the repository's results/ and its tables
// at results/ (full size) or at RunDir("tables") (CI size).
func withTables[S any](s S, set func(s *S, out, tables string)) (S, error) {
	root, err := RepoRoot()
	if err != nil {
		return s, err
	}
	out := filepath.Join(root, "results")
	tables := out
	if CI() {
		if tables, err = RunDir("tables"); err != nil {
			return s, err
		}
		if err := os.MkdirAll(tables, 0o755); err != nil {
			return s, err
		}
	}
	set(&s, out, tables)
	return s, nil
}

// CommittedBenchmarks returns the committed reports of the seed-1 conv MNIST runs of
// the benchmark environments envs (results/images/<env>_mnist_seed1.json, what `make
// reproduce-images` collects), for figures of the full-size runs beside CI-size ones.
func CommittedBenchmarks(envs ...string) ([]*evaluate.Report, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	var out []*evaluate.Report
	for _, env := range envs {
		r, err := evaluate.ReadJSON(filepath.Join(root, "results", "images", env+"_mnist_seed1.json"))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
