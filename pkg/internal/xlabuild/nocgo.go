//go:build !cgo

package xlabuild

import (
	"errors"

	"github.com/gomlx/compute"
)

// Available reports whether this binary can build StableHLO: go-xla needs cgo.
const Available = false

// Built: see the cgo build.
type Built struct{ Name, Program string }

func (b *Built) Error() string { return "xlabuild: built" }

// ProgramOf: see the cgo build.
func ProgramOf(err error) (string, error) { return "", err }

// New fails: go-xla is compiled only with cgo.
func New(pluginName string, tf32 bool) (compute.Backend, error) {
	return nil, errors.New("xlabuild: go-xla needs cgo (CGO_ENABLED=1 and a C compiler)")
}
