package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Goal is a set of clones to reach.
type Goal struct {
	Kind   string // "token", "states" or "demonstration"
	States []int  // goal clones, increasing
	Places []int  // used model places among States, increasing (all places if none is used)
	// Mass is the demonstration belief on the chosen model place (1 for
	// token and state goals).
	Mass float64
	// Ambiguous is set when several places are plausible: a demonstration
	// whose chosen place holds less than the required mass, or a token or
	// state goal spanning several used model places (any of them counts).
	Ambiguous bool
	// Alternatives are, for demonstration goals, the other model places
	// holding at least 1% of the belief, most probable first.
	Alternatives []PlaceMass
}

// PlaceMass is a model place and the belief it holds.
type PlaceMass struct {
	Place int     `json:"place"`
	Mass  float64 `json:"mass"`
}

// String describes the goal in one line.
func (g Goal) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s goal: %d clone(s) %v in model place(s) %v", g.Kind, len(g.States), g.States, g.Places)
	if g.Kind == "demonstration" {
		fmt.Fprintf(&b, ", belief %.3f", g.Mass)
	}
	if g.Ambiguous {
		b.WriteString(", AMBIGUOUS")
		for _, a := range g.Alternatives {
			fmt.Fprintf(&b, "; place %d has %.3f", a.Place, a.Mass)
		}
	}
	return b.String()
}

// usedPlaces returns the used model places of states (all their places if
// none is used), increasing.
func (mp *Map) usedPlaces(states []int) []int {
	var used, all []int
	for _, s := range states {
		p := mp.Place[s]
		all = append(all, p)
		if mp.Used[s] {
			used = append(used, p)
		}
	}
	if len(used) == 0 {
		used = all
	}
	slices.Sort(used)
	return slices.Compact(used)
}

// TokenGoal returns the goal "any clone of token k". For an image goal,
// encode the image first and pass its token.
func (mp *Map) TokenGoal(k int) (Goal, error) {
	if k < 0 || k >= mp.K {
		return Goal{}, fmt.Errorf("plan: goal token %d outside [0, %d)", k, mp.K)
	}
	first := mp.Model.FirstState(k)
	g := Goal{Kind: "token", Mass: 1}
	for s := first; s < first+mp.Model.Clones[k]; s++ {
		g.States = append(g.States, s)
	}
	g.Places = mp.usedPlaces(g.States)
	g.Ambiguous = len(g.Places) > 1
	return g, nil
}

// StatesGoal returns the goal "any of these clones".
func (mp *Map) StatesGoal(states []int) (Goal, error) {
	if len(states) == 0 {
		return Goal{}, fmt.Errorf("plan: empty goal state set")
	}
	g := Goal{Kind: "states", Mass: 1, States: slices.Clone(states)}
	slices.Sort(g.States)
	g.States = slices.Compact(g.States)
	for _, s := range g.States {
		if s < 0 || s >= mp.N-1 {
			return Goal{}, fmt.Errorf("plan: goal state %d outside the real states [0, %d)", s, mp.N-1)
		}
	}
	g.Places = mp.usedPlaces(g.States)
	g.Ambiguous = len(g.Places) > 1
	return g, nil
}

// DefaultGoalMass is the belief a demonstration must put on one model place
// for an unambiguous goal.
const DefaultGoalMass = 0.9

// BeliefGoal turns the belief at the end of a demonstration walk (filtered
// with a Filter) into a goal. The rule: sum the belief over each model place;
// the goal is the place of largest mass, and its goal clones are all the
// clones of that place (the model cannot tell them apart, so reaching any of
// them is reaching the place). The goal is Ambiguous when that place holds
// less than minMass of the belief (0: DefaultGoalMass); Alternatives lists the
// other places holding at least 1%.
func (mp *Map) BeliefGoal(belief []float64, minMass float64) (Goal, error) {
	if err := mp.checkBelief(belief); err != nil {
		return Goal{}, err
	}
	if minMass == 0 {
		minMass = DefaultGoalMass
	}
	if !(minMass > 0 && minMass <= 1) {
		return Goal{}, fmt.Errorf("plan: goal mass %v outside (0, 1]", minMass)
	}
	mass := mp.placeMass(belief)
	best, _ := argmax(mass)
	g := Goal{Kind: "demonstration", States: mp.PlaceStates(best), Places: []int{best}, Mass: mass[best]}
	g.Ambiguous = g.Mass < minMass
	for p, m := range mass {
		if p != best && m >= 0.01 {
			g.Alternatives = append(g.Alternatives, PlaceMass{Place: p, Mass: m})
		}
	}
	sort.SliceStable(g.Alternatives, func(i, j int) bool { return g.Alternatives[i].Mass > g.Alternatives[j].Mass })
	return g, nil
}
