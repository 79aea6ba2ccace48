package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

func init() {
	register("figures", "draw the paper's figures (layouts, symbolic maps, per-run maps, dynamics, Table 4)", runFigures)
}

// figuresOptions are the flags of "gradcscg figures".
type figuresOptions struct {
	runs, out, models string
	format            string
	seed              uint64
	symbolic          bool
	quiet             bool
}

// symbolicFigureEnvs are the environments of paper Figure 3.
var symbolicFigureEnvs = []string{"square", "uniform_interior", "three_rooms"}

// benchmarkEnvs are the image benchmarks of paper Figure 2, in the paper's order.
var benchmarkEnvs = []string{"aliased", "corridors", "room", "two_rooms"}

func runFigures(args []string) error {
	var o figuresOptions
	fset := newFlagSet("figures", "[--runs DIR] [--out DIR] [--models DIR] [flags]")
	fset.StringVar(&o.runs, "runs", "runs", "directory of pipeline run directories (each finished one gets Figures 4, 5, 6 and Table 4)")
	fset.StringVar(&o.out, "out", "figures", "output directory")
	fset.StringVar(&o.models, "models", "", "directory of symbolic models ENV.model for Figure 3 (missing ones are trained and saved there)")
	fset.StringVar(&o.format, "format", "png", "file format: png, svg or pdf")
	fset.Uint64Var(&o.seed, "seed", 1, "seed of the symbolic training and held-out walks")
	fset.BoolVar(&o.symbolic, "symbolic", true, "draw Figure 3 (trains three small symbolic models when --models has none, ~1 min)")
	fset.BoolVar(&o.quiet, "quiet", false, "no progress output")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	switch o.format {
	case "png", "svg", "pdf":
	default:
		return fmt.Errorf("--format %q: must be png, svg or pdf", o.format)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	written := 0
	save := func(name string, fig *figures.Figure, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		path := filepath.Join(o.out, name+"."+o.format)
		if err := fig.Save(path); err != nil {
			return err
		}
		written++
		if !o.quiet {
			fmt.Fprintf(stderr, "wrote %s\n", path)
		}
		return nil
	}

	// Figure 2: the four image benchmarks together, and every built-in alone.
	var bench []*gridworld.Env
	for _, n := range benchmarkEnvs {
		e, err := gridworld.Named(n)
		if err != nil {
			return err
		}
		bench = append(bench, e)
	}
	fig, err := figures.Layouts(bench...)
	if err := save("fig2_benchmarks", fig, err); err != nil {
		return err
	}
	var all []*gridworld.Env
	for _, n := range gridworld.Names() {
		e, err := gridworld.Named(n)
		if err != nil {
			return err
		}
		all = append(all, e)
		fig, err := figures.Layouts(e)
		if err := save("fig2_layout_"+n, fig, err); err != nil {
			return err
		}
	}
	fig, err = figures.Layouts(all...)
	if err := save("fig2_all", fig, err); err != nil {
		return err
	}

	// Figure 3: symbolic maps.
	if o.symbolic {
		var rs []*figures.Readout
		for _, n := range symbolicFigureEnvs {
			r, err := symbolicReadout(n, o)
			if err != nil {
				return fmt.Errorf("figure 3, %s: %w", n, err)
			}
			rs = append(rs, r)
		}
		fig, err := figures.MapComparison(rs...)
		if err := save("fig3_symbolic", fig, err); err != nil {
			return err
		}
	}

	// Figures 4, 5, 6 and Table 4 from the finished pipeline runs.
	dirs, err := runDirs(o.runs)
	if err != nil {
		fmt.Fprintf(stderr, "note: no pipeline runs drawn: %v\n", err)
	}
	reportsByEnv := map[string][]*evaluate.Report{}
	firstByEnv := map[string]*figures.Readout{}
	var envOrder []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		res, err := pipeline.LoadRun(dir)
		if err != nil {
			fmt.Fprintf(stderr, "note: skipping %s: %v\n", dir, err)
			continue
		}
		t1 := time.Now()
		r, recon, err := runReadout(res)
		if err != nil {
			fmt.Fprintf(stderr, "note: skipping %s: %v\n", dir, err)
			continue
		}
		r.Title = fmt.Sprintf("%s seed %d", res.Config.Env, res.Config.Seed)
		if err := save("fig4_"+name, recon, nil); err != nil {
			return err
		}
		fig, err := figures.ImageMaps(r)
		if err := save("fig5_"+name, fig, err); err != nil {
			return err
		}
		hist, err := figures.ReadHistory(filepath.Join(dir, pipeline.HistoryFile))
		if err != nil {
			return err
		}
		fig, err = figures.TrainingDynamics(hist)
		if err == nil {
			fig.Title = "Training dynamics: " + r.Title
		}
		if err := save("fig6_"+name, fig, err); err != nil {
			return err
		}
		env := res.Config.Env
		if _, ok := reportsByEnv[env]; !ok {
			envOrder = append(envOrder, env)
			firstByEnv[env] = r
		}
		reportsByEnv[env] = append(reportsByEnv[env], res.Report)
		if !o.quiet {
			fmt.Fprintf(stderr, "%s: drawn in %.1fs\n", dir, time.Since(t1).Seconds())
		}
	}
	// Paper order first, then any other environment.
	sort.SliceStable(envOrder, func(i, j int) bool { return envRank(envOrder[i]) < envRank(envOrder[j]) })
	var firsts []*figures.Readout
	for _, env := range envOrder {
		fig, err := figures.ThresholdSweep(reportsByEnv[env]...)
		if err := save("table4_"+env, fig, err); err != nil {
			return err
		}
		firsts = append(firsts, firstByEnv[env])
	}
	for _, env := range benchmarkEnvs {
		if _, ok := reportsByEnv[env]; !ok {
			fmt.Fprintf(stderr, "note: no finished %s run under %s: its Figure 5 column and Table 4 plot are missing\n", env, o.runs)
		}
	}
	if len(firsts) > 0 {
		fig, err := figures.ImageMaps(firsts...)
		if err := save("fig5", fig, err); err != nil {
			return err
		}
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "%d figures in %s (%.0fs)\n", written, o.out, time.Since(t0).Seconds())
	}
	return nil
}

// envRank orders environments as the paper does (others last).
func envRank(env string) int {
	if i := slices.Index(benchmarkEnvs, env); i >= 0 {
		return i
	}
	return len(benchmarkEnvs)
}

// runDirs lists the subdirectories of dir that look like run directories (hold a
// config.json), sorted by name.
func runDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		if info, err := os.Stat(d); err != nil || !info.IsDir() { // follows symbolic links
			continue
		}
		if _, err := os.Stat(filepath.Join(d, pipeline.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// symbolicReadout returns the Figure 3 read-out of env: the symbolic suite's gradient
// model of seed o.seed (symbolicExperiment with the suite's options, so the figure
// shows the map that results/symbolic.md scores) decoded on the suite's held-out walk.
// A model saved in --models is loaded instead of trained; one trained here is saved
// there.
func symbolicReadout(name string, o figuresOptions) (*figures.Readout, error) {
	so := symbolicOptions{env: name, trainer: "gradient", seed: o.seed, pseudocount: -1, quiet: o.quiet}
	if o.models != "" {
		path := filepath.Join(o.models, name+".model")
		if _, err := os.Stat(path); err == nil {
			so.loadPath = path
		} else {
			if err := os.MkdirAll(o.models, 0o755); err != nil {
				return nil, err
			}
			so.savePath = path
		}
	}
	t0 := time.Now()
	out, err := symbolicExperiment(so)
	if err != nil {
		return nil, err
	}
	if !o.quiet {
		how := "trained by gradient descent"
		if so.loadPath != "" {
			how = "loaded from " + so.loadPath
		}
		fmt.Fprintf(stderr, "%s: %s (%d states), map F1 %.3f on the held-out walk, %.1fs\n",
			name, how, out.Model.N(), out.Report.ViterbiMap.F1, time.Since(t0).Seconds())
	}
	return figures.NewReadout(out.Env, out.Model, out.HeldOut.Places, out.States, figures.ReadoutOptions{TokenClass: out.Classes})
}

// runReadout decodes the held-out episode of a finished pipeline run
// (pipeline.NewHeldOut) with the read-out that scored its report, and returns its Readout, with the decoder's image of
// every token, and the Figure 4 reconstructions of two test images per class.
func runReadout(res *pipeline.Result) (*figures.Readout, *figures.Figure, error) {
	cfg := res.Config
	env, err := cfg.Environment()
	if err != nil {
		return nil, nil, err
	}
	held, err := pipeline.NewHeldOut(cfg, env) // the episode report.json scores
	if err != nil {
		return nil, nil, err
	}
	ep, bank, frames := held.Episode, held.Bank, held.Images
	_, _, states, err := held.Decode(res.VQVAE, res.HMM, res.ReadOut())
	if err != nil {
		return nil, nil, err
	}
	r, err := figures.NewReadout(env, res.HMM, ep.Places, states, figures.ReadoutOptions{})
	if err != nil {
		return nil, nil, err
	}
	if res.Report != nil && res.Report.StatePlace != nil && !slices.Equal(res.Report.StatePlace, r.StatePlace) {
		fmt.Fprintf(stderr, "note: %s seed %d: the figure's state→place assignment differs from report.json's (the evaluation changed since the run)\n", cfg.Env, cfg.Seed)
	}
	side := held.Side
	// Token images from (at most) the first 4000 frames of the episode.
	n := min(len(held.Frames), 4000)
	r.TokenImages, _, err = figures.TokenImages(res.VQVAE, frames[:n*side*side], side)
	if err != nil {
		return nil, nil, err
	}
	r.ImageSide = side

	// Figure 4: two held-out images of every class of the environment.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xf164))
	var sel []int
	for _, c := range env.ClassesUsed() {
		for range 2 {
			sel = append(sel, bank.Sample(rng, c))
		}
	}
	in := bank.Floats(sel, nil)
	rec, tok, err := res.VQVAE.Reconstruct(in)
	if err != nil {
		return nil, nil, err
	}
	recon, err := figures.ReconstructionFigure(in, rec, tok, side,
		fmt.Sprintf("Reconstructions: %s seed %d (held-out images, 2 per class)", cfg.Env, cfg.Seed))
	if err != nil {
		return nil, nil, err
	}
	return r, recon, nil
}
