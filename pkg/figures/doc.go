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
//     class) above the recovered clone graph (nodes filled with the colour of the token
//     they emit and labelled with the class of their assigned place), from a Readout;
//     a row of token keys where some token holds several classes.
//   - Figure 4, ReconstructionFigure (vector labels; the raster Reconstructions
//     and WriteReconstructionsPNG draw the strip alone as a PNG image): input images
//     above their VQ-VAE reconstructions, each annotated with its token and its
//     token's colour, wrapped into rows at most 1000 PNG pixels wide, above the
//     token key.
//   - Figure 5, ImageMaps: per pipeline run (a) the layout, (b) the decoded clones at
//     their assigned places (ClonePlacesPanel), (c) the recovered graph with every
//     node drawn as an image of its place's class that its token holds
//     (TokenClassImages; else its token's image, TokenImages), framed in its token's
//     colour and sized to 0.8 × the median nearest-neighbour distance of the layout,
//     and (d) the token key. Columns are as wide as their grids' shapes make them at
//     one common height, so every panel fills its tile.
//   - Figure 6, TrainingDynamics: every term of history.jsonl (ReadHistory) against the
//     step, phases shaded, events marked by vertical lines of one fixed colour and dash
//     pattern per kind (rollbacks red), each kind named once in the legend.
//   - Table 4, ThresholdSweep: projected-map precision, recall and F1 against the
//     threshold η (log axis) for one or more evaluate.Reports, with the Viterbi-path
//     map's score as a pale band of the run's colour under its line.
//
// # Tokens
//
// A TokenKey (NewTokenKey) counts, on a decoded episode, the classes of the frames
// each token holds; the labels are used only to draw. It gives every token its
// colour (the colour of its majority class, distinct colours for further tokens of
// that class) and is the legend (TokenKeyPanel) of every figure that shows tokens:
// "t4 (2480 frames): 2 50% · 3 45% · 5 5%" says that token 4 holds twos, threes and
// some fives.
//
// # Style
//
// One text family and one set of sizes (style.go) serve every figure; NewPlot makes
// a line plot in that style (gonum's default face is a serif), for this package's
// plots and the notebooks'.
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
