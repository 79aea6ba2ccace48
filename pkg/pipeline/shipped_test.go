package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestExportLoadShipped exports a finished run, loads the shipped folder and compares
// it with the run directory (configuration, codes, report, map, history, and the
// evaluation of the shipped models again on the held-out episode), exports it again
// byte for byte, and refuses damaged, edited, foreign and incomplete folders with one
// line naming the file.
func TestExportLoadShipped(t *testing.T) {
	cfg := tinyConfig(t)
	run := t.TempDir()
	if _, err := Run(context.Background(), run, cfg, nil); err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.Seed = 2
	run2 := t.TempDir()
	if _, err := Run(context.Background(), run2, cfg2, nil); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	out, out2, other := filepath.Join(base, "a"), filepath.Join(base, "sub", "again"), filepath.Join(base, "other")
	m, err := Export(run, out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(run2, other); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{CHMMFile, ConfigFile, HistoryFile, ManifestFile, ReportFile, WeightsFile}; !slices.Equal(names, want) {
		t.Errorf("shipped files %v, want %v", names, want)
	}
	if leftovers, _ := os.ReadDir(base); len(leftovers) != 2 {
		t.Errorf("Export left %d entries beside the folders", len(leftovers)-2)
	}
	weights, _ := os.Stat(filepath.Join(out, WeightsFile))
	full, _ := os.Stat(filepath.Join(run, VQVAEFile))
	if weights == nil || full == nil || 2*weights.Size() > full.Size() {
		t.Errorf("vqvae.weights %v, vqvae.ckpt %v: want at most half", weights, full)
	}

	want, err := LoadRun(run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadShipped(out)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.Report.MarshalIndent()
	b, _ := got.Report.MarshalIndent()
	if !reflect.DeepEqual(got.Config, want.Config) || !slices.Equal(got.Codes, want.Codes) || !slices.Equal(m.Codes, want.Codes) ||
		!bytes.Equal(a, b) || !reflect.DeepEqual(got.HMM, want.HMM) || got.Backend == "" {
		t.Error("the shipped run differs from the run directory's (config, codes, report, map or backend)")
	}
	if len(got.History) != len(want.History) || len(got.History) == 0 {
		t.Fatalf("shipped history %d records, run %d", len(got.History), len(want.History))
	}
	for i := range want.History {
		if w := finiteRecord(want.History[i]); !reflect.DeepEqual(got.History[i], w) {
			t.Fatalf("history record %d: %+v, run %+v", i, got.History[i], w)
		}
	}
	env, err := cfg.Environment()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Evaluate(got.VQVAE, got.HMM, env, got.Config)
	if err != nil {
		t.Fatal(err)
	}
	if again.StatePlacePurity != want.Report.StatePlacePurity || again.ViterbiMap != want.Report.ViterbiMap ||
		again.Perplexity != want.Report.Perplexity {
		t.Errorf("the shipped models score purity %v, map %+v, perplexity %v; the run's report %v, %+v, %v",
			again.StatePlacePurity, again.ViterbiMap, again.Perplexity,
			want.Report.StatePlacePurity, want.Report.ViterbiMap, want.Report.Perplexity)
	}

	if _, err := Export(run, out2); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(run, out); err != nil { // replaces the shipped folder
		t.Fatal(err)
	}
	for _, name := range append(slices.Clone(shippedFiles), ManifestFile) {
		x, _ := os.ReadFile(filepath.Join(out, name))
		y, _ := os.ReadFile(filepath.Join(out2, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two exports of one run", name)
		}
	}

	if d, err := ShippedDiff(out, cfg); err != nil || d != nil {
		t.Errorf("ShippedDiff(own config) = %v, %v", d, err)
	}
	stop := cfg
	stop.StopAfterJoint = 3
	if d, err := ShippedDiff(out, stop); err != nil || d != nil {
		t.Errorf("ShippedDiff(own config, StopAfterJoint) = %v, %v", d, err)
	}
	if d, err := ShippedDiff(out, cfg2); err != nil || len(d) != 1 || !strings.HasPrefix(d[0], "seed:") {
		t.Errorf("ShippedDiff(seed 2) = %q, %v; want the seed", d, err)
	}

	copyShipped := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), "x")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range append(slices.Clone(shippedFiles), ManifestFile) {
			raw, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, name), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	flip := func(name string) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			p := filepath.Join(d, name)
			raw, _ := os.ReadFile(p)
			raw[len(raw)/2] ^= 1
			_ = os.WriteFile(p, raw, 0o644)
		}
	}
	// forge rewrites the manifest so that its digests match the folder again.
	forge := func(t *testing.T, d string, edit func(m *Manifest)) {
		raw, _ := os.ReadFile(filepath.Join(d, ManifestFile))
		var m Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		for name := range m.Files {
			m.Files[name], _ = fileDigest(filepath.Join(d, name))
		}
		if edit != nil {
			edit(&m)
		}
		raw, _ = json.Marshal(m)
		_ = os.WriteFile(filepath.Join(d, ManifestFile), raw, 0o644)
	}
	swap := func(name string, refresh bool) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			raw, _ := os.ReadFile(filepath.Join(other, name))
			_ = os.WriteFile(filepath.Join(d, name), raw, 0o644)
			if refresh {
				forge(t, d, nil)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, d string)
		want   string
	}{
		{"report edited", flip(ReportFile), "report.json does not match its SHA-256"},
		{"weights damaged", flip(WeightsFile), "vqvae.weights does not match its SHA-256"},
		{"history edited", flip(HistoryFile), "history.jsonl does not match"},
		{"map from another run", swap(CHMMFile, false), "chmm.model does not match"},
		{"report from another run, manifest forged", swap(ReportFile, true), "files of different runs"},
		{"config from another run, manifest forged", swap(ConfigFile, true), "files of different runs"},
		{"foreign file", func(t *testing.T, d string) { _ = os.WriteFile(filepath.Join(d, "notes.txt"), []byte("x"), 0o644) }, "notes.txt is not listed"},
		{"missing file", func(t *testing.T, d string) { _ = os.Remove(filepath.Join(d, CHMMFile)) }, "no such file"},
		{"checkpoint added to the manifest", func(t *testing.T, d string) {
			forge(t, d, func(m *Manifest) { m.Files[VQVAEFile] = "0" })
		}, "manifest.json lists"},
		{"another format", func(t *testing.T, d string) { forge(t, d, func(m *Manifest) { m.Format = "gradcscg shipped run 0" }) }, "format"},
		{"no manifest", func(t *testing.T, d string) { _ = os.Remove(filepath.Join(d, ManifestFile)) }, "manifest.json"},
		{"manifest not JSON", func(t *testing.T, d string) { _ = os.WriteFile(filepath.Join(d, ManifestFile), []byte("{"), 0o644) }, "manifest.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyShipped(t)
			tc.damage(t, d)
			_, err := LoadShipped(d)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), d) || strings.Contains(err.Error(), "\n") {
				t.Errorf("LoadShipped: %v; want one line naming %s and %q", err, d, tc.want)
			}
			if _, err2 := ShippedDiff(d, cfg); err2 == nil && !strings.Contains(tc.want, "different runs") {
				t.Errorf("ShippedDiff accepted the folder LoadShipped refuses (%v)", err)
			}
		})
	}

	// Export refuses an unfinished run and a folder that is not a shipped run.
	stopped := t.TempDir()
	st := cfg
	st.StopAfterJoint = 5
	if _, err := Run(context.Background(), stopped, st, nil); err == nil {
		t.Fatal("a stopped run finished")
	}
	if _, err := Export(stopped, filepath.Join(base, "unfinished")); err == nil || !strings.Contains(err.Error(), "not finished") {
		t.Errorf("Export of an unfinished run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "unfinished")); err == nil {
		t.Error("Export of an unfinished run created the folder")
	}
	if _, err := Export(run, run2); err == nil || !strings.Contains(err.Error(), "not a shipped run") {
		t.Errorf("Export over a run directory: %v", err)
	}
	if _, err := LoadRun(run2); err != nil {
		t.Errorf("the run directory Export refused to replace no longer loads: %v", err)
	}
}
