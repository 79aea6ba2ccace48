package evaluate

import (
	"path/filepath"
	"testing"
)

// TestExtraNumbers: a number and a map of numbers read the same from a fresh report
// (int, map[string]float64) and after a JSON round trip (float64, map[string]any).
func TestExtraNumbers(t *testing.T) {
	r := &Report{Extra: map[string]any{
		"joint_interventions": 2,
		"final_num_states":    138.0,
		"hard_decoding":       map[string]float64{"viterbi_map_f1": 0.75},
		"decode":              "soft",
	}}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range map[string]*Report{"fresh": r, "read back": back} {
		if x, ok := rep.ExtraNumber("joint_interventions"); !ok || x != 2 {
			t.Errorf("%s: joint_interventions %v %v", name, x, ok)
		}
		if x, ok := rep.ExtraNumber("final_num_states"); !ok || x != 138 {
			t.Errorf("%s: final_num_states %v %v", name, x, ok)
		}
		if _, ok := rep.ExtraNumber("decode"); ok {
			t.Errorf("%s: a string read as a number", name)
		}
		if _, ok := rep.ExtraNumber("absent"); ok {
			t.Errorf("%s: an absent key read as a number", name)
		}
		if f := rep.ExtraNumbers("hard_decoding")["viterbi_map_f1"]; f != 0.75 {
			t.Errorf("%s: hard_decoding F1 %v", name, f)
		}
		if rep.ExtraNumbers("decode") != nil {
			t.Errorf("%s: a string read as a map", name)
		}
	}
	var nilRep *Report
	if _, ok := nilRep.ExtraNumber("x"); ok || nilRep.ExtraNumbers("x") != nil {
		t.Error("nil report")
	}
}
