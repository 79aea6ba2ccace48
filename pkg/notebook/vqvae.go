package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// vqSuiteCurve is the learning-curve interval of the full-size suite
// (`gradcscg vqvae --suite`).
const vqSuiteCurve = 100

// VQStudy returns the VQ-VAE-alone study (experiment.RunVQStudy) of a built-in
// environment and data set: at full size the suite's settings
// (experiment.DefaultVQStudy with a curve point every 100 steps), at CI size
// experiment.SizeSmoke of them, in RunDir("vqvae_ENV_DATASET_seedS").
func VQStudy(env, dataset string, seed uint64) (experiment.VQStudy, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return experiment.VQStudy{}, err
	}
	s := experiment.DefaultVQStudy(e)
	s.Dataset, s.Seed, s.Curve = dataset, seed, vqSuiteCurve
	if CI() {
		s = experiment.SizeSmoke.VQStudy(s)
	}
	if s.Dir, err = RunDir(fmt.Sprintf("vqvae_%s_%s_seed%d", env, filepath.Base(dataset), seed)); err != nil {
		return experiment.VQStudy{}, err
	}
	return s, nil
}

// VQReport returns the report of a study: at full size, when the repository's
// results/vqvae holds the suite's report of the same study (committed; `make
// reproduce-vqvae`), that report; otherwise the study is trained, resumed
// or reloaded in s.Dir (a training interrupted in this kernel is not resumed by later
// cells until Resume with the directory's name). The sentence says which.
func VQReport(s experiment.VQStudy) (*experiment.VQReport, string, error) {
	if !CI() && s.Env != nil {
		if root, err := RepoRoot(); err == nil {
			name := fmt.Sprintf("%s_%s_seed%d", s.Env.Name, filepath.Base(s.Dataset), s.Seed)
			path := filepath.Join(root, "results", "vqvae", name, experiment.VQReportFile)
			if r, err := experiment.ReadVQReport(path); err == nil && r.Same(s) {
				return r, "read the suite's report results/vqvae/" + name + " (its model is not kept)", nil
			}
		}
	}
	var r *experiment.VQReport
	err := guardTraining(filepath.Base(s.Dir), func(context.Context) error {
		var err error
		r, err = experiment.RunVQStudy(s, Progress())
		return err
	})
	return r, "trained (or loaded) the study in " + ShowPath(s.Dir), err
}

// VQSuite returns the VQ-VAE quality grid the notebooks reproduce: at full size
// `gradcscg vqvae --suite` (aliased and two_rooms × MNIST and Fashion-MNIST × seeds
// 1–3, rooted at the repository's results/, whose committed reports it reads), at
// CI size smoke-sized studies of aliased × MNIST × seeds 1–2 under RunsRoot.
func VQSuite() (experiment.VQSuite, error) {
	s := experiment.VQSuite{Envs: []string{"aliased", "two_rooms"}, Datasets: []string{"mnist", "fashion"},
		Seeds: 3, Command: "gradcscg vqvae --suite"}
	s.Base = experiment.DefaultVQStudy(nil)
	s.Base.Curve = vqSuiteCurve
	if CI() {
		s.Base = experiment.SizeSmoke.VQStudy(s.Base)
		s.Envs, s.Datasets, s.Seeds = []string{"aliased"}, []string{"mnist"}, 2
		root, err := RunsRoot()
		if err != nil {
			return s, err
		}
		s.Root, s.Command = filepath.Join(root, "vqvae_suite_ci"), "notebook.VQSuite at CI size"
		return s, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return s, err
	}
	s.Root = filepath.Join(root, "results")
	return s, nil
}

// VQRecon displays a study's reconstructions figure (two held-out frames per class,
// inputs above reconstructions, labelled with their tokens).
func VQRecon(r *experiment.VQReport) error {
	b, err := VQReconPNG(r)
	if err != nil {
		return err
	}
	return PNG(b)
}

// VQReconPNG returns the PNG of a study's reconstructions figure (VQRecon).
func VQReconPNG(r *experiment.VQReport) ([]byte, error) {
	path := r.Files["recon"]
	if !filepath.IsAbs(path) {
		if root, err := RepoRoot(); err == nil {
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join(root, path)
			}
		}
	}
	b, err := inputfile.ReadFile(path, imageLimit)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	return b, nil
}

// CommittedVQReports returns the committed reports of the suite's studies named
// "<env>_<dataset>_seed<seed>" (results/vqvae/<name>/report.json, `make
// reproduce-vqvae`), for figures of the full-size studies beside CI-size ones.
func CommittedVQReports(names ...string) ([]*experiment.VQReport, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	var out []*experiment.VQReport
	for _, n := range names {
		r, err := experiment.ReadVQReport(filepath.Join(root, "results", "vqvae", n, experiment.VQReportFile))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// VQClassTable displays, per class, the majority token, its share of the class's
// held-out frames and the class's purity.
func VQClassTable(r *experiment.VQReport) error {
	var rows [][]string
	for _, c := range r.Classes {
		rows = append(rows, []string{c.Name, fmt.Sprint(c.Frames), fmt.Sprintf("t%d", c.MajorityToken),
			f2(c.Share), f2(c.Purity)})
	}
	return Table([]string{"class", "frames", "majority token", "share", "purity"}, rows)
}

// VQCurvePlot plots the studies' learning curves: held-out purity (solid) and
// H(token | class) (dashed) against warm-up steps, one colour per study.
func VQCurvePlot(title string, labels []string, reports []*experiment.VQReport) (*plot.Plot, error) {
	if len(labels) != len(reports) {
		return nil, fmt.Errorf("notebook: %d labels for %d reports", len(labels), len(reports))
	}
	p := figures.NewPlot(title)
	p.X.Label.Text = "warm-up step"
	p.Y.Label.Text = "purity (solid), H(token | class) nats (dashed)"
	p.Legend.Top = true
	top := 1.0
	for i, r := range reports {
		if len(r.Curve) == 0 {
			return nil, fmt.Errorf("notebook: %s has no learning curve (Curve 0)", labels[i])
		}
		pur, h := make(plotter.XYs, len(r.Curve)), make(plotter.XYs, len(r.Curve))
		for j, pt := range r.Curve {
			pur[j] = plotter.XY{X: float64(pt.Step), Y: pt.Purity}
			h[j] = plotter.XY{X: float64(pt.Step), Y: pt.HTokenGivenClass}
			top = max(top, pt.Purity, pt.HTokenGivenClass)
		}
		lp, err := plotter.NewLine(pur)
		if err != nil {
			return nil, err
		}
		lh, err := plotter.NewLine(h)
		if err != nil {
			return nil, err
		}
		c := plotutil.Color(i)
		lp.Color, lh.Color = c, c
		lp.Width, lh.Width = vg.Points(1.5), vg.Points(1.5)
		lh.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(lp, lh)
		p.Legend.Add(labels[i], lp)
	}
	// Room above the curves for the legend.
	p.Y.Min, p.Y.Max = 0, top*(1.1+0.08*float64(len(reports)))
	return p, nil
}

// VQTokens displays which classes share a token in a study: the classes whose held-out
// frames mostly get the same token (evaluate.ClassStat.MajorityToken), grouped by that
// token, or that every class has a majority token of its own. names[c] names class c
// (nil: the report's class names).
func VQTokens(r *experiment.VQReport) error {
	if r == nil || len(r.Classes) == 0 {
		return fmt.Errorf("notebook: VQTokens of a report without classes")
	}
	byToken := map[int][]string{}
	var order []int
	for _, c := range r.Classes {
		if _, ok := byToken[c.MajorityToken]; !ok {
			order = append(order, c.MajorityToken)
		}
		byToken[c.MajorityToken] = append(byToken[c.MajorityToken], c.Name)
	}
	slices.Sort(order)
	var shared []string
	for _, k := range order {
		if cs := byToken[k]; len(cs) > 1 {
			shared = append(shared, fmt.Sprintf("t%d ← %s", k, strings.Join(cs, ", ")))
		}
	}
	head := fmt.Sprintf("%d classes, %d of %d codes active (perplexity %.2f), token class purity %.2f.",
		len(r.Classes), r.ActiveCodes, r.NumTokens, r.Perplexity, r.Purity)
	if len(shared) == 0 {
		Markdown(head + " Every class has a majority token of its own.")
		return nil
	}
	Markdown(head + " **Classes sharing their majority token**: " + strings.Join(shared, "; ") + ".")
	return nil
}
