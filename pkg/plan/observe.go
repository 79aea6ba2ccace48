package plan

import (
	"fmt"
	"math/rand/v2"
)

// Observer produces what the agent sees at a true place on one visit.
type Observer interface {
	Observe(rng *rand.Rand, place int) Obs
}

// Symbols is the symbolic observer: place g always shows token Symbols[g].
type Symbols []int

// Observe implements Observer.
func (s Symbols) Observe(_ *rand.Rand, place int) Obs { return Obs{Token: s[place]} }

// Pool is the image observer: every visit to a place shows a fresh image of
// its class, drawn uniformly with replacement (paper Section 2.11), as
// encoded beforehand by a frozen encoder. Encoding the whole held-out split
// once and drawing from it is the same as encoding each fresh draw.
type Pool struct {
	placeClass []int
	byClass    map[int][]Obs
}

// NewPool builds a Pool: placeClass [P] gives each place's class, and image i
// of the pool has class imageClass[i] and encoding obs[i]. Every class of a
// place needs at least one image.
func NewPool(placeClass, imageClass []int, obs []Obs) (*Pool, error) {
	if len(imageClass) != len(obs) {
		return nil, fmt.Errorf("plan: pool: %d image classes for %d encodings", len(imageClass), len(obs))
	}
	p := &Pool{placeClass: append([]int(nil), placeClass...), byClass: map[int][]Obs{}}
	for i, c := range imageClass {
		p.byClass[c] = append(p.byClass[c], obs[i])
	}
	for g, c := range placeClass {
		if len(p.byClass[c]) == 0 {
			return nil, fmt.Errorf("plan: pool: place %d shows class %d, which has no image", g, c)
		}
	}
	return p, nil
}

// Observe implements Observer.
func (p *Pool) Observe(rng *rand.Rand, place int) Obs {
	imgs := p.byClass[p.placeClass[place]]
	return imgs[rng.IntN(len(imgs))]
}
