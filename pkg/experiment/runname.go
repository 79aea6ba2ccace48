package experiment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// ImageBenchmarks are the four image benchmarks of paper Section 5.2 (Tables 3, 4).
var ImageBenchmarks = []string{"aliased", "corridors", "room", "two_rooms"}

// ImageRun is the configuration of a suite's run: env's defaults with the data set,
// the seed and the VQ-VAE architecture (WithArch's arch-dependent defaults).
func ImageRun(env, dataset, arch string, seed int) (pipeline.Config, error) {
	cfg, err := pipeline.DefaultConfig(env)
	if err != nil {
		return cfg, err
	}
	cfg.Dataset, cfg.Seed = dataset, uint64(seed)
	return cfg.WithArch(arch), nil
}

// A runNamePart names one setting in a run directory's name: suffix returns the part
// for cfg's value when it differs from base's (the environment's defaults at cfg's size
// and architecture), "" for none.
type runNamePart struct {
	key    string
	suffix func(cfg, base pipeline.Config) string
}

// differs returns a suffix function that formats the setting with format where it
// differs from the base's value.
func differs(key, format string) runNamePart {
	return runNamePart{key, func(cfg, base pipeline.Config) string {
		v, _ := cfg.Get(key)
		if b, _ := base.Get(key); v == b {
			return ""
		}
		return fmt.Sprintf(format, v)
	}}
}

// flag names a boolean setting that differs from the base's: name when it is on,
// name with "no" in front when it is off.
func flag(key, name string) runNamePart {
	return runNamePart{key, func(cfg, base pipeline.Config) string {
		v, _ := cfg.Get(key)
		if b, _ := base.Get(key); v == b {
			return ""
		}
		if v == "true" {
			return name
		}
		return "_no" + strings.TrimPrefix(name, "_")
	}}
}

// runNameParts is the table of settings with names of their own, in the order they
// appear in a run's name; every other setting that differs from the base is named
// generically (_<key><value>), after the preset's name.
var runNameParts = []runNamePart{
	flag("joint.freeze_vqvae", "_frozen"),
	flag("joint.no_length_norm", "_nolennorm"),
	{"joint.alpha_div", func(cfg, _ pipeline.Config) string {
		if cfg.Joint.AlphaDiv == 0 {
			return "_nodiv"
		}
		return ""
	}},
	flag("joint.scaled_emissions", "_scaled"),
	{"joint.alpha_div", func(cfg, base pipeline.Config) string {
		if a := cfg.Joint.AlphaDiv; a != 0 && a != base.Joint.AlphaDiv {
			return "_div" + strconv.FormatFloat(a, 'g', -1, 64)
		}
		return ""
	}},
	differs("joint.alpha_div_end", "_divend%s"),
	differs("vqvae.tau", "_tau%s"),
	differs("joint.jitter", "_jitter%s"),
	differs("final.prune", "_prune%s"),
	differs("final.budget_doublings", "_grow%s"),
	differs("final.trainer", "_final%s"),
	differs("final.chunk_above", "_chunkabove%s"),
	{"final.iters", func(cfg, base pipeline.Config) string { // against the trainer's default at this size
		if cfg.Final.Iters == base.WithFinalTrainer(cfg.Final.Trainer).Final.Iters {
			return ""
		}
		return fmt.Sprintf("_iters%d", cfg.Final.Iters)
	}},
	{"final.split_rounds", func(cfg, base pipeline.Config) string { // the EM trainer's only
		if cfg.Final.Trainer != pipeline.FinalEM || cfg.Final.SplitRounds == base.Final.SplitRounds {
			return ""
		}
		return fmt.Sprintf("_doublings%d", cfg.Final.SplitRounds)
	}},
	differs("joint.grad_frames", "_grad%s"),
	differs("joint.collapse_level", "_cl%s"),
	differs("joint.iters", "_joint%s"),
	differs("joint.pretrain_iters", "_pretrain%s"),
	differs("vqvae.k", "_codes%s"),
	differs("warmup.merge_codes", "_merge%s"),
	differs("final.merge_tokens", "_mergetokens%s"),
	differs("joint.stop_churn", "_churn%s"),
	differs("joint.lambda", "_lambda%s"),
	flag("vqvae.classify", "_supervised"),
}

// runNameSkip are the settings a name holds otherwise (env, dataset, seed, arch, size)
// or that are no settings of the run (version, preset).
var runNameSkip = map[string]bool{"version": true, "env": true, "layout": true, "dataset": true, "seed": true,
	"preset": true, "vqvae.arch": true}

// RunName is the default run directory name of cfg: <env>_<dataset>_seed<N>, then
// "_<arch>" for a VQ-VAE other than conv, "_ci" or "_smoke" for a run of that Size,
// then a part per setting that differs from the environment's own defaults at that
// size and architecture (pipeline.ConfigFor: the settings chosen for its world are its
// defaults, so `train --env big_room` runs in big_room_mnist_seed1):
// the named parts of runNameParts, then
// cfg.Preset's name where the preset explains settings without a named part, then
// "_<key><value>" for each other setting. Two configurations never share a name, so
// they never share a directory by default (a run directory refuses a config other
// than its own), and the names of earlier versions' configurations are kept.
func RunName(cfg pipeline.Config) string {
	name := fmt.Sprintf("%s_%s_seed%d", cfg.Env, cfg.Dataset, cfg.Seed)
	arch := string(cfg.VQVAE.Arch)
	if arch != string(vqvae.ArchConv) {
		name += "_" + arch
	}
	e, err := cfg.Environment()
	if err != nil { // Validate refuses such a config; name what there is
		return name
	}
	base := pipeline.ConfigFor(e).WithArch(arch)
	for _, z := range []Size{SizeCI, SizeSmoke} {
		if r := z.Pipeline(base); cfg.Data.Steps == r.Data.Steps && cfg.Data.Episodes == r.Data.Episodes {
			name += "_" + string(z)
			base = r
			break
		}
	}
	named := map[string]bool{}
	for _, p := range runNameParts {
		name += p.suffix(cfg, base)
		named[p.key] = true
	}
	var rest []string
	explained := map[string]bool{}
	if p, err := pipeline.LookupPreset(cfg.Preset); err == nil && cfg.Preset != "" {
		with, _ := p.Apply(base)
		for _, k := range pipeline.Keys() {
			v, _ := cfg.Get(k.Path)
			if w, _ := with.Get(k.Path); v == w {
				explained[k.Path] = true
			}
		}
	}
	preset := false
	for _, k := range pipeline.Keys() {
		v, _ := cfg.Get(k.Path)
		if b, _ := base.Get(k.Path); v == b || named[k.Path] || runNameSkip[k.Path] {
			continue
		}
		if explained[k.Path] {
			preset = true
			continue
		}
		rest = append(rest, "_"+k.Path+v)
	}
	if preset {
		name += "_" + cfg.Preset
	}
	for _, r := range rest {
		name += r
	}
	return name
}
