package pipeline_test

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// A run's configuration: an environment's defaults, one setting changed by its key
// (the same key=value as `gradcscg train --set`), and Validate's one error for a value
// out of range. big_room names settings of its own, which its defaults carry.
func ExampleConfig_Set() {
	cfg, err := pipeline.DefaultConfig("aliased")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Joint.Iters, cfg.Joint.AlphaDivEnd, cfg.Final.Trainer)
	if err := cfg.Set("joint.alpha_div_end=0.1"); err != nil {
		fmt.Println(err)
	}
	fmt.Println(cfg.Joint.AlphaDivEnd, cfg.Validate())

	cfg.Joint.Jitter = 30
	fmt.Println(cfg.Validate())

	big, _ := pipeline.DefaultConfig("big_room")
	fmt.Println(big.VQVAE.K, big.Warmup.MergeCodes, big.Final.Trainer)
	// Output:
	// 1500 0.03 gradient
	// 0.1 <nil>
	// pipeline: invalid config: joint.jitter=30: need an integer in [0, 27]
	// 40 30 em
}

// The paper's configuration is a preset laid over an environment's defaults.
func ExamplePreset_Apply() {
	cfg, _ := pipeline.DefaultConfig("two_rooms")
	p, err := pipeline.LookupPreset("paper")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err = p.Apply(cfg)
	fmt.Println(cfg.Preset, cfg.VQVAE.Tau, cfg.Joint.AlphaDiv, cfg.Joint.Iters, cfg.Final.Budget, cfg.Eval.Decode, err)

	_, err = pipeline.LookupPreset("papr")
	fmt.Println(err)
	// Output:
	// paper 1 0.1 2000 joint hard <nil>
	// preset "papr": want one of frozen, no-collapse-response, no-diversity, no-jitter, no-length-norm, no-pruning, other-grad-frames, paper, paper-joint, refine
}
