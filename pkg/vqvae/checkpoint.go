package vqvae

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/inputfile"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Checkpoint file layout:
//
//	magic "GRADCSCG-VQVAE\n" | version uint32 | payload length uint64 | SHA-256 of payload | payload (gob)
//
// The payload holds the configuration, the Go-side RNG state, the learning rate, the
// history, the warm-up cursor and every variable of the store (parameters, codebook,
// Adam moments and step counters, the graph RNG state), so that a loaded model
// continues exactly as the saved one would have.
const (
	checkpointMagic   = "GRADCSCG-VQVAE\n"
	checkpointVersion = 1
)

// CheckpointLimit bounds a checkpoint file: the parameters, their Adam moments and the
// history of the largest models gradcscg trains.
var CheckpointLimit = inputfile.Limit{Format: "VQ-VAE checkpoint", Bytes: 16 << 30}

type savedVar struct {
	Path      string
	DType     int32
	Dims      []int
	Trainable bool
	Data      []byte
}

type checkpointPayload struct {
	Config  Config
	Seed    uint64
	RNG     []byte
	LR      float64
	Ready   bool
	History []StepRecord
	Cursor  WarmupCursor
	Vars    []savedVar
	Tokens  []int // the token map (SetTokens); nil in files saved without one
}

// rngStatePath is where model.Store keeps the graph RNG state.
var rngStatePath = model.JoinPath("/", model.RNGStateVariableName)

// Save writes the model to path atomically (a temporary file in the same directory,
// renamed over path once complete).
func (m *Model) Save(path string) error {
	return m.save(path, false)
}

// SaveWeights writes the model for inference to path atomically, in Save's format: the
// configuration, the token map, the Go-side RNG state and learning rate, and the
// variables of the VQ-VAE's network (Config's parameters) and codebook (embeddings and
// EMA statistics) — not the optimizer state, the graph RNG state, the history, the
// warm-up cursor or variables of other scopes (a joint model's /hmm). Load reads it;
// the loaded model encodes, decodes and reconstructs as the saved one does, and one
// trained further starts with fresh optimizer state.
func (m *Model) SaveWeights(path string) error {
	return m.save(path, true)
}

// save is Save, or SaveWeights when weights.
func (m *Model) save(path string, weights bool) error {
	rngState, err := m.pcg.MarshalBinary()
	if err != nil {
		return fmt.Errorf("vqvae.Save %s: rng: %w", path, err)
	}
	p := checkpointPayload{
		Config: m.cfg, Seed: m.seed, RNG: rngState, LR: m.lr, Ready: m.ready,
		History: m.history, Cursor: m.cursor, Tokens: m.tokens,
	}
	vars := slices.Collect(m.store.IterVariables())
	if weights {
		p.History, p.Cursor = nil, WarmupCursor{}
		vars = m.networkVars()
	}
	for _, v := range vars {
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("vqvae.Save %s: variable %s: %w", path, v.Path(), err)
		}
		var data []byte
		if err := t.ConstBytes(func(b []byte) { data = slices.Clone(b) }); err != nil {
			return fmt.Errorf("vqvae.Save %s: variable %s: %w", path, v.Path(), err)
		}
		p.Vars = append(p.Vars, savedVar{
			Path: v.Path(), DType: int32(t.Shape().DType), Dims: slices.Clone(t.Shape().Dimensions),
			Trainable: v.Trainable, Data: data,
		})
	}
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(&p); err != nil {
		return fmt.Errorf("vqvae.Save %s: encode: %w", path, err)
	}
	return writeAtomic(path, checkpointHeader(payload.Bytes()), payload.Bytes())
}

// networkVars returns the variables of the network (Config's parameters, in their
// order) and of the codebook; a variable not created is left out.
func (m *Model) networkVars() []*model.Variable {
	scope := m.Scope()
	var vs []*model.Variable
	for _, ps := range m.cfg.params() {
		vs = append(vs, subScope(scope, ps.scope).GetVariable(ps.name))
	}
	e, n, s := CodebookVars(scope)
	vs = append(vs, e, n, s)
	return slices.DeleteFunc(vs, func(v *model.Variable) bool { return v == nil })
}

// checkpointHeader is the framing before a checkpoint's payload: magic, version,
// payload length and the payload's SHA-256.
func checkpointHeader(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	var head bytes.Buffer
	head.WriteString(checkpointMagic)
	_ = binary.Write(&head, binary.LittleEndian, uint32(checkpointVersion))
	_ = binary.Write(&head, binary.LittleEndian, uint64(len(payload)))
	head.Write(sum[:])
	return head.Bytes()
}

// writeAtomic writes the parts to a temporary file next to path and renames it.
func writeAtomic(path string, parts ...[]byte) error {
	err := atomicfile.Write(path, func(w io.Writer) error {
		for _, b := range parts {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vqvae.Save: %w", err)
	}
	return nil
}

// Load reads a model saved by Save and places it on backend.
func Load(backend compute.Backend, path string) (*Model, error) {
	if backend == nil {
		return nil, errors.New("vqvae.Load: nil backend")
	}
	raw, err := inputfile.ReadFile(path, CheckpointLimit)
	if err != nil {
		return nil, fmt.Errorf("vqvae.Load: %w", err)
	}
	p, err := decodeCheckpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("vqvae.Load %s: %w", path, err)
	}
	m, err := restore(backend, p)
	if err != nil {
		return nil, fmt.Errorf("vqvae.Load %s: %w", path, err)
	}
	return m, nil
}

// decodeCheckpoint validates the framing and decodes the payload.
func decodeCheckpoint(raw []byte) (*checkpointPayload, error) {
	headLen := len(checkpointMagic) + 4 + 8 + sha256.Size
	if len(raw) < len(checkpointMagic) || string(raw[:len(checkpointMagic)]) != checkpointMagic {
		return nil, errors.New("not a VQ-VAE checkpoint (bad magic)")
	}
	if len(raw) < headLen {
		return nil, fmt.Errorf("truncated header (%d bytes, want %d)", len(raw), headLen)
	}
	r := bytes.NewReader(raw[len(checkpointMagic):])
	var version uint32
	var n uint64
	_ = binary.Read(r, binary.LittleEndian, &version)
	_ = binary.Read(r, binary.LittleEndian, &n)
	if version != checkpointVersion {
		return nil, fmt.Errorf("unsupported checkpoint version %d (want %d)", version, checkpointVersion)
	}
	var sum [sha256.Size]byte
	_, _ = io.ReadFull(r, sum[:])
	payload := raw[headLen:]
	if uint64(len(payload)) != n {
		return nil, fmt.Errorf("truncated or padded payload: %d bytes, header says %d", len(payload), n)
	}
	if sha256.Sum256(payload) != sum {
		return nil, errors.New("checksum mismatch (corrupted file)")
	}
	var p checkpointPayload
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return &p, nil
}

// restore rebuilds a Model from a decoded payload, checking it against its config.
func restore(backend compute.Backend, p *checkpointPayload) (*Model, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	m := newShell(backend, p.Config, p.Seed)
	if err := m.pcg.UnmarshalBinary(p.RNG); err != nil {
		return nil, fmt.Errorf("rng state: %w", err)
	}
	m.lr, m.ready, m.history, m.cursor = p.LR, p.Ready, p.History, p.Cursor
	if err := m.SetTokens(p.Tokens); err != nil {
		return nil, err
	}
	for _, sv := range p.Vars {
		dt := dtypes.DType(sv.DType)
		switch dt { // the dtypes Save writes; any other value is damage (and may panic in shapes)
		case dtypes.Float32, dtypes.Float64, dtypes.Int32, dtypes.Int64, dtypes.Uint32, dtypes.Uint64:
		default:
			return nil, fmt.Errorf("variable %s: unknown dtype %d", sv.Path, sv.DType)
		}
		for _, d := range sv.Dims {
			if d < 0 || d > 1<<30 {
				return nil, fmt.Errorf("variable %s: invalid dims %v", sv.Path, sv.Dims)
			}
		}
		shape := shapes.Make(dt, sv.Dims...)
		if !shape.Ok() || dt.Size() <= 0 {
			return nil, fmt.Errorf("variable %s: invalid dtype %d or dims %v", sv.Path, sv.DType, sv.Dims)
		}
		if int(shape.ByteSize()) != len(sv.Data) {
			return nil, fmt.Errorf("variable %s: %d bytes for shape %s (want %d)", sv.Path, len(sv.Data), shape, shape.ByteSize())
		}
		if i := firstNonFinite(dt, sv.Data); i >= 0 {
			return nil, fmt.Errorf("variable %s: element %d is not finite", sv.Path, i)
		}
		t := tensors.FromShape(shape)
		if err := t.MutableBytes(func(b []byte) { copy(b, sv.Data) }); err != nil {
			return nil, fmt.Errorf("variable %s: %w", sv.Path, err)
		}
		if sv.Path == rngStatePath {
			if err := m.store.SetRNGStateFromSeed(0); err != nil { // creates the variable
				return nil, fmt.Errorf("variable %s: %w", sv.Path, err)
			}
			if err := m.store.GetVariable(rngStatePath).SetValue(t); err != nil {
				return nil, fmt.Errorf("variable %s: %w", sv.Path, err)
			}
			continue
		}
		v, err := m.store.CreateVariable(sv.Path, t)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", sv.Path, err)
		}
		v.SetTrainable(sv.Trainable)
	}
	// Every parameter the configuration needs must be there with the right shape.
	scope := m.Scope()
	for _, ps := range p.Config.params() {
		v := subScope(scope, ps.scope).GetVariable(ps.name)
		if v == nil {
			return nil, fmt.Errorf("variable %s/%s missing", ps.scope, ps.name)
		}
		if !slices.Equal(v.Shape().Dimensions, ps.dims) {
			return nil, fmt.Errorf("variable %s/%s: shape %v, config wants %v", ps.scope, ps.name, v.Shape().Dimensions, ps.dims)
		}
	}
	e, n, s := CodebookVars(scope)
	k, d := p.Config.K, p.Config.D
	for _, x := range []struct {
		v    *model.Variable
		name string
		dims []int
	}{{e, "embeddings", []int{k, d}}, {n, "size", []int{k}}, {s, "sum", []int{k, d}}} {
		if x.v == nil {
			return nil, fmt.Errorf("variable codebook/%s missing", x.name)
		}
		if !slices.Equal(x.v.Shape().Dimensions, x.dims) {
			return nil, fmt.Errorf("variable codebook/%s: shape %v, config wants %v", x.name, x.v.Shape().Dimensions, x.dims)
		}
	}
	return m, nil
}

// firstNonFinite returns the index of the first NaN or ±Inf in data (little-endian
// values of dt), or -1 (also for integer dtypes).
func firstNonFinite(dt dtypes.DType, data []byte) int {
	switch dt {
	case dtypes.Float32:
		for i := 0; i+4 <= len(data); i += 4 {
			f := float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:])))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return i / 4
			}
		}
	case dtypes.Float64:
		for i := 0; i+8 <= len(data); i += 8 {
			f := math.Float64frombits(binary.LittleEndian.Uint64(data[i:]))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return i / 8
			}
		}
	}
	return -1
}
