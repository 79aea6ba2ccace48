package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// warmup is phase 1: the VQ-VAE alone on the training frames (trainVQVAE), then token
// compaction and the joint model (startJoint). It returns the joint model the joint
// phase starts from, committed as its first checkpoint.
func warmup(s *session, ck *checkpoint) (*Joint, error) {
	m, err := trainVQVAE(s, ck)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	vq, tokens, share, err := compactTokens(s, ck, m)
	if err != nil {
		return nil, err
	}
	return startJoint(s, ck, vq, tokens, share, start)
}

// trainVQVAE trains the warm-up VQ-VAE (vqvae.Warmup) in chunks, each committed as a
// checkpoint, from the state's last one, and appends the warm-up's rows to the
// history. It returns the trained model.
func trainVQVAE(s *session, ck *checkpoint) (*vqvae.Model, error) {
	cfg, st := s.cfg, ck.st
	start, base := time.Now(), st.Seconds[PhaseWarmup]
	// The seconds committed with every checkpoint: an interrupted warm-up keeps them.
	elapsed := func() { st.Seconds[PhaseWarmup] = base + time.Since(start).Seconds() }
	var m *vqvae.Model
	var err error
	if st.Warmup != "" {
		if m, err = ck.loadVQ(s.backend, st.Warmup); err != nil {
			return nil, err
		}
	} else if m, err = vqvae.New(s.backend, cfg.VQVAE, cfg.Seed); err != nil {
		return nil, err
	}
	frames := vqvae.BankFrames{Bank: s.d.train, Index: s.d.allFrames}
	total := cfg.Warmup.Epochs * (frames.Len() / cfg.Warmup.Batch)
	if total == 0 && !m.Initialised() {
		n := min(frames.Len(), 1024)
		if err := m.InitFromData(s.d.train.Floats(s.d.allFrames[:n], nil)); err != nil {
			return nil, err
		}
	}
	var bar *progress.Bar
	if s.out != nil && m.Steps() < total {
		bar = progress.New(s.out, "warm-up", total).Every(2 * time.Second).From(m.Steps())
	}
	wcfg := vqvae.WarmupConfig{Epochs: cfg.Warmup.Epochs, Batch: cfg.Warmup.Batch, LR: cfg.Warmup.LR,
		Checkpoint: ck.path(warmupNext), MaxSteps: 25}
	for m.Steps() < total {
		if err := s.ctx.Err(); err != nil {
			elapsed()
			return nil, err
		}
		if err := vqvae.Warmup(m, frames, wcfg, nil); err != nil {
			return nil, err
		}
		elapsed()
		if err := commitWarmup(ck, m.Steps()); err != nil {
			return nil, err
		}
		h := m.History()
		last := h[len(h)-1]
		bar.Update(m.Steps(), "rec %.4f commit %.4f ppl %.2f", last.Rec, last.Commit, last.Perplexity)
	}
	if bar != nil {
		bar.Done("")
	}
	elapsed()
	sec := st.Seconds[PhaseWarmup]
	h := m.History()
	for i, w := range h {
		st.History = append(st.History, Record{Step: i + 1, Phase: PhaseWarmup, Rec: w.Rec, Commit: w.Commit,
			Perplexity: w.Perplexity, Seconds: sec * float64(i+1) / float64(len(h))})
	}
	return m, nil
}

// warmupNext is where a warm-up chunk saves its checkpoint before commitWarmup names it.
const warmupNext = "warmup-next.ckpt"

// commitWarmup names the checkpoint of a warm-up chunk (warmup-NNNNNN.ckpt, after step
// steps), records it in the state, commits, and removes the previous one. A new name at
// each save means that an interruption before the commit leaves the state's checkpoint
// in place.
func commitWarmup(ck *checkpoint, steps int) error {
	name := fmt.Sprintf("warmup-%06d.ckpt", steps)
	if err := os.Rename(ck.path(warmupNext), ck.path(name)); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if err := ck.record(name); err != nil {
		return err
	}
	prev := ck.st.Warmup
	ck.st.Warmup = name
	if err := ck.commit(); err != nil {
		return err
	}
	if prev != "" && prev != name {
		ck.drop(prev)
	}
	return nil
}

// compactTokens is token compaction (Sec. 3.8): with Config.Warmup.Recenter the codebook is
// re-seeded on a sample of the training frames, then the codes the warmed-up encoder
// m emits on the training frames are kept and relabelled 0..K'−1 (merged, with
// Config.Warmup.MergeCodes, where the walks cannot tell them apart). It returns the joint
// phase's VQ-VAE, the training frames' tokens and each token's share of them, and
// records the kept codes in the state.
func compactTokens(s *session, ck *checkpoint, m *vqvae.Model) (*vqvae.Model, []int, []float64, error) {
	cfg, d := s.cfg, s.d
	if cfg.Warmup.Recenter {
		n := min(len(d.allFrames), max(cfg.Warmup.RecenterFrames, cfg.VQVAE.K))
		sample := rand.New(rand.NewPCG(cfg.Seed, 0x5ce7)).Perm(len(d.allFrames))[:n]
		idx := make([]int, n)
		for i, f := range sample {
			idx[i] = d.allFrames[f]
		}
		if err := m.InitCodebook(d.train.Floats(idx, nil)); err != nil {
			return nil, nil, nil, err
		}
	}
	tokens, err := d.encodeShown(m, s.out, "compaction")
	if err != nil {
		return nil, nil, nil, err
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
		return nil, nil, nil, fmt.Errorf("pipeline: after warm-up the encoder emits %d code(s) on %d training frames: the codebook collapsed", len(keep), len(tokens))
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
		if vq, tokens, share, err = mergeCodes(s, ck.st, m, keep, tokens, share); err != nil {
			return nil, nil, nil, err
		}
	} else if vq, err = compact(m, keep, cfg.Seed); err != nil {
		return nil, nil, nil, err
	}
	ck.st.joint().ActiveCodesWarmup = len(keep)
	ck.st.Codes = keep
	return vq, tokens, share, nil
}

// startJoint ends the warm-up: it records the tokens' entropies, shares and clone
// budget and P₀, pre-trains the HMM on the tokens (Config.Joint.PretrainIters), builds the
// joint model over vq, saves it as the joint phase's first checkpoint and commits the
// phase. start is when the compaction began (its seconds are counted from there).
func startJoint(s *session, ck *checkpoint, vq *vqvae.Model, tokens []int, share []float64, start time.Time) (*Joint, error) {
	cfg, st := s.cfg, ck.st
	st.joint().Warmup = s.d.tokenEntropies(tokens)
	st.Share = share
	st.Clones = cloneBudget(cfg.Joint.Clones, cfg.Joint.Budget, share)
	h0 := 0.0
	for _, p := range share {
		h0 -= p * math.Log(p)
	}
	st.WarmPPL, st.AlphaScale, st.LRScale = math.Exp(h0), 1, 1
	hmm := chmm.New(st.Clones, s.d.env.NumActions(), rand.New(rand.NewPCG(cfg.Seed, 0x4a11)))
	st.Seconds["compact"] += time.Since(start).Seconds()
	start = time.Now()
	if cfg.Joint.PretrainIters > 0 {
		gc := chmm.GradConfig{Iters: cfg.Joint.PretrainIters, LR: cfg.Final.LR, EntropyWeight: cfg.Final.Entropy,
			Patience: cfg.Final.Patience, Tol: cfg.Final.Tol, Seed: cfg.Seed, Stop: s.ctx.Err}
		h, err := trainShown(s, hmm, s.d.sequences(tokens), gc, "HMM pre-training")
		if err != nil {
			return nil, fmt.Errorf("pipeline: HMM pre-training: %w", err)
		}
		st.Made.AddRun(evaluate.TrainerRun{Name: "pretrain", Iterations: len(h.LogLik), Stop: h.Stop,
			ChunkLen: h.ChunkLen, Batch: h.Batch})
		st.Seconds["pretrain"] += time.Since(start).Seconds()
		start = time.Now()
	}
	j, err := NewJoint(vq, hmm, cfg.VQVAE.Beta, cfg.Joint.LR, cfg.Joint.LR*cfg.Joint.HMMLRFactor)
	if err != nil {
		return nil, err
	}
	j.FreezeVQ, j.NoLengthNorm, j.GradFrames = cfg.Joint.FreezeVQVAE, cfg.Joint.NoLengthNorm, cfg.Joint.GradFrames
	j.Scaled = cfg.Joint.ScaledEmissions
	if cfg.Warmup.MergeCodes > 0 {
		j.Share = share
	}
	st.LambdaScale = 1
	if err := saveJoint(ck, j); err != nil {
		return nil, err
	}
	st.Healthy, st.HealthyIter = st.Checkpoint, 0
	st.Seconds["compact"] += time.Since(start).Seconds()
	st.Phase = PhaseJoint
	if err := ck.commit(); err != nil {
		return nil, err
	}
	return j, nil
}

// mergeCodes merges the kept codes of the warm-up model m that the training walks
// cannot tell apart (Config.Warmup.MergeCodes, chmm.MergeTokens): tokens are the training
// frames' kept-code indices and share their shares. Each merged token's codebook row is
// the frame-weighted mean of its codes' rows. It returns the joint phase's VQ-VAE, the
// frames' merged tokens and the merged tokens' shares, and records the merge in st
// (CodesMerged; Codes keeps the kept codes).
func mergeCodes(s *session, st *runState, m *vqvae.Model, keep, tokens []int, share []float64) (*vqvae.Model, []int, []float64, error) {
	group, n, err := chmm.MergeTokens(s.d.sequences(tokens), len(keep), s.d.env.NumActions(), s.cfg.Warmup.MergeCodes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline: merging codes: %w", err)
	}
	if n < 2 {
		return nil, nil, nil, fmt.Errorf("pipeline: warmup.merge_codes=%g merges all %d codes into one token: the walks tell none apart at that bar; lower it", s.cfg.Warmup.MergeCodes, len(keep))
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
	vq, err := compact(m, reps, s.cfg.Seed)
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
	st.CodesMerged = group
	return vq, out, merged, nil
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
