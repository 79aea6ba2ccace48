package evaluate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Readout is the headline of the held-out read-out that a report's own scores did not
// use: the hard-token Viterbi path when the report decodes with the soft emissions,
// and the reverse (pipeline.Evaluate sets it).
type Readout struct {
	Decode              string  `json:"decode"` // "soft" | "hard"
	ViterbiMapPrecision float64 `json:"viterbi_map_precision"`
	ViterbiMapRecall    float64 `json:"viterbi_map_recall"`
	ViterbiMapF1        float64 `json:"viterbi_map_f1"`
	StatePlacePurity    float64 `json:"state_place_purity"`
	ClonePurity         float64 `json:"clone_purity"`
	ActionAccuracy      float64 `json:"action_accuracy"`
}

// NewReadout is the headline of rep, read out with decode.
func NewReadout(decode string, rep *Report) *Readout {
	return &Readout{Decode: decode, ViterbiMapPrecision: rep.ViterbiMap.Precision, ViterbiMapRecall: rep.ViterbiMap.Recall,
		ViterbiMapF1: rep.ViterbiMap.F1, StatePlacePurity: rep.StatePlacePurity, ClonePurity: rep.ClonePurity,
		ActionAccuracy: rep.ActionAccuracy}
}

// Training is how a map was made, as its trainer records it.
type Training struct {
	Episodes int   `json:"episodes,omitempty"` // training walks
	Steps    int   `json:"steps,omitempty"`    // steps per walk
	Restarts int   `json:"restarts,omitempty"` // starts trained; the best training likelihood was kept
	Clones   []int `json:"clones,omitempty"`   // clones per token of the map
	// GrowRounds is how many times the budget was doubled: symbolic, for the tokens
	// that used every clone (experiment.Symbolic.GrowRounds); from pixels, the
	// finalisation's whole budget, which pruning left almost all in use
	// (pipeline.Config.Final.BudgetDoublings).
	GrowRounds int `json:"grow_rounds,omitempty"`
	// Doublings is how many times a symbolic budget grown by splitting was split,
	// from one clone per token (experiment.Symbolic.Doublings); Folded counts the
	// clones folded into alike ones before the splits (experiment.Symbolic.FoldAlike).
	Doublings int `json:"doublings,omitempty"`
	Folded    int `json:"folded,omitempty"`
	// Rounds are the trainings of a symbolic budget grown by splitting, in order:
	// Doublings + 1 of them, the last the map's.
	Rounds []BudgetRound `json:"rounds,omitempty"`
	// GrowChecks are a pixel run's checks of a finalisation budget that bound
	// (pipeline.Config.Final.BudgetDoublings), in order.
	GrowChecks []GrowCheck `json:"grow_checks,omitempty"`
	// HeldOutBits are a pixel run's EM finalisation (pipeline.FinalEM) bits per step on
	// the held-out ends of the training walks after each split round, from one clone
	// per token; Doublings is the round kept.
	HeldOutBits []float64 `json:"held_out_bits,omitempty"`
	// SplitSome are the rounds of HeldOutBits that started from a split of only some
	// clones (those that used both copies of their last split); the others started
	// from a split of every kept clone, or from one clone per token (round 0).
	SplitSome []int `json:"split_some,omitempty"`
	// Fallback, from pixels, says why the gradient finalisation's map was finalised
	// again by EM through a learned confusion matrix (pipeline.FinalConfig.KeepMerged);
	// "" when it was not. The runs before it are the gradient finalisation's.
	Fallback string `json:"fallback,omitempty"`
	// Compared, where Fallback made EM's map and it read as merged too, is how that map
	// and the gradient finalisation's were compared; the one kept is the run's map (a
	// kept gradient map keeps its record, and EM's rounds are left out of it). Nil
	// otherwise (EM's map kept).
	Compared *MapChoice `json:"compared,omitempty"`
	// Confusion is the token confusion matrix C[k][o] that the map reads its tokens
	// through (pipeline.FinalEM); nil for hard tokens.
	Confusion [][]float64 `json:"confusion,omitempty"`
	// Pruned is the number of states that finalisation removed as unused.
	Pruned int `json:"pruned,omitempty"`
	// Runs are the HMM trainer's runs that made the final map, in order (symbolic:
	// "train"; from pixels: "finalise", then "retrain" after pruning).
	Runs []TrainerRun `json:"runs,omitempty"`
	// Joint is the joint phase of a map learned from pixels; nil otherwise.
	Joint *Joint `json:"joint,omitempty"`
	// Refine is the refinement of a map learned from pixels (pipeline.RefineConfig);
	// nil when it did not run.
	Refine *Refine `json:"refine,omitempty"`
}

// MapChoice is a comparison of two maps of the same tokens without labels: each read
// through a confusion matrix fitted to it on the training walks, scored on a
// validation walk that neither was trained on; the map of fewer bits per step is kept
// (EM's on a tie).
type MapChoice struct {
	// Steps is the validation walk's length.
	Steps int `json:"steps"`
	// GradientBits and EMBits are −log₂ p(tokens | actions) per step of the walk under
	// each map; -1 where a map gives the walk probability 0.
	GradientBits float64 `json:"gradient_bits"`
	EMBits       float64 `json:"em_bits"`
	// Kept is the trainer of the map kept: "gradient" or "em".
	Kept string `json:"kept"`
}

// Refine is the record of a refinement (pipeline.RefineConfig): the pseudo-classes
// the map read from the training walks, the encoder's teaching and its outcome. All
// of it is measured without labels but Entropy.
type Refine struct {
	// Skipped says why the map was not refined ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Reverted says why the refined map was dropped for the finalisation's ("" when it
	// was kept, or not made).
	Reverted string `json:"reverted,omitempty"`
	// Tokens is the finalisation's map's tokens; PseudoClasses the groups of its states
	// that show one class each, and Frames the training frames of each.
	Tokens        int   `json:"tokens"`
	PseudoClasses int   `json:"pseudo_classes"`
	Frames        []int `json:"frames,omitempty"`
	// Seeded is the fewest frames of a state that started a group; Merged the largest
	// distance (squared distance of mean images over their sampling noise, or bar times
	// that over RefineSameEffect of their spread where smaller) at which two groups were
	// merged, Apart the smallest between the groups kept (0 with one).
	Seeded int     `json:"seeded"`
	Merged float64 `json:"merged"`
	Apart  float64 `json:"apart"`
	// SameEffect is the largest share of their frames' spread by which the mean images
	// of two groups merged as one class read as two tokens differed (0 with none);
	// ApartEffect the smallest between the groups kept (0 with one).
	SameEffect  float64 `json:"same_effect,omitempty"`
	ApartEffect float64 `json:"apart_effect,omitempty"`
	// Mixtures is the groups dropped as mixtures of larger ones (their states left out);
	// Mixed the largest mixture noise of those dropped (squared distance of the mean image
	// to the nearest mixture of larger groups' over its sampling noise), Unmixed the
	// smallest of the groups kept from the third on (0 with none).
	Mixtures int     `json:"mixtures,omitempty"`
	Mixed    float64 `json:"mixed,omitempty"`
	Unmixed  float64 `json:"unmixed,omitempty"`
	// LeftOut is the visited states that joined no group, and Unlabelled their frames.
	LeftOut    int `json:"left_out"`
	Unlabelled int `json:"unlabelled"`
	// StartOnLabel is the share of the labelled frames on their pseudo-class under the
	// codebook fitted to them on the finalisation's encoder's latents, where the
	// teaching starts. Epochs are the teaching's passes over the training frames;
	// Refitted says that the codebook was then fitted again (it put more labelled
	// frames on their pseudo-class than the codebook as taught).
	StartOnLabel float64      `json:"start_on_label"`
	Epochs       []TeachEpoch `json:"epochs,omitempty"`
	Refitted     bool         `json:"refitted,omitempty"`
	// OnLabel is the share of the labelled frames whose new token is their
	// pseudo-class; Relabelled the frames whose new token is not the one most frames of
	// their old token got.
	OnLabel    float64 `json:"on_label"`
	Relabelled int     `json:"relabelled"`
	// Entropy measures the new tokens of the training frames against their places and
	// classes (labels used for this measurement only).
	Entropy TokenEntropies `json:"entropy"`
}

// TeachEpoch is one pass of the refinement's teaching: the means over its steps of the
// reconstruction loss, the pseudo-class cross-entropy and the share of labelled frames
// whose token is their pseudo-class, and its seconds.
type TeachEpoch struct {
	Rec      float64 `json:"rec"`
	CE       float64 `json:"ce"`
	Accuracy float64 `json:"accuracy"`
	Seconds  float64 `json:"seconds"`
}

// BudgetRound is one training of a symbolic budget grown by splitting and what
// followed it (experiment.Symbolic.Doublings).
type BudgetRound struct {
	Iterations  int     `json:"iterations"`             // of the training
	Stop        string  `json:"stop"`                   // why the training stopped
	ClonesAdded int     `json:"clones_added,omitempty"` // by the training's own splits at plateaus
	Clones      int     `json:"clones"`                 // clones after the training
	Used        int     `json:"used"`                   // clones its training walks use (chmm.Diagnosis.UsedClones)
	TrainBits   float64 `json:"train_bits"`             // bits per step on the training walks
	// Kept clones were split in two for the next round, after Folded alike ones were
	// folded into others (looking FoldDepth moves ahead; 0: until stable); 0 in the
	// last round.
	Kept      int `json:"kept,omitempty"`
	Folded    int `json:"folded,omitempty"`
	FoldDepth int `json:"fold_depth,omitempty"`
	// Outcome is "split", or why the budget stopped growing (the last round).
	Outcome string `json:"outcome"`
}

// GrowCheck is one check of a budget that bound: bits per step on the held-out end of
// the training walks with Clones per token on average and with twice as many, each
// trained on the rest; Grown if the doubled budget was kept.
type GrowCheck struct {
	Clones    int     `json:"clones"`
	Bits      float64 `json:"bits"`
	GrownBits float64 `json:"grown_bits"`
	Grown     bool    `json:"grown"`
}

// TrainerRun is one run of an HMM trainer: how long it trained and why it stopped.
type TrainerRun struct {
	Name string `json:"name"`
	// Iterations counts the likelihood evaluations recorded (chmm.History.LogLik;
	// gradient passes or E-steps): one more than the parameter updates when the
	// trainer runs to its limit (1001 for 1000).
	Iterations  int    `json:"iterations"`
	SplitRounds int    `json:"split_rounds"`           // clone-splitting rounds
	ClonesAdded int    `json:"clones_added,omitempty"` // clones the splits added (chmm.GradConfig.GrowClones)
	Stop        string `json:"stop,omitempty"`         // chmm.History.Stop
	// ChunkLen and Batch: a gradient run that read Batch random chunks of ChunkLen
	// steps per iteration (chmm.History); absent for the whole walks.
	ChunkLen int `json:"chunk_len,omitempty"`
	Batch    int `json:"batch,omitempty"`
}

// Joint is the record of a joint VQ-VAE + cloned-HMM phase.
type Joint struct {
	Arch  string `json:"arch,omitempty"` // VQ-VAE architecture: conv | mlp
	Iters int    `json:"iters"`          // joint iterations run
	// MaxIters is the most the phase could run; StopChurn the label-free stop's
	// threshold (0: none, the phase ran MaxIters) and AnnealStart the iteration its
	// α_div anneal started at (pipeline.Config.Joint.StopChurn).
	MaxIters    int     `json:"max_iters,omitempty"`
	StopChurn   float64 `json:"stop_churn,omitempty"`
	AnnealStart int     `json:"anneal_start,omitempty"`
	GradFrames  int     `json:"grad_frames"` // frames per iteration with the reconstruction gradient (0: all)
	// ActiveCodesWarmup is the number of codes the warm-up used; CodesKept are the
	// warm-up codes kept as tokens (token i is code CodesKept[i]).
	ActiveCodesWarmup int   `json:"active_codes_warmup"`
	CodesKept         []int `json:"codes_kept,omitempty"`
	// CodesMerged, with merge_codes, is the token of each kept code (codes that the
	// walks could not tell apart share one token); nil without.
	CodesMerged []int `json:"codes_merged,omitempty"`
	// TokensMerged, with merge_tokens, is the map's token of each of the joint phase's
	// tokens (those the walks could not tell apart after it share one); nil without.
	TokensMerged []int `json:"tokens_merged,omitempty"`
	Clones       []int `json:"clones,omitempty"` // clones per token during the joint phase
	Rollbacks    int   `json:"rollbacks"`        // checkpoints restored
	// Guard is the anti-collapse record; nil in reports written before it was kept.
	Guard *Guard `json:"guard,omitempty"`
	// From is the run directory this run took its warm-up and joint phase over from
	// (pipeline.Branch, train --from); the report's warm-up and joint seconds are that
	// run's. Empty when the run trained them itself.
	From string `json:"from,omitempty"`
	// The training frames' hard tokens after the warm-up and after the joint phase
	// (true places and classes used for this measurement only).
	Warmup TokenEntropies `json:"warmup_entropy"`
	End    TokenEntropies `json:"joint_entropy"`
}

// Guard is the joint phase's anti-collapse record (pipeline.Config.Joint.CollapseLevel).
type Guard struct {
	Interventions []Intervention `json:"interventions"`
	SkippedSteps  int            `json:"skipped_steps"` // steps not applied: they produced a non-finite value
}

// Intervention is one anti-collapse response of the joint phase.
type Intervention struct {
	Iter         int     `json:"iter"`           // joint iteration at which it was detected
	Reason       string  `json:"reason"`         // what was detected
	RolledBackTo int     `json:"rolled_back_to"` // iteration of the healthy checkpoint restored
	AlphaScale   float64 `json:"alpha_scale"`    // α_div multiplier from then on
	LRScale      float64 `json:"lr_scale"`       // VQ-VAE learning-rate multiplier from then on
	Revived      int     `json:"revived"`        // codes re-seeded
}

// String describes the intervention for the loss history and the progress output.
func (iv Intervention) String() string {
	return fmt.Sprintf("%s at joint iteration %d: rolled back to iteration %d, α_div ×%g, VQ-VAE rate ×%g, %d code(s) re-seeded",
		iv.Reason, iv.Iter, iv.RolledBackTo, iv.AlphaScale, iv.LRScale, iv.Revived)
}

// TokenEntropies are conditional entropies of hard tokens on labelled frames, in nats.
type TokenEntropies struct {
	HTokenGivenPlace float64 `json:"h_token_given_place"`
	HTokenGivenClass float64 `json:"h_token_given_class"`
	HClassGivenToken float64 `json:"h_class_given_token"`
}

// NewTokenEntropies measures tokens against the places and classes of the same frames.
func NewTokenEntropies(tokens, places, classes []int) TokenEntropies {
	return TokenEntropies{HTokenGivenPlace: CondEntropy(tokens, places), HTokenGivenClass: CondEntropy(tokens, classes),
		HClassGivenToken: CondEntropy(classes, tokens)}
}

// JointGuard is the joint phase's anti-collapse record; nil when the report has none
// (symbolic maps, and pixel runs written before it was kept).
func (r *Report) JointGuard() *Guard {
	if r == nil || r.Training == nil || r.Training.Joint == nil {
		return nil
	}
	return r.Training.Joint.Guard
}

// UnmarshalJSON reads a report, and moves what reports written before the typed
// Decode, OtherReadout and Training fields kept in their free-form "extra" object
// into those fields.
func (r *Report) UnmarshalJSON(b []byte) error {
	type plain Report // the default decoding, without this method
	aux := struct {
		*plain
		Extra map[string]json.RawMessage `json:"extra"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	if len(aux.Extra) == 0 {
		return nil
	}
	if err := r.adoptExtra(aux.Extra); err != nil {
		return fmt.Errorf("the report's legacy \"extra\" object: %w", err)
	}
	return nil
}

// adoptExtra fills the typed fields from a legacy "extra" object (keys as
// pkg/pipeline and the symbolic command wrote them).
func (r *Report) adoptExtra(extra map[string]json.RawMessage) error {
	get := legacyGetter(extra)
	if r.Decode == "" {
		get.into("decode", &r.Decode)
	}
	for _, decode := range []string{"hard", "soft"} {
		var m Readout
		if get.into(decode+"_decoding", &m) && r.OtherReadout == nil {
			m.Decode = decode
			r.OtherReadout = &m
			if r.Decode == "" { // written before "decode" was: the other read-out's other
				r.Decode = map[string]string{"hard": "soft", "soft": "hard"}[decode]
			}
		}
	}
	if get.err != nil || r.Training != nil {
		return get.err
	}
	t, err := LegacyTraining(extra)
	r.Training = t
	return err
}

// LegacyTraining reads the training record that reports and pipeline run states
// written before Training kept in a free-form "extra" map (keys as pkg/pipeline and
// the symbolic command wrote them); nil when the map holds none.
func LegacyTraining(extra map[string]json.RawMessage) (*Training, error) {
	get := legacyGetter(extra)
	var t Training
	get.into("episodes", &t.Episodes)
	get.into("steps", &t.Steps)
	if !get.into("restarts", &t.Restarts) {
		get.into("em_restarts", &t.Restarts)
	}
	get.into("clones", &t.Clones)
	get.into("final_pruned_states", &t.Pruned)
	for _, name := range []string{"train", "finalise", "retrain"} {
		run := TrainerRun{Name: name}
		if get.into(name+"_iterations", &run.Iterations) {
			get.into(name+"_split_rounds", &run.SplitRounds)
			get.into(name+"_stop", &run.Stop)
			t.Runs = append(t.Runs, run)
		}
	}
	var j Joint
	get.into("arch", &j.Arch)
	get.into("joint_iters", &j.Iters)
	get.into("grad_frames", &j.GradFrames)
	get.into("active_codes_warmup", &j.ActiveCodesWarmup)
	get.into("codes_kept", &j.CodesKept)
	get.into("codes_merged", &j.CodesMerged)
	get.into("tokens_merged", &j.TokensMerged)
	get.into("clones_joint", &j.Clones)
	get.into("joint_rollbacks", &j.Rollbacks)
	var n int
	if get.into("joint_interventions", &n) {
		j.Guard = &Guard{Interventions: []Intervention{}}
		get.into("joint_intervention_log", &j.Guard.Interventions)
		get.into("joint_skipped_steps", &j.Guard.SkippedSteps)
		if get.err == nil && n != len(j.Guard.Interventions) {
			get.err = fmt.Errorf("joint_interventions is %d but the log holds %d", n, len(j.Guard.Interventions))
		}
	}
	for phase, e := range map[string]*TokenEntropies{"warmup": &j.Warmup, "joint": &j.End} {
		get.into("train_h_token_given_place_"+phase, &e.HTokenGivenPlace)
		get.into("train_h_token_given_class_"+phase, &e.HTokenGivenClass)
		get.into("train_h_class_given_token_"+phase, &e.HClassGivenToken)
	}
	if !reflect.ValueOf(j).IsZero() {
		t.Joint = &j
	}
	if get.err != nil || reflect.ValueOf(t).IsZero() {
		return nil, get.err
	}
	return &t, nil
}

// legacyReader decodes keys of a legacy "extra" map, keeping the first error.
type legacyReader struct {
	extra map[string]json.RawMessage
	err   error
}

func legacyGetter(extra map[string]json.RawMessage) *legacyReader { return &legacyReader{extra: extra} }

// into decodes extra[key] into v and reports whether it was there.
func (g *legacyReader) into(key string, v any) bool {
	raw, ok := g.extra[key]
	if !ok || g.err != nil {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		g.err = fmt.Errorf("%q: %w", key, err)
		return false
	}
	return true
}

// trainingRows are the report table's rows about how the map was made.
func (t *Training) rows(row func(k, format string, args ...any)) {
	if t == nil {
		return
	}
	if t.Episodes > 0 {
		row("training data", "%d walks × %d steps", t.Episodes, t.Steps)
	}
	var runs []string
	for _, r := range t.Runs {
		s := fmt.Sprintf("%s %d iterations", r.Name, r.Iterations)
		if r.ChunkLen > 0 {
			s += fmt.Sprintf(" on %d random chunks of %d steps each", r.Batch, r.ChunkLen)
		}
		if r.SplitRounds > 0 {
			s += fmt.Sprintf(", %d splitting rounds", r.SplitRounds)
		}
		if r.ClonesAdded > 0 {
			s += fmt.Sprintf(", %d clone(s) added", r.ClonesAdded)
		}
		if r.Stop != "" {
			s += " (" + r.Stop + ")"
		}
		runs = append(runs, s)
	}
	if t.Restarts > 1 {
		runs = append(runs, fmt.Sprintf("best of %d starts", t.Restarts))
	}
	if t.GrowRounds > 0 && len(t.GrowChecks) == 0 { // a pixel run's checks say it below
		runs = append(runs, fmt.Sprintf("budget doubled %d time(s) for tokens that used every clone", t.GrowRounds))
	}
	if t.Doublings > 0 {
		grown := fmt.Sprintf("budget grown from one clone per token by %d split(s)", t.Doublings)
		if t.Folded > 0 {
			grown += fmt.Sprintf(", %d alike clones folded before them", t.Folded)
		}
		runs = append(runs, grown)
	}
	if t.Fallback != "" {
		runs = append(runs, "finalised again by EM: "+t.Fallback)
	}
	if c := t.Compared; c != nil {
		runs = append(runs, fmt.Sprintf("maps compared on a %d-step validation walk: gradient %.4f, EM %.4f bits/step; the %s map kept", c.Steps, c.GradientBits, c.EMBits, map[string]string{"gradient": "gradient", "em": "EM"}[c.Kept]))
	}
	if len(t.HeldOutBits) > 0 {
		b := make([]string, len(t.HeldOutBits))
		for i, v := range t.HeldOutBits {
			b[i] = fmt.Sprintf("%.4f", v)
		}
		runs = append(runs, fmt.Sprintf("held-out ends of the training walks %s bits/step after each split round", strings.Join(b, " → ")))
	}
	if c := t.Confusion; len(c) > 0 {
		lo, hi := 1.0, 0.0
		for k, row := range c {
			lo, hi = min(lo, row[k]), max(hi, row[k])
		}
		runs = append(runs, fmt.Sprintf("tokens read through a learned %d×%d confusion matrix (diagonal %.3f–%.3f)", len(c), len(c), lo, hi))
	}
	for _, c := range t.GrowChecks {
		verdict := "kept"
		if c.Grown {
			verdict = "doubled"
		}
		runs = append(runs, fmt.Sprintf("budget of %d clones per token bound: held-out %.4f bits/step, %.4f with twice as many: %s",
			c.Clones, c.Bits, c.GrownBits, verdict))
	}
	if len(runs) > 0 {
		row("HMM training", "%s", strings.Join(runs, "; "))
	}
	if j := t.Joint; j != nil {
		guard := "not recorded"
		if j.Guard != nil {
			guard = fmt.Sprintf("%d interventions, %d skipped steps", len(j.Guard.Interventions), j.Guard.SkippedSteps)
		}
		from := ""
		if j.From != "" {
			from = ", taken over from " + j.From
		}
		row("joint phase", "%s, %d iterations, %s%s", orDash(j.Arch), j.Iters, guard, from)
	}
	if r := t.Refine; r != nil {
		switch {
		case r.Skipped != "":
			row("refinement", "skipped: %s", r.Skipped)
		default:
			mixtures := ""
			if r.Mixtures > 0 {
				mixtures = fmt.Sprintf("%d mixture(s) of them dropped, ", r.Mixtures)
			}
			text := fmt.Sprintf("%d pseudo-classes from the map's %d tokens (%s%d frames unlabelled), %d teaching epoch(s), %.1f%% of the labelled frames on their pseudo-class, %d frames relabelled",
				r.PseudoClasses, r.Tokens, mixtures, r.Unlabelled, len(r.Epochs), 100*r.OnLabel, r.Relabelled)
			if r.Reverted != "" {
				text += "; the refined map was dropped: " + r.Reverted
			}
			row("refinement", "%s", text)
		}
	}
}

// AddRun records run, in place of an earlier run of the same name (a resumed phase
// trains again from its start).
func (t *Training) AddRun(run TrainerRun) {
	for i := range t.Runs {
		if t.Runs[i].Name == run.Name {
			t.Runs[i] = run
			return
		}
	}
	t.Runs = append(t.Runs, run)
}
