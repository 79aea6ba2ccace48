package experiment

import (
	"fmt"

	"github.com/gradcscg/gradcscg/pkg/pipeline"
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

// RunName is the default run directory name of cfg: <env>_<dataset>_seed<N>, with
// "_<arch>" for a VQ-VAE other than conv, "_ci" or "_smoke" for a run of that Size
// and a suffix per ablation or per joint-phase setting that differs from a built-in
// environment's defaults, so that two configurations never share a directory by
// default (a run directory refuses a config other than its own).
func RunName(cfg pipeline.Config) string {
	name := fmt.Sprintf("%s_%s_seed%d", cfg.Env, cfg.Dataset, cfg.Seed)
	arch := string(cfg.VQVAE.Arch)
	if arch != "conv" {
		name += "_" + arch
	}
	d, err := pipeline.DefaultConfig(cfg.Env)
	known := err == nil
	d = d.WithArch(arch)
	for _, z := range []Size{SizeCI, SizeSmoke} {
		if r := z.Pipeline(d); known && cfg.Steps == r.Steps && cfg.Episodes == r.Episodes {
			name += "_" + string(z)
			d = r
			break
		}
	}
	if cfg.FreezeVQVAE {
		name += "_frozen"
	}
	if cfg.NoLengthNorm {
		name += "_nolennorm"
	}
	if cfg.AlphaDiv == 0 {
		name += "_nodiv"
	}
	if cfg.ScaledEmissions {
		name += "_scaled"
	}
	if known {
		name += settingsSuffix(cfg, d)
	}
	if cfg.VQVAE.Classify {
		name += "_supervised"
	}
	return name
}

// settingsSuffix names the joint-phase settings of cfg that differ from d's.
func settingsSuffix(cfg, d pipeline.Config) string {
	name := ""
	if cfg.AlphaDiv != 0 && cfg.AlphaDiv != d.AlphaDiv {
		name += fmt.Sprintf("_div%g", cfg.AlphaDiv)
	}
	if cfg.AlphaDivEnd != d.AlphaDivEnd {
		name += fmt.Sprintf("_divend%g", cfg.AlphaDivEnd)
	}
	if cfg.VQVAE.Tau != d.VQVAE.Tau {
		name += fmt.Sprintf("_tau%g", cfg.VQVAE.Tau)
	}
	if cfg.Jitter != d.Jitter {
		name += fmt.Sprintf("_jitter%d", cfg.Jitter)
	}
	if cfg.FinalPrune != d.FinalPrune {
		name += fmt.Sprintf("_prune%g", cfg.FinalPrune)
	}
	if cfg.FinalGrow != d.FinalGrow {
		name += fmt.Sprintf("_grow%d", cfg.FinalGrow)
	}
	if cfg.FinalTrainer != d.FinalTrainer {
		name += "_final" + cfg.FinalTrainer
	}
	if cfg.FinalChunkAbove != d.FinalChunkAbove {
		name += fmt.Sprintf("_chunkabove%g", cfg.FinalChunkAbove)
	}
	if cfg.FinalIters != d.WithFinalTrainer(cfg.FinalTrainer).FinalIters { // the trainer's default at this size
		name += fmt.Sprintf("_iters%d", cfg.FinalIters)
	}
	if cfg.FinalTrainer == pipeline.FinalEM && cfg.FinalDoublings != d.FinalDoublings {
		name += fmt.Sprintf("_doublings%d", cfg.FinalDoublings)
	}
	if cfg.GradFrames != d.GradFrames {
		name += fmt.Sprintf("_grad%d", cfg.GradFrames)
	}
	if cfg.CollapseLevel != d.CollapseLevel {
		name += fmt.Sprintf("_cl%g", cfg.CollapseLevel)
	}
	if cfg.JointIters != d.JointIters {
		name += fmt.Sprintf("_joint%d", cfg.JointIters)
	}
	if cfg.PretrainIters != d.PretrainIters {
		name += fmt.Sprintf("_pretrain%d", cfg.PretrainIters)
	}
	if cfg.VQVAE.K != d.VQVAE.K {
		name += fmt.Sprintf("_codes%d", cfg.VQVAE.K)
	}
	if cfg.MergeCodes != d.MergeCodes {
		name += fmt.Sprintf("_merge%g", cfg.MergeCodes)
	}
	if cfg.MergeTokens != d.MergeTokens {
		name += fmt.Sprintf("_mergetokens%g", cfg.MergeTokens)
	}
	if cfg.StopChurn != d.StopChurn {
		name += fmt.Sprintf("_churn%g", cfg.StopChurn)
	}
	if cfg.Lambda != d.Lambda {
		name += fmt.Sprintf("_lambda%g", cfg.Lambda)
	}
	return name
}
