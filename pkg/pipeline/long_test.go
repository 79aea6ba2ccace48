package pipeline

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// TestLongRun runs a full-size benchmark (paper episode counts and lengths) when
// GRADCSCG_LONG=1: GRADCSCG_ENV (default aliased), GRADCSCG_SEED (default 1), run
// directory GRADCSCG_RUN_DIR (default a temporary directory; an existing run resumes),
// GRADCSCG_JOINT_ITERS overrides the joint iterations. Progress goes to stderr.
func TestLongRun(t *testing.T) {
	if os.Getenv("GRADCSCG_LONG") != "1" {
		t.Skip("set GRADCSCG_LONG=1 to run a full-size benchmark")
	}
	env := os.Getenv("GRADCSCG_ENV")
	if env == "" {
		env = "aliased"
	}
	cfg, err := DefaultConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := strconv.ParseUint(os.Getenv("GRADCSCG_SEED"), 10, 64); err == nil {
		cfg.Seed = s
	}
	if n, err := strconv.Atoi(os.Getenv("GRADCSCG_JOINT_ITERS")); err == nil {
		cfg.Joint.Iters = n
	}
	dir := os.Getenv("GRADCSCG_RUN_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	rep, err := Run(context.Background(), dir, cfg, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := rep.MarshalIndent()
	t.Logf("%s", raw)
}

// TestReevaluate re-scores the finished run in GRADCSCG_RUN_DIR with the current
// Evaluate (when GRADCSCG_LONG=1) and logs the report; it does not change the directory.
func TestReevaluate(t *testing.T) {
	dir := os.Getenv("GRADCSCG_RUN_DIR")
	if os.Getenv("GRADCSCG_LONG") != "1" || dir == "" {
		t.Skip("set GRADCSCG_LONG=1 and GRADCSCG_RUN_DIR to re-evaluate a finished run")
	}
	res, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := res.Config.Environment()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(res.VQVAE, res.HMM, env, res.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := rep.MarshalIndent()
	t.Logf("%s", raw)
}
