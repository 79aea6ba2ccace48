package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

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
