package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// evaluation is phase 4: the map scored on the held-out episode (Evaluate) with its
// label-free diagnosis, the report written and the run marked done. It scores fin,
// the finalisation's map, or the run's model files when fin is nil.
func evaluation(s *session, ck *checkpoint, fin *finalMap) (*evaluate.Report, error) {
	cfg, st := s.cfg, ck.st
	start := time.Now()
	if fin == nil {
		var err error
		if fin, err = loadFinalMap(s, ck); err != nil {
			return nil, err
		}
	}
	rep, err := Evaluate(fin.vq, fin.hmm, s.d.env, cfg)
	if err != nil {
		return nil, err
	}
	if rep.Diagnosis, err = diagnose(s.d, cfg, fin.vq, fin.hmm, &st.Made, s.out); err != nil {
		return nil, fmt.Errorf("pipeline: diagnosing the map: %w", err)
	}
	st.Seconds[PhaseEval] += time.Since(start).Seconds()
	rep.Trainer = "joint"
	rep.Seconds = map[string]float64{}
	total := 0.0
	for k, v := range st.Seconds {
		rep.Seconds[k] = v
		total += v
	}
	rep.Seconds["total"] = total
	rep.Backend = strings.Join(st.Backends, " then ")
	if len(st.PhaseBackends) > 0 {
		rep.PhaseBackends = map[string]string{}
		for p, b := range st.PhaseBackends {
			rep.PhaseBackends[p] = strings.Join(b, " then ")
		}
	}
	rep.HMMKernels = strings.Join(st.HMMKernels, " then ")
	rep.Training = st.training(cfg, fin.hmm)
	for _, ch := range cfg.WorldChoices() {
		rep.Chosen = append(rep.Chosen, ch.KV()+": "+ch.Why)
	}
	if m := st.Made; m.Fallback != "" {
		if c := m.Compared; c != nil && c.Kept == FinalGradient {
			rep.Chosen = append(rep.Chosen, fmt.Sprintf("final.trainer=%s: %s; EM's map read worse on a %d-step validation walk (%s against %s bits/step)",
				FinalGradient, m.Fallback, c.Steps, bitsText(c.EMBits), bitsText(c.GradientBits)))
		} else {
			rep.Chosen = append(rep.Chosen, "final.trainer="+FinalEM+": "+m.Fallback)
		}
	}
	if err := rep.WriteJSON(ck.path(ReportFile)); err != nil {
		return nil, err
	}
	if err := ck.record(ReportFile); err != nil {
		return nil, err
	}
	st.Phase = PhaseDone
	if err := ck.commit(); err != nil {
		return nil, err
	}
	return rep, nil
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
// change to the evaluation or to Config.Eval.Decode's default) and rewrites report.json,
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
	rep.Trainer, rep.Seconds, rep.Backend, rep.HMMKernels, rep.Training, rep.Chosen = old.Trainer, old.Seconds, old.Backend, old.HMMKernels, old.Training, old.Chosen
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if st.legacy() {
		if err := adoptLegacy(dir, st, res.Config); err != nil {
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
