package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// DecodedHeldOut is a pixel run's held-out episode (paper Sec. 3.9, pipeline.NewHeldOut)
// decoded by its model: the walk and its test-split images, their hard tokens and soft
// posteriors, and the Viterbi path of the read-out the run's report used.
type DecodedHeldOut struct {
	*pipeline.HeldOut
	Tokens []int       // hard tokens k_t
	LogRho [][]float32 // [T][K] soft posteriors log ρ_t (Sec. 3.2)
	States []int       // Viterbi path s*_t (soft or hard emissions, as the report)
}

// DecodeHeldOut re-creates the held-out episode of a finished pixel run, encodes its
// images with the frozen VQ-VAE and decodes it with the read-out that scored the run's
// report (Result.ReadOut). It scores the path again and returns an error if the
// state→place purity or the Viterbi-path map differs from the report's, so that no
// figure or notebook shows another episode than the one the report scored.
func DecodeHeldOut(res *pipeline.Result) (*DecodedHeldOut, error) {
	if res == nil || res.VQVAE == nil || res.HMM == nil || res.Report == nil {
		return nil, errors.New("experiment: DecodeHeldOut needs a loaded run (pipeline.LoadRun)")
	}
	env, err := res.Config.Environment()
	if err != nil {
		return nil, err
	}
	held, err := pipeline.NewHeldOut(res.Config, env)
	if err != nil {
		return nil, err
	}
	h := &DecodedHeldOut{HeldOut: held}
	if h.Tokens, h.LogRho, h.States, err = held.Decode(res.VQVAE, res.HMM, res.ReadOut()); err != nil {
		return nil, err
	}
	rep, err := evaluate.Evaluate(evaluate.Input{Env: env, Places: held.Episode.Places, States: h.States, Tokens: h.Tokens,
		Trans: res.HMM.Transitions(), NumStates: res.HMM.N(), NumTokens: res.HMM.K()}, evaluate.DefaultOptions())
	if err != nil {
		return nil, err
	}
	const tol = 1e-9
	if math.Abs(rep.StatePlacePurity-res.Report.StatePlacePurity) > tol || math.Abs(rep.ViterbiMap.F1-res.Report.ViterbiMap.F1) > tol {
		return nil, fmt.Errorf("experiment: the re-created held-out episode scores purity %.4f, map F1 %.4f; the run's report says %.4f, %.4f: "+
			"the evaluation changed since the run (re-score it: gradcscg train --run DIR --reevaluate)",
			rep.StatePlacePurity, rep.ViterbiMap.F1, res.Report.StatePlacePurity, res.Report.ViterbiMap.F1)
	}
	return h, nil
}

// RunReadout reads a pixel run's map for paper Figure 5 (figures.NewReadout): the
// held-out Viterbi path (DecodeHeldOut) assigned to places, the recovered graph from the
// path's transitions, the token key of the held-out frames (which classes each token
// holds), as each token's picture the held-out image whose latent lies nearest to the
// token's code vector (figures.TokenImages; the decoded code where no image has the
// token), and per token and class the nearest such image of that class
// (figures.TokenClassImages), which Figure 5c draws.
func RunReadout(res *pipeline.Result) (*figures.Readout, *DecodedHeldOut, error) {
	h, err := DecodeHeldOut(res)
	if err != nil {
		return nil, nil, err
	}
	r, err := figures.NewReadout(h.Env, res.HMM, h.Episode.Places, h.States, figures.ReadoutOptions{FrameTokens: h.Tokens})
	if err != nil {
		return nil, nil, err
	}
	r.Key.Note = heldOutNote(h)
	decoded, nearest, err := figures.TokenImages(res.VQVAE, h.Images, h.Side)
	if err != nil {
		return nil, nil, err
	}
	for k := range nearest {
		if nearest[k] == nil {
			nearest[k] = decoded[k]
		}
	}
	r.TokenImages, r.ImageSide = nearest, h.Side
	if r.TokenClassImages, err = figures.TokenClassImages(res.VQVAE, h.Images, h.Episode.Obs, h.Side); err != nil {
		return nil, nil, err
	}
	r.Title = fmt.Sprintf("%s seed %d", res.Config.Env, res.Config.Seed)
	if res.Config.Dataset != "mnist" {
		r.Title += " (" + res.Config.Dataset + ")"
	}
	return r, h, nil
}

// HeldOutKey is the token key of a decoded held-out episode (figures.NewTokenKey): the
// classes of the frames each hard token holds.
func HeldOutKey(h *DecodedHeldOut) (*figures.TokenKey, error) {
	key, err := figures.NewTokenKey(h.Tokens, h.Episode.Obs)
	if err != nil {
		return nil, err
	}
	key.Note = heldOutNote(h)
	return key, nil
}

// heldOutNote says where a held-out token key's counts come from.
func heldOutNote(h *DecodedHeldOut) string {
	return fmt.Sprintf("counted on the %d frames of the held-out episode (test-split images); labels used only to draw", len(h.Tokens))
}

// ClassReconstructions is paper Figure 4 for a run: two test-split images of every class
// its environment shows (drawn from the run's seed) above the VQ-VAE's reconstructions
// through their hard codes, labelled with the token, and the held-out episode's token
// key (HeldOutKey).
func ClassReconstructions(res *pipeline.Result, h *DecodedHeldOut) (*figures.Figure, error) {
	rng := rand.New(rand.NewPCG(res.Config.Seed, 0xf164))
	var sel []int
	for _, c := range h.Env.ClassesUsed() {
		for range 2 {
			sel = append(sel, h.Bank.Sample(rng, c))
		}
	}
	in := h.Bank.Floats(sel, nil)
	rec, tok, err := res.VQVAE.Reconstruct(in)
	if err != nil {
		return nil, err
	}
	key, err := HeldOutKey(h)
	if err != nil {
		return nil, err
	}
	return figures.ReconstructionFigure(in, rec, tok, h.Side,
		fmt.Sprintf("Reconstructions: %s seed %d (held-out images, 2 per class)", res.Config.Env, res.Config.Seed), key)
}

// SymbolicFigureEnvs are the environments of paper Figure 3: the heavily aliased
// room of George et al.'s Fig. 2a,b (4 symbols on 48 cells), the uniform interior
// and the three rooms stitched by transitive inference.
var SymbolicFigureEnvs = []string{"cscg_rectangular", "uniform_interior", "three_rooms"}

// SymbolicReadout is the Figure 3 read-out of a built-in environment: the symbolic
// suite's gradient map of seed (so the figure shows the map results/symbolic.md scores)
// decoded on the suite's held-out walk. With models set, models/<env>.model is loaded
// instead of trained, or the map trained here is saved there. The second result says
// which.
func SymbolicReadout(env string, seed uint64, models string, progress io.Writer) (*figures.Readout, string, error) {
	e, err := gridworld.Named(env)
	if err != nil {
		return nil, "", err
	}
	s, err := DefaultSymbolic(e, TrainerGradient)
	if err != nil {
		return nil, "", err
	}
	s.Seed, s.Init = seed, InitUniform
	var m *chmm.Model
	path, how := "", "trained by gradient descent"
	if models != "" {
		path = filepath.Join(models, env+".model")
		if m, err = chmm.Load(path); err == nil {
			how = "loaded from " + path
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", err
		}
	}
	run, err := RunSymbolic(s, m, progress)
	if err != nil && m != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, "", err
	}
	if path != "" && m == nil {
		if err := os.MkdirAll(models, 0o755); err != nil {
			return nil, "", err
		}
		run.Model.Meta = map[string]string{"env": env, "trainer": TrainerGradient, "seed": strconv.FormatUint(seed, 10)}
		if err := run.Model.Save(path); err != nil {
			return nil, "", err
		}
		how += ", saved in " + path
	}
	r, err := figures.NewReadout(run.Env, run.Model, run.HeldOut.Places, run.States, figures.ReadoutOptions{TokenClass: run.Classes})
	if err != nil {
		return nil, "", err
	}
	return r, fmt.Sprintf("%s (%d states), map F1 %.3f on the held-out walk", how, run.Model.N(), run.Report.ViterbiMap.F1), nil
}

// Figures draws the paper's figures into Out: Figure 2 (the layouts: the four
// benchmarks together, every built-in alone, all together), Figure 3 (SymbolicReadout
// of SymbolicFigureEnvs), for every finished run directory in Runs Figures 4, 5 and 6,
// the Table 4 threshold sweep of each configuration's seeds (table4_<env> for MNIST,
// conv and the default settings; table4_<run name without the seed> otherwise), and
// fig5 with each environment's first run of the default configuration (else its first
// run), paper order first.
type Figures struct {
	Runs         string    // pipeline run directories ("": runs; missing: no per-run figures)
	Out          string    // output directory ("": figures)
	Models       string    // symbolic models <env>.model for Figure 3 ("": trained, not kept)
	Format       string    // "png" (""), "svg" or "pdf"
	Seed         uint64    // Figure 3's symbolic seed (0: 1)
	SkipSymbolic bool      // no Figure 3 (which trains three maps when Models has none, ~1 min)
	Progress     io.Writer // Figure 3's training progress and a line per file written (nil: none)
}

// RunFigures draws the figures and returns how many it wrote. Notes (runs skipped and
// why, benchmarks without a run) go to notes (nil: none).
func RunFigures(f Figures, notes io.Writer) (written int, err error) {
	log := f.Progress
	if f.Runs == "" {
		f.Runs = "runs"
	}
	if f.Out == "" {
		f.Out = "figures"
	}
	if f.Format == "" {
		f.Format = "png"
	}
	if f.Seed == 0 {
		f.Seed = 1
	}
	switch f.Format {
	case "png", "svg", "pdf":
	default:
		return 0, &FieldError{"Format", fmt.Sprintf("%q", f.Format), "must be png, svg or pdf"}
	}
	if err := os.MkdirAll(f.Out, 0o755); err != nil {
		return 0, err
	}
	t0 := time.Now()
	save := func(name string, fig *figures.Figure, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		path := filepath.Join(f.Out, name+"."+f.Format)
		if err := fig.Save(path); err != nil {
			return err
		}
		written++
		logf(log, "wrote %s\n", path)
		return nil
	}

	// Figure 2: the four image benchmarks together, and every built-in alone.
	var bench, all []*gridworld.Env
	for _, n := range gridworld.Names() {
		e, err := gridworld.Named(n)
		if err != nil {
			return written, err
		}
		if slices.Contains(ImageBenchmarks, n) {
			bench = append(bench, e)
		}
		all = append(all, e)
	}
	sort.SliceStable(bench, func(i, j int) bool { return envRank(bench[i].Name) < envRank(bench[j].Name) })
	fig, err := figures.Layouts(bench...)
	if err := save("fig2_benchmarks", fig, err); err != nil {
		return written, err
	}
	for _, e := range all {
		fig, err := figures.Layouts(e)
		if err := save("fig2_layout_"+e.Name, fig, err); err != nil {
			return written, err
		}
	}
	fig, err = figures.Layouts(all...)
	if err := save("fig2_all", fig, err); err != nil {
		return written, err
	}

	// Figure 3: symbolic maps.
	if !f.SkipSymbolic {
		var rs []*figures.Readout
		for _, n := range SymbolicFigureEnvs {
			t1 := time.Now()
			r, how, err := SymbolicReadout(n, f.Seed, f.Models, f.Progress)
			if err != nil {
				return written, fmt.Errorf("figure 3, %s: %w", n, err)
			}
			logf(log, "%s: %s, %.1fs\n", n, how, time.Since(t1).Seconds())
			rs = append(rs, r)
		}
		fig, err := figures.MapComparison(rs...)
		if err := save("fig3_symbolic", fig, err); err != nil {
			return written, err
		}
	}

	// Figures 4, 5, 6 and Table 4 from the finished pipeline runs.
	dirs, err := runDirs(f.Runs)
	if err != nil {
		logf(notes, "note: no pipeline runs drawn: %v\n", err)
	}
	// Table 4 compares the seeds of one configuration: runs are grouped by their run
	// name without the seed (room_mnist, room_mnist_mlp, room_fashion, …), one run per
	// seed (the one in its default directory, else the first). Figure 5 takes each
	// environment's run of the default configuration in its default directory, else
	// the first of the default configuration, else its first run.
	type member struct {
		report *evaluate.Report
		dir    string
		canon  bool // dir is the run's default directory name (RunName)
	}
	type group struct {
		env   string
		seeds []uint64 // in the order first seen
		by    map[uint64]*member
	}
	groups := map[string]*group{}
	var groupOrder []string
	firstByEnv := map[string]*figures.Readout{}
	firstRank := map[string]int{} // 2: default configuration in its own directory, 1: default, 0: other
	var envOrder []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		res, err := pipeline.LoadRun(dir)
		if err != nil {
			logf(notes, "note: skipping %s: %v\n", dir, err)
			continue
		}
		t1 := time.Now()
		r, h, err := RunReadout(res)
		if err != nil {
			logf(notes, "note: skipping %s: %v\n", dir, err)
			continue
		}
		recon, err := ClassReconstructions(res, h)
		if err := save("fig4_"+name, recon, err); err != nil {
			return written, err
		}
		fig, err := figures.ImageMaps(r)
		if err := save("fig5_"+name, fig, err); err != nil {
			return written, err
		}
		hist, err := figures.ReadHistory(filepath.Join(dir, pipeline.HistoryFile))
		if err != nil {
			return written, err
		}
		fig, err = figures.TrainingDynamics(hist)
		if err == nil {
			fig.Title = "Training dynamics: " + r.Title
		}
		if err := save("fig6_"+name, fig, err); err != nil {
			return written, err
		}
		env, seed := res.Config.Env, res.Config.Seed
		canon := RunName(res.Config)
		key := strings.Replace(canon, fmt.Sprintf("_seed%d", seed), "", 1)
		isDefault := key == env+"_mnist"
		if _, ok := firstByEnv[env]; !ok {
			envOrder = append(envOrder, env)
		}
		rank := 0
		if isDefault {
			rank = 1
			if name == canon {
				rank = 2
			}
		}
		if _, ok := firstByEnv[env]; !ok || rank > firstRank[env] {
			firstByEnv[env], firstRank[env] = r, rank
		}
		g := groups[key]
		if g == nil {
			g = &group{env: env, by: map[uint64]*member{}}
			groups[key] = g
			groupOrder = append(groupOrder, key)
		}
		switch mb := g.by[seed]; {
		case mb == nil:
			g.seeds = append(g.seeds, seed)
			g.by[seed] = &member{report: res.Report, dir: dir, canon: name == canon}
		case name == canon && !mb.canon:
			logf(notes, "note: Table 4 of %s: seed %d from %s, not %s (drawn only alone)\n", key, seed, dir, mb.dir)
			*mb = member{report: res.Report, dir: dir, canon: true}
		default:
			logf(notes, "note: Table 4 of %s has seed %d from %s: %s is drawn only alone\n", key, seed, mb.dir, dir)
		}
		logf(log, "%s: drawn in %.1fs\n", dir, time.Since(t1).Seconds())
	}
	// Paper order first, then any other environment.
	sort.SliceStable(envOrder, func(i, j int) bool { return envRank(envOrder[i]) < envRank(envOrder[j]) })
	sort.SliceStable(groupOrder, func(i, j int) bool {
		return envRank(groups[groupOrder[i]].env) < envRank(groups[groupOrder[j]].env)
	})
	for _, key := range groupOrder {
		g := groups[key]
		name := "table4_" + key
		if key == g.env+"_mnist" {
			name = "table4_" + g.env // the paper's configuration keeps the plain name
		}
		reports := make([]*evaluate.Report, len(g.seeds))
		for i, seed := range g.seeds {
			reports[i] = g.by[seed].report
		}
		fig, err := figures.ThresholdSweep(reports...)
		if err := save(name, fig, err); err != nil {
			return written, err
		}
	}
	var firsts []*figures.Readout
	for _, env := range envOrder {
		firsts = append(firsts, firstByEnv[env])
	}
	for _, env := range ImageBenchmarks {
		if _, ok := firstByEnv[env]; !ok {
			logf(notes, "note: no finished %s run under %s: its Figure 5 column and Table 4 plot are missing\n", env, f.Runs)
		}
	}
	if len(firsts) > 0 {
		fig, err := figures.ImageMaps(firsts...)
		if err := save("fig5", fig, err); err != nil {
			return written, err
		}
	}
	logf(log, "%d figures in %s (%.0fs)\n", written, f.Out, time.Since(t0).Seconds())
	return written, nil
}

// envRank orders environments as the paper does (others last).
func envRank(env string) int {
	if i := slices.Index(ImageBenchmarks, env); i >= 0 {
		return i
	}
	return len(ImageBenchmarks)
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
