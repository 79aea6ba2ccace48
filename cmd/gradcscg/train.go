package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

func init() {
	register("train", "learn a map from pixels: VQ-VAE warm-up → joint training → finalisation, then evaluate", runTrain)
}

// trainOptions are the flags of "gradcscg train".
type trainOptions struct {
	env, layout, dataset, run, config, from, jsonPath, size, arch, preset string
	seed                                                                  uint64
	quiet, reevaluate                                                     bool
	sets                                                                  setFlag
	fs                                                                    *flag.FlagSet // to tell which flags were given
}

func trainFlags(o *trainOptions) *flag.FlagSet {
	f := newFlagSet("train", "--env NAME | --layout FILE [--preset NAME] [--size full|ci|smoke] [--set key=value]... [--run DIR]")
	f.StringVar(&o.env, "env", "aliased", "built-in environment (see 'gradcscg envs'); worlds of 100 places or more get the bigger worlds' settings (--preset help)")
	f.StringVar(&o.layout, "layout", "", "custom layout file instead of --env (rows of class ids and # walls, or a graph; format: pkg/gridworld/doc.go)")
	f.StringVar(&o.dataset, "dataset", "mnist", "images shown at the places: mnist or fashion")
	f.Uint64Var(&o.seed, "seed", 1, "random seed (walks, images, initialisation, held-out episode)")
	f.StringVar(&o.arch, "arch", "", "VQ-VAE architecture: conv (the reference, default) or mlp (≈10× faster, weaker)")
	f.StringVar(&o.size, "size", "full", "full: the paper's data size; ci: about a minute on two cores (MLP VQ-VAE, 4 × 5,000 steps); smoke: seconds")
	f.StringVar(&o.preset, "preset", "", "named settings over the environment's defaults: paper or an ablation ('--preset help' lists them)")
	f.Var(&o.sets, "set", "one setting key=value, repeatable, last ('--set help' lists every key with its default and range)")
	f.StringVar(&o.config, "config", "", "settings file (config.json format, keys may be left out) over the preset and size")
	f.StringVar(&o.from, "from", "", "train a new finalisation in --run on the warm-up and joint phase of this run (--set final.*, refine.* and eval.* only)")
	f.StringVar(&o.run, "run", "", "run directory (default runs/<name from the settings>); an unfinished run resumes, a finished one loads")
	f.StringVar(&o.jsonPath, "json", "", "also write the evaluation report as JSON to this path")
	f.BoolVar(&o.reevaluate, "reevaluate", false, "re-score the finished run with the current evaluation (rewrites its report.json)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	return f
}

func runTrain(args []string) error {
	var o trainOptions
	o.fs = trainFlags(&o)
	if err := parseFlags(o.fs, args); err != nil {
		return err
	}
	if done, err := o.listings(); done || err != nil {
		return err
	}
	cfg, origins, err := o.pipelineConfig()
	if err != nil {
		return err
	}
	if err := checkMemory(pipeline.EstimateBytes(cfg), fmt.Sprintf("a run of %d × %d steps with up to %d clones per token", cfg.Data.Episodes, cfg.Data.Steps, max(cfg.Joint.Clones, cfg.Final.Clones))); err != nil {
		return err
	}
	dir := o.run
	if dir == "" {
		dir = filepath.Join("runs", experiment.RunName(cfg))
	}
	var rep *evaluate.Report
	if o.reevaluate {
		if rep, err = pipeline.Reevaluate(dir); err != nil {
			return err
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var progress io.Writer
		if !o.quiet { // the settings go first, once the run has started
			var b strings.Builder
			printOrigins(&b, cfg, origins)
			progress = &headedWriter{w: stderr, head: b.String()}
		}
		if o.from != "" {
			if err := pipeline.Branch(dir, o.from, cfg); err != nil {
				return err
			}
		}
		rep, err = pipeline.Run(ctx, dir, cfg, progress)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: the run resumes from its last checkpoint when the same command is run again")
		}
		if err != nil {
			return err
		}
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := rep.WriteJSON(o.jsonPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", o.jsonPath)
	}
	return nil
}

// printOrigins prints the settings that differ from the environment's generic
// defaults, each with the layer that set it.
func printOrigins(w io.Writer, cfg pipeline.Config, origins []experiment.Origin) {
	preset := ""
	if cfg.Preset != "" {
		preset = ", preset " + cfg.Preset
	}
	if e, err := cfg.Environment(); err == nil {
		fmt.Fprintf(w, "world %s: %d places; defaults: %s\n", cfg.Env, e.NumPlaces(), e.Defaults().Source)
	}
	if len(origins) == 0 {
		fmt.Fprintf(w, "settings: the generic defaults of %s%s\n", cfg.Env, preset)
		return
	}
	fmt.Fprintf(w, "settings that differ from the generic defaults of %s%s:\n", cfg.Env, preset)
	for _, o := range origins {
		fmt.Fprintf(w, "  %s\n", o)
	}
}

// headedWriter writes head before the first write to w.
type headedWriter struct {
	w    io.Writer
	head string
}

func (h *headedWriter) Write(p []byte) (int, error) {
	if h.head != "" {
		if _, err := io.WriteString(h.w, h.head); err != nil {
			return 0, err
		}
		h.head = ""
	}
	return h.w.Write(p)
}

// given reports whether flag name was on the command line.
func (o *trainOptions) given(name string) bool { return flagGiven(o.fs, name) }

// refuse returns an error naming the first of flags given with the flag with, which
// makes them unable to apply (why).
func (o *trainOptions) refuse(with, why string, flags ...string) error {
	for _, f := range flags {
		if o.given(f) {
			return fmt.Errorf("--%s with --%s: %s", f, with, why)
		}
	}
	return nil
}

// check refuses flags that cannot apply together.
func (o *trainOptions) check() error {
	switch {
	case o.given("env") && o.given("layout"):
		return errors.New("--env with --layout: give one environment")
	case o.from != "" && o.run == "":
		return fmt.Errorf("--from %s: needs --run NEW_DIR", o.from)
	case o.from != "":
		return o.refuse("from", "the run's settings are its source's; change final.*, refine.* and eval.* with --set",
			"env", "layout", "config", "preset", "size", "arch", "dataset", "seed", "reevaluate")
	case o.reevaluate && o.run != "":
		return o.refuse("reevaluate", "the run is re-scored with its own settings",
			"env", "layout", "config", "preset", "size", "arch", "dataset", "seed", "set")
	case o.config != "":
		return o.refuse("config", "the file names its environment", "env", "layout")
	}
	return nil
}

// spec returns the layers of the run's configuration that the flags give.
func (o *trainOptions) spec() (experiment.PipelineSpec, error) {
	var s experiment.PipelineSpec
	size, err := experiment.ParseSize(o.size)
	if err != nil {
		return s, fmt.Errorf("--%w", err)
	}
	s.Size, s.Preset, s.Arch = size, o.preset, o.arch
	switch {
	case o.from != "":
		s.Size = ""
		path := filepath.Join(o.from, pipeline.ConfigFile)
		if _, err := os.Stat(path); err != nil {
			return s, fmt.Errorf("--from %s: no run there (%v)", o.from, err)
		}
		if s.File, err = pipeline.LoadConfigText(path); err != nil {
			return s, err
		}
	case o.config != "":
		if s.File, err = pipeline.LoadConfigText(o.config); err != nil {
			return s, err
		}
	case o.layout != "":
		if s.Env, err = loadEnv("", o.layout); err != nil {
			return s, err
		}
	default:
		if s.Env, err = loadEnv(o.env, ""); err != nil {
			return s, err
		}
	}
	if o.config == "" && o.from == "" || o.given("dataset") {
		s.Sets = append(s.Sets, experiment.Setting{KV: "dataset=" + o.dataset, Source: "--dataset"})
	}
	if o.config == "" && o.from == "" || o.given("seed") {
		s.Sets = append(s.Sets, experiment.Setting{KV: fmt.Sprintf("seed=%d", o.seed), Source: "--seed"})
	}
	for _, kv := range o.sets {
		s.Sets = append(s.Sets, experiment.Setting{KV: kv, Source: "--set"})
	}
	return s, nil
}

// pipelineConfig builds the run's configuration from the flags: the environment's
// defaults (or --config's environment, or the --from run's settings), --preset,
// --size, --arch, --config, then --dataset, --seed and every --set.
func (o *trainOptions) pipelineConfig() (pipeline.Config, []experiment.Origin, error) {
	if err := o.check(); err != nil {
		return pipeline.Config{}, nil, err
	}
	s, err := o.spec()
	if err != nil {
		return pipeline.Config{}, nil, err
	}
	return experiment.ConfigurePipeline(s)
}

// listings prints --preset help and --set help (done true), for the environment,
// preset and size the other flags give.
func (o *trainOptions) listings() (done bool, err error) {
	switch {
	case o.preset == "help" || o.preset == "list":
		writePresets(stdout)
		return true, nil
	case !o.sets.help():
		return false, nil
	}
	o.sets = o.sets.without("help")
	cfg, _, err := o.pipelineConfig()
	if err != nil {
		return true, err
	}
	writeSettings(stdout, cfg)
	return true, nil
}
