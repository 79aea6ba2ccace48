package notebook

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// PNGer is anything that renders itself as PNG bytes: a *figures.Figure.
type PNGer interface {
	PNG() ([]byte, error)
}

// Show displays a figure (a *figures.Figure at its natural size).
func Show(f PNGer) error {
	b, err := f.PNG()
	if err != nil {
		return err
	}
	return PNG(b)
}

// SymbolicReadout reads a symbolic run's map for paper Figure 3 (figures.NewReadout):
// its held-out Viterbi path assigned to places, the recovered graph from the path's
// transitions (> 0.2 % of T, Sec. 5.3), tokens coloured by the class they stand for.
func SymbolicReadout(run *SymbolicRun) (*figures.Readout, error) {
	if run == nil || run.Model == nil {
		return nil, fmt.Errorf("notebook: SymbolicReadout of no run")
	}
	return figures.NewReadout(run.Env, run.Model, run.HeldOut.Places, run.States,
		figures.ReadoutOptions{TokenClass: run.Classes})
}

// RunReadout reads a pixel run's map for paper Figure 5 (experiment.RunReadout): the
// decoded clones assigned to places, the recovered graph from the Viterbi path, and
// as each token's picture the held-out image nearest to its code vector.
func RunReadout(res *pipeline.Result) (*figures.Readout, error) {
	r, _, err := experiment.RunReadout(res)
	return r, err
}

// Reconstructions draws paper Figure 4 for a pixel run: the first n images of its
// held-out episode above the VQ-VAE's reconstructions, each labelled with its token,
// and the episode's token key (which classes each token holds).
func Reconstructions(res *pipeline.Result, n int) error {
	fig, err := ReconstructionsFigure(res, n)
	if err != nil {
		return err
	}
	return Show(fig)
}

// ReconstructionsFigure is the figure Reconstructions displays.
func ReconstructionsFigure(res *pipeline.Result, n int) (*figures.Figure, error) {
	fig, _, err := reconstructions(res, n)
	return fig, err
}

// History returns a pixel run's loss history (history.jsonl) as figures.Record for
// figures.TrainingDynamics (paper Figure 6).
func History(res *pipeline.Result) []figures.Record {
	out := make([]figures.Record, len(res.History))
	for i, r := range res.History {
		out[i] = figures.Record(r)
	}
	return out
}

// LikelihoodPlot plots the training log-likelihood per step ℓ/T (Sec. 3.4) of
// symbolic runs against wall-clock seconds, one line per run labelled by labels:
// how fast EM and gradient descent climb (the EM curve includes its Viterbi phase).
func LikelihoodPlot(title string, labels []string, runs []*SymbolicRun) (*plot.Plot, error) {
	if len(labels) != len(runs) {
		return nil, fmt.Errorf("notebook: %d labels for %d runs", len(labels), len(runs))
	}
	p := figures.NewPlot(title)
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "training ℓ/T (nats per step)"
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	for i, run := range runs {
		if run == nil || run.History == nil || len(run.History.LogLik) == 0 {
			return nil, fmt.Errorf("notebook: run %q has no training history", labels[i])
		}
		h := run.History
		var xy plotter.XYs
		for j, ll := range h.LogLik {
			if j < len(h.Seconds) && !math.IsNaN(ll) && !math.IsInf(ll, 0) {
				xy = append(xy, plotter.XY{X: h.Seconds[j], Y: ll})
			}
		}
		if len(xy) == 0 {
			return nil, fmt.Errorf("notebook: run %q has no finite log-likelihood", labels[i])
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = figures.ClassColor(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(labels[i], l)
	}
	return p, nil
}

// WriteLayout writes a custom layout (the gridworld layout format) to
// RunsRoot()/<name>.txt atomically and returns the path, for gridworld.LoadLayout.
func WriteLayout(name, text string) (string, error) {
	root, err := RunsRoot()
	if err != nil {
		return "", err
	}
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("notebook: layout name %q: want a plain file name", name)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("notebook: %w", err)
	}
	path := filepath.Join(root, name+".txt")
	if err := atomicfile.WriteFile(path, []byte(text)); err != nil {
		return "", fmt.Errorf("notebook: %w", err)
	}
	return path, nil
}

// PlanTrials displays the first n trials of mode in a planning report on a pixel
// run that was traced (plan.EvalConfig.Trace): figures.PlanTrials, with the beliefs
// drawn at the places the run's evaluation assigns to its states.
func PlanTrials(res *pipeline.Result, rep *experiment.PlanReport, mode plan.Mode, n int) error {
	env, err := res.Config.Environment()
	if err != nil {
		return err
	}
	for _, m := range rep.Modes {
		if m.Mode == mode {
			fig, err := figures.PlanTrials(env, mode, res.Report.StatePlace, m.Trials[:min(n, len(m.Trials))]...)
			if err != nil {
				return err
			}
			return Show(fig)
		}
	}
	return fmt.Errorf("notebook: the planning report has no %s trials", mode)
}
