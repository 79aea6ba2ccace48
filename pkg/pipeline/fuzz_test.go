package pipeline

import (
	"encoding/json"
	"testing"
)

// FuzzRunFiles: no bytes in config.json or state.gob panic their readers; a config they
// accept is valid and a state names only files inside the directory. Seeds: a default
// configuration, a state, and damaged copies.
func FuzzRunFiles(f *testing.F) {
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		f.Fatal(err)
	}
	rawCfg, _ := json.MarshalIndent(cfg, "", "  ")
	st := &runState{Phase: PhaseJoint, Checkpoint: "joint-000005.ckpt", JointIter: 5, Identity: "x",
		Files: map[string]string{"joint-000005.ckpt": "y"}, Seconds: map[string]float64{"warmup": 1}}
	rawSt, err := encodeState(st)
	if err != nil {
		f.Fatal(err)
	}
	for _, raw := range [][]byte{rawCfg, rawSt} {
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
		f.Add(raw[len(stateMagic):])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, parse := range []func([]byte, string) (Config, error){parseConfig, parseRunConfig} {
			if c, err := parse(raw, ConfigFile); err == nil {
				if err := c.Validate(); err != nil {
					t.Fatalf("accepted config is invalid: %v", err)
				}
			}
		}
		if s, err := decodeState(raw, StateFile); err == nil {
			for _, n := range []string{s.Checkpoint, s.Healthy, s.Warmup} {
				if n != "" && !plainName(n) {
					t.Fatalf("accepted state names %q", n)
				}
			}
		}
	})
}
