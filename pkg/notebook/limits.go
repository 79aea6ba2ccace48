package notebook

import "github.com/gradcscg/gradcscg/pkg/inputfile"

// Bounds on the files the notebooks read back (inputfile.Limit).
var (
	// jsonLimit bounds a configuration or history file a notebook run wrote.
	jsonLimit = inputfile.Limit{Format: "notebook run file", Bytes: 1 << 30}
	// imageLimit bounds a figure file shown in a notebook.
	imageLimit = inputfile.Limit{Format: "image file", Bytes: 256 << 20}
)
