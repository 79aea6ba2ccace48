// Package figures draws the paper's figures from environments, models, decoded
// episodes and pipeline runs, as PNG, SVG or PDF.
//
// # The figures
//
//   - Figure 2, Layouts / LayoutPanel: each environment's grid with one colour per
//     observation class (ClassColor, the same in every figure) and the class id in
//     each cell, walls grey; graph environments (three_rooms) as graphs. Panels
//     keep square cells and fill their tiles (rows of equal height, widths in
//     proportion to each grid's shape).
//   - Figure 3, MapComparison: per environment the true place graph (nodes coloured by
//     class) above the recovered clone graph (nodes coloured by the class of the token
//     they emit), from a Readout.
//   - Figure 4, ReconstructionFigure (vector labels; the raster Reconstructions
//     and WriteReconstructionsPNG draw the same as a PNG image): input images
//     above their VQ-VAE reconstructions, each annotated with its token.
//   - Figure 5, ImageMaps: per pipeline run (a) the layout, (b) the decoded clones at
//     their assigned places (ClonePlacesPanel) and (c) the recovered graph with every
//     node drawn as its token's image (TokenImages: the decoder's output D(e_k)),
//     sized to 0.8 × the median nearest-neighbour distance of the layout.
//   - Figure 6, TrainingDynamics: every term of history.jsonl (ReadHistory) against the
//     step, phases shaded, rollbacks marked by dashed lines named once in the legend.
//   - Table 4, ThresholdSweep: projected-map precision, recall and F1 against the
//     threshold η (log axis) for one or more evaluate.Reports, with the Viterbi-path
//     map's score as a dashed reference.
//
// # Reading a map off a model
//
// A Readout holds what Figures 3 and 5 need: the decoded held-out path's state→place
// assignment χ(s) = argmax_g n(s,g) (Assign, paper Sec. 3.9), the visit counts, and
// the recovered graph over clone states, read off the path (PathGraph: state pairs
// traversed more than a fraction of T, the clone-level Viterbi-path map of Sec. 5.3,
// the default) or off the learned transitions (TransitionGraph: max_a T[a,i,j] > η).
// NewReadout builds one from an environment, a chmm.Model, the true places and the
// decoded states.
//
// The recovered graph is laid out from its edges alone (LayoutGraph: Isomap, i.e.
// classical multidimensional scaling of shortest-path distances, which draws grid
// graphs as grids; a force-directed fallback), then every connected component is
// rotated/reflected, scaled and shifted (Procrustes) to best match the positions of
// its nodes' assigned places, so that it has the true map's orientation. Recovered
// edges that join states assigned to places that are neither equal nor adjacent are
// drawn red and dashed (false edges).
//
// # Output
//
// Every figure function returns a *Figure: a grid of Panels with a natural size in
// points. Raster images (digits) are scaled by nearest neighbour (drawPixels), so
// their pixels stay sharp-edged blocks. Figure.PNG (or the function PNG for any Panel, *plot.Plot included) gives
// the PNG bytes a notebook displays, DPI (144) dots per inch; Figure.Save and Save
// write .png, .svg or .pdf by extension, atomically (pkg/atomicfile). Invalid input
// gives an error naming the problem; drawing never panics through the API (a panic
// of the plotting library is returned as an error).
//
// This package must not import pkg/vqvae or pkg/pipeline: vqvae's tests import it.
// TokenImages therefore takes a Codec interface (which *vqvae.Model satisfies) and
// Record mirrors pipeline.Record.
package figures
