package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/gomlx/compute"
	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// VQStudy is the VQ-VAE-alone study: the warm-up of paper Sec. 3.6 (phase 1, no HMM,
// no labels) on an environment's training frames, scored against the true classes on
// a held-out episode of test-split images (RunVQStudy). DefaultVQStudy gives each
// field its default.
type VQStudy struct {
	Env     *gridworld.Env // the environment (required)
	Dataset string         // "mnist" (default), "fashion", or a directory of IDX files
	// K is the codebook size; 0 (default): the number of classes Env shows.
	K    int    `json:"k" range:"[0,4096]" help:"codebook size K (0: the number of classes the environment shows)"`
	Seed uint64 // walks, images, initialisation and batches (default 1)
	// Steps is the warm-up length in steps (default DefaultVQSteps); a study resumed
	// from its directory continues up to this count.
	Steps int     `json:"steps" range:"[1,100000000]" help:"warm-up steps in total (a resumed study continues up to this count)"`
	Batch int     `json:"batch" range:"[1,65536]" help:"minibatch size"` // minibatch (default 128)
	LR    float64 `json:"lr" range:"(0,1]" help:"Adam learning rate"`    // Adam's rate (default vqvae.DefaultLearningRate)
	// Episodes and EpisodeLen are the training walks (0, the default: the
	// environment's reference count and length); EvalLen is the held-out episode's
	// length (0: EpisodeLen).
	Episodes   int `json:"episodes" range:"[0,1000]" help:"training episodes (0: the environment's reference count)"`
	EpisodeLen int `json:"episode_len" range:"[0,10000000]" help:"steps per training episode (0: the environment's reference length)"`
	EvalLen    int `json:"eval_len" range:"[0,10000000]" help:"steps of the held-out episode (0: episode_len)"`
	// Classify adds the reference's supervised classification head (weight 0.1) to the
	// warm-up: it uses labels, and exists to compare with the reference (default off).
	Classify bool `json:"classify" help:"add the reference's supervised classification head (weight 0.1; uses labels)"`
	// Curve, if > 0, stops every Curve steps to score the first VQCurveFrames
	// held-out frames (the report's learning curve; default 0: none).
	Curve int `json:"curve" range:"[0,100000000]" help:"every N steps, score held-out tokens for a learning curve (0: off)"`
	// CheckpointEvery is the number of steps between checkpoints (default 100).
	CheckpointEvery int `json:"checkpoint_every" range:"[1,100000000]" help:"steps between checkpoints"`
	// Dir is the study's directory: the resumable checkpoint, then the finished model
	// (VQModelFile), the reconstructions (VQReconFile), the report (VQReportFile) and
	// the manifest (VQManifestFile). "" (default): runs/vqvae/Name().
	Dir string
}

// DefaultVQSteps is the default warm-up length in steps, fixed whatever the
// environment's data size (the reference warms up for 4 epochs instead).
const DefaultVQSteps = 2000

// VQCurveFrames is the number of held-out frames a learning-curve point scores.
const VQCurveFrames = 2000

// Files of a study's directory.
const (
	VQModelFile    = "model.vqvae" // checkpoint: resumable warm-up, then the finished model
	VQReconFile    = "recon.png"   // held-out inputs above reconstructions, labelled with tokens
	VQReportFile   = "report.json" // VQReport
	VQManifestFile = "run.json"    // what the checkpoint belongs to
)

// The study's image streams (PCG second word) per seed; its walks are the symbolic
// runs' (SymbolicTrainingWalks, SymbolicHeldOutWalk), so both see the same episodes.
const (
	streamTrainImages = 4
	streamTestImages  = 5
)

// DefaultVQStudy returns the study of env with every field at its default.
func DefaultVQStudy(env *gridworld.Env) VQStudy {
	return VQStudy{Env: env, Dataset: "mnist", Seed: 1, Steps: DefaultVQSteps, Batch: 128,
		LR: vqvae.DefaultLearningRate, CheckpointEvery: 100}
}

// FieldError is an invalid setting: the field (its Go name), its value and what it
// needs. A front end may rename the field (the CLI names its flag).
type FieldError struct {
	Field string
	Value any
	Need  string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s %v: %s", e.Field, e.Value, e.Need) }

// Check validates the study's settings (one FieldError for the first bad one).
func (s VQStudy) Check() error {
	bad := func(field string, v any, need string) error { return &FieldError{field, v, need} }
	switch {
	case s.Env == nil:
		return errors.New("experiment: VQStudy.Env is nil")
	case s.K < 0 || s.K == 1:
		return bad("K", s.K, "need 0 (one code per class) or at least 2")
	case s.Steps < 1:
		return bad("Steps", s.Steps, "need at least 1")
	case s.Batch < 1:
		return bad("Batch", s.Batch, "need at least 1")
	case !(s.LR > 0) || math.IsInf(s.LR, 0):
		return bad("LR", s.LR, "need a positive learning rate")
	case s.Episodes < 0:
		return bad("Episodes", s.Episodes, "need ≥ 0 (0: the environment's count)")
	case s.EpisodeLen < 0:
		return bad("EpisodeLen", s.EpisodeLen, "need ≥ 0 (0: the environment's length)")
	case s.EvalLen < 0:
		return bad("EvalLen", s.EvalLen, "need ≥ 0 (0: EpisodeLen)")
	case s.Curve < 0:
		return bad("Curve", s.Curve, "need ≥ 0 (0: no curve)")
	case s.CheckpointEvery < 1:
		return bad("CheckpointEvery", s.CheckpointEvery, "need at least 1")
	}
	return nil
}

// resolved returns s with its zero sizes replaced by the environment's.
func (s VQStudy) resolved() VQStudy {
	def := s.Env.Defaults()
	if s.Episodes == 0 {
		s.Episodes = def.Episodes
	}
	if s.EpisodeLen == 0 {
		s.EpisodeLen = def.Steps
	}
	if s.EvalLen == 0 {
		s.EvalLen = s.EpisodeLen
	}
	if s.K == 0 {
		s.K = len(s.Env.ClassesUsed())
	}
	if s.Dir == "" {
		s.Dir = filepath.Join("runs", "vqvae", s.Name())
	}
	return s
}

// Name names the study: ENV_DATASET_kK_seedS (K resolved).
func (s VQStudy) Name() string {
	k := s.K
	if k == 0 && s.Env != nil {
		k = len(s.Env.ClassesUsed())
	}
	env := ""
	if s.Env != nil {
		env = s.Env.Name
	}
	return fmt.Sprintf("%s_%s_k%d_seed%d", env, filepath.Base(s.Dataset), k, s.Seed)
}

// vqManifest identifies the study a checkpoint belongs to; a resumed or reloaded
// study must match it.
type vqManifest struct {
	Env        string `json:"env"`
	Dataset    string `json:"dataset"`
	Seed       uint64 `json:"seed"`
	NumTokens  int    `json:"num_tokens"`
	Classify   bool   `json:"classify"`
	Batch      int    `json:"batch"`
	Episodes   int    `json:"episodes"`
	EpisodeLen int    `json:"episode_len"`
}

// mismatch names the first field in which m differs from want.
func (m vqManifest) mismatch(want vqManifest) string {
	type f struct {
		name      string
		have, get any
	}
	for _, x := range []f{
		{"environment", m.Env, want.Env}, {"data set", m.Dataset, want.Dataset}, {"seed", m.Seed, want.Seed},
		{"K", m.NumTokens, want.NumTokens}, {"classify", m.Classify, want.Classify},
		{"batch", m.Batch, want.Batch}, {"episodes", m.Episodes, want.Episodes},
		{"episode length", m.EpisodeLen, want.EpisodeLen},
	} {
		if x.have != x.get {
			return fmt.Sprintf("trained with %s %v, not %v", x.name, x.have, x.get)
		}
	}
	return ""
}

// VQCurvePoint is one point of a study's learning curve.
type VQCurvePoint struct {
	Step             int     `json:"step"`
	Rec              float64 `json:"rec"` // mean training reconstruction loss since the previous point
	Purity           float64 `json:"purity"`
	HTokenGivenClass float64 `json:"h_token_given_class"`
	Perplexity       float64 `json:"perplexity"`
	ActiveCodes      int     `json:"active_codes"`
	TestMSE          float64 `json:"test_mse"`
}

// VQReport is the report of one study (report.json). Entropies are in nats and
// computed from the empirical joint distribution over the held-out episode's frames,
// whose images come from the data set's test split.
type VQReport struct {
	Env       string  `json:"env"`
	Dataset   string  `json:"dataset"`
	Seed      uint64  `json:"seed"`
	NumTokens int     `json:"num_tokens"` // K
	Classify  bool    `json:"classify"`
	Steps     int     `json:"steps"` // warm-up steps the model has taken
	Batch     int     `json:"batch"`
	LR        float64 `json:"lr"`
	Backend   string  `json:"backend"` // GOMLX_BACKEND syntax

	Episodes       int `json:"episodes"`        // training episodes
	EpisodeLen     int `json:"episode_len"`     // steps per training episode
	TrainFrames    int `json:"train_frames"`    // frames of the training episodes
	DistinctImages int `json:"distinct_images"` // distinct training images among them
	EvalFrames     int `json:"eval_frames"`     // frames of the held-out episode

	Purity           float64 `json:"purity"` // Σ_k max_c n(k,c) / n
	HTokenGivenClass float64 `json:"h_token_given_class"`
	HClassGivenToken float64 `json:"h_class_given_token"`
	HTokenGivenPlace float64 `json:"h_token_given_place"`
	Perplexity       float64 `json:"perplexity"` // exp H(token)
	ActiveCodes      int     `json:"active_codes"`
	TestMSE          float64 `json:"test_mse"`  // per-pixel MSE of the held-out reconstructions
	TrainRec         float64 `json:"train_rec"` // mean training reconstruction loss of the last ≤ 50 steps

	Classes []evaluate.ClassStat `json:"classes"`
	Tokens  []evaluate.TokenStat `json:"tokens"`
	Curve   []VQCurvePoint       `json:"curve,omitempty"`

	// Files are the study's outputs ("model", "recon"; paths as Dir gives them).
	Files map[string]string `json:"files"`
	// Seconds: "train" is the warm-up time of the calls that built this model (an
	// interrupted call's time is lost), "eval" and "total" this call's.
	Seconds map[string]float64 `json:"seconds"`
}

// vqData is everything a study draws from the environment and the data set.
type vqData struct {
	train               vqvae.BankFrames // frames of the training episodes (train split)
	testImages          []float32        // held-out frames (test split), [n][Side²]
	testClasses, places []int            // class and place of each held-out frame
	classNames          []string         // the data set's, by label
	distinct            int              // distinct training images
}

// loadData draws the study's training frames and held-out episode (s resolved).
func (s VQStudy) loadData() (*vqData, error) {
	env := s.Env
	if s.K < 2 { // K 0 resolved to the class count
		return nil, &FieldError{"K", 0, fmt.Sprintf("environment %s shows %d class, and the codebook needs K ≥ 2", env.Name, s.K)}
	}
	trainBank, names, err := loadBank28(s.Dataset, dataset.Train, env)
	if err != nil {
		return nil, err
	}
	testBank, _, err := loadBank28(s.Dataset, dataset.Test, env)
	if err != nil {
		return nil, err
	}
	d := &vqData{classNames: names}
	rng := rand.New(rand.NewPCG(s.Seed, streamTrainImages))
	var idx []int
	for _, ep := range SymbolicTrainingWalks(env, s.Seed, s.Episodes, s.EpisodeLen) {
		idx = append(idx, trainBank.Frames(rng, ep.Obs)...)
	}
	if len(idx) < s.Batch {
		return nil, &FieldError{"Batch", s.Batch, fmt.Sprintf("the %d training frames (episodes × steps: %d × %d) are fewer than one batch",
			len(idx), s.Episodes, s.EpisodeLen)}
	}
	seen := map[int]bool{}
	for _, i := range idx {
		seen[i] = true
	}
	d.distinct = len(seen)
	d.train = vqvae.BankFrames{Bank: trainBank, Index: idx}
	held := SymbolicHeldOutWalk(env, s.Seed, s.EvalLen)
	if held.Len() == 0 {
		return nil, &FieldError{"EvalLen", s.EvalLen, "the held-out episode is empty"}
	}
	d.testImages = testBank.Floats(testBank.Frames(rand.New(rand.NewPCG(s.Seed, streamTestImages)), held.Obs), nil)
	d.testClasses, d.places = held.Obs, held.Places
	return d, nil
}

// loadBank28 loads a split of a data set of 28×28 images that holds every class env shows.
func loadBank28(name string, split dataset.Split, env *gridworld.Env) (*dataset.Bank, []string, error) {
	set, err := dataset.Load(name, split)
	if err != nil {
		return nil, nil, err
	}
	if err := env.CheckClasses(set.NumClasses); err != nil {
		return nil, nil, fmt.Errorf("environment %s with data set %s: %w", env.Name, set.Name, err)
	}
	b, err := dataset.NewBank(set)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Check(env.ClassesUsed()); err != nil {
		return nil, nil, fmt.Errorf("environment %s: %w", env.Name, err)
	}
	if err := b.CheckSide(28, ""); err != nil {
		return nil, nil, err
	}
	return b, set.ClassNames, nil
}

// RunVQStudy trains (or resumes from s.Dir, or reloads) the study's VQ-VAE, scores its
// tokens on the held-out episode, writes the reconstructions and the report into
// s.Dir, and returns the report. Progress and notes go to log (nil: none).
func RunVQStudy(s VQStudy, log io.Writer) (*VQReport, error) {
	t0 := time.Now()
	if err := s.Check(); err != nil {
		return nil, err
	}
	s = s.resolved()
	d, err := s.loadData()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	backend, backendLabel, err := hmmgraph.NewBackend()
	if err != nil {
		return nil, err
	}
	man := vqManifest{Env: s.Env.Name, Dataset: s.Dataset, Seed: s.Seed, NumTokens: s.K, Classify: s.Classify,
		Batch: s.Batch, Episodes: s.Episodes, EpisodeLen: s.EpisodeLen}
	m, prevTrain, err := s.openModel(backend, man, len(d.classNames))
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, format+"\n", args...)
		}
	}
	logf("%s/%s seed %d: K=%d, %d training frames (%d distinct %s train images), %d held-out test frames; backend %s",
		s.Env.Name, s.Dataset, s.Seed, s.K, d.train.Len(), d.distinct, s.Dataset, len(d.testClasses), backendLabel)

	// Warm-up (paper Sec. 3.6, phase 1), resumed from the checkpoint if there is one.
	tTrain := time.Now()
	var curve []VQCurvePoint
	if m.Steps() < s.Steps {
		if m.Steps() > 0 {
			logf("resuming the warm-up at step %d of %d (%s)", m.Steps(), s.Steps, filepath.Join(s.Dir, VQModelFile))
		}
		if curve, err = s.warmup(m, d, log); err != nil {
			return nil, err
		}
	} else {
		logf("loaded the finished model %s (%d steps)", filepath.Join(s.Dir, VQModelFile), m.Steps())
	}
	trainSec := time.Since(tTrain).Seconds() + prevTrain

	// Held-out evaluation.
	tEval := time.Now()
	recon, tokens, err := m.Reconstruct(d.testImages)
	if err != nil {
		return nil, err
	}
	q := evaluate.ScoreTokens(tokens, d.testClasses, d.classNames)
	hist := m.History()
	rec := 0.0
	tail := hist[max(len(hist)-50, 0):]
	for _, h := range tail {
		rec += h.Rec / float64(len(tail))
	}
	rep := &VQReport{
		Env: s.Env.Name, Dataset: s.Dataset, Seed: s.Seed, NumTokens: s.K, Classify: s.Classify,
		Steps: m.Steps(), Batch: s.Batch, LR: s.LR, Backend: backendLabel,
		Episodes: s.Episodes, EpisodeLen: s.EpisodeLen,
		TrainFrames: d.train.Len(), DistinctImages: d.distinct, EvalFrames: len(tokens),
		Purity: q.Purity, HTokenGivenClass: q.HTokenGivenClass, HClassGivenToken: q.HClassGivenToken,
		HTokenGivenPlace: evaluate.CondEntropy(tokens, d.places), Perplexity: q.Perplexity, ActiveCodes: q.Active,
		TestMSE: mse(recon, d.testImages), TrainRec: rec,
		Classes: q.Classes, Tokens: q.Tokens, Curve: curve,
		Files: map[string]string{
			"model": filepath.Join(s.Dir, VQModelFile),
			"recon": filepath.Join(s.Dir, VQReconFile),
		},
	}
	if err := writeRecon(rep.Files["recon"], d, recon, tokens); err != nil {
		return nil, err
	}
	rep.Seconds = map[string]float64{
		"train": trainSec,
		"eval":  time.Since(tEval).Seconds(),
		"total": time.Since(t0).Seconds(),
	}
	if err := rep.WriteJSON(filepath.Join(s.Dir, VQReportFile)); err != nil {
		return nil, err
	}
	logf("wrote %s, %s and %s", rep.Files["model"], rep.Files["recon"], filepath.Join(s.Dir, VQReportFile))
	return rep, nil
}

// openModel loads s.Dir's checkpoint if there is one (checking that it belongs to
// this study) or creates a fresh model and writes the manifest. prevTrain is the
// warm-up time recorded by the study's previous report, if any. numClasses is the
// data set's class count (the Classify head's outputs).
func (s VQStudy) openModel(backend compute.Backend, man vqManifest, numClasses int) (m *vqvae.Model, prevTrain float64, err error) {
	modelPath := filepath.Join(s.Dir, VQModelFile)
	manPath := filepath.Join(s.Dir, VQManifestFile)
	if _, err := os.Stat(modelPath); errors.Is(err, fs.ErrNotExist) {
		cfg := vqvae.DefaultConfig(s.K)
		cfg.Classify, cfg.NumClasses = s.Classify, numClasses
		if m, err = vqvae.New(backend, cfg, s.Seed); err != nil {
			return nil, 0, err
		}
		data, err := json.MarshalIndent(man, "", "  ")
		if err != nil {
			return nil, 0, err
		}
		return m, 0, atomicfile.WriteFile(manPath, append(data, '\n'))
	}
	raw, err := inputfile.ReadFile(manPath, jsonLimit)
	if err != nil {
		return nil, 0, fmt.Errorf("%s exists but its manifest cannot be read (%w): use another directory", modelPath, err)
	}
	var have vqManifest
	if err := json.Unmarshal(raw, &have); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", manPath, err)
	}
	if why := have.mismatch(man); why != "" {
		return nil, 0, fmt.Errorf("%s belongs to another study (%s): use another directory", modelPath, why)
	}
	if m, err = vqvae.Load(backend, modelPath); err != nil {
		return nil, 0, err
	}
	if c := m.Config(); c.K != s.K || c.Classify != s.Classify {
		return nil, 0, fmt.Errorf("%s has K=%d classify=%v, not K=%d classify=%v: use another directory", modelPath, c.K, c.Classify, s.K, s.Classify)
	}
	if prev, err := ReadVQReport(filepath.Join(s.Dir, VQReportFile)); err == nil && prev.Steps <= m.Steps() {
		prevTrain = prev.Seconds["train"]
	}
	return m, prevTrain, nil
}

// warmup runs the warm-up up to s.Steps steps with checkpoints; with s.Curve it
// stops every s.Curve steps to score the first VQCurveFrames held-out frames.
func (s VQStudy) warmup(m *vqvae.Model, d *vqData, log io.Writer) ([]VQCurvePoint, error) {
	perEpoch := d.train.Len() / s.Batch
	wc := vqvae.WarmupConfig{
		Epochs:          (s.Steps + perEpoch - 1) / perEpoch,
		Batch:           s.Batch,
		LR:              s.LR,
		Checkpoint:      filepath.Join(s.Dir, VQModelFile),
		CheckpointEvery: s.CheckpointEvery,
	}
	if s.Curve == 0 {
		wc.MaxSteps = s.Steps - m.Steps()
		return nil, vqvae.Warmup(m, d.train, wc, log)
	}
	nEval := min(VQCurveFrames, len(d.testClasses))
	p := m.Config().Pixels()
	imgs, classes := d.testImages[:nEval*p], d.testClasses[:nEval]
	var curve []VQCurvePoint
	// One progress line (redrawn on a terminal, one live block in a notebook): the
	// latest curve point's held-out scores, with rate and ETA.
	var bar *progress.Bar
	if log != nil {
		bar = progress.New(log, "warm-up", s.Steps).Every(0)
		bar.Update(m.Steps(), "")
	}
	for m.Steps() < s.Steps {
		start := m.Steps()
		wc.MaxSteps = min(s.Curve-start%s.Curve, s.Steps-start)
		if err := vqvae.Warmup(m, d.train, wc, nil); err != nil {
			return nil, err
		}
		recon, tokens, err := m.Reconstruct(imgs)
		if err != nil {
			return nil, err
		}
		q := evaluate.ScoreTokens(tokens, classes, nil)
		rec := 0.0
		hist := m.History()[start:]
		for _, h := range hist {
			rec += h.Rec / float64(len(hist))
		}
		pt := VQCurvePoint{Step: m.Steps(), Rec: rec, Purity: q.Purity, HTokenGivenClass: q.HTokenGivenClass,
			Perplexity: q.Perplexity, ActiveCodes: q.Active, TestMSE: mse(recon, imgs)}
		curve = append(curve, pt)
		bar.Update(pt.Step, "rec %.4f  held-out: purity %.3f  H(token|class) %.3f  perplexity %.2f  active %d  MSE %.4f",
			pt.Rec, pt.Purity, pt.HTokenGivenClass, pt.Perplexity, pt.ActiveCodes, pt.TestMSE)
	}
	bar.Done("")
	return curve, nil
}

// mse is the mean squared difference of two equally long slices.
func mse(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		d := float64(a[i] - b[i])
		s += d * d
	}
	return s / float64(max(len(a), 1))
}

// writeRecon writes the reconstructions figure of the first two held-out frames of
// every class, in class order, with the token key of all held-out frames.
func writeRecon(path string, d *vqData, recon []float32, tokens []int) error {
	const perClass = 2
	p := 28 * 28
	count := map[int]int{}
	var sel []int
	for i, c := range d.testClasses {
		if count[c] < perClass {
			count[c]++
			sel = append(sel, i)
		}
	}
	slices.SortStableFunc(sel, func(a, b int) int { return d.testClasses[a] - d.testClasses[b] })
	var in, out []float32
	var tok []int
	for _, i := range sel {
		in = append(in, d.testImages[i*p:(i+1)*p]...)
		out = append(out, recon[i*p:(i+1)*p]...)
		tok = append(tok, tokens[i])
	}
	key, err := figures.NewTokenKey(tokens, d.testClasses)
	if err != nil {
		return err
	}
	key.Note = fmt.Sprintf("counted on the %d held-out frames (test-split images); labels used only to draw", len(tokens))
	fig, err := figures.ReconstructionFigure(in, out, tok, 28, "", key)
	if err != nil {
		return err
	}
	return fig.Save(path)
}

// WriteJSON writes the report (atomically).
func (r *VQReport) WriteJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ReadVQReport reads a report written by WriteJSON.
func ReadVQReport(path string) (*VQReport, error) {
	raw, err := inputfile.ReadFile(path, jsonLimit)
	if err != nil {
		return nil, err
	}
	r := new(VQReport)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteTable prints the report for people.
func (r *VQReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	sup := "unsupervised"
	if r.Classify {
		sup = "with the classification head"
	}
	fmt.Fprintf(tw, "%s / %s, K = %d, seed %d: %d warm-up steps (batch %d, lr %g, %s) on %d frames (%d distinct images)\n",
		r.Env, r.Dataset, r.NumTokens, r.Seed, r.Steps, r.Batch, r.LR, sup, r.TrainFrames, r.DistinctImages)
	fmt.Fprintf(tw, "held-out episode: %d frames of test-split images\n\n", r.EvalFrames)
	fmt.Fprintf(tw, "perplexity\t%.3f\n", r.Perplexity)
	fmt.Fprintf(tw, "active codes\t%d / %d\n", r.ActiveCodes, r.NumTokens)
	fmt.Fprintf(tw, "token purity\t%.3f\n", r.Purity)
	fmt.Fprintf(tw, "H(token | class)\t%.3f nats\n", r.HTokenGivenClass)
	fmt.Fprintf(tw, "H(class | token)\t%.3f nats\n", r.HClassGivenToken)
	fmt.Fprintf(tw, "H(token | place)\t%.3f nats\n", r.HTokenGivenPlace)
	fmt.Fprintf(tw, "test MSE\t%.4f (training rec %.4f)\n", r.TestMSE, r.TrainRec)
	fmt.Fprintf(tw, "seconds\ttrain %.1f, eval %.1f\n\n", r.Seconds["train"], r.Seconds["eval"])
	fmt.Fprintln(tw, "class\tname\tframes\tmajority token\tshare\tpurity")
	for _, c := range r.Classes {
		fmt.Fprintf(tw, "%d\t%s\t%d\tt%d\t%.3f\t%.3f\n", c.Class, c.Name, c.Frames, c.MajorityToken, c.Share, c.Purity)
	}
	fmt.Fprintln(tw, "\ntoken\tframes\tmajority class\tpurity")
	for _, t := range r.Tokens {
		fmt.Fprintf(tw, "t%d\t%d\t%d\t%.3f\n", t.Token, t.Frames, t.MajorityClass, t.Purity)
	}
	fmt.Fprintf(tw, "\nreconstructions: %s\n", r.Files["recon"])
	return tw.Flush()
}
