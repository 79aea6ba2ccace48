package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gomlx/compute"
	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

func init() {
	register("vqvae", "warm up the VQ-VAE on an environment's frames and report token quality on held-out images", runVQVAE)
}

// defaultVQSteps is the default number of warm-up steps (batch 128, Adam 3e-4).
//
// The reference warms up for 4 epochs over the training episodes' frames: 1,250
// steps on aliased (4 × 10,000 frames) and 3,125 on two_rooms (10 × 10,000), but
// those frames re-sample only ~3,200 (aliased, 4 classes) or ~8,000 (two_rooms)
// distinct training images. Learning curves to 3,000 steps (--curve 100, seed 1,
// held-out frames) flatten by about 2,000 steps: on two_rooms, purity moves by
// < 0.02 and H(token|class) by ≤ 0.03 nats between 2,000 and 3,000 steps on both
// MNIST and Fashion-MNIST (H still fell by 0.1 nats between 1,400 and 2,000 steps),
// and aliased is flat from ~400 steps. 2,000 steps is 256,000 frames, ≈ 32 passes
// over two_rooms' distinct images. The 3,000-step curves are kept in
// results/vqvae/curve3000/; the suite records 3-seed curves to 2,000 steps
// (results/vqvae.md).
const defaultVQSteps = 2000

// Files written to a run's --out directory.
const (
	vqModelFile    = "model.vqvae" // checkpoint: resumable warm-up, then the finished model
	vqReconFile    = "recon.png"   // held-out inputs above reconstructions, labelled with tokens
	vqReportFile   = "report.json" // vqReport
	vqManifestFile = "run.json"    // vqManifest: what the checkpoint belongs to
)

// Random streams (PCG second word) per seed. Training walks and the held-out walk
// use the same streams as "gradcscg symbolic", so both see the same episodes.
const (
	streamTrainWalks  = 1
	streamHeldOutWalk = 3
	streamTrainImages = 4
	streamTestImages  = 5
)

// vqOptions are the flags of "gradcscg vqvae".
type vqOptions struct {
	env, layout, dataset string
	k                    int
	seed                 uint64
	steps, batch         int
	lr                   float64
	episodes, episodeLen int
	evalLen              int
	out, jsonPath        string
	classify, quiet      bool
	curve                int
	checkpointEvery      int
}

func runVQVAE(args []string) error {
	var o vqOptions
	var suite bool
	var envs, datasets string
	var seeds int
	fs := newFlagSet("vqvae", "--env NAME | --layout FILE [--dataset mnist|fashion] [--k K] [flags]\n"+
		"       gradcscg vqvae --suite [--envs aliased,two_rooms] [--datasets mnist,fashion] [--seeds 3] [--out results]")
	fs.StringVar(&o.env, "env", "aliased", "built-in environment (see 'gradcscg envs')")
	fs.StringVar(&o.layout, "layout", "", "custom layout file (overrides --env)")
	fs.StringVar(&o.dataset, "dataset", "mnist", "image data set: mnist, fashion, or a directory of IDX files")
	fs.IntVar(&o.k, "k", 0, "codebook size K (0: the number of classes the environment shows)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed (walks, images, initialisation, batches)")
	fs.IntVar(&o.steps, "steps", defaultVQSteps, "warm-up steps in total (a resumed run continues up to this count)")
	fs.IntVar(&o.batch, "batch", 128, "minibatch size")
	fs.Float64Var(&o.lr, "lr", vqvae.DefaultLearningRate, "Adam learning rate")
	fs.IntVar(&o.episodes, "episodes", 0, "training episodes (0: the environment's reference count)")
	fs.IntVar(&o.episodeLen, "episode-len", 0, "steps per training episode (0: the environment's reference length)")
	fs.IntVar(&o.evalLen, "eval-len", 0, "steps of the held-out episode (0: same as --episode-len)")
	fs.StringVar(&o.out, "out", "", "run directory: model, reconstructions PNG, report JSON "+
		"(default runs/vqvae/ENV_DATASET_kK_seedS; with --suite the results root, default results)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the report JSON to this path")
	fs.BoolVar(&o.classify, "classify", false, "add the reference's supervised classification head (weight 0.1) to the warm-up")
	fs.IntVar(&o.curve, "curve", 0, "every N steps, score held-out tokens (first 2,000 frames) and record a learning curve "+
		"(0: off; --suite: default 100)")
	fs.IntVar(&o.checkpointEvery, "checkpoint-every", 100, "save the checkpoint every N steps")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output")
	fs.BoolVar(&suite, "suite", false, "run (or collect) the quality grid --envs × --datasets × seeds 1..--seeds and write OUT/vqvae.md")
	fs.StringVar(&envs, "envs", "aliased,two_rooms", "--suite: comma-separated environments")
	fs.StringVar(&datasets, "datasets", "mnist,fashion", "--suite: comma-separated data sets")
	fs.IntVar(&seeds, "seeds", 3, "--suite: seeds 1..n")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if suite {
		if o.out == "" {
			o.out = "results"
		}
		// The command line as the table's caption quotes it: --suite, then the flags set.
		cmdLine, curveSet := "gradcscg vqvae --suite", false
		fs.Visit(func(f *flag.Flag) {
			curveSet = curveSet || f.Name == "curve"
			switch {
			case f.Name == "quiet" || f.Name == "suite":
			case f.Value.String() == "true":
				cmdLine += " --" + f.Name
			default:
				cmdLine += fmt.Sprintf(" --%s %s", f.Name, f.Value)
			}
		})
		if !curveSet {
			o.curve = suiteCurve
		}
		if o.jsonPath != "" {
			return errors.New("--json: not with --suite (each run writes OUT/vqvae/RUN/report.json)")
		}
		if seeds < 1 {
			return fmt.Errorf("--seeds %d: need at least 1", seeds)
		}
		return vqSuite(o, cmdLine, splitList(envs), splitList(datasets), seeds)
	}
	rep, err := vqRun(o)
	if err != nil {
		return err
	}
	if err := rep.writeTable(stdout); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := rep.writeJSON(o.jsonPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", o.jsonPath)
	}
	return nil
}

// check validates the numeric flags.
func (o vqOptions) check() error {
	switch {
	case o.k < 0 || o.k == 1:
		return fmt.Errorf("--k %d: need 0 (one code per class) or at least 2", o.k)
	case o.steps < 1:
		return fmt.Errorf("--steps %d: need at least 1", o.steps)
	case o.batch < 1:
		return fmt.Errorf("--batch %d: need at least 1", o.batch)
	case !(o.lr > 0) || math.IsInf(o.lr, 0):
		return fmt.Errorf("--lr %g: need a positive learning rate", o.lr)
	case o.episodes < 0 || o.episodeLen < 0 || o.evalLen < 0:
		return errors.New("--episodes, --episode-len and --eval-len must be ≥ 0")
	case o.curve < 0:
		return fmt.Errorf("--curve %d: need ≥ 0", o.curve)
	case o.checkpointEvery < 1:
		return fmt.Errorf("--checkpoint-every %d: need at least 1", o.checkpointEvery)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newVQBackend is hmmgraph.NewBackend: GOMLX_BACKEND when set, else the go backend
// with ops_sequential; label names it in GOMLX_BACKEND's syntax.
func newVQBackend() (compute.Backend, string, error) { return hmmgraph.NewBackend() }

// vqManifest identifies the run a checkpoint belongs to; a resumed or reloaded run
// must match it.
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
		{"env", m.Env, want.Env}, {"dataset", m.Dataset, want.Dataset}, {"seed", m.Seed, want.Seed},
		{"k", m.NumTokens, want.NumTokens}, {"classify", m.Classify, want.Classify},
		{"batch", m.Batch, want.Batch}, {"episodes", m.Episodes, want.Episodes},
		{"episode-len", m.EpisodeLen, want.EpisodeLen},
	} {
		if x.have != x.get {
			return fmt.Sprintf("it was trained with --%s %v, not %v", x.name, x.have, x.get)
		}
	}
	return ""
}

// classStat describes the tokens of one class's held-out frames.
type classStat struct {
	Class         int     `json:"class"`
	Name          string  `json:"name"`
	Frames        int     `json:"frames"`
	MajorityToken int     `json:"majority_token"` // argmax_k n(k, c), ties to the lowest k
	Share         float64 `json:"share"`          // n(majority token, c) / n(c)
	Purity        float64 `json:"purity"`         // fraction of the class's frames whose token's majority class is c
}

// tokenStat describes the held-out frames of one token.
type tokenStat struct {
	Token         int     `json:"token"`
	Frames        int     `json:"frames"`
	MajorityClass int     `json:"majority_class"` // argmax_c n(k, c), ties to the lowest c
	Purity        float64 `json:"purity"`         // n(k, majority class) / n(k)
}

// curvePoint is one point of the --curve learning curve.
type curvePoint struct {
	Step             int     `json:"step"`
	Rec              float64 `json:"rec"` // mean training reconstruction loss since the previous point
	Purity           float64 `json:"purity"`
	HTokenGivenClass float64 `json:"h_token_given_class"`
	Perplexity       float64 `json:"perplexity"`
	ActiveCodes      int     `json:"active_codes"`
	TestMSE          float64 `json:"test_mse"`
}

// vqReport is the report of one "gradcscg vqvae" run (report.json). Entropies are
// in nats and computed from the empirical joint distribution over the held-out
// episode's frames, whose images come from the data set's test split.
type vqReport struct {
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

	Classes []classStat  `json:"classes"`
	Tokens  []tokenStat  `json:"tokens"`
	Curve   []curvePoint `json:"curve,omitempty"`

	// Files are the run's outputs (paths as given by --out).
	Files map[string]string `json:"files"`
	// Seconds: "train" is the warm-up time of the invocations that built this model
	// (an interrupted invocation's time is lost), "eval" and "total" this invocation's.
	Seconds map[string]float64 `json:"seconds"`
}

// tokenQuality is the label-free-method, labelled-evaluation summary of hard tokens
// against classes (the fields of vqReport with the same names).
type tokenQuality struct {
	Purity, HTokenGivenClass, HClassGivenToken, Perplexity float64
	Active                                                 int
	Classes                                                []classStat
	Tokens                                                 []tokenStat
}

// entropy returns H = −Σ p log p (nats) of the counts (which sum to n).
func entropy[K comparable](counts map[K]int, n int) float64 {
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(n)
			h -= p * math.Log(p)
		}
	}
	return h
}

// scoreTokens compares hard tokens with the true classes of the same frames.
// names[c] names class c (nil or short: the number).
func scoreTokens(tokens, classes []int, names []string) tokenQuality {
	n := len(tokens)
	joint := map[[2]int]int{}
	tokN, clsN := map[int]int{}, map[int]int{}
	for i, k := range tokens {
		joint[[2]int{k, classes[i]}]++
		tokN[k]++
		clsN[classes[i]]++
	}
	toks, cls := sortedKeys(tokN), sortedKeys(clsN)
	var q tokenQuality
	if n == 0 {
		return q
	}
	majClass := map[int]int{}
	for _, k := range toks {
		best := cls[0]
		for _, c := range cls {
			if joint[[2]int{k, c}] > joint[[2]int{k, best}] {
				best = c
			}
		}
		majClass[k] = best
		q.Purity += float64(joint[[2]int{k, best}]) / float64(n)
		q.Tokens = append(q.Tokens, tokenStat{Token: k, Frames: tokN[k], MajorityClass: best,
			Purity: float64(joint[[2]int{k, best}]) / float64(tokN[k])})
	}
	for _, c := range cls {
		best, right := toks[0], 0
		for _, k := range toks {
			if joint[[2]int{k, c}] > joint[[2]int{best, c}] {
				best = k
			}
			if majClass[k] == c {
				right += joint[[2]int{k, c}]
			}
		}
		name := fmt.Sprint(c)
		if c < len(names) {
			name = names[c]
		}
		q.Classes = append(q.Classes, classStat{Class: c, Name: name, Frames: clsN[c], MajorityToken: best,
			Share: float64(joint[[2]int{best, c}]) / float64(clsN[c]), Purity: float64(right) / float64(clsN[c])})
	}
	q.HTokenGivenClass = evaluate.CondEntropy(tokens, classes)
	q.HClassGivenToken = evaluate.CondEntropy(classes, tokens)
	q.Perplexity = math.Exp(entropy(tokN, n))
	q.Active = len(toks)
	return q
}

func sortedKeys(m map[int]int) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
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

// vqData is everything a run draws from the environment and the data set.
type vqData struct {
	env                 *gridworld.Env
	train               vqvae.BankFrames // frames of the training episodes (train split)
	testImages          []float32        // held-out frames (test split), [n][Side²]
	testClasses, places []int            // class and place of each held-out frame
	classNames          []string         // the data set's, by label
	distinct            int              // distinct training images
}

// vqLoadData resolves the environment and data set and draws the training frames
// and the held-out episode; o's zero sizes are replaced by the environment's.
func vqLoadData(o *vqOptions) (*vqData, error) {
	env, err := loadEnv(o.env, o.layout)
	if err != nil {
		return nil, err
	}
	def := env.Defaults()
	if o.episodes == 0 {
		o.episodes = def.Episodes
	}
	if o.episodeLen == 0 {
		o.episodeLen = def.Steps
	}
	if o.evalLen == 0 {
		o.evalLen = o.episodeLen
	}
	// The walks (place, class, action and frame per step, ~48 bytes) and the held-out
	// frames' pixels (784 float32) are held in memory.
	if err := checkMemory(48*float64(o.episodes)*float64(o.episodeLen)+3200*float64(o.evalLen),
		fmt.Sprintf("%d episodes of %d steps and a held-out walk of %d", o.episodes, o.episodeLen, o.evalLen)); err != nil {
		return nil, err
	}
	trainSet, err := dataset.Load(o.dataset, dataset.Train)
	if err != nil {
		return nil, err
	}
	if err := env.CheckClasses(trainSet.NumClasses); err != nil {
		return nil, fmt.Errorf("environment %s with data set %s: %w", env.Name, trainSet.Name, err)
	}
	testSet, err := dataset.Load(o.dataset, dataset.Test)
	if err != nil {
		return nil, err
	}
	used := env.ClassesUsed()
	trainBank, err := dataset.NewBank(trainSet)
	if err != nil {
		return nil, err
	}
	testBank, err := dataset.NewBank(testSet)
	if err != nil {
		return nil, err
	}
	for _, b := range []*dataset.Bank{trainBank, testBank} {
		if err := b.Check(used); err != nil {
			return nil, fmt.Errorf("environment %s: %w", env.Name, err)
		}
		if b.Rows() != 28 || b.Cols() != 28 {
			return nil, fmt.Errorf("data set %s: %d×%d images; the VQ-VAE needs 28×28", o.dataset, b.Rows(), b.Cols())
		}
	}
	if o.k == 0 {
		if len(used) < 2 {
			return nil, fmt.Errorf("--k 0: environment %s shows %d class, and the codebook needs K ≥ 2: pass --k", env.Name, len(used))
		}
		o.k = len(used)
	}
	d := &vqData{env: env, classNames: trainSet.ClassNames}
	rng := rand.New(rand.NewPCG(o.seed, streamTrainImages))
	var idx []int
	for _, ep := range env.TrainingEpisodes(rand.New(rand.NewPCG(o.seed, streamTrainWalks)), o.episodes, o.episodeLen) {
		idx = append(idx, trainBank.Frames(rng, ep.Obs)...)
	}
	if len(idx) < o.batch {
		return nil, fmt.Errorf("%d training frames (--episodes %d × --episode-len %d) is fewer than one batch of %d",
			len(idx), o.episodes, o.episodeLen, o.batch)
	}
	seen := map[int]bool{}
	for _, i := range idx {
		seen[i] = true
	}
	d.distinct = len(seen)
	d.train = vqvae.BankFrames{Bank: trainBank, Index: idx}
	held := env.Walk(rand.New(rand.NewPCG(o.seed, streamHeldOutWalk)), o.evalLen)
	if held.Len() == 0 {
		return nil, errors.New("--eval-len: the held-out episode is empty")
	}
	d.testImages = testBank.Floats(testBank.Frames(rand.New(rand.NewPCG(o.seed, streamTestImages)), held.Obs), nil)
	d.testClasses, d.places = held.Obs, held.Places
	return d, nil
}

// vqRun trains (or resumes, or reloads) the VQ-VAE of one run and evaluates it.
func vqRun(o vqOptions) (*vqReport, error) {
	t0 := time.Now()
	d, err := vqLoadData(&o)
	if err != nil {
		return nil, err
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "vqvae", fmt.Sprintf("%s_%s_k%d_seed%d", d.env.Name, filepath.Base(o.dataset), o.k, o.seed))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	backend, backendLabel, err := newVQBackend()
	if err != nil {
		return nil, err
	}
	man := vqManifest{Env: d.env.Name, Dataset: o.dataset, Seed: o.seed, NumTokens: o.k, Classify: o.classify,
		Batch: o.batch, Episodes: o.episodes, EpisodeLen: o.episodeLen}
	m, prevTrain, err := vqOpenModel(backend, o, man, len(d.classNames))
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	logf("%s/%s seed %d: K=%d, %d training frames (%d distinct %s train images), %d held-out test frames; backend %s",
		d.env.Name, o.dataset, o.seed, o.k, d.train.Len(), d.distinct, o.dataset, len(d.testClasses), backendLabel)

	// Warm-up (paper Sec. 3.6, phase 1), resumed from the checkpoint if there is one.
	tTrain := time.Now()
	var curve []curvePoint
	if m.Steps() < o.steps {
		if m.Steps() > 0 {
			logf("resuming the warm-up at step %d of %d (%s)", m.Steps(), o.steps, filepath.Join(o.out, vqModelFile))
		}
		if curve, err = vqWarmup(m, d, o); err != nil {
			return nil, err
		}
	} else {
		logf("loaded the finished model %s (%d steps)", filepath.Join(o.out, vqModelFile), m.Steps())
	}
	trainSec := time.Since(tTrain).Seconds() + prevTrain

	// Held-out evaluation.
	tEval := time.Now()
	recon, tokens, err := m.Reconstruct(d.testImages)
	if err != nil {
		return nil, err
	}
	q := scoreTokens(tokens, d.testClasses, d.classNames)
	hist := m.History()
	rec := 0.0
	tail := hist[max(len(hist)-50, 0):]
	for _, h := range tail {
		rec += h.Rec / float64(len(tail))
	}
	rep := &vqReport{
		Env: d.env.Name, Dataset: o.dataset, Seed: o.seed, NumTokens: o.k, Classify: o.classify,
		Steps: m.Steps(), Batch: o.batch, LR: o.lr, Backend: backendLabel,
		Episodes: o.episodes, EpisodeLen: o.episodeLen,
		TrainFrames: d.train.Len(), DistinctImages: d.distinct, EvalFrames: len(tokens),
		Purity: q.Purity, HTokenGivenClass: q.HTokenGivenClass, HClassGivenToken: q.HClassGivenToken,
		HTokenGivenPlace: evaluate.CondEntropy(tokens, d.places), Perplexity: q.Perplexity, ActiveCodes: q.Active,
		TestMSE: mse(recon, d.testImages), TrainRec: rec,
		Classes: q.Classes, Tokens: q.Tokens, Curve: curve,
		Files: map[string]string{
			"model": filepath.Join(o.out, vqModelFile),
			"recon": filepath.Join(o.out, vqReconFile),
		},
	}
	if err := vqWriteRecon(rep.Files["recon"], d, recon, tokens); err != nil {
		return nil, err
	}
	rep.Seconds = map[string]float64{
		"train": trainSec,
		"eval":  time.Since(tEval).Seconds(),
		"total": time.Since(t0).Seconds(),
	}
	if err := rep.writeJSON(filepath.Join(o.out, vqReportFile)); err != nil {
		return nil, err
	}
	logf("wrote %s, %s and %s", rep.Files["model"], rep.Files["recon"], filepath.Join(o.out, vqReportFile))
	return rep, nil
}

// vqOpenModel loads o.out's checkpoint if there is one (checking that it belongs to
// this run) or creates a fresh model and writes the manifest. prevTrain is the
// warm-up time recorded by the previous report of the run, if any. numClasses is the
// data set's class count (the --classify head's outputs).
func vqOpenModel(backend compute.Backend, o vqOptions, man vqManifest, numClasses int) (m *vqvae.Model, prevTrain float64, err error) {
	modelPath := filepath.Join(o.out, vqModelFile)
	manPath := filepath.Join(o.out, vqManifestFile)
	if _, err := os.Stat(modelPath); errors.Is(err, fs.ErrNotExist) {
		cfg := vqvae.DefaultConfig(o.k)
		cfg.Classify, cfg.NumClasses = o.classify, numClasses
		if m, err = vqvae.New(backend, cfg, o.seed); err != nil {
			return nil, 0, err
		}
		data, err := json.MarshalIndent(man, "", "  ")
		if err != nil {
			return nil, 0, err
		}
		return m, 0, writeFileAtomic(manPath, append(data, '\n'))
	}
	raw, err := os.ReadFile(manPath)
	if err != nil {
		return nil, 0, fmt.Errorf("%s exists but its manifest cannot be read (%w): use another --out", modelPath, err)
	}
	var have vqManifest
	if err := json.Unmarshal(raw, &have); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", manPath, err)
	}
	if why := have.mismatch(man); why != "" {
		return nil, 0, fmt.Errorf("%s belongs to another run (%s): use another --out", modelPath, why)
	}
	if m, err = vqvae.Load(backend, modelPath); err != nil {
		return nil, 0, err
	}
	if c := m.Config(); c.K != o.k || c.Classify != o.classify {
		return nil, 0, fmt.Errorf("%s has K=%d classify=%v, not K=%d classify=%v: use another --out", modelPath, c.K, c.Classify, o.k, o.classify)
	}
	if prev, err := readVQReport(filepath.Join(o.out, vqReportFile)); err == nil && prev.Steps <= m.Steps() {
		prevTrain = prev.Seconds["train"]
	}
	return m, prevTrain, nil
}

// suiteCurve is --suite's default --curve.
const suiteCurve = 100

// curveFrames is the number of held-out frames a --curve point scores.
const curveFrames = 2000

// vqWarmup runs the warm-up up to o.steps steps with checkpoints; with o.curve it
// stops every o.curve steps to score the first curveFrames held-out frames.
func vqWarmup(m *vqvae.Model, d *vqData, o vqOptions) ([]curvePoint, error) {
	perEpoch := d.train.Len() / o.batch
	wc := vqvae.WarmupConfig{
		Epochs:          (o.steps + perEpoch - 1) / perEpoch,
		Batch:           o.batch,
		LR:              o.lr,
		Checkpoint:      filepath.Join(o.out, vqModelFile),
		CheckpointEvery: o.checkpointEvery,
	}
	var progressOut io.Writer = stderr
	if o.quiet {
		progressOut = nil
	}
	if o.curve == 0 {
		wc.MaxSteps = o.steps - m.Steps()
		return nil, vqvae.Warmup(m, d.train, wc, progressOut)
	}
	nEval := min(curveFrames, len(d.testClasses))
	p := m.Config().Pixels()
	imgs, classes := d.testImages[:nEval*p], d.testClasses[:nEval]
	var curve []curvePoint
	for m.Steps() < o.steps {
		start := m.Steps()
		wc.MaxSteps = min(o.curve-start%o.curve, o.steps-start)
		if err := vqvae.Warmup(m, d.train, wc, nil); err != nil {
			return nil, err
		}
		recon, tokens, err := m.Reconstruct(imgs)
		if err != nil {
			return nil, err
		}
		q := scoreTokens(tokens, classes, nil)
		rec := 0.0
		hist := m.History()[start:]
		for _, h := range hist {
			rec += h.Rec / float64(len(hist))
		}
		pt := curvePoint{Step: m.Steps(), Rec: rec, Purity: q.Purity, HTokenGivenClass: q.HTokenGivenClass,
			Perplexity: q.Perplexity, ActiveCodes: q.Active, TestMSE: mse(recon, imgs)}
		curve = append(curve, pt)
		if !o.quiet {
			fmt.Fprintf(stderr, "step %5d  rec %.4f  held-out: purity %.3f  H(token|class) %.3f  perplexity %.2f  active %d  MSE %.4f\n",
				pt.Step, pt.Rec, pt.Purity, pt.HTokenGivenClass, pt.Perplexity, pt.ActiveCodes, pt.TestMSE)
		}
	}
	return curve, nil
}

// vqWriteRecon writes the reconstructions figure of the first two held-out frames of
// every class, in class order.
func vqWriteRecon(path string, d *vqData, recon []float32, tokens []int) error {
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
	return figures.WriteReconstructionsPNG(path, in, out, tok, 28)
}

func (r *vqReport) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// readVQReport reads a report.json written by writeJSON.
func readVQReport(path string) (*vqReport, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := new(vqReport)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// writeTable prints the report for people.
func (r *vqReport) writeTable(w io.Writer) error {
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

// vqSuite runs or collects the quality grid envs × datasets × seeds 1..n with o's
// settings (runs OUT/vqvae/ENV_DATASET_seedS, suffixed _kK with --k and _classify
// with --classify) and writes OUT/vqvae.md (OUT/vqvae_classify.md with --classify).
// cmdLine is the command quoted in the markdown.
func vqSuite(o vqOptions, cmdLine string, envs, datasets []string, seeds int) error {
	if len(envs) == 0 || len(datasets) == 0 {
		return errors.New("--suite: --envs and --datasets must name at least one each")
	}
	if o.layout != "" {
		return errors.New("--suite: --layout is not supported (use --envs with built-in names)")
	}
	root := o.out
	if err := os.MkdirAll(filepath.Join(root, "vqvae"), 0o755); err != nil {
		return err
	}
	var groups []*vqGroup
	total, done := len(envs)*len(datasets)*seeds, 0
	t0 := time.Now()
	for _, env := range envs {
		for _, ds := range datasets {
			g := &vqGroup{env: env, ds: ds}
			groups = append(groups, g)
			for seed := 1; seed <= seeds; seed++ {
				ro := o
				ro.env, ro.dataset, ro.seed = env, ds, uint64(seed)
				name := fmt.Sprintf("%s_%s_seed%d", env, filepath.Base(ds), seed)
				if o.k != 0 {
					name += fmt.Sprintf("_k%d", o.k)
				}
				if o.classify {
					name += "_classify"
				}
				ro.out = filepath.Join(root, "vqvae", name)
				rep, err := readVQReport(filepath.Join(ro.out, vqReportFile))
				if err != nil || !rep.sameSettings(ro) {
					if rep, err = vqRun(ro); err != nil {
						return fmt.Errorf("%s/%s seed %d: %w", env, ds, seed, err)
					}
				}
				done++
				fmt.Fprintf(stderr, "[%d/%d] %-10s %-8s seed %d  purity %.3f  H(token|class) %.3f  perplexity %.2f  active %d  %.0fs  (elapsed %s)\n",
					done, total, env, ds, seed, rep.Purity, rep.HTokenGivenClass, rep.Perplexity, rep.ActiveCodes,
					rep.Seconds["train"]+rep.Seconds["eval"], time.Since(t0).Round(time.Second))
				g.reps = append(g.reps, rep)
			}
		}
	}
	var b strings.Builder
	sup := "unsupervised warm-up (reconstruction + β·commitment, no labels)"
	if o.classify {
		sup = "warm-up with the reference's classification head (labels used)"
	}
	fmt.Fprintf(&b, "# VQ-VAE warm-up alone: token quality on held-out test images\n\n")
	fmt.Fprintf(&b, "Generated by `%s` (GOMLX_BACKEND=%s). Each run: %s for %d steps, batch %d, Adam %g, "+
		"K = number of classes the environment shows; training frames are the environment's training episodes "+
		"with a fresh train-split image per visit; scores are on a held-out episode of the same length with "+
		"test-split images. Mean ± s.d. over seeds; entropies in nats.\n\n",
		cmdLine, groups[0].reps[0].Backend, sup, o.steps, o.batch, o.lr)
	b.WriteString("| env | data set | K | seeds | purity | H(token\\|class) | H(class\\|token) | perplexity | active codes | test MSE | seconds/run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		col := func(f func(r *vqReport) float64, prec int) string {
			xs := make([]float64, len(g.reps))
			for i, r := range g.reps {
				xs[i] = f(r)
			}
			return evaluate.MeanSD(xs).Format(prec)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", g.env, g.ds, g.reps[0].NumTokens, len(g.reps),
			col(func(r *vqReport) float64 { return r.Purity }, 3),
			col(func(r *vqReport) float64 { return r.HTokenGivenClass }, 3),
			col(func(r *vqReport) float64 { return r.HClassGivenToken }, 3),
			col(func(r *vqReport) float64 { return r.Perplexity }, 2),
			col(func(r *vqReport) float64 { return float64(r.ActiveCodes) }, 1),
			col(func(r *vqReport) float64 { return r.TestMSE }, 4),
			col(func(r *vqReport) float64 { return r.Seconds["train"] + r.Seconds["eval"] }, 0))
	}
	b.WriteString("\nPer run (majority token of each class, and that token's share of the class's frames):\n\n")
	b.WriteString("| run | purity | H(token\\|class) | perplexity | active | class → majority token (share) |\n|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, r := range g.reps {
			var cl []string
			for _, c := range r.Classes {
				cl = append(cl, fmt.Sprintf("%s→t%d (%.2f)", c.Name, c.MajorityToken, c.Share))
			}
			fmt.Fprintf(&b, "| %s/%s seed %d | %.3f | %.3f | %.2f | %d | %s |\n", r.Env, r.Dataset, r.Seed,
				r.Purity, r.HTokenGivenClass, r.Perplexity, r.ActiveCodes, strings.Join(cl, ", "))
		}
	}
	writeCurveTable(&b, groups)
	b.WriteString(vqSuiteNotes)
	path := filepath.Join(root, "vqvae.md")
	if o.classify {
		path = filepath.Join(root, "vqvae_classify.md")
	}
	if err := writeFileAtomic(path, []byte(b.String())); err != nil {
		return err
	}
	fmt.Fprint(stdout, b.String())
	fmt.Fprintf(stderr, "table written to %s\n", path)
	return nil
}

// vqGroup is one row of the suite table: the runs (seeds) of an environment and data set.
type vqGroup struct {
	env, ds string
	reps    []*vqReport
}

// writeCurveTable writes the learning curves of the groups' runs (their --curve
// points; of long curves only steps 100, 200 and multiples of 500), mean over the
// seeds that have the point.
func writeCurveTable(b *strings.Builder, groups []*vqGroup) {
	type cell struct{ purity, h, mse []float64 }
	cells := map[int][]cell{} // step → per group
	for gi, g := range groups {
		for _, r := range g.reps {
			for _, pt := range r.Curve {
				if cells[pt.Step] == nil {
					cells[pt.Step] = make([]cell, len(groups))
				}
				c := &cells[pt.Step][gi]
				c.purity, c.h, c.mse = append(c.purity, pt.Purity), append(c.h, pt.HTokenGivenClass), append(c.mse, pt.TestMSE)
			}
		}
	}
	if len(cells) > 12 {
		for s := range cells {
			if s != 100 && s != 200 && s%500 != 0 {
				delete(cells, s)
			}
		}
	}
	if len(cells) == 0 {
		return
	}
	steps := make([]int, 0, len(cells))
	for s := range cells {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	fmt.Fprintf(b, "\nLearning curves (--curve): purity / H(token|class) / test MSE on the first (up to) %d held-out frames, "+
		"mean over seeds:\n\n| step |", curveFrames)
	for _, g := range groups {
		fmt.Fprintf(b, " %s %s |", g.env, g.ds)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(groups)) + "\n")
	for _, s := range steps {
		fmt.Fprintf(b, "| %d |", s)
		for _, c := range cells[s] {
			if len(c.purity) == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %.3f / %.3f / %.4f |", evaluate.MeanSD(c.purity).Mean, evaluate.MeanSD(c.h).Mean, evaluate.MeanSD(c.mse).Mean)
		}
		b.WriteString("\n")
	}
}

// vqSuiteNotes is the fixed text after the suite's tables.
const vqSuiteNotes = `
Definitions: purity = Σ_k max_c n(k,c) / n (fraction of frames whose token's majority class is
their class); H(token|class) = 0 when every class maps to one token (splits raise it);
H(class|token) = 0 when every token holds one class (merges raise it); perplexity = exp H(token)
over the held-out frames, which follow the walk's visit frequencies, not a uniform class mix.
Reconstructions: OUT/vqvae/RUN/recon.png (two held-out frames per class, inputs above
reconstructions, labelled with their tokens).
`

// sameSettings reports whether a stored report was produced with o's settings.
func (r *vqReport) sameSettings(o vqOptions) bool {
	return r.Env == o.env && r.Dataset == o.dataset && r.Seed == o.seed && r.Steps == o.steps &&
		r.Batch == o.batch && r.LR == o.lr && r.Classify == o.classify && (o.k == 0 || r.NumTokens == o.k) &&
		(o.episodes == 0 || r.Episodes == o.episodes) && (o.episodeLen == 0 || r.EpisodeLen == o.episodeLen) &&
		(o.evalLen == 0 || r.EvalFrames == o.evalLen)
}
