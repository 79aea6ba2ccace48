package main

import "github.com/gradcscg/gradcscg/pkg/atomicfile"

// writeFileAtomic writes data to a temporary file beside path and renames it.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data)
}
