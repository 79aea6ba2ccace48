//go:build !cgo

package hmmgraph

// startupPlugins: without cgo no XLA is compiled in, so no plugin can be found.
func startupPlugins() []string { return nil }
