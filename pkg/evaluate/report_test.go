package evaluate

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func handReport(t *testing.T) *Report {
	r := mustEval(t, handInput(t), DefaultOptions())
	r.Dataset, r.Trainer, r.Seed, r.Backend = "symbolic", "gradient", 7, "go"
	r.Seconds["total"] = 12.5
	r.Seconds["finalize"] = 10
	return r
}

func TestJSONKeysAndRoundTrip(t *testing.T) {
	r := handReport(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(path); err != nil { // replaces the old file
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after WriteJSON, want 1 (no temp files)", len(entries))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range requiredKeys {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	// Nested keys exactly as in the spec.
	vm := m["viterbi_map"].(map[string]any)
	for _, k := range []string{"cutoff_fraction", "precision", "recall", "f1"} {
		if _, ok := vm[k]; !ok {
			t.Errorf("viterbi_map.%s missing", k)
		}
	}
	sw := m["viterbi_map_sweep"].([]any)[0].(map[string]any)
	if _, ok := sw["cutoff_fraction"]; !ok {
		t.Error("viterbi_map_sweep[0].cutoff_fraction missing")
	}
	pm := m["projected_map"].([]any)[0].(map[string]any)
	for _, k := range []string{"threshold", "precision", "recall", "f1"} {
		if _, ok := pm[k]; !ok {
			t.Errorf("projected_map[0].%s missing", k)
		}
	}
	if _, ok := pm["cutoff_fraction"]; ok {
		t.Error("projected_map entries carry cutoff_fraction")
	}
	if m["seconds"].(map[string]any)["total"] != 12.5 || m["env"] != "2x2" || m["seed"] != 7.0 {
		t.Errorf("seconds/env/seed = %v %v %v", m["seconds"], m["env"], m["seed"])
	}
	if !bytes.HasSuffix(b, []byte("}\n")) || !bytes.Contains(b, []byte("\n  \"env\": \"2x2\"")) {
		t.Errorf("not indented JSON with a trailing newline:\n%s", b[:min(len(b), 80)])
	}
	// Stable output: writing twice gives the same bytes.
	b2, _ := r.MarshalIndent()
	if !bytes.Equal(b, b2) {
		t.Error("MarshalIndent is not stable")
	}
	got, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, r)
	}
}

func TestJSONZeroReport(t *testing.T) {
	// A zero report still has every key, with "seconds" an object.
	b, err := (&Report{}).MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range requiredKeys {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	for k, want := range map[string]string{"seconds": "{}", "projected_map": "[]", "viterbi_map_sweep": "[]"} {
		if string(m[k]) != want {
			t.Errorf("%s = %s, want %s", k, m[k], want)
		}
	}
}

func TestReadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ name, path, want string }{
		{"missing file", filepath.Join(dir, "nope.json"), "nope.json"},
		{"not json", write("bad.json", "{not json"), "bad.json: not a JSON report object"},
		{"array", write("arr.json", "[1,2]"), "arr.json: not a JSON report object"},
		{"missing keys", write("part.json", `{"env":"x","seed":1}`), "part.json: missing keys dataset, trainer, num_tokens"},
	} {
		_, err := ReadJSON(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Wrong type for a known key.
	r := handReport(t)
	b, _ := r.MarshalIndent()
	p := write("type.json", strings.Replace(string(b), `"active_codes": 4`, `"active_codes": "four"`, 1))
	if _, err := ReadJSON(p); err == nil || !strings.Contains(err.Error(), "type.json") {
		t.Errorf("wrong type: %v", err)
	}
	// Unknown extra keys are fine.
	p = write("extra.json", strings.Replace(string(b), "{", `{"future_key": 1,`, 1))
	if _, err := ReadJSON(p); err != nil {
		t.Errorf("extra key: %v", err)
	}
}

func TestWriteJSONBadDir(t *testing.T) {
	r := handReport(t)
	if err := r.WriteJSON(filepath.Join(t.TempDir(), "no", "such", "dir.json")); err == nil {
		t.Error("WriteJSON into a missing directory succeeded")
	}
}

func TestWriteTable(t *testing.T) {
	var sb strings.Builder
	if err := handReport(t).WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[1], "symbolic") // values start in one aligned column
	for i, l := range lines[:len(lines)-1] {
		if col < 0 || len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("line %d not aligned at column %d: %q", i, col, l)
		}
	}
	squash := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"env 2x2 (4 places, 4 true edges)",
		"state->place purity 0.8000",
		"Viterbi map @ f=0.002 P 0.800 R 1.000 F1 0.889 (5 edges)",
		"projected map @ eta=0.01 P 0.667 R 1.000 F1 0.800 (6 edges)",
		"action accuracy 0.9375 (coverage 1.0000)",
		"seconds total 12.50, evaluate",
		"finalize 10.00",
		"backend go",
	} {
		if !strings.Contains(squash, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "walk's own") {
		t.Errorf("a walk that crosses every edge is mentioned:\n%s", out)
	}
	r := handReport(t)
	r.WalkMap = &CutoffScore{CutoffFraction: 0.002, EdgeScore: EdgeScore{Precision: 1, Recall: 0.75, Edges: 3}}
	sb.Reset()
	if err := r.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	if want := "the walk's own R 0.750: the held-out walk crosses 3 of 4 true edges more than f·T times"; !strings.Contains(strings.Join(strings.Fields(sb.String()), " "), want) {
		t.Errorf("table lacks %q:\n%s", want, sb.String())
	}
	r = handReport(t)
	r.Training = &Training{HeldOutBits: []float64{0.9, 0.5, 0.51}, Doublings: 1, Confusion: [][]float64{{0.9, 0.1}, {0.05, 0.95}},
		Fallback: "the gradient finalisation's map reads as merged"}
	sb.Reset()
	if err := r.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"budget grown from one clone per token by 1 split(s)",
		"finalised again by EM: the gradient finalisation's map reads as merged",
		"held-out ends of the training walks 0.9000 → 0.5000 → 0.5100 bits/step after each split round",
		"tokens read through a learned 2×2 confusion matrix (diagonal 0.900–0.950)"} {
		if !strings.Contains(strings.Join(strings.Fields(sb.String()), " "), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

func TestAggregate(t *testing.T) {
	mk := func(purity, f1 float64, seed uint64, env string, thresholds ...float64) *Report {
		r := &Report{Env: env, Dataset: "mnist", Trainer: "joint", Seed: seed, ClonePurity: purity,
			ViterbiMap: CutoffScore{0.002, EdgeScore{F1: f1}}, Seconds: map[string]float64{"total": 10 * f1}}
		for _, th := range thresholds {
			r.ProjectedMap = append(r.ProjectedMap, ThresholdScore{th, EdgeScore{Precision: purity}})
		}
		return r
	}
	s := Aggregate([]*Report{
		mk(0.90, 1, 1, "room", 0.01, 0.05),
		nil,
		mk(0.95, 0.5, 2, "room", 0.01),
		mk(1.00, 0, 3, "room", 0.01),
	})
	if s.Runs != 3 || s.Env != "room" || s.Dataset != "mnist" || s.Trainer != "joint" || len(s.Seeds) != 3 {
		t.Errorf("summary header %+v", s)
	}
	// Mean 0.95, sample s.d. sqrt((0.05²+0+0.05²)/2) = 0.05.
	if st := s.Get("clone_purity"); math.Abs(st.Mean-0.95) > 1e-12 || math.Abs(st.SD-0.05) > 1e-12 || st.N != 3 {
		t.Errorf("clone_purity %+v", st)
	}
	if got := s.Format("clone_purity", 2); got != "0.95 ± 0.05" {
		t.Errorf("Format = %q", got)
	}
	// F1 1, 0.5, 0: mean 0.5, s.d. 0.5.
	if got := s.Get("viterbi_map.f1").String(); got != "0.50 ± 0.50" {
		t.Errorf("viterbi f1 = %q", got)
	}
	if st := s.Get("seconds.total"); math.Abs(st.Mean-5) > 1e-12 {
		t.Errorf("seconds.total %+v", st)
	}
	// η = 0.05 was evaluated in one run only.
	if st := s.Get("projected_map@0.05.precision"); st.N != 1 || st.SD != 0 || st.Mean != 0.9 {
		t.Errorf("projected@0.05 %+v", st)
	}
	if s.Format("no_such_metric", 2) != "-" {
		t.Error("absent metric should format as -")
	}
	if s.Metrics[0] != "perplexity" {
		t.Errorf("metric order starts with %q", s.Metrics[0])
	}
	var sb strings.Builder
	if err := s.WriteTable(&sb); err != nil || !strings.Contains(sb.String(), "clone_purity") || !strings.Contains(sb.String(), "3 runs") {
		t.Errorf("summary table (%v):\n%s", err, sb.String())
	}
	mixed := Aggregate([]*Report{mk(1, 1, 1, "room"), mk(1, 1, 2, "aliased")})
	if mixed.Env != "mixed" || mixed.Get("clone_purity").SD != 0 {
		t.Errorf("mixed %+v", mixed)
	}
	if empty := Aggregate(nil); empty.Runs != 0 || len(empty.Metrics) != 0 {
		t.Errorf("empty %+v", empty)
	}
}
