package evaluate

import (
	"maps"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// CondEntropy returns H(a | b) = H(a, b) − H(b) in nats over the paired samples
// (a[i], b[i]) of non-negative ids: stat.Entropy of the empirical distributions, each summed in key order
// so that the result does not depend on map iteration; 0 for no samples.
// H(token | place) is CondEntropy(tokens, places).
func CondEntropy(a, b []int) float64 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	joint, marg := map[int]int{}, map[int]int{}
	hi := 0
	for i := range n {
		hi = max(hi, a[i]+1)
	}
	for i := range n {
		joint[b[i]*hi+a[i]]++ // a pair as one key, b-major
		marg[b[i]]++
	}
	return max(entropyOf(joint, n)-entropyOf(marg, n), 0)
}

// entropyOf is the entropy (nats) of the counts of n samples, summed in key order.
func entropyOf(counts map[int]int, n int) float64 {
	keys := slices.Sorted(maps.Keys(counts))
	p := make([]float64, len(keys))
	for i, k := range keys {
		p[i] = float64(counts[k]) / float64(n)
	}
	return stat.Entropy(p)
}
