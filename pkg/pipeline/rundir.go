package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// A run directory binds its files to one identity:
//
//   - state.gob starts with a header and the SHA-256 of its payload;
//   - the state holds the SHA-256 of config.json (Identity) and of every model file it
//     relies on (Files); each is checked when the file is read, so an edited or swapped
//     config, a checkpoint copied from another run, or a damaged file is an error;
//   - file names in the state are plain names inside the directory;
//   - one process at a time holds the directory (an flock on .lock, released by the
//     kernel when the process ends, so no lock goes stale).
//
// States written before this (no header) are read as legacy: their files are not
// checked until the run commits again, which records the digests.

// LockFile is the file a process locks while it writes a run directory.
const LockFile = ".lock"

const stateMagic = "gradcscg state 2\n"

// fileDigest is the hex SHA-256 of the file at path.
func fileDigest(path string) (string, error) {
	return inputfile.Digest(path, runFileLimit)
}

// plainName reports whether name is a file name inside the run directory (no path).
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// encodeState frames the gob of st with the header and its checksum.
func encodeState(st *runState) ([]byte, error) {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(st); err != nil {
		return nil, fmt.Errorf("pipeline: state: %w", err)
	}
	sum := sha256.Sum256(payload.Bytes())
	out := make([]byte, 0, len(stateMagic)+2*sha256.Size+1+payload.Len())
	out = append(out, stateMagic...)
	out = append(out, hex.EncodeToString(sum[:])...)
	out = append(out, '\n')
	return append(out, payload.Bytes()...), nil
}

// readState reads dir's state.gob (a fresh warm-up state when there is none) and checks
// its checksum, its phase and the names it holds.
func readState(dir string) (*runState, error) {
	path := filepath.Join(dir, StateFile)
	raw, err := inputfile.ReadFile(path, stateLimit)
	if errors.Is(err, os.ErrNotExist) {
		return &runState{Phase: PhaseWarmup, Seconds: map[string]float64{}, LambdaScale: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return decodeState(raw, path)
}

// decodeState is readState of the file's bytes raw (path names it in errors).
func decodeState(raw []byte, path string) (*runState, error) {
	payload := raw
	if bytes.HasPrefix(raw, []byte(stateMagic)) {
		rest := raw[len(stateMagic):]
		n := 2 * sha256.Size
		if len(rest) < n+1 || rest[n] != '\n' {
			return nil, fmt.Errorf("pipeline: %s: truncated header", path)
		}
		payload = rest[n+1:]
		sum := sha256.Sum256(payload)
		if hex.EncodeToString(sum[:]) != string(rest[:n]) {
			return nil, fmt.Errorf("pipeline: %s: checksum mismatch (damaged or edited)", path)
		}
	}
	var st runState
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&st); err != nil {
		return nil, fmt.Errorf("pipeline: %s: corrupt state: %w", path, err)
	}
	if len(payload) == len(raw) && st.Identity != "" {
		return nil, fmt.Errorf("pipeline: %s: a state with an identity but no checksum header (forged?)", path)
	}
	switch st.Phase {
	case PhaseWarmup, PhaseJoint, PhaseFinal, PhaseRefine, PhaseEval, PhaseDone:
	default:
		return nil, fmt.Errorf("pipeline: %s: unknown phase %q", path, st.Phase)
	}
	names := append([]string{st.Checkpoint, st.Healthy, st.Warmup}, st.finalFiles()...)
	names = append(names, st.refineFiles()...)
	for _, name := range names {
		if name != "" && !plainName(name) {
			return nil, fmt.Errorf("pipeline: %s: file name %q is not inside the run directory", path, name)
		}
	}
	for name := range st.Files {
		if !plainName(name) {
			return nil, fmt.Errorf("pipeline: %s: file name %q is not inside the run directory", path, name)
		}
	}
	if g := st.FinalGrad; g != nil && (g.Done < 0 || g.Done > gradChecked || g.Round < 0 || (g.Model == "") != (g.Done == 0)) {
		return nil, fmt.Errorf("pipeline: %s: gradient finalisation checkpoint %+v: not one a run writes", path, *g)
	}
	if st.JointIter < 0 {
		return nil, fmt.Errorf("pipeline: %s: joint iteration %d", path, st.JointIter)
	}
	if st.Seconds == nil {
		st.Seconds = map[string]float64{}
	}
	if err := st.adoptExtra(); err != nil {
		return nil, fmt.Errorf("pipeline: %s: %w", path, err)
	}
	return &st, nil
}

// adoptExtra moves what states written before runState.Made kept in Extra into Made
// (evaluate.LegacyTraining, as for reports).
func (st *runState) adoptExtra() error {
	if len(st.Extra) == 0 {
		return nil
	}
	raw := make(map[string]json.RawMessage, len(st.Extra))
	for k, v := range st.Extra {
		raw[k], _ = json.Marshal(v) // finite: written by this package
	}
	t, err := evaluate.LegacyTraining(raw)
	if err != nil {
		return err
	}
	if t != nil {
		st.Made = *t
	}
	st.Extra = nil
	return nil
}

// writeState commits st to dir.
func writeState(dir string, st *runState) error {
	raw, err := encodeState(st)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, StateFile), raw)
}

// legacy reports whether st was written before run directories recorded digests.
func (st *runState) legacy() bool { return st.Identity == "" }

// adoptLegacy records the digests of the files a legacy state relies on, so that the
// next commit turns the directory into a checked one; files that do not show they are
// the run of cfg are refused (checkAdoption).
func adoptLegacy(dir string, st *runState, cfg Config) error {
	if err := checkAdoption(dir, st, cfg); err != nil {
		return err
	}
	if st.Warmup == "" {
		if _, err := os.Stat(filepath.Join(dir, WarmupFile)); err == nil {
			st.Warmup = WarmupFile
		}
	}
	for _, name := range []string{st.Warmup, st.Checkpoint, st.Healthy, VQVAEFile, CHMMFile, ReportFile} {
		if name == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			continue
		}
		if err := record(dir, st, name); err != nil {
			return err
		}
	}
	return nil
}

// checkIdentity checks that dir's config.json is the one st was committed with.
func checkIdentity(dir string, st *runState) error {
	if st.legacy() {
		return nil
	}
	d, err := fileDigest(filepath.Join(dir, ConfigFile))
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if d != st.Identity {
		return fmt.Errorf("pipeline: %s is not the configuration this run was trained with (edited or replaced); restore it, or start a new run directory",
			filepath.Join(dir, ConfigFile))
	}
	return nil
}

// record stores the digest of the run-directory file name in st.
func record(dir string, st *runState, name string) error {
	d, err := fileDigest(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if st.Files == nil {
		st.Files = map[string]string{}
	}
	st.Files[name] = d
	return nil
}

// verify checks the run-directory file name against the digest st recorded for it
// (legacy states record none).
func verify(dir string, st *runState, name string) error {
	path := filepath.Join(dir, name)
	if !plainName(name) {
		return fmt.Errorf("pipeline: %q is not a file of the run directory", name)
	}
	if st.legacy() {
		return nil
	}
	want, ok := st.Files[name]
	if !ok {
		return fmt.Errorf("pipeline: %s is not recorded in the run's state", path)
	}
	got, err := fileDigest(path)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if got != want {
		return fmt.Errorf("pipeline: %s is not the file this run wrote (damaged, or copied from another run)", path)
	}
	return nil
}

// lockDir takes the run directory for this process: an exclusive flock on dir/.lock
// (which holds the owner's pid), or an error naming the process that holds it. Stale
// temporary files of interrupted writes are removed (atomicfile.RemoveStale: only its
// own, of writers that ended). The returned function releases it.
func lockDir(dir string) (func(), error) {
	path := filepath.Join(dir, LockFile)
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner := lockOwner(f)
		f.Close()
		return nil, fmt.Errorf("pipeline: run directory %s is in use by %s; wait for it to end, or use another directory", dir, owner)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	_, _ = atomicfile.RemoveStale(dir)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
