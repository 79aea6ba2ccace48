package experiment

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/evaluate"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// splitCheckpoint is a budget grown by splitting (growBySplitting) between two
// rounds: the split map that Round's training starts from, and everything the rounds
// before left. Resumed from it, a run gives the map and report it would have given
// uninterrupted (with as many workers), but for the wall-clock seconds.
type splitCheckpoint struct {
	Version  int
	Config   []byte // the experiment's JSON (Symbolic, Checkpoint excluded)
	Round    int
	Model    *chmm.Model
	History  *chmm.History // of the rounds before, on one clock
	Folded   int           // alike clones folded so far
	Elapsed  float64       // seconds trained before Round
	SplitRNG []byte        // the splits' random generator (rand.PCG)
	// SplitFrom is the training walks' bits per step of the map the last split
	// started from (Symbolic.FoldCost; 0: not measured).
	SplitFrom float64
	Rounds    []evaluate.BudgetRound // the record of the rounds before
	// Training is Round's gradient training in progress, EMTraining its EM training's,
	// saved between two of its iterations (both nil: Round's training starts from Model).
	Training   *chmm.GradState
	EMTraining *chmm.EMState
}

const checkpointVersion = 1

// saveCheckpoint writes c to path at once (atomicfile): an interrupted write leaves
// the previous checkpoint.
func saveCheckpoint(path string, c *splitCheckpoint) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		return gob.NewEncoder(w).Encode(c)
	})
}

// loadCheckpoint reads the checkpoint at path for s; nil, nil when there is none. A
// checkpoint of another experiment, or one that cannot be read, is an error naming
// the file: it is never overwritten silently.
func loadCheckpoint(path string, s Symbolic) (*splitCheckpoint, error) {
	c, err := readCheckpoint(path)
	if c == nil || err != nil {
		return nil, err
	}
	want, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(c.Config, want) {
		return nil, fmt.Errorf("checkpoint %s is of another experiment (%s, not %s): remove it or name another", path, c.Config, want)
	}
	return c, nil
}

// readCheckpoint reads the checkpoint at path, of whichever experiment; nil, nil when
// there is none.
func readCheckpoint(path string) (*splitCheckpoint, error) {
	data, err := inputfile.ReadFile(path, checkpointLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c splitCheckpoint
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return nil, fmt.Errorf("checkpoint %s cannot be read (%v): remove it to start over", path, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("checkpoint %s has version %d, this build reads %d: remove it to start over", path, c.Version, checkpointVersion)
	}
	if c.Model == nil || c.History == nil || c.Round < 1 && c.Training == nil && c.EMTraining == nil {
		return nil, fmt.Errorf("checkpoint %s is incomplete (round %d): remove it to start over", path, c.Round)
	}
	if err := c.Model.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &c, nil
}

// RemoveCheckpoint removes the checkpoint at path (Symbolic.Checkpoint) once the
// run's results are saved; none there is no error.
func RemoveCheckpoint(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// newCheckpoint is the checkpoint before round's training of s from m.
func newCheckpoint(s Symbolic, round int, m *chmm.Model, all *chmm.History, folded int, elapsed float64, rng *rand.PCG, splitFrom float64, rounds []evaluate.BudgetRound) (*splitCheckpoint, error) {
	cfg, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	state, err := rng.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &splitCheckpoint{Version: checkpointVersion, Config: cfg, Round: round, Model: m, History: all,
		Folded: folded, Elapsed: elapsed, SplitRNG: state, SplitFrom: splitFrom, Rounds: rounds}, nil
}
