package experiment

import (
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// TestSize checks the size knob on pipelines and VQ-VAE studies.
func TestSize(t *testing.T) {
	for _, s := range []string{"full", "ci", "smoke"} {
		if z, err := ParseSize(s); err != nil || string(z) != s {
			t.Errorf("ParseSize(%q) = %q, %v", s, z, err)
		}
	}
	if _, err := ParseSize("huge"); err == nil {
		t.Error(`ParseSize("huge"): no error`)
	}
	cfg, err := pipeline.DefaultConfig("room")
	if err != nil {
		t.Fatal(err)
	}
	if got := SizeFull.Pipeline(cfg); got.Data.Steps != cfg.Data.Steps || got.VQVAE.Arch != cfg.VQVAE.Arch || got.Joint.Iters != cfg.Joint.Iters {
		t.Errorf("full size changed the configuration")
	}
	if ci, want := SizeCI.Pipeline(cfg), pipeline.CISized(cfg); ci.Data.Steps != want.Data.Steps || ci.Joint.Iters != want.Joint.Iters || ci.VQVAE.Arch != "mlp" {
		t.Errorf("ci size is not pipeline.CISized: %+v", ci)
	}
	smoke := SizeSmoke.Pipeline(cfg)
	if smoke.VQVAE.Arch != "mlp" || smoke.Data.Steps != 600 || smoke.Joint.Iters != 16 || smoke.Validate() != nil {
		t.Errorf("smoke size %+v (%v)", smoke, smoke.Validate())
	}
	env, _ := gridworld.Named("aliased")
	s := DefaultVQStudy(env)
	if SizeFull.VQStudy(s) != s {
		t.Error("full size changed the study")
	}
	if v := SizeSmoke.VQStudy(s); v.Steps != 150 || v.Check() != nil || SizeCI.VQStudy(s) != v {
		t.Errorf("smoke study %+v (%v); ci must equal it", v, v.Check())
	}
}
