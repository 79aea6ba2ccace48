package notebook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// Room is a room a notebook defines in one cell: its layout (the gridworld layout
// format), the data set its places show, and the pixel run that learns its map, named
// from the run's configuration, so that an edited room (or data set, or setting) is a
// new run and never meets the run directory of the room before it.
type Room struct {
	Env    *gridworld.Env
	Config pipeline.Config
	Run    string // the run's name: the room's name, "_", 8 hex digits of the configuration's SHA-256
	Dir    string // RunDir(Run)
}

// roomAdvice ends every error of NewRoom: what to change, in the notebook.
const roomAdvice = "edit the room's cell (its name, layout, data set or settings) and run it again"

// NewRoom parses layout as the room called name (a plain name: letters, digits, '_'
// and '-'), and configures its run: the quick-start configuration (QuickConfigFor, the
// same at both notebook sizes) with the images of dataset ("mnist" or "fashion") and
// then settings "key=value" in order (`gradcscg train --set help` lists the keys).
// Errors name the layout's line or the setting, and say what to change in the cell.
func NewRoom(name, layout, dataset string, settings ...string) (*Room, error) {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return nil, fmt.Errorf("the room's name %q: want letters, digits, '_' or '-'; %s", name, roomAdvice)
	}
	env, err := gridworld.ParseLayout(name, strings.NewReader(layout))
	if err != nil {
		return nil, fmt.Errorf("the room's layout: %v; %s", err, roomAdvice)
	}
	if _, err := Size(); err != nil {
		return nil, err
	}
	all := append([]string{"dataset=" + dataset}, settings...)
	cfg, err := ConfigureFor(env, "", experiment.SizeCI, all...)
	if err != nil {
		return nil, fmt.Errorf("the room's settings: %v; %s", err, roomAdvice)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	sum := sha256.Sum256(b)
	r := &Room{Env: env, Config: cfg, Run: name + "_" + hex.EncodeToString(sum[:4])}
	if r.Dir, err = RunDir(r.Run); err != nil {
		return nil, err
	}
	return r, nil
}

// Describe displays the room in one line: its name, places, edges, classes, data set
// and run directory.
func (r *Room) Describe() {
	Markdownf("`%s`: %d places, %d edges, %d classes shown as %s images; its run: `%s`.",
		r.Env.Name, r.Env.NumPlaces(), len(r.Env.Edges()), len(r.Env.ClassesUsed()), datasetName(r.Config.Dataset),
		ShowPath(r.Dir))
}

// datasetName is a data set as the prose names it.
func datasetName(d string) string {
	switch d {
	case "mnist":
		return "MNIST"
	case "fashion":
		return "Fashion-MNIST"
	}
	return filepath.Base(d)
}

// Pipeline trains, or loads, the room's run (Pipeline with the room's name and
// configuration).
func (r *Room) Pipeline() (*pipeline.Result, error) {
	return Pipeline(r.Run, r.Config)
}
