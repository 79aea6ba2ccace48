package pipeline

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// forgeState rewrites dir's state with change applied and a valid checksum.
func forgeState(t *testing.T, dir string, change func(*runState)) {
	t.Helper()
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	change(st)
	if err := writeState(dir, st); err != nil {
		t.Fatal(err)
	}
}

// TestRunDirectoryCannotLie damages, edits and swaps each file of a finished and of an
// interrupted run directory: every case ends in an error naming the problem (never the
// old report, a hybrid run or a panic), and the untouched directories still load.
func TestRunDirectoryCannotLie(t *testing.T) {
	cfg := tinyConfig(t)
	finished := t.TempDir()
	if _, err := Run(context.Background(), finished, cfg, nil); err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.Seed = 2
	other := t.TempDir()
	if _, err := Run(context.Background(), other, cfg2, nil); err != nil {
		t.Fatal(err)
	}
	stopped := cfg
	stopped.StopAfterJoint = 12
	partial := t.TempDir()
	if _, err := Run(context.Background(), partial, stopped, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	stPartial, err := readState(partial)
	if err != nil {
		t.Fatal(err)
	}
	stOther, err := readState(other)
	if err != nil {
		t.Fatal(err)
	}
	corridors, err := DefaultConfig("corridors")
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, path string, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name    string
		src     string
		damage  func(t *testing.T, dir string)
		cfg     Config
		wantErr string
	}{
		{"finished: chmm.model deleted", finished, func(t *testing.T, d string) { os.Remove(filepath.Join(d, CHMMFile)) }, cfg, CHMMFile},
		{"finished: vqvae.ckpt truncated", finished, func(t *testing.T, d string) {
			p := filepath.Join(d, VQVAEFile)
			b := read(t, p)
			write(t, p, b[:len(b)/2])
		}, cfg, VQVAEFile},
		{"finished: chmm.model from another seed's run", finished, func(t *testing.T, d string) {
			write(t, filepath.Join(d, CHMMFile), read(t, filepath.Join(other, CHMMFile)))
		}, cfg, "copied from another run"},
		{"finished: report.json edited", finished, func(t *testing.T, d string) {
			p := filepath.Join(d, ReportFile)
			write(t, p, append(read(t, p), ' '))
		}, cfg, ReportFile},
		{"finished: config.json removed, other env asked", finished, func(t *testing.T, d string) { os.Remove(filepath.Join(d, ConfigFile)) }, corridors, "no config.json"},
		{"finished: config.json edited (joint.iters) and asked for", finished, func(t *testing.T, d string) {
			p := filepath.Join(d, ConfigFile)
			write(t, p, []byte(strings.Replace(string(read(t, p)), `"iters": 16,`, `"iters": 20,`, 1)))
		}, func() Config { c := cfg; c.Joint.Iters = 20; return c }(), "not the configuration this run was trained with"},
		{"finished: config.json from the seed-2 run", finished, func(t *testing.T, d string) {
			write(t, filepath.Join(d, ConfigFile), read(t, filepath.Join(other, ConfigFile)))
		}, cfg2, "not the configuration"},
		{"state.gob: one byte flipped", finished, func(t *testing.T, d string) {
			p := filepath.Join(d, StateFile)
			b := read(t, p)
			b[len(b)-5] ^= 0x40
			write(t, p, b)
		}, cfg, "checksum"},
		{"state.gob: unknown phase", finished, func(t *testing.T, d string) { forgeState(t, d, func(s *runState) { s.Phase = "bogus" }) }, cfg, `unknown phase "bogus"`},
		{"state.gob: checkpoint outside the directory", partial, func(t *testing.T, d string) {
			forgeState(t, d, func(s *runState) { s.Checkpoint = "../../../x" })
		}, cfg, "not inside the run directory"},
		{"state.gob: gradient finalisation checkpoint past its last step", finished, func(t *testing.T, d string) {
			forgeState(t, d, func(s *runState) {
				s.FinalGrad = &finalGradState{Done: gradChecked + 1, Model: "final-grad-00-2.model"}
			})
		}, cfg, "not one a run writes"},
		{"state.gob: joint iteration hand-set", partial, func(t *testing.T, d string) { forgeState(t, d, func(s *runState) { s.JointIter = 3 }) }, cfg, "names checkpoint"},
		{"state.gob: joint iteration beyond joint_iters", partial, func(t *testing.T, d string) { forgeState(t, d, func(s *runState) { s.JointIter = 99 }) }, cfg, "joint iteration 99 of 16"},
		{"interrupted: config.json removed, other env asked", partial, func(t *testing.T, d string) { os.Remove(filepath.Join(d, ConfigFile)) }, corridors, "no config.json"},
		{"interrupted: config.json removed, fewer joint iterations asked", partial, func(t *testing.T, d string) { os.Remove(filepath.Join(d, ConfigFile)) },
			func() Config { c := cfg; c.Joint.Iters = 5; return c }(), "no config.json"},
		{"interrupted: checkpoint from the seed-2 run", partial, func(t *testing.T, d string) {
			write(t, filepath.Join(d, stPartial.Checkpoint), read(t, filepath.Join(other, stOther.Checkpoint)))
		}, cfg, "copied from another run"},
		{"interrupted: warm-up checkpoint deleted", partial, func(t *testing.T, d string) {
			forgeState(t, d, func(s *runState) { s.Phase = PhaseWarmup })
			os.Remove(filepath.Join(d, stPartial.Warmup))
		}, cfg, stPartial.Warmup},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := copyDir(t, c.src)
			c.damage(t, d)
			rep, err := Run(context.Background(), d, c.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Run: report %v, error %v; want an error containing %q", rep != nil, err, c.wantErr)
			}
			if c.src == finished {
				if _, err := LoadRun(d); err == nil {
					t.Errorf("LoadRun accepted the damaged directory")
				}
			}
		})
	}
	// Undamaged copies load and resume; a stale temporary file (of a writer that
	// ended) is removed.
	d := copyDir(t, partial)
	stale := filepath.Join(d, fmt.Sprintf(".state.gob.gradcscg-tmp-%d-123", deadPid(t)))
	write(t, stale, []byte("half"))
	if _, err := Run(context.Background(), d, cfg, nil); err != nil {
		t.Fatalf("resuming an undamaged copy: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file left: %v", err)
	}
	if _, err := LoadRun(copyDir(t, finished)); err != nil {
		t.Errorf("LoadRun of an undamaged copy: %v", err)
	}
}

// TestRunDirectoryLock: a second process (here a second lock) on a run directory gets
// an error naming the holder, and the lock is free again once released.
func TestRunDirectoryLock(t *testing.T) {
	cfg := tinyConfig(t)
	d := t.TempDir()
	unlock, err := lockDir(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), d, cfg, nil); err == nil || !strings.Contains(err.Error(), "in use by process") {
		t.Fatalf("Run on a locked directory: %v", err)
	}
	if _, err := Reevaluate(d); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Reevaluate on a locked directory: %v", err)
	}
	unlock()
	again, err := lockDir(d)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}

// TestRunConfigRoundTrip: a run whose settings include zero values that older versions
// left out of config.json (jitter 0, no pruning) resumes and loads with those values,
// not with today's defaults.
func TestRunConfigRoundTrip(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Joint.Jitter, cfg.Final.Prune, cfg.Joint.AlphaDivEnd = 0, 0, 0
	d := t.TempDir()
	stop := cfg
	stop.StopAfterJoint = 4
	if _, err := Run(context.Background(), d, stop, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	if _, err := Run(context.Background(), d, cfg, nil); err != nil {
		t.Fatalf("resume: %v", err)
	}
	res, err := LoadRun(d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Config != cfg {
		t.Errorf("loaded config differs: %v", diffFields(res.Config, cfg))
	}
	// A version-1 file without the omitted fields reads them as what they meant then
	// (zero; final_tol 1e-5), not as today's defaults.
	p := filepath.Join(d, ConfigFile)
	flat := v1Flat(cfg)
	delete(flat, "jitter")
	delete(flat, "final_prune")
	delete(flat, "final_tol")
	raw, _ := json.MarshalIndent(flat, "", "  ")
	kept := strings.Split(string(raw), "\n")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := readRunConfig(p); err != nil || c.Joint.Jitter != 0 || c.Final.Prune != 0 || c.Final.Tol != 1e-5 {
		t.Errorf("legacy config: jitter %d, final_prune %g, final_tol %g, err %v; want 0, 0, 1e-5", c.Joint.Jitter, c.Final.Prune, c.Final.Tol, err)
	}
	// A field that every version wrote is required.
	if err := os.WriteFile(p, []byte(strings.Replace(strings.Join(kept, "\n"), `"seed"`, `"seed_x"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRunConfig(p); err == nil || !strings.Contains(err.Error(), "seed") {
		t.Errorf("config without seed: %v", err)
	}
}

// TestLegacyRunDirectory: a directory whose state predates checksums and digests (a
// bare gob, no identity) still loads, resumes, and is checked from its next commit on.
func TestLegacyRunDirectory(t *testing.T) {
	cfg := tinyConfig(t)
	stop := cfg
	stop.StopAfterJoint = 12
	d := t.TempDir()
	if _, err := Run(context.Background(), d, stop, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	st, err := readState(d)
	if err != nil {
		t.Fatal(err)
	}
	st.Identity, st.Files = "", nil
	os.Rename(filepath.Join(d, st.Warmup), filepath.Join(d, WarmupFile))
	st.Warmup = ""
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, StateFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), d, cfg, nil); err != nil {
		t.Fatalf("resuming a legacy directory: %v", err)
	}
	st, err = readState(d)
	if err != nil {
		t.Fatal(err)
	}
	if st.legacy() || st.Files[CHMMFile] == "" || st.Files[ReportFile] == "" {
		t.Errorf("not upgraded: identity %q, files %v", st.Identity, st.Files)
	}
	if _, err := LoadRun(d); err != nil {
		t.Fatal(err)
	}
}

// TestKilledRunResumesIdentically kills (SIGKILL) a run in a child process at several
// moments — in the warm-up, the joint phase and the finalisation, inside file writes or
// not — resumes it each time, and compares the final model files byte for byte with an
// uninterrupted run's.
func TestKilledRunResumesIdentically(t *testing.T) {
	if dir := os.Getenv("GRADCSCG_KILL_CHILD_DIR"); dir != "" {
		_, err := Run(context.Background(), dir, tinyConfig(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if testing.Short() {
		t.Skip("short")
	}
	cfg := tinyConfig(t)
	straight := t.TempDir()
	start := time.Now()
	if _, err := Run(context.Background(), straight, cfg, nil); err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	killed := t.TempDir()
	kills := 0
	// Each child resumes where the last was killed and gets a growing share of an
	// uninterrupted run's time (start-up included), so the kills walk through the phases.
	for i := range 16 {
		frac := 0.2 + 0.05*float64(i)
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledRunResumesIdentically$")
		cmd.Env = append(os.Environ(), "GRADCSCG_KILL_CHILD_DIR="+killed)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-time.After(time.Duration(frac * float64(full))):
			_ = cmd.Process.Kill()
			<-done
			kills++
		case err := <-done:
			if err != nil {
				t.Fatalf("child: %v", err)
			}
		}
	}
	t.Logf("%d kills (uninterrupted run %v)", kills, full.Round(time.Millisecond))
	if _, err := Run(context.Background(), killed, cfg, nil); err != nil {
		t.Fatalf("resume after kills: %v", err)
	}
	sameVQVAE(t, filepath.Join(straight, VQVAEFile), filepath.Join(killed, VQVAEFile))
	for _, name := range []string{CHMMFile, HistoryFile} {
		a, err := os.ReadFile(filepath.Join(straight, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(killed, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == HistoryFile { // seconds differ; the losses must not
			a, b = dropSeconds(a), dropSeconds(b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs after %d kills", name, kills)
		}
	}
}

// dropSeconds removes the "seconds" fields of a history file.
func dropSeconds(b []byte) []byte {
	return regexp.MustCompile(`"seconds":[^,}]*,?`).ReplaceAll(b, nil)
}

// sameVQVAE asserts that two VQ-VAE checkpoints hold the same variables byte for byte,
// except the third word of the graph RNG state: GoMLX rewrites that word (0x101010101
// from SetRNGStateFromSeed, 0 after a step on a reloaded store) but the generator does
// not read it — the first two words, the stream, must match.
func sameVQVAE(t *testing.T, a, b string) {
	t.Helper()
	be, _, err := hmmgraph.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	ma, err := vqvae.Load(be, a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := vqvae.Load(be, b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ma.History(), mb.History()) || ma.Steps() != mb.Steps() {
		t.Errorf("VQ-VAE histories differ")
	}
	n := 0
	for va := range ma.Store().IterVariables() {
		n++
		vb := mb.Store().GetVariable(va.Path())
		if vb == nil {
			t.Errorf("variable %s missing after the kills", va.Path())
			continue
		}
		var xa, xb []byte
		_ = va.MustValue().ConstBytes(func(d []byte) { xa = slices.Clone(d) })
		_ = vb.MustValue().ConstBytes(func(d []byte) { xb = slices.Clone(d) })
		if strings.HasSuffix(va.Path(), "rngState") && len(xa) == 24 && len(xb) == 24 {
			xa, xb = xa[:16], xb[:16]
		}
		if !bytes.Equal(xa, xb) {
			t.Errorf("VQ-VAE variable %s differs after the kills", va.Path())
		}
	}
	if n == 0 {
		t.Error("no variables compared")
	}
}

// TestLegacyStateExtra: a state written before runState.Made kept its measurements in
// Extra; decoding moves them into Made, and the report reads them there.
func TestLegacyStateExtra(t *testing.T) {
	old := &runState{Phase: PhaseEval, Seconds: map[string]float64{}, Codes: []int{0, 2}, Clones: []int{3, 3}, Rollbacks: 1,
		Extra: map[string]float64{"active_codes_warmup": 2, "final_num_states": 4, "final_pruned_states": 2,
			"finalise_iterations": 50, "finalise_split_rounds": 1, "retrain_iterations": 20, "retrain_split_rounds": 0,
			"train_h_token_given_place_warmup": 0.9, "train_h_class_given_token_joint": 0.1}}
	raw, err := encodeState(old)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeState(raw, "state.gob")
	if err != nil {
		t.Fatal(err)
	}
	if st.Extra != nil {
		t.Errorf("Extra left: %v", st.Extra)
	}
	want := evaluate.Training{Pruned: 2,
		Runs:  []evaluate.TrainerRun{{Name: "finalise", Iterations: 50, SplitRounds: 1}, {Name: "retrain", Iterations: 20}},
		Joint: &evaluate.Joint{ActiveCodesWarmup: 2, Warmup: evaluate.TokenEntropies{HTokenGivenPlace: 0.9}, End: evaluate.TokenEntropies{HClassGivenToken: 0.1}}}
	if !reflect.DeepEqual(st.Made, want) {
		t.Errorf("made\n%+v\nwant\n%+v", st.Made, want)
	}
	cfg := Config{Data: DataConfig{Episodes: 4, Steps: 100}, Joint: JointConfig{Iters: 30, GradFrames: 0}, VQVAE: vqvae.Config{Arch: vqvae.ArchMLP}}
	tr := st.training(cfg, chmm.New([]int{2, 2}, 4, rand.New(rand.NewPCG(1, 1))))
	j := tr.Joint
	if tr.Episodes != 4 || tr.Steps != 100 || !slices.Equal(tr.Clones, []int{2, 2}) || j.Arch != "mlp" || j.Iters != 30 ||
		!slices.Equal(j.CodesKept, []int{0, 2}) || !slices.Equal(j.Clones, []int{3, 3}) || j.Rollbacks != 1 || j.ActiveCodesWarmup != 2 ||
		j.Guard == nil || len(j.Guard.Interventions) != 0 {
		t.Errorf("report's training %+v, joint %+v", tr, j)
	}
	if st.Made.Joint.Arch != "" {
		t.Error("training() changed the state's record")
	}
}
