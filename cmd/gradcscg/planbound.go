package main

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// maxPlanOps bounds the work of one plan command (plan.EvalCost's multiply-adds, hours
// of one core; the default evaluation of a built-in room's map is far below it). A
// request under it shows its progress with an ETA, pair by pair.
const maxPlanOps = 1e13

// checkPlanSize refuses, before anything runs, an evaluation whose estimated work
// (plan.EvalCost) is above maxPlanOps or whose memory does not fit (checkMemory), in
// one line that states the estimate, the bound and the flags that set it.
func checkPlanSize(s *experiment.PlanSetup, cfg plan.EvalConfig) error {
	c, err := plan.EvalCost(s.Map, s.Env, cfg)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("--pairs %d with --localize %d and --demo %d on a map of %d states", cfg.Pairs, cfg.LocalizeSteps, cfg.DemoSteps, s.Map.N)
	if c.Ops > maxPlanOps {
		return fmt.Errorf("%s: about %.2g filter and planning operations, more than the %.0g one plan command may take: use fewer pairs or shorter walks",
			what, c.Ops, float64(maxPlanOps))
	}
	return checkMemory(c.Bytes, what)
}
