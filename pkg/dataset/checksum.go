package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// ChecksumFile is the name of a directory's checksum list. Its format is the one
// `sha256sum` writes and `sha256sum -c` checks: one "<64 hex digits>  <file name>"
// line per file, names relative to the directory.
const ChecksumFile = "SHA256SUMS"

// checksumListLimit bounds a checksum list: a line of about 100 bytes per file.
var checksumListLimit = inputfile.Limit{Format: "checksum list", Bytes: 1 << 20}

// VerifyChecksums checks every file listed in dir/SHA256SUMS against its
// recorded SHA-256. A missing list, a malformed line (reported as file:line), a
// missing file or a mismatch is an error; mismatches wrap [ErrChecksum].
func VerifyChecksums(dir string) error {
	_, err := verifyChecksums(dir)
	return err
}

// verifyChecksums is VerifyChecksums; it returns the names the list holds (the
// files it checked).
func verifyChecksums(dir string) (map[string]bool, error) {
	list := filepath.Join(dir, ChecksumFile)
	data, err := inputfile.ReadFile(list, checksumListLimit)
	if err != nil {
		return nil, err
	}
	entries, err := parseChecksums(data, list)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, e := range entries {
		got, err := fileSHA256(filepath.Join(dir, e.name))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", list, e.line, err)
		}
		if got != e.sum {
			return nil, fmt.Errorf("%s: SHA-256 %s, want %s (%s:%d); the file is corrupt or was changed: %w",
				filepath.Join(dir, e.name), got, e.sum, list, e.line, ErrChecksum)
		}
		listed[e.name] = true
	}
	return listed, nil
}

// WriteChecksums writes dir/SHA256SUMS listing the SHA-256 of the named files
// (relative to dir), sorted by name; the list is written atomically.
func WriteChecksums(dir string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	var buf bytes.Buffer
	for _, name := range names {
		if name == "" || strings.ContainsAny(name, "\n\\") || filepath.IsAbs(name) {
			return fmt.Errorf("%s: unusable file name %q", filepath.Join(dir, ChecksumFile), name)
		}
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, filepath.ToSlash(name))
	}
	return writeAtomic(filepath.Join(dir, ChecksumFile), func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

type checksumEntry struct {
	sum, name string
	line      int
}

// parseChecksums parses sha256sum's output format; list names the file in errors.
func parseChecksums(data []byte, list string) ([]checksumEntry, error) {
	var entries []checksumEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode).
		sum, name, ok := strings.Cut(text, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s:%d: want \"<sha256>  <file>\", got %q", list, line, text)
		}
		if _, err := hex.DecodeString(sum); err != nil || len(sum) != 2*sha256.Size {
			return nil, fmt.Errorf("%s:%d: %q is not a SHA-256 (64 hex digits)", list, line, sum)
		}
		entries = append(entries, checksumEntry{sum: strings.ToLower(sum), name: filepath.FromSlash(name), line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", list, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: lists no files", list)
	}
	return entries, nil
}

// fileSHA256 returns the lower-case hex SHA-256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	return inputfile.Digest(path, IDXLimit)
}
