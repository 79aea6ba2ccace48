package plan

import (
	"math"
	"unsafe"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// Cost is an estimate of what Evaluate does: Ops, the multiply-adds of its filter
// updates and plans, and Bytes, the memory it holds at its peak.
type Cost struct {
	Ops   float64
	Bytes float64
}

// EvalCost estimates Evaluate(mp, env, obs, cfg) before it runs, per pair: the filter
// over the localisation and demonstration walks (N² per step, a dense belief), the
// oracle's filter over the true places, and in every mode the first plan and, for
// MPC, a filter step and a plan at every step of the budget (BudgetFactor · the
// room's diameter + BudgetExtra); a plan costs at most MaxSteps (N) passes over the
// planning graph's moves. Bytes are the walks of one pair (a soft observation holds K
// float32) and every trial of the report (with Trace, its walk and three beliefs).
func EvalCost(mp *Map, env *gridworld.Env, cfg EvalConfig) (Cost, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Cost{}, err
	}
	n, places := float64(mp.N), float64(env.NumPlaces())
	moves := 0.0
	for _, m := range mp.moves {
		moves += float64(len(m))
	}
	pc, err := cfg.Plan.withDefaults(mp.N)
	if err != nil {
		return Cost{}, err
	}
	plan := float64(pc.MaxSteps) * moves
	diameter := 0
	for _, row := range Distances(env) {
		for _, d := range row {
			diameter = max(diameter, d)
		}
	}
	budget := math.Floor(cfg.BudgetFactor*float64(diameter)) + float64(cfg.BudgetExtra)
	walks := float64(cfg.LocalizeSteps) + float64(cfg.DemoSteps)
	perPair := walks*n*n + float64(cfg.DemoSteps)*places
	for _, m := range cfg.Modes {
		perPair += plan
		if m == MPC {
			perPair += budget * (n*n + plan)
		}
	}
	obsBytes := float64(unsafe.Sizeof(Obs{})) + 16 // and a place and an action per step
	if cfg.Filter.Soft {
		obsBytes += 4 * float64(mp.K)
	}
	trial := float64(unsafe.Sizeof(Trial{}))
	if cfg.Trace {
		trial += 8*budget + 3*8*n
	}
	pairs, modes := float64(cfg.Pairs), float64(len(cfg.Modes))
	return Cost{Ops: pairs * perPair, Bytes: walks*obsBytes + pairs*modes*trial}, nil
}
