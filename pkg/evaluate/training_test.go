package evaluate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// legacyExtra is the "extra" object of a conv stress run written before the typed
// fields (results/archive/collapse-level-0.25/corridors_mnist_seed3.json).
const legacyExtra = `{"active_codes_warmup":7,"arch":"conv","clones":[1,1,1,10,15,12,1],"clones_joint":[5,5,5,5,5,5,5],
"codes_kept":[0,1,2,3,4,5,6],"decode":"soft","episodes":4,"final_num_states":42,"final_pruned_states":32,"grad_frames":256,
"hard_decoding":{"action_accuracy":1,"clone_purity":0.8693,"state_place_purity":0.9797,"viterbi_map_f1":1,"viterbi_map_precision":1,"viterbi_map_recall":0.5},
"joint_intervention_log":[{"alpha_scale":2,"iter":967,"lr_scale":0.5,"reason":"collapse","revived":3,"rolled_back_to":950}],
"joint_interventions":1,"joint_iters":1500,"joint_rollbacks":0,"joint_skipped_steps":0,"steps":10000,
"finalise_iterations":412,"finalise_split_rounds":2,"retrain_iterations":100,"retrain_split_rounds":0,
"train_h_class_given_token_joint":0.835,"train_h_class_given_token_warmup":1.093,"train_h_token_given_class_joint":0.081,
"train_h_token_given_class_warmup":1.196,"train_h_token_given_place_joint":0.0805,"train_h_token_given_place_warmup":1.195}`

// withExtra is a minimal valid report JSON with the given "extra" object.
func withExtra(t *testing.T, extra string) []byte {
	t.Helper()
	b, err := (&Report{Env: "corridors"}).MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["extra"] = json.RawMessage(extra)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLegacyExtra: a report written with the free-form "extra" object reads into the
// typed fields, field by field, and is written back without it.
func TestLegacyExtra(t *testing.T) {
	r, err := decodeJSON(withExtra(t, legacyExtra), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Decode != "soft" {
		t.Errorf("decode %q, want soft", r.Decode)
	}
	wantOther := &Readout{Decode: "hard", ViterbiMapPrecision: 1, ViterbiMapRecall: 0.5, ViterbiMapF1: 1, StatePlacePurity: 0.9797,
		ClonePurity: 0.8693, ActionAccuracy: 1}
	if !reflect.DeepEqual(r.OtherReadout, wantOther) {
		t.Errorf("other read-out %+v, want %+v", r.OtherReadout, wantOther)
	}
	want := &Training{Episodes: 4, Steps: 10000, Clones: []int{1, 1, 1, 10, 15, 12, 1}, Pruned: 32,
		Runs: []TrainerRun{{Name: "finalise", Iterations: 412, SplitRounds: 2}, {Name: "retrain", Iterations: 100}},
		Joint: &Joint{Arch: "conv", Iters: 1500, GradFrames: 256, ActiveCodesWarmup: 7, CodesKept: []int{0, 1, 2, 3, 4, 5, 6},
			Clones: []int{5, 5, 5, 5, 5, 5, 5},
			Guard:  &Guard{Interventions: []Intervention{{Iter: 967, Reason: "collapse", RolledBackTo: 950, AlphaScale: 2, LRScale: 0.5, Revived: 3}}},
			Warmup: TokenEntropies{HTokenGivenPlace: 1.195, HTokenGivenClass: 1.196, HClassGivenToken: 1.093},
			End:    TokenEntropies{HTokenGivenPlace: 0.0805, HTokenGivenClass: 0.081, HClassGivenToken: 0.835}}}
	if !reflect.DeepEqual(r.Training, want) {
		t.Errorf("training\n%+v\nwant\n%+v", r.Training, want)
	}
	if g := r.JointGuard(); g == nil || len(g.Interventions) != 1 {
		t.Errorf("JointGuard %+v", g)
	}

	path := filepath.Join(t.TempDir(), "new.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), `"extra"`) {
		t.Error("the report was written back with an \"extra\" object")
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip changed the report:\n%+v\n%+v", back, r)
	}
}

// TestLegacyExtraEdges: a report from before "decode" names its read-out by the other
// one; one from before the guard's record has none (not zero interventions); a
// symbolic report's restarts and trainer run; a log that disagrees with its count is
// an error naming the keys.
func TestLegacyExtraEdges(t *testing.T) {
	r, err := decodeJSON(withExtra(t, `{"soft_decoding":{"viterbi_map_f1":0.5},"joint_iters":300,"joint_rollbacks":2}`), "a.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Decode != "hard" || r.OtherReadout.Decode != "soft" || r.OtherReadout.ViterbiMapF1 != 0.5 {
		t.Errorf("decode %q, other %+v", r.Decode, r.OtherReadout)
	}
	if r.Training.Joint.Rollbacks != 2 || r.JointGuard() != nil {
		t.Errorf("joint %+v: want 2 rollbacks and no guard record", r.Training.Joint)
	}
	r, err = decodeJSON(withExtra(t, `{"restarts":3,"train_iterations":88,"train_stop":"converged","train_split_rounds":1}`), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	want := &Training{Restarts: 3, Runs: []TrainerRun{{Name: "train", Iterations: 88, SplitRounds: 1, Stop: "converged"}}}
	if !reflect.DeepEqual(r.Training, want) || r.JointGuard() != nil {
		t.Errorf("symbolic training %+v, want %+v", r.Training, want)
	}
	_, err = decodeJSON(withExtra(t, `{"joint_iters":300,"joint_interventions":2,"joint_intervention_log":[{"iter":3}]}`), "c.json")
	if err == nil || !strings.Contains(err.Error(), "c.json") || !strings.Contains(err.Error(), "joint_interventions is 2 but the log holds 1") {
		t.Errorf("inconsistent log: %v", err)
	}
	_, err = decodeJSON(withExtra(t, `{"episodes":"four"}`), "d.json")
	if err == nil || !strings.Contains(err.Error(), `"episodes"`) {
		t.Errorf("a string for episodes: %v", err)
	}
}

// TestAddRun: a resumed phase's run replaces the earlier one of the same name.
func TestAddRun(t *testing.T) {
	var tr Training
	tr.AddRun(TrainerRun{Name: "finalise", Iterations: 10})
	tr.AddRun(TrainerRun{Name: "retrain", Iterations: 5})
	tr.AddRun(TrainerRun{Name: "finalise", Iterations: 12})
	if want := []TrainerRun{{Name: "finalise", Iterations: 12}, {Name: "retrain", Iterations: 5}}; !reflect.DeepEqual(tr.Runs, want) {
		t.Errorf("runs %+v, want %+v", tr.Runs, want)
	}
}
