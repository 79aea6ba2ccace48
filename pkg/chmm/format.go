package chmm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// File format (see doc.go).
const (
	fileMagic   = "GRADCSCG-CHMM"
	fileFormat  = "gradcscg-chmm"
	fileVersion = 1
	maxHeader   = 1 << 20
)

// FileLimit bounds a model file: a header and 8·(N + A·N²) bytes of logits for the
// largest maps gradcscg trains.
var FileLimit = inputfile.Limit{Format: "cloned-HMM model file", Bytes: 16 << 30}

// fileHeader is the JSON header line of a model file.
type fileHeader struct {
	Format     string            `json:"format"`
	Version    int               `json:"version"`
	NumTokens  int               `json:"num_tokens"`
	Clones     []int             `json:"clones"`
	NumActions int               `json:"num_actions"`
	NumStates  int               `json:"num_states"`
	Meta       map[string]string `json:"metadata,omitempty"`
}

// Write writes m in the model file format (see the package documentation).
func (m *Model) Write(w io.Writer) error {
	if err := m.Validate(); err != nil {
		return err
	}
	hdr, err := json.Marshal(fileHeader{
		Format: fileFormat, Version: fileVersion, NumTokens: m.K(), Clones: m.Clones,
		NumActions: m.NumActions, NumStates: m.N(), Meta: m.Meta,
	})
	if err != nil {
		return fmt.Errorf("chmm: encoding header: %w", err)
	}
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	bw.WriteString(fileMagic + "\n")
	bw.Write(hdr)
	bw.WriteByte('\n')
	var buf [8]byte
	for _, xs := range [][]float64{m.PiLogits, m.ThetaLogits} {
		for _, v := range xs {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			bw.Write(buf[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("chmm: writing model: %w", err)
	}
	binary.LittleEndian.PutUint32(buf[:4], crc.Sum32())
	if _, err := w.Write(buf[:4]); err != nil {
		return fmt.Errorf("chmm: writing model: %w", err)
	}
	return nil
}

// Save writes m to path atomically: to a temporary file in the same
// directory, synced, then renamed over path.
func (m *Model) Save(path string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if err := atomicfile.Write(path, m.Write); err != nil {
		return fmt.Errorf("chmm: %w", err)
	}
	return nil
}

// Load reads a model file written by Save; errors name the path.
func Load(path string) (*Model, error) {
	f, err := inputfile.Open(path, FileLimit)
	if err != nil {
		return nil, fmt.Errorf("chmm: %w", err)
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Read reads a model in the file format from r. A wrong magic line, an
// unknown format or version, an inconsistent header, a truncated payload,
// trailing bytes, a CRC mismatch or invalid logits give an error naming the
// line or byte offset and the reason.
func Read(r io.Reader) (*Model, error) {
	crc := crc32.NewIEEE()
	br := bufio.NewReaderSize(r, 1<<16)
	tr := io.TeeReader(br, crc)
	line1, err := readLine(tr, len(fileMagic)+1)
	if err != nil || line1 != fileMagic {
		if err != nil && !errors.Is(err, errLongLine) && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line 1: %w", err)
		}
		return nil, fmt.Errorf("line 1: not a gradcscg cloned-HMM file (want magic %q)", fileMagic)
	}
	line2, err := readLine(tr, maxHeader)
	if err != nil {
		return nil, fmt.Errorf("line 2 (header): %w", err)
	}
	var h fileHeader
	dec := json.NewDecoder(bytes.NewReader([]byte(line2)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("line 2 (header): invalid JSON: %w", err)
	}
	if h.Format != fileFormat {
		return nil, fmt.Errorf("line 2 (header): format %q, want %q", h.Format, fileFormat)
	}
	if h.Version != fileVersion {
		return nil, fmt.Errorf("line 2 (header): unsupported version %d (this build reads version %d)", h.Version, fileVersion)
	}
	m := &Model{Clones: h.Clones, NumActions: h.NumActions, Meta: h.Meta}
	if err := m.validateShape(); err != nil {
		return nil, fmt.Errorf("line 2 (header): %w", err)
	}
	switch {
	case h.NumTokens != len(h.Clones):
		return nil, fmt.Errorf("line 2 (header): num_tokens %d but %d clone counts", h.NumTokens, len(h.Clones))
	case h.NumStates != m.N():
		return nil, fmt.Errorf("line 2 (header): num_states %d, want 1 + Σ clones = %d", h.NumStates, m.N())
	case h.NumActions < 1 || h.NumActions > maxStates:
		return nil, fmt.Errorf("line 2 (header): num_actions %d, want 1..%d", h.NumActions, maxStates)
	}
	n := m.N()
	offset := int64(len(fileMagic) + 1 + len(line2) + 1)
	m.PiLogits, err = readFloats(tr, n, &offset)
	if err == nil {
		m.ThetaLogits, err = readFloats(tr, h.NumActions*n*n, &offset)
	}
	if err != nil {
		return nil, err
	}
	sum := crc.Sum32()
	var buf [4]byte
	if _, err := io.ReadFull(br, buf[:]); err != nil {
		return nil, fmt.Errorf("byte %d: truncated: missing CRC-32", offset)
	}
	if got := binary.LittleEndian.Uint32(buf[:]); got != sum {
		return nil, fmt.Errorf("byte %d: CRC-32 mismatch (stored %08x, computed %08x): file is corrupt", offset, got, sum)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("byte %d: unexpected data after the CRC-32", offset+4)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

var errLongLine = errors.New("line too long")

// readLine reads one '\n'-terminated line of at most max bytes (without the
// newline) byte by byte (the reader is buffered).
func readLine(r io.Reader, max int) (string, error) {
	var b []byte
	var c [1]byte
	for {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return "", fmt.Errorf("truncated: %w", io.EOF)
			}
			return "", err
		}
		if c[0] == '\n' {
			return string(b), nil
		}
		if len(b) >= max {
			return "", errLongLine
		}
		b = append(b, c[0])
	}
}

// readFloats reads count little-endian float64 values, growing the slice as
// data arrives (a corrupt header cannot force a huge allocation).
func readFloats(r io.Reader, count int, offset *int64) ([]float64, error) {
	const chunk = 1 << 16
	out := make([]float64, 0, min(count, chunk))
	buf := make([]byte, 8*chunk)
	for len(out) < count {
		k := min(chunk, count-len(out))
		got, err := io.ReadFull(r, buf[:8*k])
		for i := 0; i+8 <= got; i += 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(buf[i:])))
		}
		*offset += int64(got)
		if err != nil {
			return nil, fmt.Errorf("byte %d: truncated: %d of %d parameters read", *offset, len(out), count)
		}
	}
	return out, nil
}
