package chmm_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/gradcscg/gradcscg/pkg/chmm"
)

// A ring of four places shows tokens 0, 1, 0, 1: each token is seen at two places, so
// the map gives each token two clones. States 0 and 1 are token 0's clones, 2 and 3
// token 1's, 4 the sink. The one action walks the ring: place A (clone 0) → B (clone 2)
// → C (clone 1) → D (clone 3) → A. Decode reads the same walk through hard tokens, and
// through soft posteriors in which the third image was misread as a 1.
func Example() {
	m := chmm.New([]int{2, 2}, 1, nil) // 2 tokens × 2 clones, 1 action
	n := m.N()
	inf := math.Inf(-1)
	for i := range m.PiLogits {
		m.PiLogits[i] = inf
	}
	m.PiLogits[0], m.PiLogits[1] = 0, 0 // a walk starts at A or C
	next := map[int]int{0: 2, 2: 1, 1: 3, 3: 0}
	for i := range n {
		for j := range n {
			m.ThetaLogits[i*n+j] = inf
		}
		if j, ok := next[i]; ok {
			m.ThetaLogits[i*n+j] = 0
		} else {
			m.ThetaLogits[i*n+n-1] = 0 // the sink stays the sink
		}
	}
	actions := []int{0, 0, 0, 0}

	path, logp, err := chmm.Decode(m, chmm.Tokens{0, 1, 0, 1, 0}, actions)
	fmt.Println("hard:", path, fmt.Sprintf("%.3f", logp), err)

	_, _, err = chmm.Decode(m, chmm.Tokens{0, 1, 1, 1, 0}, actions)
	fmt.Println("hard, misread:", errors.Is(err, chmm.ErrZeroProbability))

	rho := func(p0 float64) []float32 { return []float32{float32(math.Log(p0)), float32(math.Log(1 - p0))} }
	soft := chmm.LogRho{rho(0.9), rho(0.1), rho(0.4), rho(0.1), rho(0.9)}
	path, _, err = chmm.Decode(m, soft, actions)
	fmt.Println("soft, misread:", path, err)
	// Output:
	// hard: [0 2 1 3 0] -0.693 <nil>
	// hard, misread: true
	// soft, misread: [0 2 1 3 0] <nil>
}
