package evaluate

import "fmt"

// Assign maps every state to its majority place on a decoded path (paper Sec. 3.9,
// "state-to-place assignment"):
//
//	n(s,g) = #{t : s*_t = s, g_t = g},   χ(s) = argmax_g n(s,g)   (ties: lowest place id),
//
// and returns χ (len numStates, −1 for states the path never visits) and the visit
// counts n(s) = Σ_g n(s,g). places and states are the episode's g_t and s*_t.
func Assign(places, states []int, numStates int) (chi, visits []int, err error) {
	if len(places) != len(states) {
		return nil, nil, fmt.Errorf("evaluate.Assign: %d places for %d states", len(places), len(states))
	}
	if numStates < 1 {
		return nil, nil, fmt.Errorf("evaluate.Assign: numStates %d must be ≥ 1", numStates)
	}
	counts := make([]map[int]int, numStates) // n(s, ·)
	visits = make([]int, numStates)
	for t, s := range states {
		if s < 0 || s >= numStates {
			return nil, nil, fmt.Errorf("evaluate.Assign: states[%d] = %d outside [0, %d)", t, s, numStates)
		}
		if places[t] < 0 {
			return nil, nil, fmt.Errorf("evaluate.Assign: places[%d] = %d is negative", t, places[t])
		}
		if counts[s] == nil {
			counts[s] = map[int]int{}
		}
		counts[s][places[t]]++
		visits[s]++
	}
	chi = make([]int, numStates)
	for s, m := range counts {
		chi[s] = -1
		best := 0
		for g, n := range m {
			if n > best || (n == best && g < chi[s]) {
				chi[s], best = g, n
			}
		}
	}
	return chi, visits, nil
}
