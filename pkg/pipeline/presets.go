package pipeline

import (
	"fmt"
	"sort"
	"strings"
)

// A Preset is a named set of settings laid over an environment's defaults (before the
// size and a user's own settings): the paper's configuration, or one ablation of the
// joint phase. Its settings may depend on the configuration it is laid over.
type Preset struct {
	Name    string // e.g. "paper", "frozen"
	Summary string // what it changes, one line
	set     func(Config) []string
}

// Settings returns the settings (Set arguments) p lays over c.
func (p Preset) Settings(c Config) []string { return p.set(c) }

// Apply returns c with p's settings and p's name as c.Preset.
func (p Preset) Apply(c Config) (Config, error) {
	for _, kv := range p.Settings(c) {
		if err := c.Set(kv); err != nil {
			return c, fmt.Errorf("preset %s: %w", p.Name, err)
		}
	}
	c.Preset = p.Name
	return c, nil
}

func fixed(kvs ...string) func(Config) []string { return func(Config) []string { return kvs } }

// presets are the named presets, in the order PresetNames lists them.
var presets = []Preset{
	{"paper", "the paper's: τ 1, α_div 0.1, 2000 joint iterations, all frames, no jitter; final rate 0.01 from the joint HMM, " +
		"no pruning, no refinement; hard read-out",
		fixed("vqvae.tau=1", "joint.alpha_div=0.1", "joint.alpha_div_end=0", "joint.iters=2000", "joint.grad_frames=0", "joint.jitter=0",
			"final.budget=joint", "final.lr=0.01", "final.prune=0", "final.budget_doublings=0", "refine.on=false", "eval.decode=hard")},
	{"frozen", "ablation: the joint phase trains only the HMM (the VQ-VAE stays as the warm-up left it)", fixed("joint.freeze_vqvae=true")},
	{"no-length-norm", "ablation: no 1/T length normalisation of the HMM term", fixed("joint.no_length_norm=true")},
	{"no-diversity", "ablation: no diversity penalty (α_div 0)", fixed("joint.alpha_div=0")},
	{"paper-joint", "ablation: the paper's τ 1 and α_div 0.1 in the joint phase", fixed("vqvae.tau=1", "joint.alpha_div=0.1", "joint.alpha_div_end=0.1")},
	{"no-jitter", "ablation: frames as drawn, no random shift", fixed("joint.jitter=0")},
	{"no-pruning", "ablation: no pruning after the finalisation", fixed("final.prune=0")},
	{"refine", "beyond the paper: after the finalisation the map teaches the encoder its pseudo-classes, and the map is finalised again", fixed("refine.on=true")},
	{"other-grad-frames", "ablation: the architecture's other gradient frames (conv: all, mlp: 256)", func(c Config) []string {
		if c.Joint.GradFrames == 0 {
			return []string{"joint.grad_frames=256"}
		}
		return []string{"joint.grad_frames=0"}
	}},
	{"no-collapse-response", "ablation: no collapse response (joint.collapse_level 0)", fixed("joint.collapse_level=0")},
}

// Presets returns the named presets.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// LookupPreset returns the preset called name; "" is none (a preset that changes
// nothing).
func LookupPreset(name string) (Preset, error) {
	if name == "" {
		return Preset{set: fixed()}, nil
	}
	for _, p := range presets {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	sort.Strings(names)
	return Preset{}, fmt.Errorf("preset %q: want one of %s", name, strings.Join(names, ", "))
}
