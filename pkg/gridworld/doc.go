// Package gridworld holds the environments of gradcscg: grid worlds and small
// graphs whose places emit observation classes, their sticky dynamics, their
// true maps, and the uniform random walks that produce training and held-out
// episodes (paper Sections 3.1 and 4).
//
// # Places, actions, dynamics
//
// A grid is a matrix of cells indexed (row, col), row 0 at the top. A cell is a
// wall or a place showing one observation class (a non-negative integer: an
// MNIST digit 0-9 or any symbol id). Places are numbered 0..P-1 in row-major
// order of the non-wall cells. A grid has four actions: Up (0, row-1), Down
// (1, row+1), Left (2, col-1), Right (3, col+1). A move into a wall or off the
// grid leaves the agent where it is (sticky): it still takes a time step and
// the place is observed again. Env.Next(g, a) is this sticky successor.
//
// A graph environment has nodes 0..P-1 (its places) and undirected edges. The
// neighbours of node g, sorted by increasing id, are its actions 0..deg(g)-1;
// NumActions is the maximum degree, and Next(g, a) = g for a >= deg(g) (such
// actions are never taken by Walk, which picks uniformly among 0..deg(g)-1).
//
// The true map (Env.Edges) is the undirected graph joining two different places
// that one action connects; self-loops are excluded.
//
// # Episodes
//
// An episode of length T has places g_1..g_T, observations x_1..x_T (here the
// class of the place: the symbolic model; images are drawn elsewhere) and
// actions a_1..a_{T-1}, a_t moving from t to t+1. The start place is uniform
// over the places (of the region, for WalkRegion) and every action is uniform
// over the actions available at the current place. Walks are reproducible: the
// same *rand.Rand state gives the same episode.
//
// An environment may declare Regions (cscg_stitched does): sets of places
// walked in separate episodes. A region walk never draws an action that leads
// out of the region (the original CSCG's forbidden moves), so a place walked
// in two regions moves alike in both; Next and Edges stay those of the whole
// environment.
//
// # Layout files
//
// LoadLayout and ParseLayout read custom environments. The format is plain
// text, one entry per line. Lines whose first non-blank characters are "//"
// are comments; blank lines are ignored; both are allowed anywhere.
//
// Grid format: one grid row per line, top row first; cells separated by
// spaces or tabs; a cell is "#" (a wall) or a non-negative decimal integer
// class id (at most 65535). Every row must have the same number of cells.
// Example (the built-in "corridors"):
//
//	// corridors: 5x5, 19 places
//	0 1 1 1 2
//	3 # 0 # 4
//	3 # 0 # 4
//	3 # 0 # 4
//	6 6 1 1 5
//
// Graph format: the first non-comment line is the word "graph". Then exactly
// one line "classes: c0 c1 ... c(P-1)" giving the class of each node id 0..P-1,
// and one line "u v" per undirected edge between node ids u and v. Lines may
// come in any order after "graph". Example (a 4-cycle with two classes):
//
//	graph
//	classes: 0 1 0 1
//	0 1
//	1 2
//	2 3
//	0 3
//
// Rejected, with "file:line: reason": an empty file; ragged rows; tokens other
// than "#" and integers; negative or too large class ids; a layout without
// places; a place unreachable from the first place (named by row and col, or
// node id); in graphs, a missing or repeated classes line, an edge naming a
// node outside 0..P-1, self-loops, duplicate edges (u v and v u are the same
// edge), and graphs without edges. Env.CheckClasses rejects class ids that an
// image dataset does not have, naming the line of the offending cell.
//
// # Built-in environments
//
// Names lists them: the four image benchmarks (aliased, corridors, room,
// two_rooms), the symbolic demonstrations (square, uniform_interior,
// three_rooms) and the original CSCG demonstrations (cscg_rectangular,
// cscg_empty, cscg_stitched, cscg_maze5, cscg_cliques), laid out exactly as in
// the reference setup, then three bigger worlds of our own (big_room, tiled,
// four_rooms: 100 to 365 places). Env.Defaults gives each one's reference data size
// and clone budget, and where they come from; a custom layout's are GenericDefaults,
// sized by the world from BiggerPlaces places on.
package gridworld
