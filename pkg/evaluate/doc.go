// Package evaluate scores a learned cognitive map against the true
// environment: the evaluation suite of the paper's Section 3.9 with the reference
// setup's exact definitions (below), the JSON report format, and aggregation
// over seeds.
//
// Every metric is computed from one held-out episode: the true places
// g_1..g_T, the Viterbi path s*_1..s*_T, the hard token of every step, and the
// learned transition tensor T[a,i,j]. Definitions (n counts steps):
//
//   - Visited states V = {s*_t}; n(s,g) = #{t : s*_t = s, g_t = g};
//     χ(s) = argmax_g n(s,g), ties to the lowest place id.
//   - Clone purity (unweighted) = mean over s ∈ V of max_g n(s,g) / Σ_g n(s,g).
//   - State→place purity (visit-weighted, the paper's headline) = Σ_s max_g n(s,g) / T.
//   - Represented places R = {χ(s) : s ∈ V}. Represented place fraction =
//     |R| / |{g_t}| (places visited by the episode); states per place = |V| / |R|.
//   - Projected map: W_a(g,g') = max over i, j ∈ V with χ(i) = g, χ(j) = g' of
//     T[a,i,j], for g, g' ∈ R; W = max_a W_a. At threshold η the learned edges
//     are the undirected pairs {g, g'}, g ≠ g', with W(g,g') > η or W(g',g) > η.
//     Reported for every η of Options.Thresholds (default 0.01, 0.05, 0.1, 0.2, 0.3).
//   - Viterbi-path map (the paper's "Map F1"; the reference has no code for it,
//     this is our definition): for t = 1..T-1 with χ(s*_t) ≠ χ(s*_{t+1}), count one
//     traversal of the undirected pair {χ(s*_t), χ(s*_{t+1})} (both directions and
//     all clone pairs add up); keep a pair whose count is > f·T. f = Options.Cutoff
//     (0.002) for the headline, and each f of Options.CutoffSweep (0.001, 0.002,
//     0.005) for the sweep.
//   - Edge scores against the true undirected map E (Env.Edges, no self-loops):
//     P = tp/(tp+fp), R = tp/(tp+fn), F1 = 2PR/(P+R), each 0/0 := 0.
//   - Action-outcome accuracy: the evaluated pairs are (g, a) with g ∈ R and a an
//     action available at g (all 4 on grids; 0..deg(g)-1 on graphs, the actions
//     a walk can take). The prediction is argmax_{g' ∈ R} W_a(g,g') (g' = g allowed,
//     since walls are sticky; ties to the lowest place id); when every W_a(g,g')
//     is 0 there is no prediction and the pair counts as wrong. Accuracy =
//     correct pairs / evaluated pairs. Coverage = evaluated pairs / all (place,
//     available action) pairs of the environment, i.e. Σ_{g∈R} |A(g)| / Σ_g |A(g)|.
//   - Token–place entropies (nats) from the empirical joint p(k,g) = n(k,g)/T of
//     (hard token, true place): H(token|place) = −Σ p(k,g) log p(k|g) and
//     H(place|token) = −Σ p(k,g) log p(g|k).
//   - Tokens per place and places per token count the pairs (k,g) with
//     n(k,g) ≥ MinTokenShare·n(g) (default 5% of the place's visits). Tokens per
//     place: mean and max over visited places; places per token: mean and max over
//     the tokens that have at least one such pair.
//   - Codebook perplexity = exp(H(p)) with p(k) = n(k)/T the hard-token usage;
//     active codes = #{k : n(k) > 0}.
//   - Token class purity = Σ_k max_c n(k,c) / T, c_t the class the true place g_t
//     shows (each token's majority class share, frame-weighted); class perplexity =
//     exp H(class), the codebook perplexity of tokens equal to the classes (below the
//     number of classes where they are shown unequally often, as in room). The
//     classes are read only to score.
//
// Report holds all of them under the stable JSON keys of the reference format, plus
// the verdict (Diagnosis), the read-outs and how the map was made (Training);
// WriteJSON writes it atomically, ReadJSON checks the required keys (and reads the
// free-form "extra" object of older reports into those fields), Aggregate gives
// mean ± sample s.d. over seeds.
package evaluate
