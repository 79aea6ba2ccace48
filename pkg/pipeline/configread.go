package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/settings"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// One reader reads every configuration file, in either format:
//
//   - version 2 (ConfigVersion): {"version": 2, "env": …, "data": {…}, "vqvae": {…},
//     "warmup": {…}, "joint": {…}, "final": {…}, "eval": {…}};
//   - version 1 (no "version"): the same settings flat (v1Keys), with the VQ-VAE's
//     either in "vqvae" or, older still, at the top level (nestVQVAE).
//
// A key the format does not have is an error naming its line. A user's file (ReadConfig,
// ConfigText.Onto) may leave keys out: they keep the base's values. A run directory's
// own config.json (readRunConfig) must have every key of its version but those that
// version's writers left out (runConfigAbsent; in version 2, refine.*, written before
// the refinement existed: absent, it is off), and is never rewritten.

// v1Keys maps every key of a version-1 file to its key now.
var v1Keys = map[string]string{
	"env": "env", "layout": "layout", "dataset": "dataset", "seed": "seed",
	"episodes": "data.episodes", "steps": "data.steps", "eval_steps": "eval.steps", "decode": "eval.decode",
	"warmup_epochs": "warmup.epochs", "warmup_batch": "warmup.batch", "warmup_lr": "warmup.lr",
	"recenter": "warmup.recenter", "recenter_frames": "warmup.recenter_frames", "merge_codes": "warmup.merge_codes",
	"clones": "joint.clones", "budget": "joint.budget", "pretrain_iters": "joint.pretrain_iters",
	"scaled_emissions": "joint.scaled_emissions", "joint_iters": "joint.iters", "chunk_len": "joint.chunk_len",
	"joint_batch": "joint.batch", "lambda": "joint.lambda", "anneal_frac": "joint.anneal_frac",
	"alpha_div": "joint.alpha_div", "alpha_div_end": "joint.alpha_div_end", "jitter": "joint.jitter",
	"joint_lr": "joint.lr", "hmm_lr_factor": "joint.hmm_lr_factor", "grad_frames": "joint.grad_frames",
	"collapse_frac": "joint.collapse_frac", "throttle_factor": "joint.throttle_factor",
	"collapse_level": "joint.collapse_level", "max_interventions": "joint.max_interventions",
	"freeze_vqvae": "joint.freeze_vqvae", "no_length_norm": "joint.no_length_norm",
	"checkpoint_every": "joint.checkpoint_every", "stop_churn": "joint.stop_churn",
	"merge_tokens": "final.merge_tokens", "final_trainer": "final.trainer", "final_budget": "final.budget",
	"final_clones": "final.clones", "final_iters": "final.iters", "final_lr": "final.lr",
	"final_entropy": "final.entropy", "final_patience": "final.patience", "final_tol": "final.tol",
	"final_splits": "final.plateau_splits", "final_doublings": "final.split_rounds",
	"final_grow": "final.budget_doublings", "final_chunk_above": "final.chunk_above",
	"final_prune": "final.prune", "final_prune_iters": "final.prune_iters",
}

// runConfigAbsent holds the version-1 keys that a run directory's config.json may
// lack: earlier versions left these out when zero, or did not have them. An absent key
// reads as zero, except those of runConfigLegacy.
var runConfigAbsent = map[string]bool{
	"layout": true, "alpha_div_end": true, "jitter": true, "freeze_vqvae": true, "no_length_norm": true,
	"final_prune": true, "final_prune_iters": true, "grad_frames": true, "collapse_level": true, "max_interventions": true,
	"final_tol": true, "stop_churn": true, "final_grow": true, "final_trainer": true, "final_doublings": true,
	"final_chunk_above": true, "pretrain_iters": true, "merge_codes": true, "scaled_emissions": true, "merge_tokens": true,
}

// runConfigLegacy is what the settings that version-1 writers fixed in code meant when
// a run directory's config.json lacks them: final_tol was 1e-5, and the finalisation
// was the gradient trainer's.
var runConfigLegacy = Config{Final: FinalConfig{Tol: 1e-5, Trainer: FinalGradient}}

// ConfigText is a configuration file, checked for syntax and unknown keys and put in
// the current format: what a user's file sets, to be laid over a base (Onto).
type ConfigText struct {
	Path    string         // the file, as errors name it
	Version int            // the format it was written in (1 or ConfigVersion)
	Lines   map[string]int // the line of every key it sets (keys of the current format)
	tree    []byte         // its settings in the current format (JSON)
	probe   Config         // its identity: env, layout, dataset, seed
}

// LoadConfigText reads the configuration file at path (a user's: keys may be absent).
func LoadConfigText(path string) (*ConfigText, error) {
	raw, err := inputfile.ReadFile(path, configLimit)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return ParseConfigText(raw, path, false)
}

// ReadConfig reads a user's configuration file (train --config): keys the file lacks
// take ConfigFor(its environment)'s values; unknown keys and invalid values are errors
// naming their line. A run directory's own config.json is read exactly (LoadRun, Run).
func ReadConfig(path string) (Config, error) {
	raw, err := inputfile.ReadFile(path, configLimit)
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: %w", err)
	}
	return parseConfig(raw, path)
}

// parseConfig is ReadConfig of the file's bytes raw (path names it in errors).
func parseConfig(raw []byte, path string) (Config, error) {
	t, err := ParseConfigText(raw, path, false)
	if err != nil {
		return Config{}, err
	}
	e, err := t.Environment()
	if err != nil {
		return Config{}, err
	}
	return t.Onto(ConfigFor(e))
}

// Environment returns the grid world the file names (its env, or its layout).
func (t *ConfigText) Environment() (*gridworld.Env, error) {
	e, err := t.probe.Environment()
	if err != nil {
		return nil, fmt.Errorf("pipeline: %s: env: %w", t.Path, err)
	}
	return e, nil
}

// Sets reports whether the file sets the key path.
func (t *ConfigText) Sets(path string) bool { _, ok := t.Lines[path]; return ok }

// At names the file and, where the file sets path, its line: "FILE line N".
func (t *ConfigText) At(path string) string {
	if n, ok := t.Lines[path]; ok {
		return fmt.Sprintf("%s line %d", t.Path, n)
	}
	return t.Path
}

// Onto returns base with the file's settings laid over it, validated; an error names
// the file and the line of each bad key.
func (t *ConfigText) Onto(base Config) (Config, error) {
	base, err := t.Decode(base)
	if err != nil {
		return Config{}, err
	}
	var ce *ConfigError
	if err := base.Validate(); errors.As(err, &ce) {
		msgs := make([]string, len(ce.Problems))
		for i, p := range ce.Problems {
			msgs[i] = t.At(p.Key) + ": " + p.Msg
		}
		return Config{}, fmt.Errorf("pipeline: invalid config: %s", strings.Join(msgs, "; "))
	} else if err != nil {
		return Config{}, fmt.Errorf("%s: %w", t.Path, err)
	}
	return base, nil
}

// Decode returns base with the file's settings laid over it, not validated (Onto
// validates); a value of the wrong type is an error naming its line.
func (t *ConfigText) Decode(base Config) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(t.tree))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			what := "a value of another type"
			if k, ok := LookupKey(te.Field); ok {
				what = k.Allowed()
			}
			return Config{}, fmt.Errorf("pipeline: %s: %s: need %s (got a %s)", t.At(te.Field), te.Field, what, te.Value)
		}
		return Config{}, fmt.Errorf("pipeline: %s: %v", t.Path, err)
	}
	base.Version = ConfigVersion
	return base, nil
}

// ParseConfigText checks the bytes raw of the configuration file path and puts them in
// the current format. strict (a run directory's own file) requires every key of the
// file's version, but those its writers left out.
func ParseConfigText(raw []byte, path string, strict bool) (*ConfigText, error) {
	lines, err := keyLines(raw)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	t := &ConfigText{Path: path, Version: 1}
	if v, ok := top["version"]; ok {
		if err := json.Unmarshal(v, &t.Version); err != nil || t.Version != ConfigVersion {
			return nil, fmt.Errorf("pipeline: %s line %d: version %s: this version reads versions 1 (no \"version\") and %d",
				path, lines["version"], v, ConfigVersion)
		}
	}
	if t.Version == 1 {
		err = t.fromV1(raw, lines, strict)
	} else {
		err = t.fromV2(raw, lines, strict)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(t.tree, &t.probe); err != nil { // types are checked by Onto
		t.probe = Config{}
		var id struct {
			Env, Layout string
		}
		_ = json.Unmarshal(t.tree, &id)
		t.probe.Env, t.probe.Layout = id.Env, id.Layout
	}
	return t, nil
}

// addedLater are keys a run's configuration may lack: added after runs were written
// without them, they read as their zero value, which is their default.
var addedLater = map[string]bool{"final.keep_merged": true}

// fromV2 checks a version-2 file's keys.
func (t *ConfigText) fromV2(raw []byte, lines map[string]int, strict bool) error {
	known := map[string]bool{}
	for _, k := range keys() {
		known[k.Path] = true
		for p := k.Path; strings.Contains(p, "."); { // its sections
			p = p[:strings.LastIndex(p, ".")]
			known[p] = true
		}
	}
	for p := range lines {
		if !known[p] {
			return fmt.Errorf("pipeline: %s line %d: unknown key %q%s", t.Path, lines[p], p, settings.Suggest(keys(), p))
		}
	}
	for _, k := range keys() {
		if _, ok := lines[k.Path]; strict && !ok && k.Path != "preset" && !strings.HasPrefix(k.Path, "refine.") && !addedLater[k.Path] {
			return fmt.Errorf("pipeline: %s lacks key %s: not a run's configuration, or damaged", t.Path, k.Path)
		}
	}
	t.Lines, t.tree = lines, raw
	return nil
}

// fromV1 checks a version-1 file's keys and nests them.
func (t *ConfigText) fromV1(raw []byte, lines map[string]int, strict bool) error {
	nested, err := nestVQVAE(raw, t.Path, strict)
	if err != nil {
		return err
	}
	var flat map[string]json.RawMessage
	if err := json.Unmarshal(nested, &flat); err != nil {
		return fmt.Errorf("pipeline: %s: %v", t.Path, err)
	}
	t.Lines = map[string]int{}
	tree := map[string]map[string]json.RawMessage{}
	out := map[string]any{}
	var missing []string
	for old := range v1Keys {
		if _, ok := flat[old]; !ok && strict && !runConfigAbsent[old] {
			missing = append(missing, old)
		}
	}
	if _, ok := flat["vqvae"]; !ok && strict {
		missing = append(missing, "vqvae")
	}
	for old, v := range flat {
		if old == "vqvae" {
			var vf map[string]json.RawMessage
			if err := json.Unmarshal(v, &vf); err != nil {
				return fmt.Errorf("pipeline: %s line %d: vqvae: %v", t.Path, lines["vqvae"], err)
			}
			for name := range vf {
				if _, ok := LookupKey("vqvae." + name); !ok {
					return fmt.Errorf("pipeline: %s line %d: unknown key \"vqvae.%s\"", t.Path, lines["vqvae."+name], name)
				}
				t.Lines["vqvae."+name] = lineOr(lines, "vqvae."+name, lines[legacyVQVAEKey(name)])
			}
			for _, k := range keys() {
				if name, ok := strings.CutPrefix(k.Path, "vqvae."); ok && strict && vf[name] == nil {
					missing = append(missing, k.Path)
				}
			}
			out["vqvae"] = v
			continue
		}
		now, ok := v1Keys[old]
		if !ok {
			return fmt.Errorf("pipeline: %s line %d: unknown key %q%s", t.Path, lines[old], old, settings.Suggest(keys(), old))
		}
		t.Lines[now] = lines[old]
		section, name, nested := strings.Cut(now, ".")
		if !nested {
			out[now] = v
			continue
		}
		if tree[section] == nil {
			tree[section] = map[string]json.RawMessage{}
		}
		tree[section][name] = v
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("pipeline: %s lacks key(s) %s: not a run's configuration, or damaged", t.Path, strings.Join(missing, ", "))
	}
	for section, fields := range tree {
		out[section] = fields
	}
	t.tree, err = json.Marshal(out)
	return err
}

func lineOr(lines map[string]int, key string, or int) int {
	if n, ok := lines[key]; ok {
		return n
	}
	return or
}

// legacyVQVAEKey is the top-level key of a flat-VQ-VAE file that holds vqvae's field
// name (nestVQVAE).
func legacyVQVAEKey(name string) string {
	for _, kv := range legacyVQVAE {
		if kv[1] == name {
			return kv[0]
		}
	}
	return name
}

// readRunConfig reads the config.json of a run directory exactly as it was written: a
// missing key is not filled from today's defaults (which would resume or describe the
// run with settings it never had) but is an error, or, for the version-1 keys of
// runConfigAbsent, what it meant (zero, or runConfigLegacy).
func readRunConfig(path string) (Config, error) {
	raw, err := inputfile.ReadFile(path, configLimit)
	if err != nil {
		return Config{}, fmt.Errorf("pipeline: %w", err)
	}
	return parseRunConfig(raw, path)
}

// parseRunConfig is readRunConfig of the file's bytes raw (path names it in errors).
func parseRunConfig(raw []byte, path string) (Config, error) {
	t, err := ParseConfigText(raw, path, true)
	if err != nil {
		return Config{}, err
	}
	base := Config{}
	if t.Version == 1 {
		base = runConfigLegacy
	}
	base.Refine = DefaultRefine() // absent (written before the refinement): off
	return t.Onto(base)
}

// legacyVQVAE are the VQ-VAE's fields as configurations before VQVAE was nested wrote
// them, at the top level: the key there and in vqvae.Config's JSON.
var legacyVQVAE = [][2]string{{"k", "k"}, {"d", "d"}, {"f", "f"}, {"arch", "arch"}, {"beta", "beta"}, {"gamma", "gamma"},
	{"eps", "eps"}, {"tau", "tau"}, {"revive", "revive"}, {"supervised_warmup", "classify"}}

// nestVQVAE rewrites a version-1 configuration written before the VQ-VAE's settings
// were nested (at the top level) into one with "vqvae": its fields go there, with what
// that version fixed in code (vqvae.DefaultConfig's side, codebook initialisation and
// class head) for the rest. A run's configuration (strict) must then have had every
// one of them but supervised_warmup, which it left out when false. A configuration
// with "vqvae" is returned as it is; one with both forms is an error.
func nestVQVAE(raw []byte, path string, strict bool) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	var flat []string
	for _, kv := range legacyVQVAE {
		if _, ok := fields[kv[0]]; ok {
			flat = append(flat, kv[0])
		}
	}
	if len(flat) == 0 {
		return raw, nil
	}
	if _, ok := fields["vqvae"]; ok {
		return nil, fmt.Errorf("pipeline: %s: field(s) %s belong in \"vqvae\"", path, strings.Join(flat, ", "))
	}
	var typed struct { // type errors, with the line of the file
		K, D, F                       int
		Arch                          string
		Beta, Gamma, Eps, Tau, Revive float64
		SupervisedWarmup              bool `json:"supervised_warmup"`
	}
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %v", path, jsonErr(raw, err))
	}
	var v map[string]json.RawMessage
	if b, err := json.Marshal(vqvae.DefaultConfig(2)); err != nil {
		return nil, err
	} else if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if !strict { // a user's file: what it lacks comes from the base
		v = map[string]json.RawMessage{}
	}
	var missing []string
	for _, kv := range legacyVQVAE {
		x, ok := fields[kv[0]]
		switch {
		case ok:
			v[kv[1]] = x
			delete(fields, kv[0])
		case strict && kv[0] != "supervised_warmup":
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("pipeline: %s lacks field(s) %s: not a run's configuration, or damaged", path, strings.Join(missing, ", "))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	fields["vqvae"] = b
	return json.Marshal(fields)
}

// keyLines returns the line of every key of the JSON object raw, by its path (keys
// joined by dots), or a syntax error naming its line.
func keyLines(raw []byte) (map[string]int, error) {
	type frame struct {
		obj     bool
		prefix  string
		wantKey bool
		key     string
	}
	lineAt := func(off int64) int { return 1 + bytes.Count(raw[:min(int(off), len(raw))], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	lines := map[string]int{}
	var stack []*frame
	done := func() { // a value ended: its object wants the next key
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineAt(dec.InputOffset()), err)
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			f := &frame{obj: tok == json.Delim('{'), wantKey: true}
			if top != nil {
				f.prefix = top.prefix + top.key + "."
			}
			if top == nil && !f.obj {
				return nil, errors.New("line 1: want a JSON object")
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if top == nil {
			return nil, errors.New("line 1: want a JSON object")
		}
		if top.obj && top.wantKey {
			top.key, top.wantKey = tok.(string), false
			lines[top.prefix+top.key] = lineAt(dec.InputOffset())
			continue
		}
		done()
	}
	if len(stack) > 0 || len(raw) == 0 {
		return nil, fmt.Errorf("line %d: unexpected end of JSON input", lineAt(int64(len(raw))))
	}
	return lines, nil
}

// jsonErr adds the line number to a JSON syntax or type error.
func jsonErr(raw []byte, err error) error {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 {
		return err
	}
	line := 1 + bytes.Count(raw[:min(int(off), len(raw))], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}
