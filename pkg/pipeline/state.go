package pipeline

import (
	"math"
	"slices"

	"github.com/gradcscg/gradcscg/pkg/evaluate"
)

// Record is one line of the loss history. Warm-up rows carry rec, commit and perplexity;
// joint rows every term; final rows the hard-token NLL per step.
type Record struct {
	Step       int     `json:"step"` // 1-based within the phase
	Phase      string  `json:"phase"`
	Rec        float64 `json:"rec"`
	Commit     float64 `json:"commit"`
	NLLPerStep float64 `json:"nll_per_step"`
	Div        float64 `json:"div"`
	Lambda     float64 `json:"lambda"`
	Perplexity float64 `json:"perplexity"`
	Seconds    float64 `json:"seconds"` // since the phase started (summed over resumed calls)
	// Churn is the share of the probe frames whose token changed since the previous
	// checkpoint (Config.Joint.StopChurn); nil where it was not measured.
	Churn *float64 `json:"churn,omitempty"`
	Event string   `json:"event,omitempty"`
}

// runState is the commit record of a run directory (state.gob, a gob of this type:
// fields are matched by name, so a field is renamed or removed only with a reader of
// the old name). After the run's own fields, each group is written by one phase (and
// by a rollback of it) and read by the later ones.
type runState struct {
	// The run: its phase, seconds per phase, loss history and how the map is being made.
	Phase   string
	Seconds map[string]float64
	History []Record
	// Made is how the map is being made: what the phases measured so far (the warm-up's
	// codes and token entropies, the trainer's runs, pruning); the report's Training.
	Made evaluate.Training
	// Extra is the same, in states written before Made: decodeState moves it there.
	Extra map[string]float64
	// Backends are the GOMLX_BACKEND labels (hmmgraph.NewBackend) the run's phases ran
	// on, in order.
	Backends []string
	// PhaseBackends are, per phase (PhaseWarmup, PhaseJoint, PhaseFinal, PhaseEval),
	// the backend labels of the sessions that worked on it, in order: a phase resumed
	// on another backend lists both (GPU sums are not reproducible bit for bit, so such a
	// run differs from one run through on either). Nil in states written before it.
	PhaseBackends map[string][]string
	// HMMKernels are the cloned HMM's block kernels (chmm.KernelSet) the run's sessions
	// ran with, in order: the finalisation's sums depend on them, to rounding, so a run
	// resumed on another CPU is not byte-identical. "unrecorded" stands for the sessions
	// of a run begun before they were recorded.
	HMMKernels []string
	// Branch, if set, says that the warm-up and joint phase were taken over from another
	// run directory (Branch); nil when this run trained them.
	Branch *Branched

	// Integrity (rundir.go): the SHA-256 of config.json and of every file the state
	// relies on.
	Identity string
	Files    map[string]string

	// Warm-up: its current checkpoint (a new name at each save), then what token
	// compaction made of it.
	Warmup string
	Codes  []int // warm-up codes kept by compaction (token i = code Codes[i], unless merged)
	// CodesMerged, with Config.Warmup.MergeCodes, is the token of each kept code (Codes[i] is
	// token CodesMerged[i]); nil without.
	CodesMerged []int
	Share       []float64 // share of the training frames of each kept token after warm-up
	Clones      []int
	WarmPPL     float64 // P₀ = exp H(Share), the collapse levels' reference (Config.Joint.CollapseLevel)

	// Joint phase: the current checkpoint (file in the run directory) and its iteration.
	Checkpoint  string
	JointIter   int
	LambdaScale float64
	Smoothed    float64 // exponential moving average (0.9) of the batch perplexity
	BestPPL     float64
	BestIter    int
	Best        Snapshot // perception (/vqvae/...) at BestPPL
	Rollbacks   int
	// Anti-collapse (Config.Joint.CollapseLevel): the setting changes so far (1 at the start;
	// 0 in states written before them reads as 1), the last healthy checkpoint, the
	// skipped (non-finite) steps and every intervention.
	AlphaScale      float64
	LRScale         float64
	Healthy         string
	HealthyIter     int
	HealthySmoothed float64
	Skipped         int // joint steps not applied, over the run
	SkipRun         int // consecutive ones
	SkippedAtCommit int // Skipped at the last commit
	Interventions   []Intervention
	// The label-free stop (Config.Joint.StopChurn): the probe frames' tokens at the last
	// checkpoint, the iteration the α_div anneal started at (0: not yet) and the one
	// the phase stopped at (0: not stopped early).
	ProbeTokens []int
	AnnealStart int
	StoppedAt   int

	// Finalisation.
	// TokensMerged, with Config.Final.MergeTokens, is the map's token of each of the joint
	// phase's tokens (the final encoder's token map, vqvae.Model.SetTokens); nil without.
	TokensMerged []int
	// FinalEM is the EM finalisation's progress at the end of its last finished split
	// round (nil: none, or the finalisation is not FinalEM): a resumed run starts the
	// next round from it.
	FinalEM *finalEMState
	// FinalGrad is the gradient finalisation's progress at the end of its last finished
	// training (nil: none, or the finalisation is FinalEM): a resumed run goes on from it.
	FinalGrad *finalGradState
	// FallbackGrad, while EM finalises again a gradient map that read as merged
	// (finaliser.fallBack), is that map's record; the map is the file
	// fallbackGradFile, kept to be compared with EM's when EM ends. Nil otherwise, and
	// in a fallback begun before it (EM's map is then kept).
	FallbackGrad *fallbackGrad

	// Refinement (refine.go): its progress, nil before it starts and after it ends.
	Refine *refineState
}

// recordSession adds this session's backend label and HMM kernel set to st, where
// they are new; a run past its start that has none recorded began before they were
// recorded.
func (st *runState) recordSession(label, kernels string) {
	begun := st.Phase != PhaseWarmup || st.Warmup != ""
	if len(st.Backends) == 0 && begun {
		st.Backends = []string{"go:ops_sequential"} // the only backend before they were recorded
	}
	if !slices.Contains(st.Backends, label) {
		st.Backends = append(st.Backends, label)
	}
	if len(st.HMMKernels) == 0 && begun {
		st.HMMKernels = []string{"unrecorded"}
	}
	if !slices.Contains(st.HMMKernels, kernels) {
		st.HMMKernels = append(st.HMMKernels, kernels)
	}
}

// ranOn records that this session, on backend label, works on phase.
func (st *runState) ranOn(phase, label string) {
	if st.PhaseBackends == nil {
		st.PhaseBackends = map[string][]string{}
	}
	if b := st.PhaseBackends[phase]; len(b) == 0 || b[len(b)-1] != label {
		st.PhaseBackends[phase] = append(b, label)
	}
}

// lastBackend is the backend label the run last worked on before this session ("" if
// none was recorded per phase).
func (st *runState) lastBackend() string {
	last := ""
	for _, p := range []string{PhaseWarmup, PhaseJoint, PhaseFinal, PhaseEval} {
		if b := st.PhaseBackends[p]; len(b) > 0 {
			last = b[len(b)-1]
		}
	}
	return last
}

// finalEMState is what FinalEM carries from one split round to the next, so that a
// finalisation resumed from it continues exactly as the uninterrupted one would.
type finalEMState struct {
	Round int // the next round to train
	// Segments is the segments of the segmented E-step (chmm.EMConfig.Segments; the
	// GOMAXPROCS the finalisation began with, at least 1), under which every round runs
	// SQUAREM and stops on chmm.DefaultStopGain. 0: a finalisation begun before the
	// segmented E-step, which goes on as it began: the walks' starts cut into Pieces
	// sequences, plain EM for Final.Iters iterations a round.
	Segments  int
	Pieces    int         // under Segments 0: the pieces (GOMAXPROCS when it began)
	Start     string      // model file: the next round's start (the kept clones, split)
	Conf      [][]float64 // the confusion matrix the next round starts from
	Best      string      // model file: the map with the cheapest held-out ends so far
	BestConf  [][]float64 // and its confusion matrix
	BestBits  float64     // its held-out ends, bits per step
	BestRound int         // the round that trained it
	Missed    int         // rounds in a row that missed SplitGain
	// Patience is the rounds in a row without SplitGain that end the rounds
	// (SplitPatience when the finalisation began), under which a round also ends them
	// where the walks hold fewer than SplitMinSteps steps per state of another split. 0:
	// a finalisation begun before them, which goes on with legacySplitPatience alone.
	Patience int
	// EarlyMiss: a round may end as a miss before its EM converges (emRounds.missCheck),
	// from the held-out ends at its checks so far, Checks. false: a finalisation begun
	// before that stop, which goes on without it.
	EarlyMiss bool
	Checks    []heldOutCheck
	// Selective: a split splits only the kept clones whose copies from the split
	// before were both kept, and every kept clone after round 0 and after a round that
	// split only some and missed SplitGain (only a round that split every clone counts
	// towards Patience). Siblings holds, for each state of the next round's start, the
	// state its last split paired it with (-1: none; nil: round 0). false: a
	// finalisation begun before, which goes on splitting every kept clone. Under
	// Selective, Final.SplitRounds bounds the splits of every clone, FullSplits counting
	// them, not the rounds.
	Selective  bool
	Siblings   []int
	FullSplits int
	// FoldPairs: where both copies of a pair (Siblings) hold less than chmm.UsedShare of
	// their token's visits but together hold that share, the less visited is folded into
	// the other, which is kept (chmm.KeepPairs), instead of both being dropped. false: a
	// finalisation begun before, which goes on dropping both.
	FoldPairs bool
	RNG       []byte // the splits' generator (rand.PCG.MarshalBinary)
	// Training is a file holding Round's EM in progress (a gob of chmm.EMState, saved
	// every finalSaveEvery); "" when Round's EM starts from Start. Round 0 has no Start
	// or Best file: its start is chmm.New's from the config's seed.
	Training string
}

// heldOutCheck is the held-out ends of the walks, in bits per step, under a round's map
// at one E-step of its EM.
type heldOutCheck struct {
	Iter int
	Bits float64
}

// finalGradState is what the gradient finalisation (FinalGradient) carries past each
// of its trainings, so that one resumed from it continues exactly as the uninterrupted
// one would (every training seeds its generators from the config).
type finalGradState struct {
	Round int     // the budget round (Config.Final.BudgetDoublings): Final.Clones·2^Round clones per token
	Done  int     // this round's steps done: 0, gradTrained, gradPruned or gradChecked
	Model string  // model file: this round's map after its last step ("" when Done is 0)
	Bits  float64 // the growth check's held-out ends with this round's budget (set with gradChecked)
	Event string  // marks the round's first history row
	// CheckFirst: the first budget is checked whether or not it binds (growthCheck).
	// false in a finalisation begun before, which checks only a budget that binds.
	CheckFirst bool `json:",omitempty"`
	// FallBack: a map the verdict reads as merged is finalised again by EM
	// (Config.Final.KeepMerged, finaliser.fallBack). false in a finalisation begun
	// before, which keeps its map.
	FallBack bool `json:",omitempty"`
	// Training is a file holding the gradient training in progress after step Done (a
	// gob of chmm.GradState, saved every finalSaveEvery); "" when none was saved.
	Training string
}

// fallbackGrad is what the fallback sets aside of the gradient finalisation's map
// while its EM runs, besides the map itself (fallbackGradFile): the record that EM's
// map does not share, restored if the gradient map is kept.
type fallbackGrad struct {
	Pruned     int // Made.Pruned
	GrowRounds int // Made.GrowRounds
}

// fallbackGradFile is the gradient finalisation's map while the fallback's EM runs.
const fallbackGradFile = "final-fallback-gradient.model"

// The steps of a gradient finalisation round (finalGradState.Done).
const (
	gradTrained = 1 + iota // the round's map is trained
	gradPruned             // and pruned and retrained (Config.Final.Prune)
	gradChecked            // and the growth check has scored the round's budget
)

// Intervention is one anti-collapse response of the joint phase (Config.Joint.CollapseLevel).
type Intervention = evaluate.Intervention

// scales returns the α_div and learning-rate multipliers (1 in states written before them).
func (st *runState) scales() (alpha, lr float64) {
	alpha, lr = st.AlphaScale, st.LRScale
	if alpha == 0 {
		alpha = 1
	}
	if lr == 0 {
		lr = 1
	}
	return alpha, lr
}

// anneal returns the first iteration of cfg's α_div anneal and its length: the second
// half of the phase, or with Joint.StopChurn the Joint.Iters/4 iterations from the
// checkpoint that started it (at the latest, the last Joint.Iters/4).
func (st *runState) anneal(cfg Config) (start, length int) {
	if cfg.Joint.StopChurn == 0 {
		half := cfg.Joint.Iters / 2
		return half, cfg.Joint.Iters - half
	}
	length = max(1, cfg.Joint.Iters/4)
	start = cfg.Joint.Iters - length
	if st.AnnealStart > 0 {
		start = min(start, st.AnnealStart)
	}
	return start, length
}

// joint is the joint phase's part of st.Made.
func (st *runState) joint() *evaluate.Joint {
	if st.Made.Joint == nil {
		st.Made.Joint = &evaluate.Joint{}
	}
	return st.Made.Joint
}

// finite reports whether every value is neither NaN nor infinite.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// finiteRecord replaces non-finite values (JSON has none) by -1.
func finiteRecord(r Record) Record {
	for _, p := range []*float64{&r.Rec, &r.Commit, &r.NLLPerStep, &r.Div, &r.Lambda, &r.Perplexity, &r.Seconds} {
		if !finite(*p) {
			*p = -1
		}
	}
	return r
}
