package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
)

// Without HMM pre-training, startJoint counts the compaction's seconds once: from the
// start it is given to the joint model's commit. Given a start an hour ago, the phase's
// "compact" seconds are that hour plus what startJoint itself took, not twice the hour.
func TestStartJointCountsCompactionOnce(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Warmup.Epochs, cfg.Joint.PretrainIters = 0, 0
	dir := t.TempDir()
	if err := checkOrWriteConfig(dir, cfg); err != nil {
		t.Fatal(err)
	}
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	backend, _, err := hmmgraph.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{ctx: context.Background(), cfg: cfg, d: d, backend: backend}
	ck := &checkpoint{dir: dir, st: st}
	m, err := trainVQVAE(s, ck)
	if err != nil {
		t.Fatal(err)
	}
	vq, tokens, share, err := compactTokens(s, ck, m)
	if err != nil {
		t.Fatal(err)
	}
	const ago = time.Hour
	before := time.Now()
	if _, err := startJoint(s, ck, vq, tokens, share, before.Add(-ago)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(before)
	if got := st.Seconds["compact"]; got < ago.Seconds() || got > (ago+took).Seconds() {
		t.Errorf(`seconds["compact"] = %.1f, want in [%.1f, %.1f]`, got, ago.Seconds(), (ago + took).Seconds())
	}
	if st.Phase != PhaseJoint {
		t.Errorf("phase %q after startJoint, want %q", st.Phase, PhaseJoint)
	}
}
