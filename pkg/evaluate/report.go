package evaluate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// EdgeScore scores a learned edge set against the true map.
type EdgeScore struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	Edges     int     `json:"edges"` // number of learned edges
}

// CutoffScore is a Viterbi-path map score at cutoff fraction f.
type CutoffScore struct {
	CutoffFraction float64 `json:"cutoff_fraction"`
	EdgeScore
}

// ThresholdScore is a projected-map score at threshold η.
type ThresholdScore struct {
	Threshold float64 `json:"threshold"`
	EdgeScore
}

// PlaceEdge is an undirected place pair (A < B) with its Viterbi-path
// traversal count.
type PlaceEdge struct {
	A     int `json:"a"`
	B     int `json:"b"`
	Count int `json:"count"`
}

// Report is one evaluated run. The fields up to Seconds are the keys of
// the reference report format (always present in the JSON); the rest are extras.
type Report struct {
	Env       string `json:"env"`
	Dataset   string `json:"dataset"` // symbolic | mnist | fashion (set by caller)
	Trainer   string `json:"trainer"` // gradient | em | joint (set by caller)
	Seed      uint64 `json:"seed"`    // set by caller
	NumTokens int    `json:"num_tokens"`
	NumStates int    `json:"num_states"`

	ClonePurity              float64 `json:"clone_purity"`
	StatePlacePurity         float64 `json:"state_place_purity"`
	RepresentedPlaceFraction float64 `json:"represented_place_fraction"`
	StatesPerPlace           float64 `json:"states_per_place"`

	ViterbiMap      CutoffScore      `json:"viterbi_map"`
	ViterbiMapSweep []CutoffScore    `json:"viterbi_map_sweep"`
	ProjectedMap    []ThresholdScore `json:"projected_map"`

	ActionAccuracy float64 `json:"action_accuracy"`
	ActionCoverage float64 `json:"action_coverage"`

	HTokenGivenPlace float64 `json:"h_token_given_place"`
	HPlaceGivenToken float64 `json:"h_place_given_token"`
	Perplexity       float64 `json:"perplexity"`
	ActiveCodes      int     `json:"active_codes"`

	// Seconds holds wall-clock seconds per phase and "total".
	Seconds map[string]float64 `json:"seconds"`

	// Extras.
	Backend string `json:"backend"` // set by caller
	// PhaseBackends, for pixel runs, names per phase (warmup, joint, final, eval) the
	// backend(s) it ran on, "A then B" where it was resumed on another; set by caller.
	PhaseBackends      map[string]string `json:"phase_backends,omitempty"`
	HMMKernels         string            `json:"hmm_kernels,omitempty"` // set by caller: the cloned HMM's block kernels (chmm.KernelSet), "A then B" across sessions
	Steps              int               `json:"steps"`                 // T of the held-out episode
	NumPlaces          int               `json:"num_places"`
	VisitedPlaces      int               `json:"visited_places"`
	VisitedStates      int               `json:"visited_states"`
	RepresentedPlaces  int               `json:"represented_places"`
	TrueEdges          int               `json:"true_edges"`
	TokensPerPlaceMean float64           `json:"tokens_per_place_mean"`
	TokensPerPlaceMax  int               `json:"tokens_per_place_max"`
	PlacesPerTokenMean float64           `json:"places_per_token_mean"`
	PlacesPerTokenMax  int               `json:"places_per_token_max"`
	// TokenClassPurity is the held-out frames' share whose hard token's majority class
	// is their own (each token's majority class share, frame-weighted: Σ_k max_c
	// n(k,c) / T, c the class the true place shows); ClassPerplexity is exp H(class),
	// the perplexity that tokens equal to the classes would have, and ClassesShown the
	// classes the episode shows. Labels score them only. 0 in reports written before
	// them (Reevaluate adds them).
	TokenClassPurity float64 `json:"token_class_purity,omitempty"`
	ClassPerplexity  float64 `json:"class_perplexity,omitempty"`
	ClassesShown     int     `json:"classes_shown,omitempty"`
	// StatePlace is χ(s) per state, -1 for states the path never visits.
	StatePlace []int `json:"state_place"`
	// ViterbiEdges are the learned edges of ViterbiMap (sorted pairs a < b).
	ViterbiEdges [][2]int `json:"viterbi_edges"`
	// ViterbiTransitions are all place pairs the path traverses, with counts.
	ViterbiTransitions []PlaceEdge `json:"viterbi_transitions"`
	// WalkMap is the held-out walk's own place path scored as ViterbiMap (same
	// cut-off): what the true map scores on this walk. Its recall is below 1 where the
	// walk crosses a true edge f·T times or fewer, and no map can do better there
	// (Recovered). Nil in reports written before it existed.
	WalkMap *CutoffScore `json:"walk_map,omitempty"`
	// Diagnosis is the label-free account of the map on its own walks, with its
	// verdict (chmm.Diagnose, Diagnosis.Judge; set by the caller).
	Diagnosis *chmm.Diagnosis `json:"diagnosis,omitempty"`
	// Decode is the read-out that scored this report ("soft" | "hard", pipeline runs);
	// OtherReadout is the other read-out's headline.
	Decode       string   `json:"decode,omitempty"`
	OtherReadout *Readout `json:"other_readout,omitempty"`
	// Training is how the map was made (set by its trainer; nil when unknown).
	Training *Training `json:"training,omitempty"`
	// Chosen are the settings a pixel run's pipeline chose for its world and kept
	// (pipeline.WorldSettings), each "key=value: why"; set by the caller.
	Chosen []string `json:"chosen,omitempty"`
}

// requiredKeys are the keys of the reference report format.
var requiredKeys = []string{
	"env", "dataset", "trainer", "seed", "num_tokens", "num_states",
	"clone_purity", "state_place_purity", "represented_place_fraction", "states_per_place",
	"viterbi_map", "viterbi_map_sweep", "projected_map",
	"action_accuracy", "action_coverage", "h_token_given_place", "h_place_given_token",
	"perplexity", "active_codes", "seconds",
}

// MarshalIndent returns the report as indented JSON with a trailing newline.
// Keys come in struct order and maps sorted, so output is stable.
func (r *Report) MarshalIndent() ([]byte, error) {
	rr := *r
	if rr.Seconds == nil { // "seconds" must be an object
		rr.Seconds = map[string]float64{}
	}
	if rr.ViterbiMapSweep == nil {
		rr.ViterbiMapSweep = []CutoffScore{}
	}
	if rr.ProjectedMap == nil {
		rr.ProjectedMap = []ThresholdScore{}
	}
	b, err := json.MarshalIndent(&rr, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteJSON writes the report to path atomically: to a temporary file in
// the same directory, then renamed over path.
func (r *Report) WriteJSON(path string) error {
	b, err := r.MarshalIndent()
	if err != nil {
		return fmt.Errorf("evaluate: %s: %w", path, err)
	}
	return writeFileAtomic(path, b)
}

func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	return nil
}

// ReportLimit bounds a report file: its per-state arrays for the largest maps a run
// may learn.
var ReportLimit = inputfile.Limit{Format: "report", Bytes: 1 << 30}

// ReadJSON reads a report written by WriteJSON (or any JSON object with at
// least the keys of the reference format); unknown keys are ignored.
func ReadJSON(path string) (*Report, error) {
	b, err := inputfile.ReadFile(path, ReportLimit)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return decodeJSON(b, path)
}

// decodeJSON is ReadJSON of the file's bytes b (path names it in errors).
func decodeJSON(b []byte, path string) (*Report, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("evaluate: %s: not a JSON report object: %w", path, err)
	}
	var missing []string
	for _, k := range requiredKeys {
		if _, ok := keys[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("evaluate: %s: missing keys %s", path, strings.Join(missing, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	r := new(Report)
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("evaluate: %s: %w", path, err)
	}
	return r, nil
}

// WriteTable writes a human-readable, aligned table of the report.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	score := func(s EdgeScore) string {
		return fmt.Sprintf("P %.3f  R %.3f  F1 %.3f  (%d edges)", s.Precision, s.Recall, s.F1, s.Edges)
	}
	row("env", "%s (%d places, %d true edges)", r.Env, r.NumPlaces, r.TrueEdges)
	row("dataset / trainer / seed", "%s / %s / %d", orDash(r.Dataset), orDash(r.Trainer), r.Seed)
	row("held-out steps T", "%d (%d places visited)", r.Steps, r.VisitedPlaces)
	row("tokens K", "%d (active %d, perplexity %.3f)", r.NumTokens, r.ActiveCodes, r.Perplexity)
	row("states N", "%d (visited %d, %.2f per represented place)", r.NumStates, r.VisitedStates, r.StatesPerPlace)
	row("clone purity", "%.4f", r.ClonePurity)
	row("state->place purity", "%.4f", r.StatePlacePurity)
	row("represented places", "%.4f (%d)", r.RepresentedPlaceFraction, r.RepresentedPlaces)
	row(fmt.Sprintf("Viterbi map @ f=%g", r.ViterbiMap.CutoffFraction), "%s", score(r.ViterbiMap.EdgeScore))
	if w := r.WalkMap; w != nil && w.Recall < 1 {
		row("  the walk's own", "R %.3f: the held-out walk crosses %d of %d true edges more than f·T times; no map can recall more",
			w.Recall, w.Edges, r.TrueEdges)
	}
	for _, s := range r.ViterbiMapSweep {
		row(fmt.Sprintf("  sweep f=%g", s.CutoffFraction), "%s", score(s.EdgeScore))
	}
	for _, s := range r.ProjectedMap {
		row(fmt.Sprintf("projected map @ eta=%g", s.Threshold), "%s", score(s.EdgeScore))
	}
	row("action accuracy", "%.4f (coverage %.4f)", r.ActionAccuracy, r.ActionCoverage)
	if r.ClassesShown > 0 {
		row("token class purity", "%.4f (%d classes shown, class perplexity %.3f)", r.TokenClassPurity, r.ClassesShown, r.ClassPerplexity)
	}
	row("H(token|place)", "%.4f nats", r.HTokenGivenPlace)
	row("H(place|token)", "%.4f nats", r.HPlaceGivenToken)
	row("tokens per place", "mean %.2f, max %d", r.TokensPerPlaceMean, r.TokensPerPlaceMax)
	row("places per token", "mean %.2f, max %d", r.PlacesPerTokenMean, r.PlacesPerTokenMax)
	if len(r.Seconds) > 0 {
		phases := make([]string, 0, len(r.Seconds))
		for k := range r.Seconds {
			if k != "total" {
				phases = append(phases, k)
			}
		}
		sort.Strings(phases)
		parts := []string{fmt.Sprintf("total %.2f", r.Seconds["total"])}
		for _, k := range phases {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, r.Seconds[k]))
		}
		row("seconds", "%s", strings.Join(parts, ", "))
	}
	if r.Backend != "" {
		row("backend", "%s", r.Backend)
	}
	if r.mixedBackends() {
		phases := make([]string, 0, len(r.PhaseBackends))
		for p := range r.PhaseBackends {
			phases = append(phases, p)
		}
		sort.Strings(phases)
		parts := make([]string, len(phases))
		for i, p := range phases {
			parts[i] = p + " " + r.PhaseBackends[p]
		}
		row("backend per phase", "%s", strings.Join(parts, "; "))
	}
	if r.HMMKernels != "" {
		row("HMM kernels", "%s", r.HMMKernels)
	}
	if o := r.OtherReadout; o != nil {
		row(o.Decode+" read-out", "map P %.3f  R %.3f  F1 %.3f, state->place purity %.4f, action accuracy %.4f",
			o.ViterbiMapPrecision, o.ViterbiMapRecall, o.ViterbiMapF1, o.StatePlacePurity, o.ActionAccuracy)
	}
	r.Training.rows(row)
	if r.Diagnosis != nil && r.Diagnosis.Verdict != nil {
		row("map verdict (no labels)", "%s", r.Diagnosis.Verdict.Text)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mixedBackends reports whether the phases of a run ran on more than one backend.
func (r *Report) mixedBackends() bool {
	seen := ""
	for _, b := range r.PhaseBackends {
		if seen != "" && b != seen || strings.Contains(b, " then ") {
			return true
		}
		seen = b
	}
	return false
}
