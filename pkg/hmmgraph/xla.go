//go:build cgo

package hmmgraph

// XLA (github.com/gomlx/go-xla) is compiled in whenever cgo is available, so that
// GOMLX_BACKEND=xla:cpu or xla:cuda works wherever a PJRT plugin is installed. Its
// auto-installer is deliberately not imported: a missing plugin is an error, never a
// download.
import _ "github.com/gomlx/go-xla/compute/xla"
