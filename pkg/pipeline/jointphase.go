package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/progress"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// jointRun is phase 2 in progress: the joint model j, trained one step at a time, and
// the run's checkpoint, whose joint-phase fields (the iteration, λ's throttle, the
// collapse guard's and the label-free stop's state) it keeps.
type jointRun struct {
	s  *session
	ck *checkpoint
	st *runState // ck.st
	j  *Joint
}

// trainJoint is phase 2 (Algorithm 1): joint steps from the state's iteration to
// Config.Joint.Iters (or the label-free stop), committed every Config.Joint.CheckpointEvery,
// with the anti-collapse guard. It starts from j, the warm-up's joint model, or from
// the state's checkpoint when j is nil, and returns the joint model at the phase's end.
func trainJoint(s *session, ck *checkpoint, j *Joint) (*Joint, error) {
	p := &jointRun{s: s, ck: ck, st: ck.st, j: j}
	if p.j == nil {
		if err := p.open(ck.st.Checkpoint); err != nil {
			return nil, err
		}
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.j, nil
}

// openJoint loads the joint checkpoint name with the VQ-VAE learning rate of the
// state's current scale.
func openJoint(s *session, ck *checkpoint, name string) (*Joint, error) {
	vq, err := ck.loadVQ(s.backend, name)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg
	_, lrScale := ck.st.scales()
	j, err := AttachJoint(vq, ck.st.Clones, s.d.env.NumActions(), cfg.VQVAE.Beta, cfg.Joint.LR*lrScale, cfg.Joint.LR*cfg.Joint.HMMLRFactor)
	if err != nil {
		return nil, err
	}
	j.FreezeVQ, j.NoLengthNorm, j.GradFrames = cfg.Joint.FreezeVQVAE, cfg.Joint.NoLengthNorm, cfg.Joint.GradFrames
	j.Scaled = cfg.Joint.ScaledEmissions
	if cfg.Warmup.MergeCodes > 0 {
		j.Share = ck.st.Share
	}
	return j, nil
}

// open replaces the joint model by the checkpoint name.
func (p *jointRun) open(name string) error {
	j, err := openJoint(p.s, p.ck, name)
	if err != nil {
		return err
	}
	p.j = j
	return nil
}

// saveJoint writes the joint model j to a new checkpoint file and points the state at
// it (the caller commits; the previous file is removed after the commit by pruneJoint).
func saveJoint(ck *checkpoint, j *Joint) error {
	name := fmt.Sprintf("joint-%06d.ckpt", ck.st.JointIter)
	if n := len(ck.st.Interventions); n > 0 {
		name = fmt.Sprintf("joint-%06d-r%d.ckpt", ck.st.JointIter, n) // a rolled-back branch
	}
	if err := j.VQ.Save(ck.path(name)); err != nil {
		return err
	}
	ck.st.Checkpoint = name
	return ck.record(name)
}

// pruneJoint removes joint checkpoints other than the current and the last healthy one.
func pruneJoint(ck *checkpoint) {
	old, _ := filepath.Glob(ck.path("joint-*.ckpt"))
	for _, f := range old {
		if b := filepath.Base(f); b != ck.st.Checkpoint && b != ck.st.Healthy {
			ck.drop(b)
		}
	}
}

// monitorWarmup is the number of joint iterations before the collapse monitor acts.
const monitorWarmup = 10

// run trains the joint phase to its end, or until the context is cancelled or
// Config.StopAfterJoint steps are done (ErrStopped).
func (p *jointRun) run() error {
	cfg, st := p.s.cfg, p.st
	start := time.Now()
	base := st.Seconds[PhaseJoint]
	var bar *progress.Bar
	if p.s.out != nil && st.JointIter < cfg.Joint.Iters {
		bar = progress.New(p.s.out, "joint", cfg.Joint.Iters).Every(2 * time.Second).From(st.JointIter)
	}
	doneHere := 0
	for st.JointIter < cfg.Joint.Iters {
		if err := p.s.ctx.Err(); err != nil {
			return err
		}
		if cfg.StopAfterJoint > 0 && doneHere == cfg.StopAfterJoint {
			return ErrStopped
		}
		it := st.JointIter
		lambda, alpha := lambdaAt(cfg, st, it), alphaAt(cfg, st, it)
		met, err := p.j.Step(p.chunk(it), lambda, alpha)
		if err != nil {
			return fmt.Errorf("pipeline: joint iteration %d: %w", it+1, err)
		}
		if h := p.s.hooks; h != nil && h.afterJointStep != nil {
			if err := h.afterJointStep(p.j, it+1, &met); err != nil {
				return err
			}
		}
		st.JointIter++
		doneHere++
		rec := Record{Step: it + 1, Phase: PhaseJoint, Rec: met.Rec, Commit: met.Commit, NLLPerStep: met.NLLPerStep,
			Div: met.Div, Lambda: lambda, Perplexity: met.Perplexity, Seconds: base + time.Since(start).Seconds()}
		reason, err := p.watch(met, &rec)
		if err != nil {
			return err
		}
		st.History = append(st.History, rec)
		bar.Update(st.JointIter, "rec %.4f nll/T %.3f div %.3f λ %.2f ppl %.2f", met.Rec, met.NLLPerStep, met.Div, lambda, met.Perplexity)
		if reason != "" {
			ev, err := p.intervene(reason)
			if err != nil {
				return err
			}
			if p.s.out != nil {
				fmt.Fprintf(p.s.out, "\n%s\n", ev)
			}
			continue
		}
		if st.JointIter%cfg.Joint.CheckpointEvery == 0 || st.JointIter == cfg.Joint.Iters {
			stop, err := p.commitAt(met.Perplexity, base, start)
			if err != nil {
				return err
			}
			if stop {
				break
			}
		}
	}
	if bar != nil {
		msg := ""
		if st.StoppedAt > 0 {
			msg = fmt.Sprintf("tokens settled: stopped at %d of at most %d", st.StoppedAt, cfg.Joint.Iters)
		}
		bar.Done("%s", msg)
	}
	if cfg.Joint.Iters == 0 {
		st.Phase = PhaseFinal
		return p.ck.commit()
	}
	return nil
}

// watch records what the step with metrics met did to the guard's state and returns
// why the run must roll back ("" if it need not): a collapse the monitor saw, or
// three steps in a row that were not applied (guarded in the graph: no variable
// changed). Its events go to rec.
func (p *jointRun) watch(met StepMetrics, rec *Record) (string, error) {
	st := p.st
	if !met.Applied {
		st.Skipped++
		st.SkipRun++
		rec.Event = fmt.Sprintf("non-finite step not applied (loss %g)", met.Loss)
		if st.SkipRun >= 3 {
			return fmt.Sprintf("%d non-finite steps in a row", st.SkipRun), nil
		}
		return "", nil
	}
	st.SkipRun = 0
	ev, collapsed, err := p.monitor(met.Perplexity)
	if err != nil {
		return "", err
	}
	rec.Event = ev
	if collapsed {
		return fmt.Sprintf("collapse (smoothed perplexity %.2f < %.2f)", st.Smoothed, collapseLevel(p.s.cfg, st, 1)), nil
	}
	return "", nil
}

// commitAt is the checkpoint after a joint step whose batch perplexity was ppl (the
// phase's seconds run from start, base before it): the label-free stop's check, the phase's end
// if it is the last step or the stop says so, the joint model saved, the healthy mark
// moved, the state committed and the checkpoints no longer needed removed. It returns
// whether the phase stops here.
func (p *jointRun) commitAt(ppl, base float64, start time.Time) (bool, error) {
	cfg, st := p.s.cfg, p.st
	stop := false
	if cfg.Joint.StopChurn > 0 {
		var err error
		if stop, err = p.stopCheck(&st.History[len(st.History)-1]); err != nil {
			return false, err
		}
	}
	st.Seconds[PhaseJoint] = base + time.Since(start).Seconds()
	if st.JointIter == cfg.Joint.Iters || stop {
		if err := p.finish(); err != nil {
			return false, err
		}
	}
	if err := saveJoint(p.ck, p.j); err != nil {
		return false, err
	}
	// Healthy: no skipped step since the last commit, and both the smoothed
	// perplexity and this iteration's (the smoothed one lags a sudden collapse).
	if lvl := collapseLevel(cfg, st, 2); st.Skipped == st.SkippedAtCommit && st.Smoothed >= lvl && ppl >= lvl {
		st.Healthy, st.HealthyIter, st.HealthySmoothed = st.Checkpoint, st.JointIter, st.Smoothed
	}
	st.SkippedAtCommit = st.Skipped
	if err := p.ck.commit(); err != nil {
		return false, err
	}
	pruneJoint(p.ck)
	return stop, nil
}

// chunk draws the minibatch of joint iteration it (a function of the seed and it only,
// so a resumed run sees the same chunks).
func (p *jointRun) chunk(it int) Chunk {
	cfg, d := p.s.cfg, p.s.d
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc4a1_0000+uint64(it)))
	B, T := cfg.Joint.Batch, cfg.Joint.ChunkLen
	L := min(T, cfg.Data.Steps)
	px := d.side * d.side
	ch := Chunk{B: B, T: T, Images: make([]float32, B*T*px), Actions: make([]int32, B*(T-1)), Mask: make([]float32, B*T)}
	for b := range B {
		e := rng.IntN(len(d.episodes))
		s := rng.IntN(cfg.Data.Steps - L + 1)
		ep := d.episodes[e]
		d.train.Floats(d.frames[e][s:s+L], ch.Images[b*T*px:(b*T+L)*px])
		for t := range L {
			ch.Mask[b*T+t] = 1
			if t < L-1 {
				ch.Actions[b*(T-1)+t] = int32(ep.Actions[s+t])
			}
		}
	}
	dataset.Jitter(rand.New(rand.NewPCG(cfg.Seed, 0x717e_0000+uint64(it))), ch.Images, d.side, cfg.Joint.Jitter)
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

// lambdaAt is λ_t = λ·min(1, t/T_anneal) (Sec. 3.6) times st's throttle factor.
func lambdaAt(cfg Config, st *runState, it int) float64 {
	anneal := math.Max(1, cfg.Joint.AnnealFrac*float64(cfg.Joint.Iters))
	return cfg.Joint.Lambda * math.Min(1, float64(it+1)/anneal) * st.LambdaScale
}

// alphaAt is α_div at joint iteration it: AlphaDiv, or with AlphaDivEnd > 0 linear from
// AlphaDiv at the middle of the phase to AlphaDivEnd at its last iteration.
// After an intervention both are multiplied by st's α_div scale (an α_div of 0, the
// ablation, becomes 0.1 × the scale).
func alphaAt(cfg Config, st *runState, it int) float64 {
	scale, _ := st.scales()
	a := cfg.Joint.AlphaDiv
	if cfg.Joint.AlphaDivEnd > 0 && cfg.Joint.Iters >= 2 {
		start, length := st.anneal(cfg)
		if it >= start {
			f := min(1, float64(it-start)/float64(max(1, length-1)))
			a = cfg.Joint.AlphaDiv + f*(cfg.Joint.AlphaDivEnd-cfg.Joint.AlphaDiv)
		}
	}
	if scale != 1 && a == 0 {
		a = 0.1
	}
	return a * scale
}

// ProbeFrames is the number of training frames the label-free stop re-encodes at
// every checkpoint (Config.Joint.StopChurn).
const ProbeFrames = 2048

// churn re-encodes the probe frames (a fixed sample of the training frames) and returns
// the share whose token changed since the previous checkpoint: NaN at the first.
func (p *jointRun) churn() (float64, error) {
	d := p.s.d
	n := min(ProbeFrames, len(d.allFrames))
	idx := make([]int, n)
	for i, f := range rand.New(rand.NewPCG(p.s.cfg.Seed, 0x9b0b_e000)).Perm(len(d.allFrames))[:n] {
		idx[i] = d.allFrames[f]
	}
	tokens, _, err := p.j.VQ.Encode(d.train.Floats(idx, nil))
	if err != nil {
		return 0, fmt.Errorf("pipeline: probe tokens: %w", err)
	}
	prev := p.st.ProbeTokens
	p.st.ProbeTokens = tokens
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

// stopCheck measures the churn at a checkpoint (Config.Joint.StopChurn), records it, starts
// the α_div anneal or ends the phase; it returns whether the phase ends here.
func (p *jointRun) stopCheck(rec *Record) (bool, error) {
	cfg, st := p.s.cfg, p.st
	ch, err := p.churn()
	if err != nil {
		return false, err
	}
	if math.IsNaN(ch) {
		return false, nil
	}
	rec.Churn = &ch
	settled := ch <= cfg.Joint.StopChurn
	rampEnd := int(math.Ceil(cfg.Joint.AnnealFrac * float64(cfg.Joint.Iters)))
	start, length := st.anneal(cfg)
	switch {
	case st.AnnealStart == 0 && settled && st.JointIter >= rampEnd && st.JointIter < start:
		st.AnnealStart = st.JointIter
		rec.Event = strings.TrimPrefix(rec.Event+fmt.Sprintf("; tokens settled (churn %.4f ≤ %g): α_div anneal starts", ch, cfg.Joint.StopChurn), "; ")
	case st.JointIter >= start+length && settled:
		st.StoppedAt = st.JointIter
		rec.Event = strings.TrimPrefix(rec.Event+fmt.Sprintf("; tokens settled after the anneal (churn %.4f ≤ %g): joint phase ends", ch, cfg.Joint.StopChurn), "; ")
		return true, nil
	}
	return false, nil
}

// monitor tracks the smoothed codebook perplexity (Sec. 3.6 anti-collapse): it keeps a
// snapshot of the perception at the best smoothed value, and when the smoothed value
// falls below CollapseFrac of the best it restores the perception only — the encoder,
// decoder, codebook and their Adam state — keeping (π, Θ) and their Adam state (the
// reference restored the HMM too and so discarded the joint phase's HMM progress), and
// multiplies λ by ThrottleFactor. It returns a description of what it did, if anything.
func (p *jointRun) monitor(ppl float64) (event string, collapsed bool, err error) {
	cfg, st := p.s.cfg, p.st
	if st.JointIter == 1 || st.Smoothed == 0 {
		st.Smoothed = ppl
	} else {
		st.Smoothed = 0.9*st.Smoothed + 0.1*ppl
	}
	collapsed = cfg.Joint.CollapseLevel > 0 && st.JointIter >= monitorWarmup && st.Smoothed < collapseLevel(cfg, st, 1)
	if cfg.Joint.CollapseFrac == 0 || st.JointIter < monitorWarmup {
		return "", collapsed, nil
	}
	if st.Smoothed > st.BestPPL {
		st.BestPPL, st.BestIter = st.Smoothed, st.JointIter
		snap, err := snapshot(p.j.VQ.Store(), "/"+vqvae.ScopeName+"/")
		if err != nil {
			return "", false, err
		}
		st.Best = snap
		return "", collapsed, nil
	}
	if st.Smoothed < cfg.Joint.CollapseFrac*st.BestPPL && st.Best != nil {
		if err := restoreSnapshot(p.j.VQ.Store(), st.Best); err != nil {
			return "", false, err
		}
		st.LambdaScale *= cfg.Joint.ThrottleFactor
		st.Rollbacks++
		ev := fmt.Sprintf("collapse: smoothed perplexity %.3f < %.2f × best %.3f (iteration %d): perception restored, HMM kept, λ scale %.3g",
			st.Smoothed, cfg.Joint.CollapseFrac, st.BestPPL, st.BestIter, st.LambdaScale)
		st.Smoothed = st.BestPPL
		return ev, false, nil
	}
	return "", collapsed, nil
}

// collapseLevel is 1 + m·CollapseLevel·(P₀ − 1): the collapse threshold (m = 1) and the
// level a checkpoint must keep to count as healthy (m = 2). With CollapseLevel 0 every
// checkpoint without a skipped step is healthy.
func collapseLevel(cfg Config, st *runState, m float64) float64 {
	p0 := st.WarmPPL
	if p0 == 0 {
		p0 = 1
		for _, p := range st.Share {
			p0 *= math.Pow(p, -p)
		}
	}
	return 1 + m*cfg.Joint.CollapseLevel*(p0-1)
}

// intervene is the anti-collapse response (Config.Joint.CollapseLevel): it restores the last
// healthy checkpoint (VQ-VAE, codebook, HMM and both Adam states), doubles α_div, halves
// the VQ-VAE learning rate, re-seeds the codes unused on a sample of training frames,
// drops the abandoned iterations from the history (the event goes to the last one kept)
// and commits the new branch. More than Config.Joint.MaxInterventions is an error.
func (p *jointRun) intervene(reason string) (string, error) {
	cfg, st, d := p.s.cfg, p.st, p.s.d
	if len(st.Interventions) >= cfg.Joint.MaxInterventions {
		return "", fmt.Errorf("pipeline: joint iteration %d: %s after %d intervention(s) (max_interventions %d); the run directory keeps the checkpoint of iteration %d",
			st.JointIter, reason, len(st.Interventions), cfg.Joint.MaxInterventions, st.HealthyIter)
	}
	alpha, lr := st.scales()
	iv := Intervention{Iter: st.JointIter, Reason: reason, RolledBackTo: st.HealthyIter, AlphaScale: 2 * alpha, LRScale: lr / 2}
	st.AlphaScale, st.LRScale = iv.AlphaScale, iv.LRScale
	if err := p.open(st.Healthy); err != nil {
		return "", fmt.Errorf("pipeline: rollback: %w", err)
	}
	if !cfg.Joint.FreezeVQVAE {
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x4e71_0000+uint64(len(st.Interventions))))
		n := min(len(d.allFrames), 4096)
		idx := make([]int, n)
		for i, f := range rng.Perm(len(d.allFrames))[:n] {
			idx[i] = d.allFrames[f]
		}
		var err error
		if iv.Revived, err = p.j.VQ.ReviveCodes(d.train.Floats(idx, nil), 0.1, rng); err != nil {
			return "", fmt.Errorf("pipeline: rollback: %w", err)
		}
	}
	st.Interventions = append(st.Interventions, iv)
	st.JointIter, st.Smoothed, st.SkipRun = st.HealthyIter, st.HealthySmoothed, 0
	st.ProbeTokens = nil // the churn restarts from the restored checkpoint
	if st.AnnealStart > st.HealthyIter {
		st.AnnealStart = 0
	}
	ev := "intervention: " + iv.String()
	st.History = dropAbandoned(st.History, st.HealthyIter, ev)
	if err := saveJoint(p.ck, p.j); err != nil {
		return "", err
	}
	st.Healthy = st.Checkpoint
	st.SkippedAtCommit = st.Skipped
	if err := p.ck.commit(); err != nil {
		return "", err
	}
	pruneJoint(p.ck)
	return ev, nil
}

// dropAbandoned drops from h (in place) the joint rows after iteration kept, and adds
// ev to the event of the last joint row kept (of the last row, if none is).
func dropAbandoned(h []Record, kept int, ev string) []Record {
	out := h[:0]
	last := -1
	for _, rec := range h {
		if rec.Phase == PhaseJoint && rec.Step > kept {
			continue
		}
		if rec.Phase == PhaseJoint {
			last = len(out)
		}
		out = append(out, rec)
	}
	if last < 0 { // rolled back to the start of the phase: the event goes to the warm-up's last record
		last = len(out) - 1
	}
	if last >= 0 {
		out[last].Event = strings.TrimPrefix(out[last].Event+"; "+ev, "; ")
	}
	return out
}

// finish ends phase 2: the perception of the best snapshot replaces a collapsed
// final one (the HMM is kept).
func (p *jointRun) finish() error {
	cfg, st := p.s.cfg, p.st
	if cfg.Joint.CollapseFrac > 0 && st.Best != nil && st.Smoothed < cfg.Joint.CollapseFrac*st.BestPPL {
		if err := restoreSnapshot(p.j.VQ.Store(), st.Best); err != nil {
			return err
		}
		st.Rollbacks++
	}
	st.Phase = PhaseFinal
	return nil
}
