// Package plan uses a learned cloned HMM (pkg/chmm) as a map to act on:
// it localises the agent by forward filtering, turns a goal — a token, a
// set of clones, or a place shown by a demonstration walk — into goal clones,
// plans the shortest action sequence through the learned transitions, and
// scores all of it in closed loop on the true environment (paper Sec. 3.3 for
// the recursion, Sec. 6 for planning as the outlook).
//
// # Filtering
//
// A Filter runs the forward recursion of paper Sec. 3.3 online, normalised
// at every step, so its state is the belief b_t(j) = p(s_t = j | o_{1:t},
// a_{1:t−1}) over the N states:
//
//	b_1(j) ∝ prior(j) e_1(j),    b_{t+1}(j) ∝ Σ_i b_t(i) T[a_t,i,j] e_{t+1}(j).
//
// Emissions e_t are the model's hard indicator log B (Sec. 3.3), the same
// with a misreading rate ε (1−ε for the clones of the seen token, ε/(K−1) for
// the others), with a token confusion matrix C (C[k][o] for a clone of token
// k that sees o), or the soft posterior ρ_t(ω(j)) of an image (Sec. 3.5). The
// default prior is the random policy's stationary distribution under the learned
// transitions (π̄ describes the start of a training episode only). An observation
// of zero probability restarts the filter from the prior. C is learnt without
// labels from an unlabelled walk: Map.EstimateConfusion fits it by EM with the
// map's transitions fixed; Map.EstimateNoise picks the single ε of a grid with the
// highest likelihood instead.
//
// # Model places
//
// A learned map often spends several clones on one place. NewMap groups the
// states into model places by partition refinement, without labels: from the
// blocks of equal tokens, split blocks until every member of a block has, for
// every action, the same most likely successor block (argmax_B Σ_{j∈B} T[a,i,j]).
// States of one model place predict the same futures. Used states are those with
// stationary probability ≥ 0.01/(N−1).
//
// # Goals
//
// TokenGoal(k) is every clone of token k (for an image goal, encode the image
// first); StatesGoal a given set of clones. A place has no label, so
// BeliefGoal defines it by experience: filter a short demonstration walk that
// ends at the place, sum the final belief over model places, and take the
// place of largest mass; the goal clones are all clones of that place. The
// goal is Ambiguous when that place holds less than 0.9 of the belief
// (DefaultGoalMass; Goal.Alternatives lists the rivals), and a token or
// state goal is Ambiguous when it spans several used model places.
//
// # Planning
//
// Plans work on model places. A move from clone i by action a to place Q has
// probability W(a, i, Q) = Σ_{j∈Q} T[a,i,j] and leads to Q's most likely clone
// argmax_{j∈Q} T[a,i,j]; a goal is reached at any clone of a model place that
// holds a goal clone (per clone, a move split between duplicates of one place
// would look less likely than it is).
//
// Map.Plan starts from the belief. If the place of its most probable clone
// is a goal place, the plan is empty (the agent is there). BFS (the default)
// searches from that clone through the moves with W > 0.3
// (DefaultThreshold) for the fewest actions to a goal place, and among the
// shortest paths keeps the most probable (largest Σ log W). MaxProduct is the
// original CSCG's planner: max-product messages
//
//	δ_0(i) = log Σ_{i'∈place(i)} b(i'),   δ_L(j) = max_{i,a: i →a j} [δ_{L−1}(i) + log W(a, i, place(j))]
//
// from the whole belief, returning the path of the first length L at which a
// goal place's path probability reaches 0.05 (DefaultMinProb). A Plan holds
// the actions and the expected clone path. When no path exists the error is
// an *UnreachableError (errors.Is(err, ErrUnreachable)), never a panic.
//
// # Closed-loop evaluation
//
// Evaluate scores a map on the true environment over random pairs drawn from a
// seed. For each pair the agent filters a random walk of EvalConfig.LocalizeSteps
// observations from a uniform place (its end is the start); the goal, a uniform
// other place, is given only by a demonstration walk of DemoSteps observations
// ending there (drawn backwards, every move a valid forward move). Observations
// are symbols (Symbols) or fresh held-out images of the place's class encoded by a
// frozen encoder (Pool). Two modes:
//
//   - open: plan once and execute the whole plan blind;
//   - mpc: take the plan's first action, filter the new observation,
//     re-plan, and stop when the most probable clone is a goal clone and its
//     place holds at least ArriveMass (0.9) of the belief; when no plan
//     exists the agent takes a random action (to re-localise).
//
// Looking before stopping: when the most probable clone is a goal clone but the
// belief is split between places, MPC takes the actions of Map.Distinguish (the
// shortest sequence after which the goal place and its strongest rival would show
// different tokens), filtering what it sees, then re-plans; it stops anyway when
// no such sequence exists.
//
// The step budget is 3·d + 10 actions (BudgetFactor, BudgetExtra), d ≥ 1 the true
// shortest path length; an open plan longer than it is cut. A pair succeeds when
// the true place at the end is the goal place. The scores per mode are the success
// rate, the path-length ratio (steps taken / d) over the successes (mean ± sample
// sd), the pairs whose first plan found no path (unreachable) and those whose
// demonstration goal was ambiguous. Pairs, walks and observations are identical in
// every mode.
package plan
