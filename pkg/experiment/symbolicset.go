package experiment

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/gradcscg/gradcscg/pkg/settings"
)

// symbolicTags declares the settings of Symbolic (package settings' tag syntax), by
// JSON name: their ranges, lines of help, and the names that say what Doublings and
// GrowRounds do (split_rounds, budget_doublings).
var symbolicTags = map[string]reflect.StructTag{
	"env":              `help:"built-in environment, or the custom layout's name"`,
	"layout":           `help:"custom layout (text)"`,
	"trainer":          `enum:"gradient|em" help:"training rule: gradient (Adam on π, Θ) or em (Baum–Welch)"`,
	"seed":             `help:"random seed"`,
	"episodes":         `range:"[1,1000]" help:"training walks"`,
	"steps":            `range:"[2,10000000]" help:"observations per training walk (eval_steps follows where equal)"`,
	"eval_steps":       `range:"[2,10000000]" help:"observations of the held-out walk"`,
	"clones_per_class": `range:"[1,2000]" help:"clones per class: a budget given, trained as given (no splitting)"`,
	"iters":            `range:"[0,1000000]" help:"most iterations of a training (0: the trainer's default)"`,
	"restarts":         `range:"[0,100]" help:"starts trained; above 1 trains the reference budget (EM keeps the best, gradient the first that fits)"`,
	"until_fit":        `help:"restarts stop at the first start whose map predicts its training walks"`,
	"pseudocount":      `range:"[0,1000000]" help:"em: pseudocount added to the transition counts"`,
	"viterbi_iters":    `range:"[0,100000]" help:"em: hard (Viterbi) iterations after Baum–Welch (0: none)"`,
	"init":             `enum:"uniform|random" help:"initial transitions: uniform (the reference's) or random (the original CSCG's U(0, 1))"`,
	"lr":               `range:"[0,10]" help:"gradient: Adam rate on the logits (0: the trainer's default)"`,
	"entropy":          `range:"[0,100]" help:"gradient: transition-entropy weight η"`,
	"tol":              `range:"[0,1]" help:"gradient: least gain in ℓ/T per step that counts as progress (0: the trainer's default)"`,
	"grow_rounds":      `key:"budget_doublings" range:"[0,10]" help:"a given budget: most doublings of the tokens that use every clone (0: fixed)"`,
	"doublings":        `key:"split_rounds" range:"[0,16]" help:"grow the budget from one clone per token by at most this many rounds of splitting (0: a given budget)"`,
	"max_states":       `range:"[0,2048]" help:"most states a budget grown by splitting reaches (0: the most, 2048)"`,
	"fold_alike":       `range:"[0,1)" help:"gradient, splitting: fold kept clones whose moves agree within this total variation (0: none)"`,
	"fold_cost":        `range:"[0,1]" help:"splitting with fold_alike: share of the last split's gain a fold of clones alike a few moves ahead may cost"`,
	"chunk_above":      `range:"[0,1e15]" help:"gradient: multiply-adds per pass above which a training reads random chunks (0: never)"`,
	"drop_cost":        `range:"[0,10]" help:"gradient, splitting: share of bits per step that dropping rarely visited clones may cost"`,
	"drop_floor":       `range:"[0,1]" help:"gradient, splitting: a rise in bits per step a drop may always cost"`,
	"split_share":      `range:"[0,1)" help:"splitting: split only the clones with at least this share of their token's visits (0: all)"`,
	"split_surprised":  `help:"gradient, splitting: split only the clones held one step before a surprise"`,
}

// symbolicFlagKeys are the settings that have flags of their own.
var symbolicFlagKeys = map[string]bool{"env": true, "layout": true, "trainer": true, "seed": true}

var symbolicKeys = sync.OnceValue(func() []settings.Key {
	return settings.Of(reflect.TypeFor[Symbolic](), map[string]map[string]reflect.StructTag{"": symbolicTags})
})

// SymbolicKeys returns the settings of Symbolic that Set takes, in the struct's order.
func SymbolicKeys() []settings.Key {
	var out []settings.Key
	for _, k := range symbolicKeys() {
		if !symbolicFlagKeys[k.Path] {
			out = append(out, k)
		}
	}
	return out
}

// Get returns the value of the setting path in s, formatted as Set reads it.
func (s Symbolic) Get(path string) (string, bool) {
	k, ok := settings.Lookup(symbolicKeys(), path)
	if !ok {
		return "", false
	}
	return k.Get(&s), true
}

// Set applies one setting "key=value" to s, checked against its declaration. The
// settings that choose how the budget is sized carry their dependents, as the flags
// did: a budget given (clones_per_class), budget_doublings or restarts above 1 turn a
// budget grown by splitting into the reference one (FixedBudget), clones_per_class
// with no budget doublings; split_rounds 0 is FixedBudget, split_rounds above 0 grows
// the budget by splitting from one start; fold_alike 0 takes fold_cost to 0; a new
// steps takes eval_steps along where they were equal. Validate checks the rest.
func (s *Symbolic) Set(kv string) error {
	path, value, ok := strings.Cut(kv, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return fmt.Errorf("%q: want key=value", kv)
	}
	k, ok := settings.Lookup(symbolicKeys(), path)
	switch {
	case !ok:
		return fmt.Errorf("%s: no such setting%s", path, settings.Suggest(symbolicKeys(), path))
	case symbolicFlagKeys[path]:
		return fmt.Errorf("%s: not a setting (it has a flag of its own)", path)
	}
	v, err := k.Parse(value)
	if err != nil {
		return fmt.Errorf("%s=%s: %v", path, strings.TrimSpace(value), err)
	}
	switch path {
	case "clones_per_class":
		*s = s.FixedBudget(0)
		s.GrowRounds = 0
	case "budget_doublings":
		*s = s.FixedBudget(0)
	case "restarts":
		if v.Int() > 1 {
			*s = s.FixedBudget(int(v.Int()))
		}
	case "split_rounds":
		if v.Int() == 0 {
			*s = s.FixedBudget(0)
			return nil
		}
		s.GrowRounds, s.Restarts, s.UntilFit = 0, 1, false
	case "fold_alike":
		if v.Float() == 0 {
			s.FoldCost = 0
		}
	case "steps":
		if s.EvalSteps == s.Steps {
			s.EvalSteps = int(v.Int())
		}
	}
	return k.Set(s, value)
}

// A SymbolicPreset is a named change of a symbolic experiment.
type SymbolicPreset struct {
	Name, Summary string
	Apply         func(Symbolic) Symbolic
}

// SymbolicPresets are the named presets of a symbolic experiment.
var SymbolicPresets = []SymbolicPreset{
	{"fixed-budget", "the reference clone budget, not one grown by splitting (EM: best of 3 starts; gradient: up to 5), doubled where it binds",
		func(s Symbolic) Symbolic { return s.FixedBudget(0) }},
}

// LookupSymbolicPreset returns the symbolic preset called name.
func LookupSymbolicPreset(name string) (SymbolicPreset, error) {
	var names []string
	for _, p := range SymbolicPresets {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return SymbolicPreset{}, fmt.Errorf("preset %q: want %s", name, strings.Join(names, ", "))
}

var vqStudyKeys = sync.OnceValue(func() []settings.Key { return settings.Of(reflect.TypeFor[VQStudy](), nil) })

// VQStudyKeys returns the settings of VQStudy that Set takes.
func VQStudyKeys() []settings.Key { return append([]settings.Key(nil), vqStudyKeys()...) }

// Set applies one setting "key=value" (VQStudyKeys) to s, checked against its
// declaration; Check checks the rest.
func (s *VQStudy) Set(kv string) error {
	path, value, ok := strings.Cut(kv, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return fmt.Errorf("%q: want key=value", kv)
	}
	k, ok := settings.Lookup(vqStudyKeys(), path)
	if !ok {
		return fmt.Errorf("%s: no such setting%s", path, settings.Suggest(vqStudyKeys(), path))
	}
	if err := k.Set(s, value); err != nil {
		return fmt.Errorf("%s=%s: %v", path, strings.TrimSpace(value), err)
	}
	return nil
}
