package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"

	"github.com/gomlx/compute"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// Files of a run directory.
const (
	ConfigFile  = "config.json"   // the run's Config
	StateFile   = "state.gob"     // phase, joint cursor, history: the commit record of every checkpoint
	HistoryFile = "history.jsonl" // one Record per line (derived from the state at each commit)
	WarmupFile  = "warmup.ckpt"   // VQ-VAE checkpoint of phase 1 in legacy run directories (now warmup-NNNNNN.ckpt)
	VQVAEFile   = "vqvae.ckpt"    // final VQ-VAE (compacted codebook; its store also holds /hmm)
	CHMMFile    = "chmm.model"    // final cloned HMM (chmm format)
	ReportFile  = "report.json"   // evaluation on the held-out episode
)

// Phases in order.
const (
	PhaseWarmup = "warmup"
	PhaseJoint  = "joint"
	PhaseFinal  = "final"
	PhaseEval   = "evaluate"
	PhaseDone   = "done"
)

// ErrStopped is returned when Config.StopAfterJoint ends a run early; running again resumes it.
var ErrStopped = errors.New("pipeline: run stopped early (Config.StopAfterJoint); run again to resume")

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
	// checkpoint (Config.StopChurn); nil where it was not measured.
	Churn *float64 `json:"churn,omitempty"`
	Event string   `json:"event,omitempty"`
}

// runState is the commit record of a run directory.
type runState struct {
	Phase   string
	Seconds map[string]float64
	History []Record

	Codes []int // warm-up codes kept by compaction (token i = code Codes[i], unless merged)
	// CodesMerged, with Config.MergeCodes, is the token of each kept code (Codes[i] is
	// token CodesMerged[i]); nil without.
	CodesMerged []int
	// TokensMerged, with Config.MergeTokens, is the map's token of each of the joint
	// phase's tokens (the final encoder's token map, vqvae.Model.SetTokens); nil without.
	TokensMerged []int
	Share        []float64 // share of the training frames of each kept token after warm-up
	Clones       []int
	Checkpoint   string // current joint checkpoint (file in the run directory)

	JointIter   int
	LambdaScale float64
	Smoothed    float64 // exponential moving average (0.9) of the batch perplexity
	BestPPL     float64
	BestIter    int
	Best        Snapshot // perception (/vqvae/...) at BestPPL
	Rollbacks   int

	// Anti-collapse (Config.CollapseLevel): P₀, the setting changes so far (1 at the
	// start; 0 in states written before them reads as 1), the last healthy checkpoint,
	// the skipped (non-finite) steps and every intervention.
	WarmPPL         float64
	AlphaScale      float64
	LRScale         float64
	Healthy         string
	HealthyIter     int
	HealthySmoothed float64
	Skipped         int // joint steps not applied, over the run
	SkipRun         int // consecutive ones
	SkippedAtCommit int // Skipped at the last commit
	Interventions   []Intervention

	// FinalEM is the EM finalisation's progress at the end of its last finished split
	// round (nil: none, or the finalisation is not FinalEM): a resumed run starts the
	// next round from it.
	FinalEM *finalEMState
	// FinalGrad is the gradient finalisation's progress at the end of its last finished
	// training (nil: none, or the finalisation is FinalEM): a resumed run goes on from it.
	FinalGrad *finalGradState

	// Made is how the map is being made: what the phases measured so far (the warm-up's
	// codes and token entropies, the trainer's runs, pruning); the report's Training.
	Made evaluate.Training
	// Extra is the same, in states written before Made: decodeState moves it there.
	Extra map[string]float64

	// Integrity (rundir.go): the SHA-256 of config.json, of every model file the state
	// relies on, and the current warm-up checkpoint (a new name at each save).
	Identity string
	Files    map[string]string
	Warmup   string

	// The label-free stop (Config.StopChurn): the probe frames' tokens at the last
	// checkpoint, the iteration the α_div anneal started at (0: not yet) and the one
	// the phase stopped at (0: not stopped early).
	ProbeTokens []int
	AnnealStart int
	StoppedAt   int

	// Branch, if set, says that the warm-up and joint phase were taken over from another
	// run directory (Branch); nil when this run trained them.
	Branch *Branched

	// Backends are the GOMLX_BACKEND labels (hmmgraph.NewBackend) the run's phases ran
	// on, in order.
	Backends []string
	// HMMKernels are the cloned HMM's block kernels (chmm.KernelSet) the run's sessions
	// ran with, in order: the finalisation's sums depend on them, to rounding, so a run
	// resumed on another CPU is not byte-identical. "unrecorded" stands for the sessions
	// of a run begun before they were recorded.
	HMMKernels []string
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

// finalEMState is what FinalEM carries from one split round to the next, so that a
// finalisation resumed from it continues exactly as the uninterrupted one would.
type finalEMState struct {
	Round     int         // the next round to train
	Pieces    int         // pieces the walks' starts are cut into (GOMAXPROCS when it began)
	Start     string      // model file: the next round's start (the kept clones, split)
	Conf      [][]float64 // the confusion matrix the next round starts from
	Best      string      // model file: the map with the cheapest held-out ends so far
	BestConf  [][]float64 // and its confusion matrix
	BestBits  float64     // its held-out ends, bits per step
	BestRound int         // the round that trained it
	Missed    int         // rounds in a row that missed SplitGain
	RNG       []byte      // the splits' generator (rand.PCG.MarshalBinary)
	// Training is a file holding Round's EM in progress (a gob of chmm.EMState, saved
	// every finalSaveEvery); "" when Round's EM starts from Start. Round 0 has no Start
	// or Best file: its start is chmm.New's from the config's seed.
	Training string
}

// finalSaveEvery is how often the finalisation saves the training in progress (a
// round's EM, or a gradient training): a round of tiled's or big_room's finalisation
// takes 15–35 minutes on one core (README, "Bigger worlds"), which an interruption
// used to throw away. Tests set it to 0 (before every iteration).
var finalSaveEvery = 5 * time.Minute

// finalSaved, if set (tests), runs after each such save, with the name of the file
// saved (final-em-train-RR-IIIIII.gob, final-grad-train-RR-D-IIIIII.gob); an error
// stops the run there, as an interruption would.
var finalSaved func(name string) error

// finalGradState is what the gradient finalisation (FinalGradient) carries past each
// of its trainings, so that one resumed from it continues exactly as the uninterrupted
// one would (every training seeds its generators from the config).
type finalGradState struct {
	Round int     // the budget round (Config.FinalGrow): FinalClones·2^Round clones per token
	Done  int     // this round's steps done: 0, gradTrained, gradPruned or gradChecked
	Model string  // model file: this round's map after its last step ("" when Done is 0)
	Bits  float64 // the growth check's held-out ends with this round's budget (set with gradChecked)
	Event string  // marks the round's first history row
	// Training is a file holding the gradient training in progress after step Done (a
	// gob of chmm.GradState, saved every finalSaveEvery); "" when none was saved.
	Training string
}

// The steps of a gradient finalisation round (finalGradState.Done).
const (
	gradTrained = 1 + iota // the round's map is trained
	gradPruned             // and pruned and retrained (Config.FinalPrune)
	gradChecked            // and the growth check has scored the round's budget
)

// Intervention is one anti-collapse response of the joint phase (Config.CollapseLevel).
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

// Result is a finished run loaded from its directory.
type Result struct {
	Config Config
	VQVAE  *vqvae.Model // frozen encoder with the compacted codebook (K' codes)
	HMM    *chmm.Model  // over the K' compacted tokens
	Codes  []int        // token i is code Codes[i] of the warm-up codebook
	Report *evaluate.Report
	// History is the loss history of every phase.
	History []Record
	// Backend is the backend the run was loaded on (hmmgraph.NewBackend's label);
	// Report.Backend the one(s) it was trained on.
	Backend string
}

// BackendNote is a line saying that the run was trained on another backend than the
// one it was loaded on, or "". The go backend's options (its scheduling and worker
// pool) do not count: they give the same results bit for bit.
func (r *Result) BackendNote() string {
	if r.Report == nil || r.Report.Backend == "" || r.Report.Backend == r.Backend {
		return ""
	}
	name := func(label string) string { n, _, _ := strings.Cut(label, ":"); return n }
	same := true
	for _, b := range strings.Split(r.Report.Backend, " then ") {
		same = same && name(b) == name(r.Backend)
	}
	if same {
		return ""
	}
	return fmt.Sprintf("note: the run was trained on %s and is loaded on %s", r.Report.Backend, r.Backend)
}

// data holds the training and evaluation data of a run, all derived from the seed.
type data struct {
	env        *gridworld.Env
	train      *dataset.Bank
	episodes   []gridworld.Episode
	frames     [][]int // frames[e][t]: index into train of the image at step t of episode e
	allFrames  []int   // concatenated frames
	allPlaces  []int
	side       int
	trainTotal int
}

func loadData(cfg Config) (*data, error) {
	env, err := cfg.Environment()
	if err != nil {
		return nil, err
	}
	bank, err := dataset.LoadBank(cfg.Dataset, dataset.Train, env.ClassesUsed())
	if err != nil {
		return nil, err
	}
	d := &data{env: env, train: bank, side: bank.Rows()}
	d.episodes = env.TrainingEpisodes(gridworld.NewRand(cfg.Seed), cfg.Data.Episodes, cfg.Data.Steps)
	imgRNG := rand.New(rand.NewPCG(cfg.Seed, 0x7a1))
	for _, ep := range d.episodes {
		idx := bank.Frames(imgRNG, ep.Obs)
		d.frames = append(d.frames, idx)
		d.allFrames = append(d.allFrames, idx...)
		d.allPlaces = append(d.allPlaces, ep.Places...)
	}
	return d, nil
}

// Run trains, resumes or loads the run in dir with cfg and returns its evaluation:
//
//   - a new directory gets config.json and runs all phases;
//   - an interrupted run (context cancelled, process killed, Config.StopAfterJoint)
//     continues from its last checkpoint: the warm-up from its last saved step, the
//     joint phase from its last commit (every Config.CheckpointEvery iterations), the
//     finalisation and the evaluation from their start;
//   - a finished run is loaded, not retrained.
//
// A directory whose config.json differs from cfg (StopAfterJoint aside) is refused.
// The graphs run on hmmgraph.NewBackend (GOMLX_BACKEND, else the go backend); the
// report records every backend the run used. Progress lines with ETA go to progress
// when it is not nil.
func Run(ctx context.Context, dir string, cfg Config, progressOut io.Writer) (*evaluate.Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backend, label, err := hmmgraph.NewBackend()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		if _, err := os.Stat(filepath.Join(dir, ConfigFile)); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("pipeline: %s holds a run (phase %s) but no %s: restore it, or start a new run directory", dir, st.Phase, ConfigFile)
		}
	}
	if err := checkOrWriteConfig(dir, cfg); err != nil {
		return nil, err
	}
	if err := checkIdentity(dir, st); err != nil {
		return nil, err
	}
	if st.Phase == PhaseDone {
		res, err := LoadRun(dir)
		if err != nil {
			return nil, fmt.Errorf("%w\n(the run is marked finished but its files do not load; start a new run directory)", err)
		}
		if note := res.BackendNote(); note != "" && progressOut != nil {
			fmt.Fprintln(progressOut, note)
		}
		return res.Report, nil
	}
	if st.Phase == PhaseJoint {
		if st.JointIter > cfg.Joint.Iters {
			return nil, fmt.Errorf("pipeline: %s: the state is at joint iteration %d of %d", dir, st.JointIter, cfg.Joint.Iters)
		}
		if want := fmt.Sprintf("joint-%06d", st.JointIter); !strings.HasPrefix(st.Checkpoint, want) {
			return nil, fmt.Errorf("pipeline: %s: the state is at joint iteration %d but names checkpoint %q", dir, st.JointIter, st.Checkpoint)
		}
	}
	if st.legacy() {
		if err := adoptLegacy(dir, st); err != nil {
			return nil, err
		}
	}
	if progressOut != nil {
		fmt.Fprintf(progressOut, "run directory %s, backend %s\n", dir, label)
	}
	r := &runner{ctx: ctx, dir: dir, cfg: cfg, st: st, out: progressOut, backend: backend}
	st.recordSession(label, chmm.KernelSet())
	if r.d, err = loadData(cfg); err != nil {
		return nil, err
	}
	for _, step := range []struct {
		phase string
		fn    func() error
	}{
		{PhaseWarmup, r.warmup}, {PhaseJoint, r.jointPhase}, {PhaseFinal, r.final}, {PhaseEval, r.evaluate},
	} {
		if r.st.Phase != step.phase {
			continue
		}
		if err := step.fn(); err != nil {
			return nil, err
		}
	}
	if r.report == nil {
		return nil, fmt.Errorf("pipeline: %s: phase %q did not finish", dir, r.st.Phase)
	}
	return r.report, nil
}

type runner struct {
	ctx     context.Context
	dir     string
	cfg     Config
	st      *runState
	out     io.Writer
	backend compute.Backend
	d       *data
	// patience overrides SplitPatience for FinalEM (0: SplitPatience); only
	// TestRefinaliseStudy sets it.
	patience int
	// emRound, if set, sees each FinalEM round's trained map and its confusion
	// matrix before it is split (the refinalise study scores them); only studies set it.
	emRound func(round int, m *chmm.Model, conf [][]float64) error
	// finalStart is when the finalisation's seconds not yet in st.Seconds began.
	finalStart time.Time

	vq     *vqvae.Model
	joint  *Joint
	hmm    *chmm.Model
	report *evaluate.Report
}

func (r *runner) path(name string) string { return filepath.Join(r.dir, name) }

// commit writes the state (the commit record) and the derived history file.
func (r *runner) commit() error {
	if r.st.Identity == "" {
		d, err := fileDigest(r.path(ConfigFile))
		if err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		r.st.Identity = d
	}
	if err := writeState(r.dir, r.st); err != nil {
		return err
	}
	var h bytes.Buffer
	w := bufio.NewWriter(&h)
	enc := json.NewEncoder(w)
	for _, rec := range r.st.History {
		if err := enc.Encode(finiteRecord(rec)); err != nil {
			return fmt.Errorf("pipeline: history: %w", err)
		}
	}
	_ = w.Flush()
	return writeAtomic(r.path(HistoryFile), h.Bytes())
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

func (r *runner) addSeconds(phase string, start time.Time) {
	r.st.Seconds[phase] += time.Since(start).Seconds()
}

// ---- Phase 1: warm-up and token compaction ----

func (r *runner) warmup() error {
	cfg := r.cfg
	start, base := time.Now(), r.st.Seconds[PhaseWarmup]
	// The seconds committed with every checkpoint: an interrupted warm-up keeps them.
	elapsed := func() { r.st.Seconds[PhaseWarmup] = base + time.Since(start).Seconds() }
	var m *vqvae.Model
	var err error
	if r.st.Warmup != "" {
		if m, err = r.loadVQ(r.st.Warmup); err != nil {
			return err
		}
	} else if m, err = vqvae.New(r.backend, cfg.VQVAE, cfg.Seed); err != nil {
		return err
	}
	frames := vqvae.BankFrames{Bank: r.d.train, Index: r.d.allFrames}
	total := cfg.Warmup.Epochs * (frames.Len() / cfg.Warmup.Batch)
	if total == 0 && !m.Initialised() {
		n := min(frames.Len(), 1024)
		if err := m.InitFromData(r.d.train.Floats(r.d.allFrames[:n], nil)); err != nil {
			return err
		}
	}
	var bar *progress.Bar
	if r.out != nil && m.Steps() < total {
		bar = progress.New(r.out, "warm-up", total).Every(2 * time.Second).From(m.Steps())
	}
	wcfg := vqvae.WarmupConfig{Epochs: cfg.Warmup.Epochs, Batch: cfg.Warmup.Batch, LR: cfg.Warmup.LR,
		Checkpoint: r.path(warmupNext), MaxSteps: 25}
	for m.Steps() < total {
		if err := r.ctx.Err(); err != nil {
			elapsed()
			return err
		}
		if err := vqvae.Warmup(m, frames, wcfg, nil); err != nil {
			return err
		}
		elapsed()
		if err := r.commitWarmup(m.Steps()); err != nil {
			return err
		}
		h := m.History()
		last := h[len(h)-1]
		bar.Update(m.Steps(), "rec %.4f commit %.4f ppl %.2f", last.Rec, last.Commit, last.Perplexity)
	}
	if bar != nil {
		bar.Done("")
	}
	elapsed()
	sec := r.st.Seconds[PhaseWarmup]
	h := m.History()
	for i, s := range h {
		r.st.History = append(r.st.History, Record{Step: i + 1, Phase: PhaseWarmup, Rec: s.Rec, Commit: s.Commit,
			Perplexity: s.Perplexity, Seconds: sec * float64(i+1) / float64(len(h))})
	}

	// Token compaction (Sec. 3.8): keep the codes the encoder emits on the training frames.
	start = time.Now()
	if cfg.Warmup.Recenter {
		n := min(len(r.d.allFrames), max(cfg.Warmup.RecenterFrames, cfg.VQVAE.K))
		sample := rand.New(rand.NewPCG(cfg.Seed, 0x5ce7)).Perm(len(r.d.allFrames))[:n]
		idx := make([]int, n)
		for i, s := range sample {
			idx[i] = r.d.allFrames[s]
		}
		if err := m.InitCodebook(r.d.train.Floats(idx, nil)); err != nil {
			return err
		}
	}
	tokens, err := r.encodeAll(m, "compaction")
	if err != nil {
		return err
	}
	counts := make([]int, cfg.VQVAE.K)
	for _, t := range tokens {
		counts[t]++
	}
	var keep []int
	for k, c := range counts {
		if c > 0 {
			keep = append(keep, k)
		}
	}
	if len(keep) < 2 {
		return fmt.Errorf("pipeline: after warm-up the encoder emits %d code(s) on %d training frames: the codebook collapsed", len(keep), len(tokens))
	}
	relabel := make([]int, cfg.VQVAE.K)
	for i, k := range keep {
		relabel[k] = i
	}
	share := make([]float64, len(keep))
	for i, k := range keep {
		share[i] = float64(counts[k]) / float64(len(tokens))
	}
	for i := range tokens {
		tokens[i] = relabel[tokens[i]]
	}
	var vq *vqvae.Model
	if cfg.Warmup.MergeCodes > 0 {
		if vq, tokens, share, err = r.mergeCodes(m, keep, tokens, share); err != nil {
			return err
		}
	} else if vq, err = compact(m, keep, cfg.Seed); err != nil {
		return err
	}
	r.diagnose(PhaseWarmup, tokens)
	r.st.joint().ActiveCodesWarmup = len(keep)
	r.st.Codes, r.st.Share = keep, share
	r.st.Clones = cloneBudget(cfg.Joint.Clones, cfg.Joint.Budget, share)
	h0 := 0.0
	for _, p := range share {
		h0 -= p * math.Log(p)
	}
	r.st.WarmPPL, r.st.AlphaScale, r.st.LRScale = math.Exp(h0), 1, 1
	hmm := chmm.New(r.st.Clones, r.d.env.NumActions(), rand.New(rand.NewPCG(cfg.Seed, 0x4a11)))
	r.addSeconds("compact", start)
	if cfg.Joint.PretrainIters > 0 {
		start = time.Now()
		gc := chmm.GradConfig{Iters: cfg.Joint.PretrainIters, LR: cfg.Final.LR, EntropyWeight: cfg.Final.Entropy,
			Patience: cfg.Final.Patience, Tol: cfg.Final.Tol, Seed: cfg.Seed, Stop: r.ctx.Err}
		h, err := r.trainShown(hmm, r.d.sequences(tokens), gc, "HMM pre-training")
		if err != nil {
			return fmt.Errorf("pipeline: HMM pre-training: %w", err)
		}
		r.st.Made.AddRun(evaluate.TrainerRun{Name: "pretrain", Iterations: len(h.LogLik), Stop: h.Stop,
			ChunkLen: h.ChunkLen, Batch: h.Batch})
		r.addSeconds("pretrain", start)
		start = time.Now()
	}
	if r.joint, err = NewJoint(vq, hmm, cfg.VQVAE.Beta, cfg.Joint.LR, cfg.Joint.LR*cfg.Joint.HMMLRFactor); err != nil {
		return err
	}
	r.joint.FreezeVQ, r.joint.NoLengthNorm, r.joint.GradFrames = cfg.Joint.FreezeVQVAE, cfg.Joint.NoLengthNorm, cfg.Joint.GradFrames
	r.joint.Scaled = cfg.Joint.ScaledEmissions
	if cfg.Warmup.MergeCodes > 0 {
		r.joint.Share = share
	}
	r.st.LambdaScale = 1
	if err := r.saveJoint(); err != nil {
		return err
	}
	r.st.Healthy, r.st.HealthyIter = r.st.Checkpoint, 0
	r.addSeconds("compact", start)
	r.st.Phase = PhaseJoint
	return r.commit()
}

// mergeCodes merges the kept codes of the warm-up model m that the training walks
// cannot tell apart (Config.MergeCodes, chmm.MergeTokens): tokens are the training
// frames' kept-code indices and share their shares. Each merged token's codebook row is
// the frame-weighted mean of its codes' rows. It returns the joint phase's VQ-VAE, the
// frames' merged tokens and the merged tokens' shares, and records the merge in the
// state (CodesMerged; Codes keeps the kept codes).
func (r *runner) mergeCodes(m *vqvae.Model, keep, tokens []int, share []float64) (*vqvae.Model, []int, []float64, error) {
	group, n, err := chmm.MergeTokens(r.d.sequences(tokens), len(keep), r.d.env.NumActions(), r.cfg.Warmup.MergeCodes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline: merging codes: %w", err)
	}
	if n < 2 {
		return nil, nil, nil, fmt.Errorf("pipeline: merge_codes=%g merges all %d codes into one token: the walks tell none apart at that bar; lower it", r.cfg.Warmup.MergeCodes, len(keep))
	}
	cb := m.Codebook()
	reps := make([]int, n)
	rows := make([][]float32, n)
	sums := make([][]float64, n)
	merged := make([]float64, n)
	for i := range reps {
		reps[i] = -1
	}
	for i, k := range keep {
		g := group[i]
		if reps[g] < 0 {
			reps[g] = k
			sums[g] = make([]float64, len(cb[k]))
		}
		merged[g] += share[i]
		for d, v := range cb[k] {
			sums[g][d] += share[i] * float64(v)
		}
	}
	sizes := make([]float64, n)
	for g := range rows {
		rows[g] = make([]float32, len(sums[g]))
		for d, v := range sums[g] {
			rows[g][d] = float32(v / merged[g])
		}
		sizes[g] = merged[g] * float64(len(tokens))
	}
	vq, err := compact(m, reps, r.cfg.Seed)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := vq.SetCodebook(rows, sizes); err != nil {
		return nil, nil, nil, err
	}
	out := make([]int, len(tokens))
	for i, t := range tokens {
		out[i] = group[t]
	}
	r.st.CodesMerged = group
	return vq, out, merged, nil
}

// warmupNext is where a warm-up chunk saves its checkpoint before commitWarmup names it.
const warmupNext = "warmup-next.ckpt"

// commitWarmup names the checkpoint of a warm-up chunk (warmup-NNNNNN.ckpt, after step
// steps), records it in the state, commits, and removes the previous one. A new name at
// each save means that an interruption before the commit leaves the state's checkpoint
// in place.
func (r *runner) commitWarmup(steps int) error {
	name := fmt.Sprintf("warmup-%06d.ckpt", steps)
	if err := os.Rename(r.path(warmupNext), r.path(name)); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if err := record(r.dir, r.st, name); err != nil {
		return err
	}
	prev := r.st.Warmup
	r.st.Warmup = name
	if err := r.commit(); err != nil {
		return err
	}
	if prev != "" && prev != name {
		_ = os.Remove(r.path(prev))
		delete(r.st.Files, prev)
	}
	return nil
}

// loadVQ loads the VQ-VAE checkpoint name of the run directory after checking it is the
// file the state recorded.
func (r *runner) loadVQ(name string) (*vqvae.Model, error) {
	if err := verify(r.dir, r.st, name); err != nil {
		return nil, err
	}
	return vqvae.Load(r.backend, r.path(name))
}

// adoptLegacy records the digests of the files a legacy state relies on, so that the
// next commit turns the directory into a checked one.
func adoptLegacy(dir string, st *runState) error {
	if st.Warmup == "" {
		if _, err := os.Stat(filepath.Join(dir, WarmupFile)); err == nil {
			st.Warmup = WarmupFile
		}
	}
	for _, name := range []string{st.Warmup, st.Checkpoint, st.Healthy, VQVAEFile, CHMMFile, ReportFile} {
		if name == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			continue
		}
		if err := record(dir, st, name); err != nil {
			return err
		}
	}
	return nil
}

// cloneBudget returns the clone counts of the compacted tokens (no labels involved):
// clones each (BudgetUniform), or clones on average in proportion to each token's share
// of the training frames, at least one (BudgetShare).
func cloneBudget(clones int, budget string, share []float64) []int {
	c := make([]int, len(share))
	for i := range c {
		c[i] = clones
		if budget == BudgetShare {
			c[i] = max(1, int(math.Round(share[i]*float64(clones*len(share)))))
		}
	}
	return c
}

// encodeAll returns the hard token of every training frame, behind a progress line on
// r.out named after phase (four_rooms' 200,000 frames: about 30 s alone on one core).
func (r *runner) encodeAll(m *vqvae.Model, phase string) ([]int, error) {
	var bar *progress.Bar
	if r.out != nil {
		bar = progress.New(r.out, phase+": encode training frames", len(r.d.allFrames)).Every(2 * time.Second)
	}
	tokens, err := r.d.encodeFrames(m, bar)
	if err != nil {
		return nil, err
	}
	bar.Done("")
	return tokens, nil
}

// encodeAll returns the hard token of every training frame under m, in blocks
// (memory stays small).
func (d *data) encodeAll(m *vqvae.Model) ([]int, error) { return d.encodeFrames(m, nil) }

// encodeFrames is encodeAll reporting the frames done to bar (nil: silent).
func (d *data) encodeFrames(m *vqvae.Model, bar *progress.Bar) ([]int, error) {
	const block = 4096
	var out []int
	var buf []float32
	for s := 0; s < len(d.allFrames); s += block {
		buf = d.train.Floats(d.allFrames[s:min(s+block, len(d.allFrames))], buf)
		t, _, err := m.Encode(buf)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
		bar.Update(len(out), "")
	}
	return out, nil
}

// sequences cuts the training episodes' tokens (in episode order) into sequences.
func (d *data) sequences(tokens []int) []chmm.Sequence {
	seqs := make([]chmm.Sequence, len(d.episodes))
	off := 0
	for e, ep := range d.episodes {
		seqs[e] = chmm.Sequence{Obs: tokens[off : off+ep.Len()], Actions: ep.Actions}
		off += ep.Len()
	}
	return seqs
}

// saveJoint writes the joint model to a new checkpoint file and points the state at it
// (the caller commits; the previous file is removed after the commit by pruneJoint).
func (r *runner) saveJoint() error {
	name := fmt.Sprintf("joint-%06d.ckpt", r.st.JointIter)
	if n := len(r.st.Interventions); n > 0 {
		name = fmt.Sprintf("joint-%06d-r%d.ckpt", r.st.JointIter, n) // a rolled-back branch
	}
	if err := r.joint.VQ.Save(r.path(name)); err != nil {
		return err
	}
	r.st.Checkpoint = name
	return record(r.dir, r.st, name)
}

// pruneJoint removes joint checkpoints other than the current and the last healthy one.
func (r *runner) pruneJoint() {
	old, _ := filepath.Glob(r.path("joint-*.ckpt"))
	for _, f := range old {
		if b := filepath.Base(f); b != r.st.Checkpoint && b != r.st.Healthy {
			_ = os.Remove(f)
			delete(r.st.Files, b)
		}
	}
}

func (r *runner) loadJoint() error {
	if r.joint != nil {
		return nil
	}
	return r.openJoint(r.st.Checkpoint)
}

// openJoint loads the joint checkpoint name with the VQ-VAE learning rate of the
// state's current scale.
func (r *runner) openJoint(name string) error {
	vq, err := r.loadVQ(name)
	if err != nil {
		return err
	}
	c := r.cfg
	_, lrScale := r.st.scales()
	j, err := AttachJoint(vq, r.st.Clones, r.d.env.NumActions(), c.VQVAE.Beta, c.Joint.LR*lrScale, c.Joint.LR*c.Joint.HMMLRFactor)
	if err != nil {
		return err
	}
	j.FreezeVQ, j.NoLengthNorm, j.GradFrames = c.Joint.FreezeVQVAE, c.Joint.NoLengthNorm, c.Joint.GradFrames
	j.Scaled = c.Joint.ScaledEmissions
	if c.Warmup.MergeCodes > 0 {
		j.Share = r.st.Share
	}
	r.joint = j
	return nil
}

// ---- Phase 2: joint training ----

// chunk draws the minibatch of joint iteration it (a function of the seed and it only,
// so a resumed run sees the same chunks).
func (r *runner) chunk(it int) Chunk {
	cfg := r.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc4a1_0000+uint64(it)))
	B, T := cfg.Joint.Batch, cfg.Joint.ChunkLen
	L := min(T, cfg.Data.Steps)
	p := r.d.side * r.d.side
	ch := Chunk{B: B, T: T, Images: make([]float32, B*T*p), Actions: make([]int32, B*(T-1)), Mask: make([]float32, B*T)}
	for b := range B {
		e := rng.IntN(len(r.d.episodes))
		s := rng.IntN(cfg.Data.Steps - L + 1)
		ep := r.d.episodes[e]
		r.d.train.Floats(r.d.frames[e][s:s+L], ch.Images[b*T*p:(b*T+L)*p])
		for t := range L {
			ch.Mask[b*T+t] = 1
			if t < L-1 {
				ch.Actions[b*(T-1)+t] = int32(ep.Actions[s+t])
			}
		}
	}
	dataset.Jitter(rand.New(rand.NewPCG(cfg.Seed, 0x717e_0000+uint64(it))), ch.Images, r.d.side, cfg.Joint.Jitter)
	if cfg.Joint.GradFrames > 0 && cfg.Joint.GradFrames < B*T {
		// The gradient subset: a uniform draw among the real frames (padding last).
		perm := rand.New(rand.NewPCG(cfg.Seed, 0x5b5e_0000+uint64(it))).Perm(B * T)
		for _, real := range []bool{true, false} {
			for _, f := range perm {
				if (ch.Mask[f] != 0) == real {
					ch.Order = append(ch.Order, int32(f))
				}
			}
		}
	}
	return ch
}

// lambdaAt is λ_t = λ·min(1, t/T_anneal) (Sec. 3.6) times the throttle factor.
func (r *runner) lambdaAt(it int) float64 {
	anneal := math.Max(1, r.cfg.Joint.AnnealFrac*float64(r.cfg.Joint.Iters))
	return r.cfg.Joint.Lambda * math.Min(1, float64(it+1)/anneal) * r.st.LambdaScale
}

// alphaAt is α_div at joint iteration it: AlphaDiv, or with AlphaDivEnd > 0 linear from
// AlphaDiv at the middle of the phase to AlphaDivEnd at its last iteration.
// After an intervention both are multiplied by the state's α_div scale (an α_div of 0,
// the ablation, becomes 0.1 × the scale).
func (r *runner) alphaAt(it int) float64 {
	c := r.cfg
	scale, _ := r.st.scales()
	a := c.Joint.AlphaDiv
	if c.Joint.AlphaDivEnd > 0 && c.Joint.Iters >= 2 {
		start, length := r.st.anneal(c)
		if it >= start {
			f := min(1, float64(it-start)/float64(max(1, length-1)))
			a = c.Joint.AlphaDiv + f*(c.Joint.AlphaDivEnd-c.Joint.AlphaDiv)
		}
	}
	if scale != 1 && a == 0 {
		a = 0.1
	}
	return a * scale
}

// anneal returns the first iteration of c's α_div anneal and its length: the second
// half of the phase, or with StopChurn the JointIters/4 iterations from the checkpoint
// that started it (at the latest, the last JointIters/4).
func (st *runState) anneal(c Config) (start, length int) {
	if c.Joint.StopChurn == 0 {
		half := c.Joint.Iters / 2
		return half, c.Joint.Iters - half
	}
	length = max(1, c.Joint.Iters/4)
	start = c.Joint.Iters - length
	if st.AnnealStart > 0 {
		start = min(start, st.AnnealStart)
	}
	return start, length
}

// ProbeFrames is the number of training frames the label-free stop re-encodes at
// every checkpoint (Config.StopChurn).
const ProbeFrames = 2048

// churn re-encodes the probe frames (a fixed sample of the training frames) and returns
// the share whose token changed since the previous checkpoint: NaN at the first.
func (r *runner) churn() (float64, error) {
	n := min(ProbeFrames, len(r.d.allFrames))
	idx := make([]int, n)
	for i, f := range rand.New(rand.NewPCG(r.cfg.Seed, 0x9b0b_e000)).Perm(len(r.d.allFrames))[:n] {
		idx[i] = r.d.allFrames[f]
	}
	tokens, _, err := r.joint.VQ.Encode(r.d.train.Floats(idx, nil))
	if err != nil {
		return 0, fmt.Errorf("pipeline: probe tokens: %w", err)
	}
	prev := r.st.ProbeTokens
	r.st.ProbeTokens = tokens
	if len(prev) != len(tokens) {
		return math.NaN(), nil
	}
	changed := 0
	for i, t := range tokens {
		if t != prev[i] {
			changed++
		}
	}
	return float64(changed) / float64(n), nil
}

// stopCheck measures the churn at a checkpoint (Config.StopChurn), records it, starts
// the α_div anneal or ends the phase; it returns whether the phase ends here.
func (r *runner) stopCheck(rec *Record) (bool, error) {
	c, st := r.cfg, r.st
	ch, err := r.churn()
	if err != nil {
		return false, err
	}
	if math.IsNaN(ch) {
		return false, nil
	}
	rec.Churn = &ch
	settled := ch <= c.Joint.StopChurn
	rampEnd := int(math.Ceil(c.Joint.AnnealFrac * float64(c.Joint.Iters)))
	start, length := st.anneal(c)
	switch {
	case st.AnnealStart == 0 && settled && st.JointIter >= rampEnd && st.JointIter < start:
		st.AnnealStart = st.JointIter
		rec.Event = strings.TrimPrefix(rec.Event+fmt.Sprintf("; tokens settled (churn %.4f ≤ %g): α_div anneal starts", ch, c.Joint.StopChurn), "; ")
	case st.JointIter >= start+length && settled:
		st.StoppedAt = st.JointIter
		rec.Event = strings.TrimPrefix(rec.Event+fmt.Sprintf("; tokens settled after the anneal (churn %.4f ≤ %g): joint phase ends", ch, c.Joint.StopChurn), "; ")
		return true, nil
	}
	return false, nil
}

// afterJointStep, if set (tests only), runs after every joint step, before the step is
// recorded and monitored: it may change the model (force a collapse) or the metrics.
var afterJointStep func(r *runner, iter int, met *StepMetrics) error

// monitorWarmup is the number of joint iterations before the collapse monitor acts.
const monitorWarmup = 10

func (r *runner) jointPhase() error {
	cfg := r.cfg
	if err := r.loadJoint(); err != nil {
		return err
	}
	start := time.Now()
	base := r.st.Seconds[PhaseJoint]
	var bar *progress.Bar
	if r.out != nil && r.st.JointIter < cfg.Joint.Iters {
		bar = progress.New(r.out, "joint", cfg.Joint.Iters).Every(2 * time.Second).From(r.st.JointIter)
	}
	doneHere := 0
	for r.st.JointIter < cfg.Joint.Iters {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if cfg.StopAfterJoint > 0 && doneHere == cfg.StopAfterJoint {
			return ErrStopped
		}
		it := r.st.JointIter
		lambda, alpha := r.lambdaAt(it), r.alphaAt(it)
		met, err := r.joint.Step(r.chunk(it), lambda, alpha)
		if err != nil {
			return fmt.Errorf("pipeline: joint iteration %d: %w", it+1, err)
		}
		if afterJointStep != nil {
			if err := afterJointStep(r, it+1, &met); err != nil {
				return err
			}
		}
		r.st.JointIter++
		doneHere++
		rec := Record{Step: it + 1, Phase: PhaseJoint, Rec: met.Rec, Commit: met.Commit, NLLPerStep: met.NLLPerStep,
			Div: met.Div, Lambda: lambda, Perplexity: met.Perplexity, Seconds: base + time.Since(start).Seconds()}
		reason := ""
		if met.Applied {
			r.st.SkipRun = 0
			ev, collapsed, err := r.monitor(met.Perplexity)
			if err != nil {
				return err
			}
			rec.Event = ev
			if collapsed {
				reason = fmt.Sprintf("collapse (smoothed perplexity %.2f < %.2f)", r.st.Smoothed, r.collapseLevel(1))
			}
		} else {
			// Guarded in the graph: no variable changed. A few in a row call for a rollback.
			r.st.Skipped++
			r.st.SkipRun++
			rec.Event = fmt.Sprintf("non-finite step not applied (loss %g)", met.Loss)
			if r.st.SkipRun >= 3 {
				reason = fmt.Sprintf("%d non-finite steps in a row", r.st.SkipRun)
			}
		}
		r.st.History = append(r.st.History, rec)
		bar.Update(r.st.JointIter, "rec %.4f nll/T %.3f div %.3f λ %.2f ppl %.2f", met.Rec, met.NLLPerStep, met.Div, lambda, met.Perplexity)
		if reason != "" {
			ev, err := r.intervene(reason)
			if err != nil {
				return err
			}
			if r.out != nil {
				fmt.Fprintf(r.out, "\n%s\n", ev)
			}
			continue
		}
		if r.st.JointIter%cfg.Joint.CheckpointEvery == 0 || r.st.JointIter == cfg.Joint.Iters {
			stop := false
			if cfg.Joint.StopChurn > 0 {
				if stop, err = r.stopCheck(&r.st.History[len(r.st.History)-1]); err != nil {
					return err
				}
			}
			r.st.Seconds[PhaseJoint] = base + time.Since(start).Seconds()
			if r.st.JointIter == cfg.Joint.Iters || stop {
				if err := r.finishJoint(); err != nil {
					return err
				}
			}
			if err := r.saveJoint(); err != nil {
				return err
			}
			// Healthy: no skipped step since the last commit, and both the smoothed
			// perplexity and this iteration's (the smoothed one lags a sudden collapse).
			if lvl := r.collapseLevel(2); r.st.Skipped == r.st.SkippedAtCommit && r.st.Smoothed >= lvl && met.Perplexity >= lvl {
				r.st.Healthy, r.st.HealthyIter, r.st.HealthySmoothed = r.st.Checkpoint, r.st.JointIter, r.st.Smoothed
			}
			r.st.SkippedAtCommit = r.st.Skipped
			if err := r.commit(); err != nil {
				return err
			}
			r.pruneJoint()
			if stop {
				break
			}
		}
	}
	if bar != nil {
		msg := ""
		if r.st.StoppedAt > 0 {
			msg = fmt.Sprintf("tokens settled: stopped at %d of at most %d", r.st.StoppedAt, cfg.Joint.Iters)
		}
		bar.Done("%s", msg)
	}
	if cfg.Joint.Iters == 0 {
		r.st.Phase = PhaseFinal
		return r.commit()
	}
	return nil
}

// monitor tracks the smoothed codebook perplexity (Sec. 3.6 anti-collapse): it keeps a
// snapshot of the perception at the best smoothed value, and when the smoothed value
// falls below CollapseFrac of the best it restores the perception only — the encoder,
// decoder, codebook and their Adam state — keeping (π, Θ) and their Adam state (the
// reference restored the HMM too and so discarded the joint phase's HMM progress), and
// multiplies λ by ThrottleFactor. It returns a description of what it did, if anything.
func (r *runner) monitor(ppl float64) (event string, collapsed bool, err error) {
	st := r.st
	if st.JointIter == 1 || st.Smoothed == 0 {
		st.Smoothed = ppl
	} else {
		st.Smoothed = 0.9*st.Smoothed + 0.1*ppl
	}
	collapsed = r.cfg.Joint.CollapseLevel > 0 && st.JointIter >= monitorWarmup && st.Smoothed < r.collapseLevel(1)
	if r.cfg.Joint.CollapseFrac == 0 || st.JointIter < monitorWarmup {
		return "", collapsed, nil
	}
	if st.Smoothed > st.BestPPL {
		st.BestPPL, st.BestIter = st.Smoothed, st.JointIter
		snap, err := snapshot(r.joint.VQ.Store(), "/"+vqvae.ScopeName+"/")
		if err != nil {
			return "", false, err
		}
		st.Best = snap
		return "", collapsed, nil
	}
	if st.Smoothed < r.cfg.Joint.CollapseFrac*st.BestPPL && st.Best != nil {
		if err := restoreSnapshot(r.joint.VQ.Store(), st.Best); err != nil {
			return "", false, err
		}
		st.LambdaScale *= r.cfg.Joint.ThrottleFactor
		st.Rollbacks++
		ev := fmt.Sprintf("collapse: smoothed perplexity %.3f < %.2f × best %.3f (iteration %d): perception restored, HMM kept, λ scale %.3g",
			st.Smoothed, r.cfg.Joint.CollapseFrac, st.BestPPL, st.BestIter, st.LambdaScale)
		st.Smoothed = st.BestPPL
		return ev, false, nil
	}
	return "", collapsed, nil
}

// collapseLevel is 1 + m·CollapseLevel·(P₀ − 1): the collapse threshold (m = 1) and the
// level a checkpoint must keep to count as healthy (m = 2). With CollapseLevel 0 every
// checkpoint without a skipped step is healthy.
func (r *runner) collapseLevel(m float64) float64 {
	p0 := r.st.WarmPPL
	if p0 == 0 {
		p0 = 1
		for _, p := range r.st.Share {
			p0 *= math.Pow(p, -p)
		}
	}
	return 1 + m*r.cfg.Joint.CollapseLevel*(p0-1)
}

// intervene is the anti-collapse response (Config.CollapseLevel): it restores the last
// healthy checkpoint (VQ-VAE, codebook, HMM and both Adam states), doubles α_div, halves
// the VQ-VAE learning rate, re-seeds the codes unused on a sample of training frames,
// drops the abandoned iterations from the history (the event goes to the last one kept)
// and commits the new branch. More than Config.MaxInterventions is an error.
func (r *runner) intervene(reason string) (string, error) {
	st, cfg := r.st, r.cfg
	if len(st.Interventions) >= cfg.Joint.MaxInterventions {
		return "", fmt.Errorf("pipeline: joint iteration %d: %s after %d intervention(s) (max_interventions %d); the run directory keeps the checkpoint of iteration %d",
			st.JointIter, reason, len(st.Interventions), cfg.Joint.MaxInterventions, st.HealthyIter)
	}
	alpha, lr := st.scales()
	iv := Intervention{Iter: st.JointIter, Reason: reason, RolledBackTo: st.HealthyIter, AlphaScale: 2 * alpha, LRScale: lr / 2}
	st.AlphaScale, st.LRScale = iv.AlphaScale, iv.LRScale
	if err := r.openJoint(st.Healthy); err != nil {
		return "", fmt.Errorf("pipeline: rollback: %w", err)
	}
	if !cfg.Joint.FreezeVQVAE {
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x4e71_0000+uint64(len(st.Interventions))))
		n := min(len(r.d.allFrames), 4096)
		idx := make([]int, n)
		for i, f := range rng.Perm(len(r.d.allFrames))[:n] {
			idx[i] = r.d.allFrames[f]
		}
		var err error
		if iv.Revived, err = r.joint.VQ.ReviveCodes(r.d.train.Floats(idx, nil), 0.1, rng); err != nil {
			return "", fmt.Errorf("pipeline: rollback: %w", err)
		}
	}
	st.Interventions = append(st.Interventions, iv)
	st.JointIter, st.Smoothed, st.SkipRun = st.HealthyIter, st.HealthySmoothed, 0
	st.ProbeTokens = nil // the churn restarts from the restored checkpoint
	if st.AnnealStart > st.HealthyIter {
		st.AnnealStart = 0
	}
	kept := st.History[:0]
	last := -1
	for _, rec := range st.History {
		if rec.Phase == PhaseJoint && rec.Step > st.HealthyIter {
			continue
		}
		if rec.Phase == PhaseJoint {
			last = len(kept)
		}
		kept = append(kept, rec)
	}
	st.History = kept
	ev := "intervention: " + iv.String()
	if last < 0 { // rolled back to the start of the phase: the event goes to the warm-up's last record
		last = len(kept) - 1
	}
	if last >= 0 {
		st.History[last].Event = strings.TrimPrefix(st.History[last].Event+"; "+ev, "; ")
	}
	if err := r.saveJoint(); err != nil {
		return "", err
	}
	st.Healthy = st.Checkpoint
	st.SkippedAtCommit = st.Skipped
	if err := r.commit(); err != nil {
		return "", err
	}
	r.pruneJoint()
	return ev, nil
}

// finishJoint ends phase 2: the perception of the best snapshot replaces a collapsed
// final one (the HMM is kept), and H(token | place) on the training frames is recorded.
func (r *runner) finishJoint() error {
	st := r.st
	if r.cfg.Joint.CollapseFrac > 0 && st.Best != nil && st.Smoothed < r.cfg.Joint.CollapseFrac*st.BestPPL {
		if err := restoreSnapshot(r.joint.VQ.Store(), st.Best); err != nil {
			return err
		}
		st.Rollbacks++
	}
	st.Phase = PhaseFinal
	return nil
}

// ---- Phase 3: finalisation ----

func (r *runner) final() error {
	cfg := r.cfg
	if err := r.loadJoint(); err != nil {
		return err
	}
	r.finalStart = time.Now()
	tokens, err := r.encodeAll(r.joint.VQ, "finalisation")
	if err != nil {
		return err
	}
	r.diagnose(PhaseJoint, tokens)
	hmm, err := r.joint.HMM()
	if err != nil {
		return err
	}
	if cfg.Final.MergeTokens > 0 {
		if tokens, err = r.mergeTokens(tokens); err != nil {
			return err
		}
		// The finalisation starts afresh (Validate: BudgetShare or EM); this model only
		// carries the merged tokens and the actions.
		hmm = chmm.New(chmm.UniformClones(r.joint.VQ.NumTokens(), 1), hmm.NumActions, nil)
	}
	share := make([]float64, hmm.K())
	for _, x := range tokens {
		share[x] += 1 / float64(len(tokens))
	}
	if cfg.Final.Trainer == FinalEM {
		hmm, err = r.finaliseEM(r.d.sequences(tokens), hmm.K(), hmm.NumActions)
	} else {
		hmm, err = r.finalise(r.d.sequences(tokens), share, hmm)
	}
	if err != nil {
		return err
	}
	conf := r.st.Made.Confusion
	hmm.Meta = map[string]string{"env": cfg.Env, "dataset": cfg.Dataset, "trainer": "joint", "seed": fmt.Sprint(cfg.Seed)}
	if conf != nil {
		b, err := json.Marshal(conf)
		if err != nil {
			return err
		}
		hmm.Meta[ConfusionMeta] = string(b)
	}
	if err := hmm.Save(r.path(CHMMFile)); err != nil {
		return err
	}
	if err := r.joint.VQ.Save(r.path(VQVAEFile)); err != nil {
		return err
	}
	for _, name := range []string{CHMMFile, VQVAEFile} {
		if err := record(r.dir, r.st, name); err != nil {
			return err
		}
	}
	r.hmm = hmm
	r.addSeconds(PhaseFinal, r.finalStart)
	r.st.Phase = PhaseEval
	r.st.FinalEM, r.st.FinalGrad = nil, nil
	r.forgetFinal()
	if err := r.commit(); err != nil {
		return err
	}
	r.removeStrayFinal()
	return nil
}

// mergeTokens merges the joint phase's tokens that the training walks cannot tell
// apart (Config.MergeTokens, chmm.MergeTokens) into the map's tokens: the final
// encoder reads its codes through the merge (vqvae.Model.SetTokens), and the training
// frames' tokens (the joint phase's) are returned as the map's. The merge is recorded
// in the state (TokensMerged).
func (r *runner) mergeTokens(tokens []int) ([]int, error) {
	vq := r.joint.VQ
	group, n, err := chmm.MergeTokens(r.d.sequences(tokens), vq.NumTokens(), r.d.env.NumActions(), r.cfg.Final.MergeTokens)
	if err != nil {
		return nil, fmt.Errorf("pipeline: merging tokens: %w", err)
	}
	if n < 2 {
		return nil, fmt.Errorf("pipeline: merge_tokens=%g merges all %d tokens into one: the walks tell none apart at that bar; lower it", r.cfg.Final.MergeTokens, vq.NumTokens())
	}
	if err := vq.SetTokens(group); err != nil {
		return nil, err
	}
	merged := make([]int, len(tokens))
	for i, k := range tokens {
		merged[i] = group[k]
	}
	r.st.TokensMerged = group
	if r.out != nil {
		fmt.Fprintf(r.out, "finalisation: %d tokens merged into %d by what the walks show around them (z < %g)\n", len(group), n, r.cfg.Final.MergeTokens)
	}
	return merged, nil
}

// finalise trains the map's HMM on seqs, the training walks' hard tokens (share: each
// token's share of their frames), from joint, the joint phase's HMM (FinalFromJoint),
// or afresh on a budget by token share that grows where it binds (Config.FinalGrow),
// then prunes it (Config.FinalPrune). Each finished training is a checkpoint
// (r.st.FinalGrad) that an interrupted run resumes from.
func (r *runner) finalise(seqs []chmm.Sequence, share []float64, joint *chmm.Model) (*chmm.Model, error) {
	cfg := r.cfg
	gc := chmm.GradConfig{Iters: cfg.Final.Iters, LR: cfg.Final.LR, EntropyWeight: cfg.Final.Entropy,
		Patience: cfg.Final.Patience, Tol: cfg.Final.Tol, SplitRounds: cfg.Final.PlateauSplits, Seed: cfg.Seed, Workers: 0, Stop: r.ctx.Err}
	grow := cfg.Final.Budget == BudgetShare && cfg.Final.Prune > 0 && cfg.Final.Iters > 0
	hmm := joint
	s := r.st.FinalGrad
	if s == nil {
		s = &finalGradState{}
		r.st.FinalGrad = s // its trainings save themselves (trainShown)
	} else {
		if s.Model != "" {
			var err error
			if hmm, err = r.loadFinal(s.Model, joint.K(), joint.NumActions); err != nil {
				return nil, err
			}
		}
		if r.out != nil {
			done := [...]string{"at its start", "after its training", "after pruning", "after the growth check's first budget"}[s.Done]
			budget := "the joint phase's clones" // FinalFromJoint
			if cfg.Final.Budget == BudgetShare {
				budget = fmt.Sprintf("%d clones per token", cfg.Final.Clones<<s.Round)
			}
			fmt.Fprintf(r.out, "finalisation resumed in round %d (%s), %s\n", s.Round, budget, done)
		}
	}
	for {
		clones := cfg.Final.Clones << s.Round
		suffix := "" // the runs of each round keep their own record (Training.AddRun)
		if s.Round > 0 {
			suffix = fmt.Sprintf(" (%d× budget)", 1<<s.Round)
		}
		if s.Done == 0 {
			if cfg.Final.Budget == BudgetShare {
				hmm = chmm.New(cloneBudget(clones, BudgetShare, share), joint.NumActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
			}
			if cfg.Final.Iters > 0 {
				if err := r.trainFinal(hmm, seqs, gc, "finalise"+suffix, s.Event); err != nil {
					return nil, fmt.Errorf("pipeline: finalisation: %w", err)
				}
			}
			s.Done = gradTrained
			if err := r.checkpointGrad(s, hmm); err != nil {
				return nil, err
			}
		}
		if s.Done == gradTrained {
			if cfg.Final.Prune > 0 {
				var err error
				if hmm, err = r.prune(hmm, seqs, gc, "retrain"+suffix); err != nil {
					return nil, err
				}
			}
			s.Done = gradPruned
			if err := r.checkpointGrad(s, hmm); err != nil {
				return nil, err
			}
		}
		r.st.Made.GrowRounds = s.Round
		// Config.FinalGrow: the budget binds when pruning leaves fewer than GrowSlack
		// of its clones unused; it doubles if that predicts the training walks better.
		unused := r.st.Made.Pruned
		budget := hmm.N() - 1 + unused // the round's states before pruning
		if !grow || s.Round == cfg.Final.BudgetDoublings || float64(unused) >= GrowSlack*float64(budget) {
			break
		}
		steps := 0
		for _, q := range seqs {
			steps += q.Len()
		}
		if need := chmm.TrainBytes(1+len(share)*2*clones, joint.NumActions, steps); need > maxFinalBytes {
			if r.out != nil {
				fmt.Fprintf(r.out, "the finalisation's budget binds (%d of %d clones unused), but twice as many would need %.1f GB (more than %.0f): kept\n",
					unused, budget, need/1e9, maxFinalBytes/1e9)
			}
			break
		}
		if r.out != nil {
			fmt.Fprintf(r.out, "the finalisation's budget binds: pruning left %d of %d clones unused (fewer than %.0f%%); does twice the budget predict the end of the training walks better?\n",
				unused, budget, 100*GrowSlack)
		}
		if s.Done == gradPruned {
			bits, err := r.growthBits(seqs, share, clones, joint.NumActions, gc)
			if err != nil {
				return nil, fmt.Errorf("pipeline: finalisation: growth check: %w", err)
			}
			s.Done, s.Bits = gradChecked, bits
			if err := r.checkpointGrad(s, nil); err != nil { // the map is the pruned one, saved already
				return nil, err
			}
		}
		grown, err := r.growthBits(seqs, share, 2*clones, joint.NumActions, gc)
		if err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: growth check: %w", err)
		}
		check := evaluate.GrowCheck{Clones: clones, Bits: s.Bits, GrownBits: grown, Grown: s.Bits-grown >= GrowGain}
		r.st.Made.GrowChecks = append(r.st.Made.GrowChecks, check)
		if r.out != nil {
			what := "budget kept"
			if check.Grown {
				what = "budget doubled"
			}
			fmt.Fprintf(r.out, "held-out end of the training walks: %.4f bits/step with %d clones per token, %.4f with %d: %s\n",
				check.Bits, clones, check.GrownBits, 2*clones, what)
		}
		if !check.Grown {
			break
		}
		// Event: short, Figure 6 labels it.
		s.Round, s.Done, s.Model, s.Event = s.Round+1, 0, "", fmt.Sprintf("budget ×2: %d/%d unused", unused, budget)
		if err := r.checkpointGrad(s, nil); err != nil {
			return nil, err
		}
	}
	return hmm, nil
}

// checkpointGrad commits s, with m (this round's map after the step just done; nil:
// the map s.Model names is unchanged) saved beside it under a new name, so that an
// interrupted finalisation resumes there. Runs without a directory (studies) keep
// nothing.
func (r *runner) checkpointGrad(s *finalGradState, m *chmm.Model) error {
	if r.dir == "" {
		return nil
	}
	s.Training = "" // the step's training is done
	if m != nil {
		s.Model = fmt.Sprintf("final-grad-%02d-%d.model", s.Round, s.Done)
		if err := m.Save(r.path(s.Model)); err != nil {
			return fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if err := record(r.dir, r.st, s.Model); err != nil {
			return err
		}
	}
	r.st.FinalGrad = s
	return r.commitFinal()
}

// finaliseEM is the finalisation by EM through a learned confusion matrix (FinalEM).
// From one clone per token, EM (FinalIters soft iterations, pseudocount
// FinalEMPseudocount, chmm.DefaultEMConfig's splits at plateaus, no hard phase) learns
// the map and C[k][o], the chance that a place of token k is read as o, on the first
// 1 − GrowHoldOut of every training walk, cut into pieces of at least minPiece steps
// so that every core has one (the forward–backward pass through C runs one goroutine
// per sequence; a cut starts its piece afresh, from π). C starts as startConfusion
// makes it; entries below ConfusionMin are dropped after each round. Then the clones
// holding at least chmm.UsedShare of their token's expected visits are kept and split in
// two (chmm.SplitAll) and EM trains on, until the held-out ends of the walks (scored
// given their starts, under C) have missed a gain of SplitGain bits per step over the
// best so far SplitPatience rounds in a row, or FinalDoublings splits. The map with the cheapest held-out ends
// is kept, with its C in r.st.Made.Confusion.
func (r *runner) finaliseEM(seqs []chmm.Sequence, k, numActions int) (*chmm.Model, error) {
	cfg := r.cfg
	start, held := holdOutEnds(seqs)
	src := rand.NewPCG(cfg.Seed, 0x5b1e) // the splits' generator
	rng := rand.New(src)
	var m, best *chmm.Model
	var conf, bestConf [][]float64
	var resume *chmm.EMState // s.Round's EM in progress
	bestBits, bestRound, missed := math.Inf(1), 0, 0
	s := r.st.FinalEM
	if s == nil {
		s = &finalEMState{Pieces: runtime.GOMAXPROCS(0)}
		var rare []int
		conf, rare = startConfusion(seqs, k)
		if len(rare) > 0 && r.out != nil {
			fmt.Fprintf(r.out, "token(s) %v show on fewer than %d training steps: read as misreads of the others, they hold no place\n", rare, chmm.NoisyStepsPerClone)
		}
		ones := make([]int, k)
		for i := range ones {
			ones[i] = 1
		}
		m = chmm.New(ones, numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
		r.st.Made.HeldOutBits = nil
	} else {
		var err error
		if s.Start == "" { // round 0, saved within its EM
			m = chmm.New(chmm.UniformClones(k, 1), numActions, rand.New(rand.NewPCG(cfg.Seed, 0xf1a1)))
		} else if m, err = r.loadFinal(s.Start, k, numActions); err != nil {
			return nil, err
		}
		if s.Best != "" {
			if best, err = r.loadFinal(s.Best, k, numActions); err != nil {
				return nil, err
			}
		}
		if s.RNG != nil {
			if err := src.UnmarshalBinary(s.RNG); err != nil {
				return nil, fmt.Errorf("pipeline: finalisation: resuming round %d: %w", s.Round, err)
			}
		}
		conf, bestConf, bestBits, bestRound, missed = s.Conf, s.BestConf, s.BestBits, s.BestRound, s.Missed
		within := ""
		if s.Training != "" {
			resume = new(chmm.EMState)
			if err := r.loadTraining(s.Training, resume); err != nil {
				return nil, err
			}
			within = fmt.Sprintf(", within its EM at iteration %d", resume.Iter)
		}
		if r.out != nil {
			fmt.Fprintf(r.out, "finalisation by EM resumed at round %d (%d states)%s\n", s.Round, m.N(), within)
		}
	}
	train := pieces(start, s.Pieces, minPiece)
	patience := SplitPatience
	if r.patience > 0 {
		patience = r.patience
	}
	for round := s.Round; ; round++ {
		ec := chmm.DefaultEMConfig()
		ec.MaxIters, ec.Tol, ec.Pseudocount, ec.ViterbiIters = cfg.Final.Iters, -1, FinalEMPseudocount, 0
		ec.Seed = cfg.Seed + uint64(round)<<32
		ec.Confusion, ec.LearnConfusion, ec.ConfusionBeam = conf, true, ConfusionBeam
		ec.Stop = r.ctx.Err
		ec.Resume, resume = resume, nil
		if r.dir != "" {
			ec.SaveEvery = finalSaveEvery
			ec.Save = func(es *chmm.EMState) error {
				// The round's bookkeeping as it began (round 0's is not in s yet).
				s.Round, s.Conf, s.BestConf, s.BestBits, s.BestRound, s.Missed = round, conf, bestConf, bestBits, bestRound, missed
				return r.checkpointEMTraining(s, es)
			}
		}
		label := fmt.Sprintf("finalise EM, round %d (%d states)", round, m.N())
		var bar *progress.Bar
		if r.out != nil {
			bar = progress.New(r.out, label, ec.MaxIters).Every(2 * time.Second)
			if ec.Resume != nil {
				bar.From(ec.Resume.Iter)
			}
		}
		ec.Progress = func(p chmm.Progress) { bar.Update(p.Iter, "ℓ/T %.4f", p.LogLik) }
		h, err := chmm.TrainEM(m, train, ec)
		if err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		bar.Finish(len(h.LogLik), "%s (%d clone-splitting rounds)", h.Stop, len(h.Splits))
		r.recordFinal(h, label, "")
		conf = h.Confusion
		chmm.TrimConfusion(conf, ConfusionMin) // h.Confusion is a new matrix every training
		whole, err := chmm.ConfusedLogLikelihoods(m, seqs, conf, 0)
		if err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		begun, err := chmm.ConfusedLogLikelihoods(m, start, conf, 0)
		if err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		var nats float64
		for i := range seqs {
			nats += whole[i] - begun[i]
		}
		bits := -nats / float64(max(1, held)) / math.Ln2
		r.st.Made.HeldOutBits = append(r.st.Made.HeldOutBits, bits)
		if r.emRound != nil {
			if err := r.emRound(round, m, conf); err != nil {
				return nil, err
			}
		}
		if bestBits-bits < SplitGain {
			missed++
		} else {
			missed = 0
		}
		if bits < bestBits {
			best, bestConf, bestBits, bestRound = m.Clone(), conf, bits, round
		}
		why := ""
		switch {
		case missed == patience:
			why = fmt.Sprintf("%d round(s) without a gain of %g bits: the map of round %d kept", missed, SplitGain, bestRound)
		case round == cfg.Final.SplitRounds:
			why = fmt.Sprintf("%d split rounds done: the map of round %d kept", round, bestRound)
		}
		visits, err := chmm.ExpectedVisits(m, train, conf, 0)
		if err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		keep, kept := chmm.KeepVisited(m, visits, chmm.UsedShare)
		if r.out != nil {
			fmt.Fprintf(r.out, "round %d: %d states, %d used; held-out ends of the training walks %.4f bits/step", round, m.N(), kept, bits)
			if why != "" {
				fmt.Fprintf(r.out, ": %s\n", why)
			} else {
				fmt.Fprintf(r.out, ": split in two\n")
			}
		}
		if why != "" {
			break
		}
		if m, _, err = chmm.Prune(m, keep); err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if m, err = chmm.SplitAll(m, 0.1, rng); err != nil {
			return nil, fmt.Errorf("pipeline: finalisation: %w", err)
		}
		s.Round, s.Conf, s.BestConf, s.BestBits, s.BestRound, s.Missed = round+1, conf, bestConf, bestBits, bestRound, missed
		s.Training = ""
		if err := r.checkpointEM(s, m, best, src); err != nil {
			return nil, err
		}
	}
	r.st.Made.Doublings, r.st.Made.Confusion = bestRound, bestConf
	return best, nil
}

// startConfusion is FinalEM's first confusion matrix: 0.9 on the diagonal and 0.1
// spread evenly over the other tokens. A token that shows on fewer than
// chmm.NoisyStepsPerClone steps of seqs (a code the encoder all but stopped using) is
// read only as itself (C[k][k] = 1, learned no further): its clones are never
// candidates for another token, and its few steps are left to the others' rows as
// misreads. Left free, such a row held no steps of its own to anchor it and became a
// wildcard read as several tokens (tiled from MNIST with 12 codes, seed 2: the rows of
// the three codes emptied in the joint phase ended at C[6][11] = 1, C[9][4] = 1 and
// C[8] = 0.31, 0.33, 0.20 on tokens 2, 4 and 7; README "Bigger worlds"). rare lists
// those tokens.
func startConfusion(seqs []chmm.Sequence, k int) (c [][]float64, rare []int) {
	count := make([]int, k)
	for _, q := range seqs {
		for _, o := range q.Obs {
			count[o]++
		}
	}
	common := 0
	for i := range k {
		if count[i] < chmm.NoisyStepsPerClone {
			rare = append(rare, i)
		} else {
			common++
		}
	}
	c = make([][]float64, k)
	for i := range c {
		c[i] = make([]float64, k)
		if count[i] < chmm.NoisyStepsPerClone || common == 1 {
			c[i][i] = 1
			continue
		}
		for o := range c[i] {
			if o != i {
				c[i][o] = 0.1 / float64(k-1)
			}
		}
		c[i][i] = 0.9
	}
	return c, rare
}

// checkpointEM commits s, with m (the next round's start) and best saved beside it, so
// that an interrupted finalisation resumes at round s.Round. Runs without a directory
// (studies) keep nothing.
func (r *runner) checkpointEM(s *finalEMState, m, best *chmm.Model, src *rand.PCG) error {
	if r.dir == "" {
		return nil
	}
	var err error
	if s.RNG, err = src.MarshalBinary(); err != nil {
		return fmt.Errorf("pipeline: finalisation: %w", err)
	}
	// New names each round: the files the last commit names stay until this one lands.
	s.Start = fmt.Sprintf("final-em-start-%02d.model", s.Round)
	bestName := fmt.Sprintf("final-em-best-%02d.model", s.BestRound)
	for _, f := range []struct {
		name string
		m    *chmm.Model
	}{{s.Start, m}, {bestName, best}} {
		if f.name == s.Best {
			continue // the best map has not changed
		}
		if err := f.m.Save(r.path(f.name)); err != nil {
			return fmt.Errorf("pipeline: finalisation: %w", err)
		}
		if err := record(r.dir, r.st, f.name); err != nil {
			return err
		}
	}
	s.Best = bestName
	r.st.FinalEM = s
	return r.commitFinal()
}

// checkpointEMTraining commits a checkpoint of s.Round's EM in progress (es): es in a
// new file each time (the one the last commit names stays until this one lands), s's
// start and best maps as they are (none yet in round 0).
func (r *runner) checkpointEMTraining(s *finalEMState, es *chmm.EMState) error {
	name := fmt.Sprintf("final-em-train-%02d-%06d.gob", s.Round, es.Iter)
	return r.checkpointTraining(name, es, func() { s.Training, r.st.FinalEM = name, s })
}

// checkpointGradTraining commits a checkpoint of the gradient finalisation's training
// in progress (g) after step s.Done of round s.Round, as checkpointEMTraining does.
func (r *runner) checkpointGradTraining(s *finalGradState, g *chmm.GradState) error {
	name := fmt.Sprintf("final-grad-train-%02d-%d-%06d.gob", s.Round, s.Done, g.Iter)
	return r.checkpointTraining(name, g, func() { s.Training, r.st.FinalGrad = name, s })
}

// checkpointTraining writes v, a training in progress, as a gob to the new file name,
// records it, lets name set it in the state's finalisation checkpoint, and commits.
func (r *runner) checkpointTraining(name string, v any, set func()) error {
	if err := atomicfile.Write(r.path(name), func(w io.Writer) error { return gob.NewEncoder(w).Encode(v) }); err != nil {
		return fmt.Errorf("pipeline: finalisation: %w", err)
	}
	if err := record(r.dir, r.st, name); err != nil {
		return err
	}
	set()
	if err := r.commitFinal(); err != nil {
		return err
	}
	if finalSaved != nil {
		return finalSaved(name)
	}
	return nil
}

// loadTraining reads into v the training in progress that the finalisation checkpoint
// names, checked against the digest the state recorded.
func (r *runner) loadTraining(name string, v any) error {
	if err := verify(r.dir, r.st, name); err != nil {
		return err
	}
	b, err := os.ReadFile(r.path(name))
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("pipeline: %s cannot be read: %w", r.path(name), err)
	}
	return nil
}

// commitFinal commits a finalisation checkpoint (r.st.FinalEM or r.st.FinalGrad, its
// files recorded) with the finalisation's seconds so far, and removes the checkpoint
// files it no longer names.
func (r *runner) commitFinal() error {
	r.forgetFinal()
	r.addSeconds(PhaseFinal, r.finalStart)
	r.finalStart = time.Now()
	if err := r.commit(); err != nil {
		return err
	}
	r.removeStrayFinal()
	return nil
}

// loadFinal loads a model file of a finalisation checkpoint, checked against the
// digest the state recorded and against the joint phase's tokens and actions.
func (r *runner) loadFinal(name string, k, numActions int) (*chmm.Model, error) {
	if err := verify(r.dir, r.st, name); err != nil {
		return nil, err
	}
	m, err := chmm.Load(r.path(name))
	if err != nil {
		return nil, err
	}
	if m.K() != k || m.NumActions != numActions {
		return nil, fmt.Errorf("pipeline: %s: %d tokens and %d actions, the run has %d and %d", r.path(name), m.K(), m.NumActions, k, numActions)
	}
	return m, nil
}

// finalFiles are the model files the state's finalisation checkpoint names.
func (st *runState) finalFiles() []string {
	var names []string
	if st.FinalEM != nil {
		for _, name := range []string{st.FinalEM.Start, st.FinalEM.Best, st.FinalEM.Training} {
			if name != "" {
				names = append(names, name)
			}
		}
	}
	if g := st.FinalGrad; g != nil {
		for _, name := range []string{g.Model, g.Training} {
			if name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// forgetFinal drops the finalisation checkpoints' model files from the state's
// digests except those its checkpoint names.
func (r *runner) forgetFinal() {
	keep := r.st.finalFiles()
	for name := range r.st.Files {
		if isFinalFile(name) && !slices.Contains(keep, name) {
			delete(r.st.Files, name)
		}
	}
}

// removeStrayFinal removes the finalisation checkpoints' files (isFinalFile) that the
// committed state no longer names.
func (r *runner) removeStrayFinal() {
	names, _ := filepath.Glob(r.path("final-*"))
	for _, p := range names {
		if !isFinalFile(filepath.Base(p)) {
			continue
		}
		if _, ok := r.st.Files[filepath.Base(p)]; !ok {
			os.Remove(p)
		}
	}
}

// isFinalFile: a finalisation checkpoint's file (final-em-*.model, final-grad-*.model,
// and the trainings in progress, final-*-train-*.gob).
func isFinalFile(name string) bool {
	model, _ := filepath.Match("final-*.model", name)
	train, _ := filepath.Match("final-*-train-*.gob", name)
	return model || train
}

// holdOutEnds returns the first 1 − GrowHoldOut of every walk (at least 2 steps) and
// the number of steps left out.
func holdOutEnds(seqs []chmm.Sequence) (start []chmm.Sequence, held int) {
	start = make([]chmm.Sequence, len(seqs))
	for i, s := range seqs {
		n := max(2, s.Len()-int(GrowHoldOut*float64(s.Len())))
		start[i] = chmm.Sequence{Obs: s.Obs[:n], Actions: s.Actions[:n-1]}
		held += s.Len() - n
	}
	return start, held
}

// minPiece is the shortest piece finaliseEM cuts a training walk into.
const minPiece = 10000

// pieces cuts seqs into at least n sequences where each piece keeps at least min
// steps: the longest sequence is halved until there are n or halving would pass min.
func pieces(seqs []chmm.Sequence, n, min int) []chmm.Sequence {
	out := slices.Clone(seqs)
	for len(out) < n {
		i := 0
		for j, s := range out {
			if s.Len() > out[i].Len() {
				i = j
			}
		}
		s := out[i]
		h := s.Len() / 2
		if h < min {
			break
		}
		a := chmm.Sequence{Obs: s.Obs[:h], Actions: s.Actions[:h-1]}
		b := chmm.Sequence{Obs: s.Obs[h:], Actions: s.Actions[h:]}
		out = slices.Insert(slices.Delete(out, i, i+1), i, a, b)
	}
	return out
}

// maxFinalBytes bounds the memory of a finalisation whose budget grows
// (Config.FinalGrow, chmm.TrainBytes): about 4,000 states over 4 × 10,000 steps.
const maxFinalBytes = 6e9

// prune removes the clones that the training episodes' Viterbi paths visit fewer than
// FinalPrune × steps times (keeping each token's most visited clone) and trains the
// pruned model for FinalPruneIters iterations (Config.FinalPrune), a run called label.
func (r *runner) prune(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label string) (*chmm.Model, error) {
	cfg := r.cfg
	visits, err := chmm.ViterbiVisits(hmm, seqs, 0)
	if err != nil {
		return nil, fmt.Errorf("pipeline: pruning: %w", err)
	}
	steps := 0
	for _, s := range seqs {
		steps += s.Len()
	}
	minVisits := cfg.Final.Prune * float64(steps)
	keep := make([]bool, hmm.N())
	top := make([]int, hmm.K()) // most visited clone per token
	for s, k := range hmm.StateTokens() {
		if k < 0 {
			continue
		}
		keep[s] = float64(visits[s]) >= minVisits
		if f := hmm.FirstState(k); s == f || visits[s] > visits[top[k]] {
			top[k] = s
		}
	}
	for _, s := range top {
		keep[s] = true
	}
	pruned, _, err := chmm.Prune(hmm, keep)
	if err != nil {
		return nil, fmt.Errorf("pipeline: pruning: %w", err)
	}
	r.st.Made.Pruned = hmm.N() - pruned.N()
	if r.out != nil {
		fmt.Fprintf(r.out, "pruned %d of %d states (fewer than %.0f Viterbi visits)\n", hmm.N()-pruned.N(), hmm.N(), minVisits)
	}
	if cfg.Final.PruneIters == 0 {
		return pruned, nil
	}
	gc.Iters, gc.SplitRounds = cfg.Final.PruneIters, 0
	if err := r.trainFinal(pruned, seqs, gc, label, fmt.Sprintf("pruned %d states", hmm.N()-pruned.N())); err != nil {
		return nil, fmt.Errorf("pipeline: training the pruned model: %w", err)
	}
	return pruned, nil
}

// trainFinal trains hmm on seqs with gc behind a progress bar called label and
// appends its iterations to the history as finalisation records, numbered after
// the last one; event, if set, marks the first.
func (r *runner) trainFinal(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label, event string) error {
	h, err := r.trainShown(hmm, seqs, gc, label)
	if err != nil {
		return err
	}
	r.recordFinal(h, label, event)
	return nil
}

// recordFinal appends a finalisation training's iterations to the history as
// finalisation records, numbered after the last one; event, if set, marks the first.
func (r *runner) recordFinal(h *chmm.History, label, event string) {
	r.st.Made.AddRun(evaluate.TrainerRun{Name: label, Iterations: len(h.LogLik), SplitRounds: len(h.Splits), Stop: h.Stop,
		ChunkLen: h.ChunkLen, Batch: h.Batch})
	n := 0 // finalisation iterations recorded so far
	for _, rec := range r.st.History {
		if rec.Phase == PhaseFinal {
			n = rec.Step
		}
	}
	for i := range h.LogLik {
		rec := Record{Step: n + i + 1, Phase: PhaseFinal, NLLPerStep: -h.LogLik[i], Seconds: h.Seconds[i]}
		if i == 0 {
			rec.Event = event
		}
		r.st.History = append(r.st.History, rec)
	}
}

// trainShown trains hmm on seqs with gc behind a progress bar called label.
func (r *runner) trainShown(hmm *chmm.Model, seqs []chmm.Sequence, gc chmm.GradConfig, label string) (*chmm.History, error) {
	var bar *progress.Bar
	if r.out != nil {
		bar = progress.New(r.out, label, gc.Iters).Every(2 * time.Second)
	}
	gc = gc.ChunkIfCostly(hmm, seqs, r.cfg.Final.ChunkAbove)
	if s := r.st.FinalGrad; s != nil && r.dir != "" {
		// A checkpointed finalisation: this training saves itself as it goes, and the
		// first one after a resume goes on from its save (the step it follows, s.Done,
		// names the training).
		if s.Training != "" {
			gc.Resume = new(chmm.GradState)
			if err := r.loadTraining(s.Training, gc.Resume); err != nil {
				return nil, err
			}
			s.Training = ""
			bar.From(gc.Resume.Iter)
			if r.out != nil {
				fmt.Fprintf(r.out, "%s resumed at iteration %d\n", label, gc.Resume.Iter)
			}
		}
		gc.SaveEvery = finalSaveEvery
		gc.Save = func(g *chmm.GradState) error { return r.checkpointGradTraining(s, g) }
	}
	// Every iteration reaches the bar, which prints at most every 2 s: four_rooms' first
	// finalisation step took 30 s, and a line every 10 steps left it silent for 5 minutes.
	gc.ProgressEvery = 1
	gc.Progress = func(p chmm.Progress) { bar.Update(p.Iter, "ℓ/T %.4f best %.4f", p.LogLik, p.Best) }
	h, err := chmm.TrainGradient(hmm, seqs, gc)
	if err != nil {
		return nil, err
	}
	bar.Finish(len(h.LogLik), "%s (%d clone-splitting rounds)", h.Stop, len(h.Splits))
	return h, nil
}

// growthBits scores a budget of clones per token (on average) for the growth check of
// Config.FinalGrow: the HMM is trained afresh with it on the first 1 − GrowHoldOut of
// every training walk and scored on the rest of it, given the start (−log₂ p(end |
// start) per held-out step; 0 when nothing is held out). Twice the budget is kept if
// it costs at least GrowGain fewer bits per held-out step.
func (r *runner) growthBits(seqs []chmm.Sequence, share []float64, clones, numActions int, gc chmm.GradConfig) (float64, error) {
	start, held := holdOutEnds(seqs)
	if held == 0 {
		return 0, nil
	}
	m := chmm.New(cloneBudget(clones, BudgetShare, share), numActions, rand.New(rand.NewPCG(r.cfg.Seed, 0xf1a1)))
	if _, err := r.trainShown(m, start, gc, fmt.Sprintf("growth check, %d clones per token", clones)); err != nil {
		return 0, err
	}
	whole, err := chmm.SequenceLogLikelihoods(m, seqs, 0)
	if err != nil {
		return 0, err
	}
	begun, err := chmm.SequenceLogLikelihoods(m, start, 0)
	if err != nil {
		return 0, err
	}
	var nats float64
	for i := range seqs {
		nats += whole[i] - begun[i]
	}
	return -nats / float64(held) / math.Ln2, nil
}

// ---- Evaluation ----

func (r *runner) evaluate() error {
	cfg := r.cfg
	start := time.Now()
	if r.hmm == nil {
		if err := verify(r.dir, r.st, CHMMFile); err != nil {
			return err
		}
		var err error
		if r.hmm, err = chmm.Load(r.path(CHMMFile)); err != nil {
			return err
		}
	}
	vq := (*vqvae.Model)(nil)
	if r.joint != nil {
		vq = r.joint.VQ
	} else {
		var err error
		if vq, err = r.loadVQ(VQVAEFile); err != nil {
			return err
		}
	}
	rep, err := Evaluate(vq, r.hmm, r.d.env, cfg)
	if err != nil {
		return err
	}
	if rep.Diagnosis, err = diagnose(r.d, cfg, vq, r.hmm, &r.st.Made, r.out); err != nil {
		return fmt.Errorf("pipeline: diagnosing the map: %w", err)
	}
	r.addSeconds(PhaseEval, start)
	rep.Trainer = "joint"
	rep.Seconds = map[string]float64{}
	total := 0.0
	for k, v := range r.st.Seconds {
		rep.Seconds[k] = v
		total += v
	}
	rep.Seconds["total"] = total
	rep.Backend = strings.Join(r.st.Backends, " then ")
	rep.HMMKernels = strings.Join(r.st.HMMKernels, " then ")
	rep.Training = r.st.training(cfg, r.hmm)
	if err := rep.WriteJSON(r.path(ReportFile)); err != nil {
		return err
	}
	if err := record(r.dir, r.st, ReportFile); err != nil {
		return err
	}
	r.report = rep
	r.st.Phase = PhaseDone
	return r.commit()
}

// Evaluate scores vq + hmm on a held-out episode of cfg.EvalSteps steps of env whose
// images come from the TEST split (paper Sec. 3.9; package evaluate): the frozen
// encoder gives hard tokens and log ρ, chmm.Decode decodes the episode — with the soft
// emissions log ρ (chmm.LogRho) when cfg.Decode is DecodeSoft, with the hard tokens
// (chmm.Tokens) when DecodeHard — and evaluate.Evaluate scores the path. The report's
// Decode names the read-out, and OtherReadout holds the other one's headline metrics.
// The episode and its images are drawn from seeds derived from cfg.Seed, disjoint from
// the training ones.
func Evaluate(vq *vqvae.Model, hmm *chmm.Model, env *gridworld.Env, cfg Config) (*evaluate.Report, error) {
	held, err := NewHeldOut(cfg, env)
	if err != nil {
		return nil, err
	}
	ep := held.Episode
	tokens, logRho, hard, err := held.Decode(vq, hmm, DecodeHard)
	if err != nil {
		return nil, err
	}
	soft, err := held.Viterbi(hmm, tokens, logRho, DecodeSoft)
	if err != nil {
		return nil, err
	}
	score := func(states []int) (*evaluate.Report, error) {
		return evaluate.Evaluate(evaluate.Input{Env: env, Places: ep.Places, States: states, Tokens: tokens,
			Trans: hmm.Transitions(), NumStates: hmm.N(), NumTokens: hmm.K()}, evaluate.DefaultOptions())
	}
	main, other, otherDecode := soft, hard, DecodeHard
	if cfg.Eval.Decode == DecodeHard {
		main, other, otherDecode = hard, soft, DecodeSoft
	}
	rep, err := score(main)
	if err != nil {
		return nil, err
	}
	alt, err := score(other)
	if err != nil {
		return nil, err
	}
	rep.Env, rep.Dataset, rep.Seed = cfg.Env, cfg.Dataset, cfg.Seed
	rep.Decode, rep.OtherReadout = cfg.Eval.Decode, evaluate.NewReadout(otherDecode, alt)
	return rep, nil
}

// Reevaluate scores the finished run in dir again with the current Evaluate (after a
// change to the evaluation or to Config.Decode's default) and rewrites report.json,
// keeping its wall times and training record. The model is not touched.
func Reevaluate(dir string) (*evaluate.Report, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res, err := loadRun(dir, false)
	if err != nil {
		return nil, err
	}
	env, err := res.Config.Environment()
	if err != nil {
		return nil, err
	}
	rep, err := Evaluate(res.VQVAE, res.HMM, env, res.Config)
	if err != nil {
		return nil, err
	}
	if rep.Diagnosis, err = Diagnose(res); err != nil {
		return nil, fmt.Errorf("pipeline: diagnosing the map: %w", err)
	}
	old := res.Report
	rep.Trainer, rep.Seconds, rep.Backend, rep.HMMKernels, rep.Training = old.Trainer, old.Seconds, old.Backend, old.HMMKernels, old.Training
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if st.legacy() {
		if err := adoptLegacy(dir, st); err != nil {
			return nil, err
		}
		if st.Identity, err = fileDigest(filepath.Join(dir, ConfigFile)); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
	}
	// A crash between the report and the state leaves a report the state does not
	// verify: LoadRun refuses it and Reevaluate, which does not check it, writes both again.
	if err := rep.WriteJSON(filepath.Join(dir, ReportFile)); err != nil {
		return nil, err
	}
	if err := record(dir, st, ReportFile); err != nil {
		return nil, err
	}
	if err := writeState(dir, st); err != nil {
		return nil, err
	}
	return rep, nil
}

// LoadRun loads a finished run directory after checking that its config, model files and
// report are the ones its state recorded.
func LoadRun(dir string) (*Result, error) { return loadRun(dir, true) }

// loadRun is LoadRun; checkReport false accepts a report.json the state did not record
// (Reevaluate, which rewrites it, after a crash between the report and the state).
func loadRun(dir string, checkReport bool) (*Result, error) {
	cfg, err := readRunConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if st.Phase != PhaseDone {
		return nil, fmt.Errorf("pipeline: %s: run not finished (phase %q); Run resumes it", dir, st.Phase)
	}
	if err := checkIdentity(dir, st); err != nil {
		return nil, err
	}
	for _, name := range []string{VQVAEFile, CHMMFile, ReportFile} {
		if name == ReportFile && !checkReport {
			continue
		}
		if err := verify(dir, st, name); err != nil {
			return nil, err
		}
	}
	backend, label, err := hmmgraph.NewBackend()
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Codes: st.Codes, History: st.History, Backend: label}
	if res.VQVAE, err = vqvae.Load(backend, filepath.Join(dir, VQVAEFile)); err != nil {
		return nil, err
	}
	if res.HMM, err = chmm.Load(filepath.Join(dir, CHMMFile)); err != nil {
		return nil, err
	}
	if res.Report, err = evaluate.ReadJSON(filepath.Join(dir, ReportFile)); err != nil {
		return nil, err
	}
	return res, nil
}

// checkOrWriteConfig writes config.json, or checks that an existing one equals cfg.
func checkOrWriteConfig(dir string, cfg Config) error {
	path := filepath.Join(dir, ConfigFile)
	if _, err := os.Stat(path); err == nil {
		old, err := readRunConfig(path)
		if err != nil {
			return err
		}
		cmp := cfg
		cmp.StopAfterJoint, cmp.Preset = 0, old.Preset // neither is the run's identity
		if !reflect.DeepEqual(old, cmp) {
			return fmt.Errorf("pipeline: %s holds a different configuration:\n  %s\nresume it with its own settings, or give the new ones a new run directory (train --run NEW_DIR)",
				path, strings.Join(diffFields(old, cmp), "\n  "))
		}
		return nil
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(raw, '\n'))
}

// diffFields names the JSON fields that differ between a (the run's) and b, one entry
// per field, sorted.
func diffFields(a, b Config) []string {
	var ma, mb map[string]any
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	_ = json.Unmarshal(ra, &ma)
	_ = json.Unmarshal(rb, &mb)
	var diff []string
	var walk func(prefix string, ma, mb map[string]any)
	walk = func(prefix string, ma, mb map[string]any) {
		for k, v := range ma {
			if reflect.DeepEqual(v, mb[k]) {
				continue
			}
			va, oka := v.(map[string]any)
			vb, okb := mb[k].(map[string]any)
			if oka && okb { // a nested config (vqvae): name its fields
				walk(prefix+k+".", va, vb)
				continue
			}
			diff = append(diff, fmt.Sprintf("%s%s: %v in the run, %v now", prefix, k, v, mb[k]))
		}
	}
	walk("", ma, mb)
	sort.Strings(diff)
	return diff
}

// diagnose records, for the training frames' hard tokens after a phase (PhaseWarmup or
// PhaseJoint), H(token | place), H(token | class) and H(class | token) (nats). The true
// places and classes are used for these measurements only, never for training.
func (r *runner) diagnose(phase string, tokens []int) {
	classes := make([]int, len(tokens))
	for i, g := range r.d.allPlaces {
		classes[i] = r.d.env.Class[g]
	}
	e := evaluate.NewTokenEntropies(tokens, r.d.allPlaces, classes)
	if phase == PhaseWarmup {
		r.st.joint().Warmup = e
	} else {
		r.st.joint().End = e
	}
}

// joint is the joint phase's part of st.Made.
func (st *runState) joint() *evaluate.Joint {
	if st.Made.Joint == nil {
		st.Made.Joint = &evaluate.Joint{}
	}
	return st.Made.Joint
}

// training is the report's record of how the finished run made hmm.
func (st *runState) training(cfg Config, hmm *chmm.Model) *evaluate.Training {
	t := st.Made
	t.Episodes, t.Steps, t.Clones = cfg.Data.Episodes, cfg.Data.Steps, hmm.Clones
	j := *st.joint()
	j.Arch, j.Iters, j.GradFrames = string(cfg.VQVAE.Arch), cfg.Joint.Iters, cfg.Joint.GradFrames
	if st.StoppedAt > 0 {
		j.Iters = st.StoppedAt
	}
	if cfg.Joint.StopChurn > 0 {
		j.MaxIters, j.StopChurn = cfg.Joint.Iters, cfg.Joint.StopChurn
		j.AnnealStart, _ = st.anneal(cfg)
	}
	j.CodesKept, j.CodesMerged, j.Clones, j.Rollbacks = st.Codes, st.CodesMerged, st.Clones, st.Rollbacks
	j.TokensMerged = st.TokensMerged
	if st.Branch != nil {
		j.From = st.Branch.From
	}
	j.Guard = &evaluate.Guard{Interventions: append([]Intervention{}, st.Interventions...), SkippedSteps: st.Skipped}
	t.Joint = &j
	t.Runs = append([]evaluate.TrainerRun(nil), t.Runs...)
	return &t
}

// writeAtomic writes data to a temporary file next to path and renames it.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}
