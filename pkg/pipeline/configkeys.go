package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/gradcscg/gradcscg/pkg/settings"
)

// vqvaeTags declares the settings of vqvae.Config (whose package carries only their
// JSON names) in the tag syntax of Config's own fields (package settings).
var vqvaeTags = map[string]reflect.StructTag{
	"k":            `range:"[2,4096]" help:"codebook size K before compaction"`,
	"d":            `range:"[1,1024]" help:"embedding dimension D"`,
	"f":            `range:"[1,1024]" help:"conv encoder base width F"`,
	"side":         `range:"[4,1024]" help:"image side in pixels (a multiple of 4; the data set's)"`,
	"arch":         `enum:"conv|mlp" help:"VQ-VAE architecture: conv (the reference) or mlp (faster)"`,
	"beta":         `range:"[0,100]" help:"commitment weight β"`,
	"gamma":        `range:"(0,1)" help:"EMA decay γ of the codebook"`,
	"eps":          `range:"(0,1]" help:"EMA Laplace smoothing ε"`,
	"tau":          `range:"(0,100]" help:"temperature τ of the soft posterior log ρ"`,
	"revive":       `range:"[0,1)" help:"dead-code threshold, a share of the uniform usage (0: no revival)"`,
	"init":         `enum:"kmeans|uniform" help:"codebook initialisation"`,
	"classify":     `help:"comparison only: add the reference's digit-classification loss (uses labels)"`,
	"num_classes":  `range:"[0,1000]" help:"classes of the classification head"`,
	"class_weight": `range:"[0,100]" help:"weight of the classification loss"`,
}

// unsettable are the keys Set refuses: the run's identity has flags of its own (an
// environment's defaults follow from it), the format version is the reader's, and the
// preset is a label.
var unsettable = map[string]bool{"version": true, "env": true, "layout": true, "preset": true}

var keys = sync.OnceValue(func() []settings.Key {
	return settings.Of(reflect.TypeFor[Config](), map[string]map[string]reflect.StructTag{"vqvae.": vqvaeTags})
})

// Keys returns every setting of Config in the order of the struct, with its
// declaration (range, help); Set refuses version, env, layout and preset.
func Keys() []settings.Key { return append([]settings.Key(nil), keys()...) }

// Settable reports whether Set accepts the key path.
func Settable(path string) bool {
	_, ok := settings.Lookup(keys(), path)
	return ok && !unsettable[path]
}

// LookupKey returns the setting called path.
func LookupKey(path string) (settings.Key, bool) { return settings.Lookup(keys(), path) }

// Get returns the value of the setting path in c, formatted as Set reads it.
func (c Config) Get(path string) (string, bool) {
	k, ok := LookupKey(path)
	if !ok {
		return "", false
	}
	return k.Get(&c), true
}

// Set applies one setting "key=value" (e.g. "joint.alpha_div_end=0.1") to c, checking
// the value against the key's declaration. Three keys carry their dependents: a new
// final.trainer brings that trainer's final.iters (WithFinalTrainer); a new vqvae.arch
// the architecture's defaults of the joint settings that hold the old one's (WithArch);
// a new data.steps sets eval.steps too where it equalled the old data.steps, and caps
// joint.chunk_len. Set the dependents after it to change them too. Rules between
// settings are Validate's.
func (c *Config) Set(kv string) error {
	path, value, ok := strings.Cut(kv, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return fmt.Errorf("%q: want key=value", kv)
	}
	k, ok := LookupKey(path)
	switch {
	case !ok:
		return fmt.Errorf("%s: no such setting%s", path, settings.Suggest(keys(), path))
	case unsettable[path]:
		return fmt.Errorf("%s: not a setting (it has a flag of its own)", path)
	}
	v, err := k.Parse(value)
	if err != nil {
		return fmt.Errorf("%s=%s: %v", path, strings.TrimSpace(value), err)
	}
	switch path {
	case "final.trainer":
		*c = c.WithFinalTrainer(v.String())
	case "vqvae.arch":
		*c = c.WithArch(v.String())
	case "data.steps":
		n := int(v.Int())
		if c.Eval.Steps == c.Data.Steps {
			c.Eval.Steps = n
		}
		c.Data.Steps, c.Joint.ChunkLen = n, min(c.Joint.ChunkLen, n)
	default:
		return k.Set(c, value)
	}
	return nil
}

// A Problem is one invalid setting: its key (empty for a rule that names its settings
// in Msg) and what is wrong.
type Problem struct {
	Key string
	Msg string
}

// ConfigError is Validate's error: every invalid setting.
type ConfigError struct{ Problems []Problem }

func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Msg
	}
	return "pipeline: invalid config: " + strings.Join(msgs, "; ")
}

// maxMergeCodes is the largest codebook that warmup.merge_codes and final.merge_tokens
// merge: the merge costs about k⁴ steps.
const maxMergeCodes = 128

// Validate reports every invalid setting (*ConfigError): each key outside its declared
// range, then the rules between settings. A config file, Set, a notebook and the Go
// API all meet these same bounds.
func (c Config) Validate() error {
	var bad []Problem
	for _, k := range keys() {
		if msg, ok := k.Check(&c); !ok {
			bad = append(bad, Problem{k.Path, msg})
		}
	}
	add := func(ok bool, key, format string, args ...any) {
		if !ok {
			bad = append(bad, Problem{key, fmt.Sprintf(format, args...)})
		}
	}
	if _, err := c.Environment(); err != nil {
		add(false, "env", "env: %v", err)
	}
	d, w, j, f := c.Data, c.Warmup, c.Joint, c.Final
	add(w.Batch <= d.Episodes*d.Steps, "warmup.batch", "warmup.batch=%d: need at most data.episodes × data.steps = %d", w.Batch, d.Episodes*d.Steps)
	add(j.ChunkLen <= d.Steps, "joint.chunk_len", "joint.chunk_len=%d: need at most data.steps = %d", j.ChunkLen, d.Steps)
	add(w.MergeCodes == 0 || c.VQVAE.K <= maxMergeCodes, "warmup.merge_codes",
		"warmup.merge_codes=%g with vqvae.k=%d: need k ≤ %d (the merge costs k⁴ steps)", w.MergeCodes, c.VQVAE.K, maxMergeCodes)
	add(f.MergeTokens == 0 || c.VQVAE.K <= maxMergeCodes, "final.merge_tokens",
		"final.merge_tokens=%g with vqvae.k=%d: need k ≤ %d (the merge costs k⁴ steps)", f.MergeTokens, c.VQVAE.K, maxMergeCodes)
	add(f.MergeTokens == 0 || f.Trainer == FinalEM || f.Budget == BudgetShare, "final.merge_tokens",
		"final.merge_tokens=%g with final.budget=%s: need %s (the joint phase's HMM has the unmerged tokens)", f.MergeTokens, f.Budget, BudgetShare)
	add(!c.Refine.On || f.Trainer == FinalEM || f.Budget == BudgetShare, "refine.on",
		"refine.on=true with final.budget=%s: need %s (the joint phase's HMM has the unrefined tokens)", f.Budget, BudgetShare)
	add(f.Clones >= 1 || f.Budget != BudgetShare, "final.clones", "final.clones=%d: need at least 1 with final.budget=%s", f.Clones, BudgetShare)
	add(f.Trainer != FinalEM || f.Iters >= 1, "final.iters", "final.iters=%d: need at least 1 with final.trainer=%s", f.Iters, FinalEM)
	add(c.VQVAE.Side%4 == 0, "vqvae.side", "vqvae.side=%d: need a multiple of 4", c.VQVAE.Side)
	add(!c.VQVAE.Classify || c.VQVAE.NumClasses >= 2, "vqvae.num_classes", "vqvae.num_classes=%d: need at least 2 with vqvae.classify", c.VQVAE.NumClasses)
	add(c.StopAfterJoint >= 0, "", "StopAfterJoint=%d: need ≥ 0", c.StopAfterJoint)
	if len(bad) == 0 {
		if err := c.VQVAE.Validate(); err != nil {
			add(false, "", "%v", err)
		}
	}
	if len(bad) > 0 {
		return &ConfigError{bad}
	}
	return nil
}
