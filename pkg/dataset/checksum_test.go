package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyMNIST copies the repository's data/mnist into a temporary directory.
func copyMNIST(t testing.TB) string {
	t.Helper()
	data, err := DataDir()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(data, "mnist")
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, e.Name()), b)
	}
	return dst
}

func TestVerifyChecksumsCommittedMNIST(t *testing.T) {
	data, err := DataDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyChecksums(filepath.Join(data, "mnist")); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyChecksumsDetectsFlippedByte(t *testing.T) {
	dir := copyMNIST(t)
	path := filepath.Join(dir, TrainImagesFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x01
	writeFile(t, path, b)
	err := VerifyChecksums(dir)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), path) {
		t.Fatalf("VerifyChecksums after a flipped byte = %v, want ErrChecksum naming %s", err, path)
	}
	// Load of such a directory fails the same way.
	if _, err := Load(dir, Train); !errors.Is(err, ErrChecksum) {
		t.Errorf("Load(corrupted dir) = %v, want ErrChecksum", err)
	}
}

func TestWriteChecksumsMatchesSHA256(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b"), []byte("abc"))
	writeFile(t, filepath.Join(dir, "a"), nil)
	if err := WriteChecksums(dir, []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, ChecksumFile))
	// SHA-256 of "" and of "abc" (FIPS 180-2 test vector), sorted by name.
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a\n" +
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS = %q, want %q", got, want)
	}
	if err := VerifyChecksums(dir); err != nil {
		t.Error(err)
	}
}

func TestVerifyChecksumsErrors(t *testing.T) {
	sumA := sha256.Sum256([]byte("a"))
	good := hex.EncodeToString(sumA[:])
	for _, tc := range []struct {
		name, list string
		want       string
	}{
		{"no list", "", "no such file"},
		{"empty list", "\n# comment\n", "lists no files"},
		{"no name", good + "\n", "SHA256SUMS:1: want"},
		{"short digest", "\n" + good[:10] + "  a\n", "SHA256SUMS:2: \"" + good[:10] + "\" is not a SHA-256"},
		{"missing file", good + "  a\n" + good + "  gone\n", "SHA256SUMS:2: open"},
		{"mismatch", strings.Repeat("0", 64) + "  a\n", "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "a"), []byte("a"))
			if tc.list != "" {
				writeFile(t, filepath.Join(dir, ChecksumFile), []byte(tc.list))
			}
			err := VerifyChecksums(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyChecksums = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	// Binary-mode lines ("<sum> *<name>") are accepted.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), []byte("a"))
	writeFile(t, filepath.Join(dir, ChecksumFile), []byte(good+" *a\n"))
	if err := VerifyChecksums(dir); err != nil {
		t.Error(err)
	}
}
