package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

func init() {
	register("vqvae", "warm up the VQ-VAE on an environment's frames and report token quality on held-out images", runVQVAE)
}

// suiteCurve is --suite's default --curve.
const suiteCurve = 100

// vqFlags names the flag of each experiment.VQStudy field (and the suite's Seeds).
var vqFlags = map[string]string{
	"K": "--k", "Steps": "--steps", "Batch": "--batch", "LR": "--lr", "Episodes": "--episodes",
	"EpisodeLen": "--episode-len", "EvalLen": "--eval-len", "Curve": "--curve",
	"CheckpointEvery": "--checkpoint-every", "Seeds": "--seeds",
}

// flagNamed renames a library FieldError's field to its flag.
func flagNamed(err error, flags map[string]string) error {
	var fe *experiment.FieldError
	if errors.As(err, &fe) {
		if f, ok := flags[fe.Field]; ok {
			fe.Field = f
		}
	}
	return err
}

func runVQVAE(args []string) error {
	var s experiment.VQStudy
	var env, layout string
	var jsonPath string
	var quiet, suite bool
	var envs, datasets string
	var seeds int
	fs := newFlagSet("vqvae", "--env NAME | --layout FILE [--dataset mnist|fashion] [--k K] [flags]\n"+
		"       gradcscg vqvae --suite [--envs aliased,two_rooms] [--datasets mnist,fashion] [--seeds 3] [--out results]")
	fs.StringVar(&env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	fs.StringVar(&layout, "layout", "", "custom layout file (overrides --env)")
	fs.StringVar(&s.Dataset, "dataset", "mnist", "image data set: mnist, fashion, or a directory of IDX files")
	fs.IntVar(&s.K, "k", 0, "codebook size K (0: the number of classes the environment shows)")
	fs.Uint64Var(&s.Seed, "seed", 1, "random seed (walks, images, initialisation, batches)")
	fs.IntVar(&s.Steps, "steps", experiment.DefaultVQSteps, "warm-up steps in total (a resumed run continues up to this count)")
	fs.IntVar(&s.Batch, "batch", 128, "minibatch size")
	fs.Float64Var(&s.LR, "lr", vqvae.DefaultLearningRate, "Adam learning rate")
	fs.IntVar(&s.Episodes, "episodes", 0, "training episodes (0: the environment's reference count)")
	fs.IntVar(&s.EpisodeLen, "episode-len", 0, "steps per training episode (0: the environment's reference length)")
	fs.IntVar(&s.EvalLen, "eval-len", 0, "steps of the held-out episode (0: same as --episode-len)")
	fs.StringVar(&s.Dir, "out", "", "run directory: model, reconstructions PNG, report JSON "+
		"(default runs/vqvae/ENV_DATASET_kK_seedS; with --suite the results root, default results)")
	fs.StringVar(&jsonPath, "json", "", "also write the report JSON to this path")
	fs.BoolVar(&s.Classify, "classify", false, "add the reference's supervised classification head (weight 0.1) to the warm-up")
	fs.IntVar(&s.Curve, "curve", 0, fmt.Sprintf("every N steps, score held-out tokens (first %d frames) and record a learning curve "+
		"(0: off; --suite: default %d)", experiment.VQCurveFrames, suiteCurve))
	fs.IntVar(&s.CheckpointEvery, "checkpoint-every", 100, "save the checkpoint every N steps")
	fs.BoolVar(&quiet, "quiet", false, "no progress output")
	fs.BoolVar(&suite, "suite", false, "run (or collect) the quality grid --envs × --datasets × seeds 1..--seeds and write OUT/vqvae.md")
	fs.StringVar(&envs, "envs", "aliased,two_rooms", "--suite: comma-separated environments")
	fs.StringVar(&datasets, "datasets", "mnist,fashion", "--suite: comma-separated data sets")
	fs.IntVar(&seeds, "seeds", 3, "--suite: seeds 1..n")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log := stderr
	if quiet {
		log = nil
	}
	if suite {
		// The command line as the table's caption quotes it: --suite, then the flags set.
		cmdLine, curveSet := "gradcscg vqvae --suite", false
		fs.Visit(func(f *flag.Flag) {
			curveSet = curveSet || f.Name == "curve"
			switch {
			case f.Name == "quiet" || f.Name == "suite":
			case f.Value.String() == "true":
				cmdLine += " --" + f.Name
			default:
				cmdLine += fmt.Sprintf(" --%s %s", f.Name, f.Value)
			}
		})
		if !curveSet {
			s.Curve = suiteCurve
		}
		switch {
		case jsonPath != "":
			return errors.New("--json: not with --suite (each run writes OUT/vqvae/RUN/report.json)")
		case layout != "":
			return errors.New("--suite: --layout is not supported (use --envs with built-in names)")
		}
		s.Env = nil
		table, path, err := experiment.RunVQSuite(experiment.VQSuite{Base: s, Envs: splitList(envs),
			Datasets: splitList(datasets), Seeds: seeds, Root: s.Dir, Command: cmdLine}, log)
		if err != nil {
			return flagNamed(err, vqFlags)
		}
		fmt.Fprint(stdout, table)
		fmt.Fprintf(stderr, "table written to %s\n", path)
		return nil
	}
	e, err := loadEnv(env, layout)
	if err != nil {
		return err
	}
	s.Env = e
	if err := s.Check(); err != nil {
		return flagNamed(err, vqFlags)
	}
	// The walks (place, class, action and frame per step, ~48 bytes) and the held-out
	// frames' pixels (784 float32) are held in memory.
	def := e.Defaults()
	episodes, steps := cmp.Or(s.Episodes, def.Episodes), cmp.Or(s.EpisodeLen, def.Steps)
	evalLen := cmp.Or(s.EvalLen, steps)
	if err := checkMemory(48*float64(episodes)*float64(steps)+3200*float64(evalLen)+pipeline.VQVAETrainBytes(vqvae.DefaultConfig(max(s.K, 2)), float64(s.Batch)),
		fmt.Sprintf("%d episodes of %d steps and a held-out walk of %d", episodes, steps, evalLen)); err != nil {
		return err
	}
	rep, err := experiment.RunVQStudy(s, log)
	if err != nil {
		return flagNamed(err, vqFlags)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if jsonPath != "" {
		if err := rep.WriteJSON(jsonPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", jsonPath)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
