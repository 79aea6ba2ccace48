package pipeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// FuzzRunFiles: no bytes in config.json, state.gob, or a shipped run's manifest.json
// and history.jsonl panic their readers; a config they accept is valid, a state names
// only files inside the directory, and a manifest is of this format and lists exactly
// the shipped files. Seeds: a default configuration, a state, a manifest, a history
// line, and damaged copies.
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
	rawManifest, _ := json.Marshal(Manifest{Format: ShippedFormat, Codes: []int{0, 2},
		Files: map[string]string{ConfigFile: "a", ReportFile: "b", HistoryFile: "c", CHMMFile: "d", WeightsFile: "e"}})
	rawHistory := []byte(`{"step":1,"phase":"warmup","rec":0.1,"commit":0.02,"nll_per_step":0,"div":0,"lambda":0,"perplexity":3.5,"seconds":0.4}` + "\n")
	for _, raw := range [][]byte{rawCfg, rawSt, rawManifest, rawHistory} {
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
		if m, err := parseManifest(raw); err == nil {
			if m.Format != ShippedFormat || len(m.Files) != len(shippedFiles) {
				t.Fatalf("accepted manifest %+v", m)
			}
			for name := range m.Files {
				if !slices.Contains(shippedFiles, name) {
					t.Fatalf("accepted manifest lists %q", name)
				}
			}
		}
		_, _ = parseHistory(bytes.NewReader(raw), HistoryFile)
		if s, err := decodeState(raw, StateFile); err == nil {
			for _, n := range []string{s.Checkpoint, s.Healthy, s.Warmup} {
				if n != "" && !plainName(n) {
					t.Fatalf("accepted state names %q", n)
				}
			}
		}
	})
}
