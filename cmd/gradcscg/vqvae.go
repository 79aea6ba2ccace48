package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/settings"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

func init() {
	register("vqvae", "warm up the VQ-VAE on an environment's frames and report token quality on held-out images", runVQVAE)
}

// suiteCurve is --suite's default --curve.
const suiteCurve = 100

// vqFlags names the setting or flag of each experiment.VQStudy field (and the suite's
// Seeds).
var vqFlags = map[string]string{
	"K": "--set k", "Steps": "--set steps", "Batch": "--set batch", "LR": "--set lr", "Episodes": "--set episodes",
	"EpisodeLen": "--set episode_len", "EvalLen": "--set eval_len", "Curve": "--set curve",
	"CheckpointEvery": "--set checkpoint_every", "Seeds": "--seeds",
}

// flagNamed renames a library FieldError's field to its flag, or to its setting
// ("--set k=0: …").
func flagNamed(err error, flags map[string]string) error {
	var fe *experiment.FieldError
	if errors.As(err, &fe) {
		if f, ok := flags[fe.Field]; ok {
			if strings.HasPrefix(f, "--set ") {
				return fmt.Errorf("%s=%v: %s", f, fe.Value, fe.Need)
			}
			fe.Field = f
		}
	}
	return err
}

func runVQVAE(args []string) error {
	var env, layout string
	var jsonPath string
	var quiet, suite bool
	var envs, datasets string
	var seeds int
	var sets setFlag
	var s experiment.VQStudy
	fs := newFlagSet("vqvae", "--env NAME | --layout FILE [--dataset mnist|fashion] [--set key=value]... [flags]\n"+
		"       gradcscg vqvae --suite [--envs aliased,two_rooms] [--datasets mnist,fashion] [--seeds 3] [--out results]")
	fs.StringVar(&env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	fs.StringVar(&layout, "layout", "", "custom layout file (overrides --env)")
	fs.StringVar(&s.Dataset, "dataset", "mnist", "image data set: mnist, fashion, or a directory of IDX files")
	fs.Uint64Var(&s.Seed, "seed", 1, "random seed (walks, images, initialisation, batches)")
	fs.Var(&sets, "set", "one setting key=value, repeatable ('--set help' lists every key with its default and range)")
	fs.StringVar(&s.Dir, "out", "", "run directory: model, reconstructions PNG, report JSON "+
		"(default runs/vqvae/ENV_DATASET_kK_seedS; with --suite the results root, default results)")
	fs.StringVar(&jsonPath, "json", "", "also write the report JSON to this path")
	fs.BoolVar(&quiet, "quiet", false, "no progress output")
	fs.BoolVar(&suite, "suite", false, "run (or collect) the quality grid --envs × --datasets × seeds 1..--seeds and write OUT/vqvae.md")
	fs.StringVar(&envs, "envs", "aliased,two_rooms", "--suite: comma-separated environments")
	fs.StringVar(&datasets, "datasets", "mnist,fashion", "--suite: comma-separated data sets")
	fs.IntVar(&seeds, "seeds", 3, "--suite: seeds 1..n")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d := experiment.DefaultVQStudy(nil)
	s.Steps, s.Batch, s.LR, s.CheckpointEvery = d.Steps, d.Batch, d.LR, d.CheckpointEvery
	curveSet := false
	for _, kv := range sets.without("help") {
		if err := s.Set(kv); err != nil {
			return fmt.Errorf("--set %w", err)
		}
		curveSet = curveSet || strings.HasPrefix(strings.TrimSpace(kv), "curve=")
	}
	if sets.help() {
		fmt.Fprintf(stdout, "settings (--set key=value; the defaults with the other --set values given):\n%s", settings.Help(settings.Rows(experiment.VQStudyKeys(), &s)))
		return nil
	}
	log := stderr
	if quiet {
		log = nil
	}
	if suite {
		// The command line as the table's caption quotes it: --suite, then the flags set.
		cmdLine := "gradcscg vqvae --suite"
		fs.Visit(func(f *flag.Flag) {
			switch {
			case f.Name == "quiet" || f.Name == "suite":
			case f.Name == "set":
				for _, kv := range sets {
					cmdLine += " --set " + kv
				}
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
