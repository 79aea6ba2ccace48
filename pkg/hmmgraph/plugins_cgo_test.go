//go:build cgo

package hmmgraph

import "github.com/gomlx/go-xla/compute/xla"

// startupPlugins are the PJRT plugins go-xla finds on the search path it read at
// start-up (PJRT_PLUGIN_LIBRARY_PATH, else the system's library directories).
func startupPlugins() []string { return xla.GetAvailablePlugins() }
