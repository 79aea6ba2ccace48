package chmm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func TestSaveLoadRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	m := randomModel(rng, []int{3, 1, 2}, 4, 2, true)
	m.ThetaLogits[5] = math.SmallestNonzeroFloat64
	m.Meta = map[string]string{"env": "two_rooms", "trainer": "em"}
	path := filepath.Join(t.TempDir(), "model.chmm")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Clones, m.Clones) || got.NumActions != m.NumActions ||
		!sameBits(got.PiLogits, m.PiLogits) || !sameBits(got.ThetaLogits, m.ThetaLogits) ||
		got.Meta["env"] != "two_rooms" || got.Meta["trainer"] != "em" || len(got.Meta) != 2 {
		t.Errorf("round trip differs")
	}
	// Overwrite in place; no temporary files are left behind.
	m.PiLogits[0] = 42
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	if got, _ := Load(path); got.PiLogits[0] != 42 {
		t.Error("second Save not visible")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1 (temporary file left?)", len(entries))
	}
	if err := m.Save(filepath.Join(t.TempDir(), "missing", "m.chmm")); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
	bad := m.Clone()
	bad.PiLogits = bad.PiLogits[:1]
	if err := bad.Save(path); err == nil {
		t.Error("Save of an invalid model succeeded")
	}
	if got, _ := Load(path); got.PiLogits[0] != 42 {
		t.Error("failed Save damaged the existing file")
	}
}

// withCRC appends the CRC-32 of b.
func withCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func TestReadErrors(t *testing.T) {
	m := New([]int{2, 1}, 2, nil)
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	nl := bytes.IndexByte(good, '\n')
	hdrEnd := nl + 1 + bytes.IndexByte(good[nl+1:], '\n') + 1
	payload := good[hdrEnd : len(good)-4]
	header := func(h string) []byte {
		b := append([]byte("GRADCSCG-CHMM\n"+h+"\n"), payload...)
		return withCRC(b)
	}
	flipped := slices.Clone(good)
	flipped[hdrEnd+20] ^= 0x10
	nan := slices.Clone(good[:len(good)-4])
	binary.LittleEndian.PutUint64(nan[hdrEnd+8:], math.Float64bits(math.NaN()))
	for _, tc := range []struct {
		name   string
		data   []byte
		substr string
	}{
		{"empty", nil, "line 1: not a gradcscg"},
		{"magic", append([]byte("GRADCSCG-XXXX\n"), good[nl+1:]...), "line 1: not a gradcscg"},
		{"long first line", bytes.Repeat([]byte("x"), 100), "line 1: not a gradcscg"},
		{"no header", []byte("GRADCSCG-CHMM\n"), "line 2 (header): truncated"},
		{"bad json", header(`{"format":`), "line 2 (header): invalid JSON"},
		{"unknown field", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[2,1],"num_actions":2,"num_states":4,"x":1}`), "invalid JSON"},
		{"format", header(`{"format":"other","version":1,"num_tokens":2,"clones":[2,1],"num_actions":2,"num_states":4}`), `format "other"`},
		{"version", header(`{"format":"gradcscg-chmm","version":2,"num_tokens":2,"clones":[2,1],"num_actions":2,"num_states":4}`), "unsupported version 2"},
		{"tokens", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":3,"clones":[2,1],"num_actions":2,"num_states":4}`), "num_tokens 3 but 2 clone counts"},
		{"states", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[2,1],"num_actions":2,"num_states":5}`), "num_states 5, want 1 + Σ clones = 4"},
		{"clones", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[2,0],"num_actions":2,"num_states":3}`), "Clones[1] = 0"},
		{"actions", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[2,1],"num_actions":0,"num_states":4}`), "num_actions 0"},
		{"huge", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[20000,20000],"num_actions":4,"num_states":40001}`), "exceed the limit"},
		{"huge but truncated", header(`{"format":"gradcscg-chmm","version":1,"num_tokens":2,"clones":[20000,10000],"num_actions":4,"num_states":30001}`), "truncated: 36 of 30001 parameters"},
		{"truncated payload", good[:hdrEnd+100], "truncated: 8 of 32 parameters"},
		{"truncated pi", good[:hdrEnd+9], "truncated: 1 of 4 parameters"},
		{"truncated crc", good[:len(good)-2], "missing CRC-32"},
		{"flipped byte", flipped, "CRC-32 mismatch"},
		{"trailing", append(slices.Clone(good), 0), "unexpected data after the CRC-32"},
		{"nan", withCRC(nan), "PiLogits: entry 1 is NaN"},
	} {
		_, err := Read(bytes.NewReader(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.substr)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.chmm")
	os.WriteFile(path, flipped, 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": byte") {
		t.Errorf("Load error should name the file: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	if _, err := Read(bytes.NewReader(good)); err != nil {
		t.Errorf("good file rejected: %v", err)
	}
}
