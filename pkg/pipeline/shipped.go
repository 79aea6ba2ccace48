package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/hmmgraph"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// A shipped run is a finished run's final artefacts in a folder of their own, small
// enough to commit (Export), loaded read-only as the finished run (LoadShipped):
//
//	config.json    the run's Config (the run directory's file)
//	report.json    the evaluate.Report (the run directory's file)
//	history.jsonl  the loss history, as the run directory's (non-finite values as -1)
//	chmm.model     the final cloned HMM (the run directory's file)
//	vqvae.weights  the final VQ-VAE without optimizer state (vqvae.Model.SaveWeights)
//	manifest.json  the Manifest: the format, the kept codes and the SHA-256 of every
//	               other file
//
// The checkpoints, state.gob and the lock are not shipped. A folder with a file the
// manifest does not list, without one it lists, or with one whose digest differs is
// refused.

// Files of a shipped run beside ConfigFile, ReportFile, HistoryFile and CHMMFile.
const (
	ManifestFile = "manifest.json" // the Manifest
	WeightsFile  = "vqvae.weights" // the final VQ-VAE for inference (vqvae.Model.SaveWeights)
)

// ShippedFormat is the Manifest.Format this version writes and reads.
const ShippedFormat = "gradcscg shipped run 1"

// shippedFiles are the files of a shipped run besides the manifest, in the order
// Export writes them.
var shippedFiles = []string{ConfigFile, ReportFile, HistoryFile, CHMMFile, WeightsFile}

// Manifest is a shipped run's manifest.json.
type Manifest struct {
	Format string            `json:"format"` // ShippedFormat
	Codes  []int             `json:"codes"`  // Result.Codes: token i is code Codes[i] of the warm-up codebook
	Files  map[string]string `json:"files"`  // file name → hex SHA-256, for every file but the manifest
}

// Export writes the final artefacts of the finished run in runDir to the folder out
// (created, or replaced when it holds a shipped run; any other existing folder is
// refused) and returns its manifest. runDir is checked as LoadRun checks it. The
// folder is assembled beside out and renamed into place, so out is never
// half-written. Exporting the same run again writes the same bytes.
func Export(runDir, out string) (*Manifest, error) {
	res, err := LoadRun(runDir)
	if err != nil {
		return nil, err
	}
	if err := replaceable(out); err != nil {
		return nil, err
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	defer os.RemoveAll(tmp) // after the rename, an empty leftover or nothing
	m, err := writeShipped(runDir, tmp, res)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	old := ""
	if _, err := os.Stat(out); err == nil {
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		if old != "" {
			_ = os.Rename(old, out)
		}
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return m, nil
}

// replaceable checks that out does not exist, is an empty directory or holds a
// shipped run (a manifest.json), so that Export does not replace anything else.
func replaceable(out string) error {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if _, err := os.Stat(filepath.Join(out, ManifestFile)); err != nil {
		return fmt.Errorf("pipeline: %s exists and is not a shipped run (no %s): export into a new folder", out, ManifestFile)
	}
	return nil
}

// writeShipped writes res's shipped files and manifest into dir, copying config.json,
// report.json and chmm.model from runDir (which LoadRun checked).
func writeShipped(runDir, dir string, res *Result) (*Manifest, error) {
	m := &Manifest{Format: ShippedFormat, Codes: slices.Clone(res.Codes), Files: map[string]string{}}
	for _, name := range shippedFiles {
		path := filepath.Join(dir, name)
		var err error
		switch name {
		case WeightsFile:
			err = res.VQVAE.SaveWeights(path)
		case HistoryFile:
			var h []byte
			if h, err = encodeHistory(res.History); err == nil {
				err = writeAtomic(path, h)
			}
		default:
			var raw []byte
			if raw, err = os.ReadFile(filepath.Join(runDir, name)); err == nil {
				err = writeAtomic(path, raw)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("pipeline: exporting %s: %w", name, err)
		}
		if m.Files[name], err = fileDigest(path); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("pipeline: manifest: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, ManifestFile), append(raw, '\n')); err != nil {
		return nil, err
	}
	return m, nil
}

// IsShipped reports whether dir holds a manifest.json (a shipped run, or one damaged).
func IsShipped(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil && fi.Mode().IsRegular()
}

// ShippedDiff checks the shipped run in dir (as LoadShipped does, without loading its
// models) and returns how its configuration differs from cfg (Config.StopAfterJoint
// aside): one entry per field, none when dir holds cfg's run.
func ShippedDiff(dir string, cfg Config) ([]string, error) {
	if _, err := checkShipped(dir); err != nil {
		return nil, err
	}
	shipped, err := readRunConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("pipeline: shipped run %s: %w", dir, err)
	}
	cfg.StopAfterJoint, shipped.StopAfterJoint = 0, 0
	cfg.Preset = shipped.Preset // a label, not the run's identity (as checkOrWriteConfig)
	if reflect.DeepEqual(shipped, cfg) {
		return nil, nil
	}
	return diffFields(shipped, cfg), nil
}

// LoadShipped loads the shipped run in dir (Export) as a finished run, read-only:
// every file is checked against its digest in the manifest first, and a folder that is
// not one Export wrote (another format, a file missing, added, edited or damaged,
// models that do not fit the configuration) is refused with a one-line error. The
// Result's History is read from history.jsonl.
func LoadShipped(dir string) (*Result, error) {
	m, err := checkShipped(dir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		return nil, fmt.Errorf("pipeline: shipped run %s: %s", dir, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	cfg, err := readRunConfig(path(ConfigFile))
	if err != nil {
		return fail(err)
	}
	backend, label, err := hmmgraph.NewBackend()
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Codes: m.Codes, Backend: label}
	if res.History, err = readHistory(path(HistoryFile)); err != nil {
		return fail(err)
	}
	if res.VQVAE, err = vqvae.Load(backend, path(WeightsFile)); err != nil {
		return fail(err)
	}
	if res.HMM, err = chmm.Load(path(CHMMFile)); err != nil {
		return fail(err)
	}
	if res.Report, err = evaluate.ReadJSON(path(ReportFile)); err != nil {
		return fail(err)
	}
	r := res.Report
	if r.Env != cfg.Env || r.Dataset != cfg.Dataset || r.Seed != cfg.Seed {
		return fail(fmt.Errorf("%s is of %s/%s seed %d, %s of %s/%s seed %d (files of different runs)",
			ReportFile, r.Env, r.Dataset, r.Seed, ConfigFile, cfg.Env, cfg.Dataset, cfg.Seed))
	}
	if res.HMM.K() != res.VQVAE.NumTokens() {
		return fail(fmt.Errorf("%s has %d tokens, %s gives %d (files of different runs)",
			CHMMFile, res.HMM.K(), WeightsFile, res.VQVAE.NumTokens()))
	}
	return res, nil
}

// checkShipped reads dir's manifest and checks that dir holds exactly the files it
// lists, each with its digest.
func checkShipped(dir string) (*Manifest, error) {
	fail := func(format string, args ...any) (*Manifest, error) {
		return nil, fmt.Errorf("pipeline: shipped run %s: %s", dir, fmt.Sprintf(format, args...))
	}
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return fail("%v", err)
	}
	m, err := parseManifest(raw)
	if err != nil {
		return fail("%v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fail("%v", err)
	}
	for _, e := range entries {
		if _, ok := m.Files[e.Name()]; !ok && e.Name() != ManifestFile {
			return fail("%s is not listed in %s (a foreign file: remove it, or export the run again)", e.Name(), ManifestFile)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		got, err := fileDigest(filepath.Join(dir, name))
		if err != nil {
			return fail("%v", err)
		}
		if got != m.Files[name] {
			return fail("%s does not match its SHA-256 in %s (damaged, edited or from another run): export the run again (gradcscg export)", name, ManifestFile)
		}
	}
	return m, nil
}

// parseManifest decodes a manifest.json (unknown fields refused) and checks its format
// and that it lists exactly the shipped files.
func parseManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %s", ManifestFile, strings.ReplaceAll(jsonErr(raw, err).Error(), "\n", " "))
	}
	if m.Format != ShippedFormat {
		return nil, fmt.Errorf("%s: format %q, want %q (not a shipped run of this version)", ManifestFile, m.Format, ShippedFormat)
	}
	listed := slices.Sorted(maps.Keys(m.Files))
	want := slices.Sorted(slices.Values(shippedFiles))
	if !slices.Equal(listed, want) {
		return nil, fmt.Errorf("%s lists %s, want %s", ManifestFile, strings.Join(listed, ", "), strings.Join(want, ", "))
	}
	return &m, nil
}

// readHistory reads a history file (one Record per line, unknown fields refused).
func readHistory(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseHistory(f, filepath.Base(path))
}

// parseHistory reads history lines from r (name names it in errors).
func parseHistory(r io.Reader, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var r Record
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", name, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return out, nil
}
