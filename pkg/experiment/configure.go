package experiment

import (
	"errors"
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// PipelineSpec chooses a pixel run's configuration in layers, each over the ones
// before it: the environment's generic defaults (pipeline.GenericConfig) and the
// settings chosen for its world (pipeline.WorldSettings), Arch, Preset, Size, Arch again
// (a given architecture outlives the MLP of the CI and smoke sizes), File, and Sets.
// The CLI (train) and the notebooks (notebook.Configure) choose through it.
type PipelineSpec struct {
	Env    *gridworld.Env       // the environment; nil: the one File names
	Arch   string               // the VQ-VAE architecture ("": as the layers leave it)
	Preset string               // a preset's name (pipeline.Presets; "": none)
	Size   Size                 // "": SizeFull
	File   *pipeline.ConfigText // a configuration file (nil: none); keys it lacks keep the layers' values
	Sets   []Setting            // settings laid over everything, in order
}

// A Setting is one "key=value" (pipeline.Config.Set) and where it comes from, as an
// error or the printed configuration names it ("--set", "--seed", "notebook").
type Setting struct{ KV, Source string }

// SettingsFrom returns kvs as Settings from source.
func SettingsFrom(source string, kvs ...string) []Setting {
	out := make([]Setting, len(kvs))
	for i, kv := range kvs {
		out[i] = Setting{kv, source}
	}
	return out
}

// An Origin is a setting whose value differs from the environment's generic defaults,
// and the layer that set it last: "world: WHY" (pipeline.WorldSettings), "preset paper", "size ci", "arch",
// "FILE line N", or a Setting's source.
type Origin struct{ Key, Value, Source string }

func (o Origin) String() string { return fmt.Sprintf("%s=%s (%s)", o.Key, o.Value, o.Source) }

// ConfigurePipeline lays spec's layers and validates the result. It returns the
// configuration and, for each setting that differs from the generic defaults, where
// it came from. An error names the layer (the flag, or the file and line) of each bad
// setting.
func ConfigurePipeline(spec PipelineSpec) (pipeline.Config, []Origin, error) {
	e := spec.Env
	if e == nil {
		if spec.File == nil {
			return pipeline.Config{}, nil, errors.New("experiment: no environment and no configuration file")
		}
		var err error
		if e, err = spec.File.Environment(); err != nil {
			return pipeline.Config{}, nil, err
		}
	}
	generic := pipeline.GenericConfig(e)
	cfg := generic
	from := map[string]string{}
	layer := func(source string, f func(*pipeline.Config) error) error {
		before := cfg
		if err := f(&cfg); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		for _, k := range pipeline.Keys() {
			if a, _ := before.Get(k.Path); a != k.Get(&cfg) {
				from[k.Path] = source
			}
		}
		return nil
	}
	set := func(kvs ...string) func(*pipeline.Config) error {
		return func(c *pipeline.Config) error {
			for _, kv := range kvs {
				if err := c.Set(kv); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var steps []func() error
	add := func(source string, f func(*pipeline.Config) error) {
		steps = append(steps, func() error { return layer(source, f) })
	}
	for _, ch := range pipeline.WorldSettings(e) {
		add("world: "+ch.Why, set(ch.KV()))
	}
	if spec.Arch != "" {
		add("arch "+spec.Arch, set("vqvae.arch="+spec.Arch))
	}
	if spec.Preset != "" {
		p, err := pipeline.LookupPreset(spec.Preset)
		if err != nil {
			return pipeline.Config{}, nil, err
		}
		add("preset "+p.Name, func(c *pipeline.Config) (err error) { *c, err = p.Apply(*c); return err })
	}
	if spec.Size != "" && spec.Size != SizeFull {
		if _, err := ParseSize(string(spec.Size)); err != nil {
			return pipeline.Config{}, nil, err
		}
		add("size "+string(spec.Size), func(c *pipeline.Config) error { *c = spec.Size.Pipeline(*c); return nil })
	}
	if spec.Arch != "" {
		add("arch "+spec.Arch, set("vqvae.arch="+spec.Arch))
	}
	if t := spec.File; t != nil {
		add(t.Path, func(c *pipeline.Config) (err error) { *c, err = t.Decode(*c); return err })
		if spec.Arch != "" && t.Sets("vqvae.arch") {
			add("arch "+spec.Arch, set("vqvae.arch="+spec.Arch))
		}
	}
	for _, s := range spec.Sets {
		add(s.Source, set(s.KV))
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return pipeline.Config{}, nil, err
		}
	}
	where := func(key string) string {
		if t := spec.File; t != nil && from[key] == t.Path {
			return t.At(key)
		}
		return from[key]
	}
	var ce *pipeline.ConfigError
	if err := cfg.Validate(); errors.As(err, &ce) {
		msg := "invalid configuration:"
		for i, p := range ce.Problems {
			if i > 0 {
				msg += ";"
			}
			if w := where(p.Key); w != "" {
				msg += " " + w + ":"
			}
			msg += " " + p.Msg
		}
		return pipeline.Config{}, nil, errors.New(msg)
	} else if err != nil {
		return pipeline.Config{}, nil, err
	}
	var origins []Origin
	for _, k := range pipeline.Keys() {
		v := k.Get(&cfg)
		if g, _ := generic.Get(k.Path); v != g && k.Path != "layout" {
			origins = append(origins, Origin{k.Path, v, where(k.Path)})
		}
	}
	return cfg, origins, nil
}
