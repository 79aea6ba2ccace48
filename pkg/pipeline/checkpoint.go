package pipeline

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gomlx/compute"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
	"github.com/gradcscg/gradcscg/pkg/vqvae"
)

// checkpoint is a run directory as the phases see it: its commit record (st) and the
// files the record names. A phase writes a file under a new name, records its digest,
// changes its own fields of the state and commits; the file the state named before is
// removed only after that commit, so a run killed at any point resumes from a
// consistent state. Every file is checked against its digest before it is read. A
// checkpoint without a directory (dir "") keeps nothing: the finalisations run on one
// in studies.
type checkpoint struct {
	dir string
	st  *runState
}

// path is the run-directory file name's path.
func (c *checkpoint) path(name string) string { return filepath.Join(c.dir, name) }

// saves reports whether the checkpoint keeps files (it has a directory).
func (c *checkpoint) saves() bool { return c.dir != "" }

// commit writes the state (the commit record) and the derived history file.
func (c *checkpoint) commit() error {
	if c.st.Identity == "" {
		d, err := fileDigest(c.path(ConfigFile))
		if err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
		c.st.Identity = d
	}
	if err := writeState(c.dir, c.st); err != nil {
		return err
	}
	h, err := encodeHistory(c.st.History)
	if err != nil {
		return err
	}
	return writeAtomic(c.path(HistoryFile), h)
}

// encodeHistory is the history file of records: one JSON Record per line, non-finite
// values written as -1 (finiteRecord).
func encodeHistory(records []Record) ([]byte, error) {
	var h bytes.Buffer
	w := bufio.NewWriter(&h)
	enc := json.NewEncoder(w)
	for _, rec := range records {
		if err := enc.Encode(finiteRecord(rec)); err != nil {
			return nil, fmt.Errorf("pipeline: history: %w", err)
		}
	}
	_ = w.Flush()
	return h.Bytes(), nil
}

// record stores the digest of the file name in the state (the next commit makes it
// the run's).
func (c *checkpoint) record(name string) error { return record(c.dir, c.st, name) }

// verify checks the file name against the digest the state recorded for it.
func (c *checkpoint) verify(name string) error { return verify(c.dir, c.st, name) }

// drop removes the file name and forgets its digest.
func (c *checkpoint) drop(name string) {
	_ = os.Remove(c.path(name))
	delete(c.st.Files, name)
}

// loadVQ loads the VQ-VAE checkpoint name onto backend after checking it is the file
// the state recorded.
func (c *checkpoint) loadVQ(backend compute.Backend, name string) (*vqvae.Model, error) {
	if err := c.verify(name); err != nil {
		return nil, err
	}
	return vqvae.Load(backend, c.path(name))
}

// loadModel loads the cloned HMM file name, checked against the digest the state
// recorded and against the run's k tokens and numActions actions.
func (c *checkpoint) loadModel(name string, k, numActions int) (*chmm.Model, error) {
	if err := c.verify(name); err != nil {
		return nil, err
	}
	m, err := chmm.Load(c.path(name))
	if err != nil {
		return nil, err
	}
	if m.K() != k || m.NumActions != numActions {
		return nil, fmt.Errorf("pipeline: %s: %d tokens and %d actions, the run has %d and %d", c.path(name), m.K(), m.NumActions, k, numActions)
	}
	return m, nil
}

// saveGob writes v as a gob to the new file name at once and records it.
func (c *checkpoint) saveGob(name string, v any) error {
	if err := atomicfile.Write(c.path(name), func(w io.Writer) error { return gob.NewEncoder(w).Encode(v) }); err != nil {
		return fmt.Errorf("pipeline: finalisation: %w", err)
	}
	return c.record(name)
}

// loadGob reads into v the gob file name, checked against the digest the state
// recorded.
func (c *checkpoint) loadGob(name string, v any) error {
	if err := c.verify(name); err != nil {
		return err
	}
	b, err := inputfile.ReadFile(c.path(name), trainingLimit)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("pipeline: %s cannot be read: %w", c.path(name), err)
	}
	return nil
}

// writeAtomic writes data to a temporary file next to path and renames it.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}
