package vqvae

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func mat(v []float64, r, c int) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(v, r, c) }

// TestQuantizeBruteForce compares distances, tokens and codes with a direct loop.
func TestQuantizeBruteForce(t *testing.T) {
	const b, k, d = 7, 5, 3
	rng := rand.New(rand.NewPCG(11, 12))
	z, e := randSlice(rng, b*d, 2), randSlice(rng, k*d, 2)
	out := MustNewExec(testBackend(), func(z, e *Node) []*Node {
		tok, q, d2 := Quantize(z, e)
		return []*Node{tok, q, d2}
	}).MustCall(mat(z, b, d), mat(e, k, d))
	tok := tensors.MustCopyFlatData[int32](out[0])
	q, d2 := flat64(t, out[1]), flat64(t, out[2])
	for i := range b {
		best, bestD := -1, math.Inf(1)
		for j := range k {
			s := 0.0
			for a := range d {
				diff := z[i*d+a] - e[j*d+a]
				s += diff * diff
			}
			if math.Abs(s-d2[i*k+j]) > 1e-12 {
				t.Errorf("dist2[%d,%d] = %g, want %g", i, j, d2[i*k+j], s)
			}
			if s < bestD {
				best, bestD = j, s
			}
		}
		if int(tok[i]) != best {
			t.Errorf("token[%d] = %d, want %d", i, tok[i], best)
		}
		for a := range d {
			if q[i*d+a] != e[best*d+a] {
				t.Errorf("q[%d] = %v, want code %d", i, q[i*d:(i+1)*d], best)
				break
			}
		}
	}
}

// TestStraightThroughIsIdentity checks that q̃ = z + sg(q − z) has the value of q and
// the identity Jacobian w.r.t. z (and no gradient w.r.t. q).
func TestStraightThroughIsIdentity(t *testing.T) {
	const b, d = 4, 3
	rng := rand.New(rand.NewPCG(13, 14))
	z, q, r := randSlice(rng, b*d, 1), randSlice(rng, b*d, 1), randSlice(rng, b*d, 1)
	out := MustNewExec(testBackend(), func(z, q, r *Node) []*Node {
		y := StraightThrough(z, q)
		return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, r)), z, q)...)
	}).MustCall(mat(z, b, d), mat(q, b, d), mat(r, b, d))
	if dd := maxAbsDiff(flat64(t, out[0]), q); dd > 1e-15 {
		t.Errorf("value differs from q by %g", dd)
	}
	if dd := maxAbsDiff(flat64(t, out[1]), r); dd != 0 {
		t.Errorf("∂/∂z is not the identity: max |diff| %g", dd)
	}
	if m := maxAbs(flat64(t, out[2])); m != 0 {
		t.Errorf("∂/∂q = %g, want 0", m)
	}
}

// TestSoftPosterior checks log ρ against a direct log-softmax at τ = 1 and its
// convergence to the one-hot hard assignment as τ → 0.
func TestSoftPosterior(t *testing.T) {
	const b, k, d = 6, 4, 3
	rng := rand.New(rand.NewPCG(15, 16))
	z, e := randSlice(rng, b*d, 1), randSlice(rng, k*d, 1)
	for _, tau := range []float64{1, 0.3, 1e-4} {
		out := MustNewExec(testBackend(), func(z, e *Node) []*Node {
			tok, _, d2 := Quantize(z, e)
			return []*Node{tok, SoftPosterior(d2, tau), d2}
		}).MustCall(mat(z, b, d), mat(e, k, d))
		tok := tensors.MustCopyFlatData[int32](out[0])
		lr, d2 := flat64(t, out[1]), flat64(t, out[2])
		for i := range b {
			// Direct: log ρ_k = −d_k/τ − log Σ_j exp(−d_j/τ), computed with the max shift.
			mx := math.Inf(-1)
			for j := range k {
				mx = max(mx, -d2[i*k+j]/tau)
			}
			s := 0.0
			for j := range k {
				s += math.Exp(-d2[i*k+j]/tau - mx)
			}
			for j := range k {
				want := -d2[i*k+j]/tau - mx - math.Log(s)
				if math.Abs(lr[i*k+j]-want) > 1e-9*(1+math.Abs(want)) {
					t.Errorf("τ=%g log ρ[%d,%d] = %g, want %g", tau, i, j, lr[i*k+j], want)
				}
			}
			if tau == 1e-4 {
				for j := range k {
					want := 0.0
					if j == int(tok[i]) {
						want = 1
					}
					if got := math.Exp(lr[i*k+j]); math.Abs(got-want) > 1e-9 {
						t.Errorf("τ→0: ρ[%d,%d] = %g, want one-hot %g (token %d)", i, j, got, want, tok[i])
					}
				}
			}
		}
	}
}

// TestEMAUpdateHand checks one EMA step against a hand computation (γ = 0.5, ε = 0.1,
// K = 2, D = 1, z = (1, 3, 5), tokens (0, 0, 1), n = (2, 0), m = (4, 0)):
//
//	counts = (2, 1), sums = (4, 5)
//	n' = 0.5·(2, 0) + 0.5·(2, 1) = (2, 0.5);  m' = 0.5·(4, 0) + 0.5·(4, 5) = (4, 2.5)
//	Σn' = 2.5;  n̂ = (n' + 0.1)/(2.5 + 0.2)·2.5 = (2.1, 0.6)·2.5/2.7 = (35/18, 5/9)
//	e' = m'/n̂ = (4·18/35, 2.5·9/5) = (72/35, 4.5)
//
// and a second case with frame 1 masked out (counts (1, 1), sums (1, 5)).
func TestEMAUpdateHand(t *testing.T) {
	tests := []struct {
		name         string
		mask         []float64
		wantN, wantM []float64
		wantE        []float64
	}{
		{"unmasked", nil, []float64{2, 0.5}, []float64{4, 2.5}, []float64{72.0 / 35, 4.5}},
		// n' = (1.5, 0.5), m' = (2.5, 2.5), Σ = 2, n̂ = (1.6, 0.6)·2/2.2, e = (2.5·2.2/3.2, 2.5·2.2/1.2).
		{"masked", []float64{1, 0, 1}, []float64{1.5, 0.5}, []float64{2.5, 2.5}, []float64{2.5 * 2.2 / 3.2, 2.5 * 2.2 / 1.2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []any{
				mat([]float64{0, 0}, 2, 1),         // codebook (unused by the update)
				tensors.FromValue([]float64{2, 0}), // n
				mat([]float64{4, 0}, 2, 1),         // m
				mat([]float64{1, 3, 5}, 3, 1),      // z
				tensors.FromValue([]int32{0, 0, 1}),
			}
			if tc.mask != nil {
				args = append(args, tensors.FromValue(tc.mask))
			}
			out := MustNewExec(testBackend(), func(in []*Node) []*Node {
				var mask *Node
				if len(in) == 6 {
					mask = in[5]
				}
				s := EMAUpdate(EMAState{Codebook: in[0], Size: in[1], Sum: in[2]}, in[3], in[4], mask, 0.5, 0.1)
				return []*Node{s.Size, s.Sum, s.Codebook}
			}).MustCall(args...)
			for i, c := range []struct {
				what string
				want []float64
			}{{"n", tc.wantN}, {"m", tc.wantM}, {"e", tc.wantE}} {
				if d := maxAbsDiff(flat64(t, out[i]), c.want); d > 1e-12 {
					t.Errorf("%s = %v, want %v", c.what, flat64(t, out[i]), c.want)
				}
			}
		})
	}
}

// TestReviveDeadCodes: n = (10, 0.01, 5), threshold 1% of the uniform share
// Σn/K = 15.01/3: only code 1 is dead and gets z[choice[1]] = z[0].
func TestReviveDeadCodes(t *testing.T) {
	share := 15.01 / 3
	out := MustNewExec(testBackend(), func(e, n, m, z, choice *Node) []*Node {
		s, rev := ReviveDeadCodes(EMAState{Codebook: e, Size: n, Sum: m}, z, choice, 0.01)
		return []*Node{s.Codebook, s.Size, s.Sum, rev}
	}).MustCall(
		mat([]float64{1, 1, 2, 2, 3, 3}, 3, 2),
		tensors.FromValue([]float64{10, 0.01, 5}),
		mat([]float64{10, 10, 0.02, 0.02, 15, 15}, 3, 2),
		mat([]float64{7, 8, 9, 10}, 2, 2),
		tensors.FromValue([]int32{1, 0, 1}))
	want := [][]float64{
		{1, 1, 7, 8, 3, 3},
		{10, share, 5},
		{10, 10, 7 * share, 8 * share, 15, 15},
		{0, 1, 0},
	}
	for i, what := range []string{"codebook", "size", "sum", "revived"} {
		if d := maxAbsDiff(flat64(t, out[i]), want[i]); d > 1e-12 {
			t.Errorf("%s = %v, want %v", what, flat64(t, out[i]), want[i])
		}
	}
}

// TestUsageStatistics checks Perplexity, ActiveCodes and DiversityPenalty on
// hand-computed distributions.
func TestUsageStatistics(t *testing.T) {
	h := -(0.75*math.Log(0.75) + 0.25*math.Log(0.25))
	tests := []struct {
		counts     []float64
		perplexity float64
		active     float64
	}{
		{[]float64{2, 2, 0, 0}, 2, 2},
		{[]float64{4, 0, 0}, 1, 1},
		{[]float64{1, 1, 1, 1}, 4, 4},
		{[]float64{3, 1}, math.Exp(h), 2},
	}
	for _, tc := range tests {
		out := MustNewExec(testBackend(), func(c *Node) []*Node {
			return []*Node{Perplexity(c), ActiveCodes(c)}
		}).MustCall(tensors.FromValue(tc.counts))
		if p := flat64(t, out[0])[0]; math.Abs(p-tc.perplexity) > 1e-12 {
			t.Errorf("Perplexity(%v) = %g, want %g", tc.counts, p, tc.perplexity)
		}
		if a := flat64(t, out[1])[0]; a != tc.active {
			t.Errorf("ActiveCodes(%v) = %g, want %g", tc.counts, a, tc.active)
		}
	}
	// Usage with a mask: tokens (0, 2, 2, 1), frame 3 padded → counts (1, 0, 2).
	u := MustNewExec(testBackend(), func(tok, mask *Node) *Node {
		return Usage(tok, 3, mask, mask.DType())
	}).MustCall(tensors.FromValue([]int32{0, 2, 2, 1}), tensors.FromValue([]float64{1, 1, 1, 0}))[0]
	if d := maxAbsDiff(flat64(t, u), []float64{1, 0, 2}); d != 0 {
		t.Errorf("Usage = %v, want [1 0 2]", flat64(t, u))
	}
	// Diversity penalty: uniform ρ → 0; all mass on one code → log K.
	k := 4
	uniform := make([]float64, 2*k)
	peaked := make([]float64, 2*k)
	for i := range uniform {
		uniform[i] = math.Log(1 / float64(k))
		peaked[i] = math.Inf(-1)
	}
	peaked[1], peaked[k+1] = 0, 0
	for _, tc := range []struct {
		logRho []float64
		want   float64
	}{{uniform, 0}, {peaked, math.Log(float64(k))}} {
		got := MustNewExec(testBackend(), func(lr *Node) *Node { return DiversityPenalty(lr, nil) }).
			MustCall(mat(tc.logRho, 2, k))[0]
		if v := flat64(t, got)[0]; math.Abs(v-tc.want) > 1e-12 {
			t.Errorf("DiversityPenalty = %g, want %g", v, tc.want)
		}
	}
}

// TestDiversityPenaltyGradient checks log K − H(ρ̄) and its gradient against a direct
// computation and central differences (float64, with a padded frame holding NaN), and
// that the float32 gradient stays finite at near-collapse: a code whose mean posterior
// is a denormal (one frame of 64 at log ρ = −86) made the gradient NaN
// before ρ̄ was computed in log space.
func TestDiversityPenaltyGradient(t *testing.T) {
	const b, k = 4, 3
	rng := rand.New(rand.NewPCG(21, 22))
	logRho := randLogRho(rng, b, k)
	mask := []float64{1, 1, 1, 0}
	logRho[3*k+1] = math.NaN() // padding: anything
	direct := func(lr []float64) float64 {
		h := 0.0
		for j := range k {
			bar := 0.0
			for i := range 3 {
				bar += math.Exp(lr[i*k+j]) / 3
			}
			h -= bar * math.Log(bar)
		}
		return math.Log(k) - h
	}
	exec := MustNewExec(testBackend(), func(lr, m *Node) []*Node {
		d := DiversityPenalty(lr, m)
		return []*Node{d, Gradient(d, lr)[0]}
	})
	out := exec.MustCall(mat(logRho, b, k), tensors.FromValue(mask))
	if v, want := flat64(t, out[0])[0], direct(logRho); math.Abs(v-want) > 1e-12 {
		t.Errorf("DiversityPenalty = %.15g, want %.15g", v, want)
	}
	grad := flat64(t, out[1])
	const h = 1e-6
	for i := range 3 * k {
		x := slices.Clone(logRho)
		x[i] += h
		up := direct(x)
		x[i] -= 2 * h
		fd := (up - direct(x)) / (2 * h)
		if math.Abs(grad[i]-fd) > 1e-7 {
			t.Errorf("∂/∂logρ[%d] = %.9g, central difference %.9g", i, grad[i], fd)
		}
	}
	for i := 3 * k; i < b*k; i++ {
		if grad[i] != 0 {
			t.Errorf("padded frame: gradient %g at %d, want 0", grad[i], i)
		}
	}

	// float32 near-collapse: 64 frames, code 2 at log ρ = −86 on one of them (ρ̄_2 =
	// 7e-40, a denormal whose reciprocal overflows), far below on the others.
	const n = 64
	lr32 := make([]float32, n*k)
	for i := range n {
		lr32[i*k+1], lr32[i*k+2] = -2000, -3000
	}
	lr32[2] = -86
	out = MustNewExec(testBackend(), func(lr *Node) []*Node {
		d := DiversityPenalty(lr, nil)
		return []*Node{d, Gradient(d, lr)[0]}
	}).MustCall(tensors.FromFlatDataAndDimensions(lr32, n, k))
	if v := float64(out[0].Value().(float32)); math.Abs(v-math.Log(k)) > 1e-6 {
		t.Errorf("near-collapse DiversityPenalty = %g, want log 3", v)
	}
	for i, g := range tensors.MustCopyFlatData[float32](out[1]) {
		if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
			t.Fatalf("near-collapse gradient[%d] = %g, want finite", i, g)
		}
	}
}

// TestLosses checks the reconstruction and commitment losses with and without a mask.
func TestLosses(t *testing.T) {
	x := []float64{0, 1, 1, 0, 0.5, 0.5}   // 3 frames of 2 pixels
	xh := []float64{0, 0, 1, 1, 0.5, 0.25} // per-frame MSE: 0.5, 0.5, 0.03125
	z := []float64{1, 2, 3, 4, 5, 6}
	q := []float64{1, 1, 3, 3, 5, 8} // per-frame mean sq: 0.5, 0.5, 2
	mask := []float64{1, 0, 1}
	out := MustNewExec(testBackend(), func(x, xh, z, q, mask *Node) []*Node {
		return []*Node{ReconstructionLoss(x, xh, nil), ReconstructionLoss(x, xh, mask),
			CommitmentLoss(z, q, nil), CommitmentLoss(z, q, mask)}
	}).MustCall(mat(x, 3, 2), mat(xh, 3, 2), mat(z, 3, 2), mat(q, 3, 2), tensors.FromValue(mask))
	want := []float64{(0.5 + 0.5 + 0.03125) / 3, (0.5 + 0.03125) / 2, 3.0 / 3, 2.5 / 2}
	for i, w := range want {
		if g := flat64(t, out[i])[0]; math.Abs(g-w) > 1e-12 {
			t.Errorf("loss %d = %g, want %g", i, g, w)
		}
	}
}

// TestKMeansRecoversClusters: three well separated Gaussian blobs.
func TestKMeansRecoversClusters(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	centres := [][]float32{{0, 0}, {10, 0}, {0, 10}}
	var pts [][]float32
	for i := range 90 {
		c := centres[i%3]
		pts = append(pts, []float32{c[0] + float32(rng.NormFloat64()*0.3), c[1] + float32(rng.NormFloat64()*0.3)})
	}
	got, counts := KMeans(pts, 3, 20, rand.New(rand.NewPCG(1, 2)))
	for _, c := range centres {
		best := math.Inf(1)
		for _, g := range got {
			best = min(best, sqDist(c, g))
		}
		if best > 0.1 {
			t.Errorf("no centre near %v: got %v", c, got)
		}
	}
	for j, n := range counts {
		if n != 30 {
			t.Errorf("cluster %d has %d points, want 30", j, n)
		}
	}
}

// TestDiversityPenaltyTo checks KL(ρ̄ ‖ share) against a direct float64 computation and
// finite differences, ignores padded frames, and equals DiversityPenalty for a uniform
// share.
func TestDiversityPenaltyTo(t *testing.T) {
	const b, k = 4, 3
	rng := rand.New(rand.NewPCG(23, 24))
	logRho := randLogRho(rng, b, k)
	mask := []float64{1, 1, 1, 0}
	logRho[3*k+2] = math.NaN() // padding: anything
	share := []float64{0.6, 0.3, 0.1}
	direct := func(lr, s []float64) float64 {
		kl := 0.0
		for j := range k {
			bar := 0.0
			for i := range 3 {
				bar += math.Exp(lr[i*k+j]) / 3
			}
			kl += bar * math.Log(bar/s[j])
		}
		return kl
	}
	exec := MustNewExec(testBackend(), func(lr, m *Node) []*Node {
		d := DiversityPenaltyTo(lr, m, share)
		return []*Node{d, Gradient(d, lr)[0], DiversityPenaltyTo(lr, m, []float64{1. / 3, 1. / 3, 1. / 3}), DiversityPenalty(lr, m)}
	})
	out := exec.MustCall(mat(logRho, b, k), tensors.FromValue(mask))
	if v, want := flat64(t, out[0])[0], direct(logRho, share); math.Abs(v-want) > 1e-12 {
		t.Errorf("DiversityPenaltyTo = %.15g, want %.15g", v, want)
	}
	if u, d := flat64(t, out[2])[0], flat64(t, out[3])[0]; math.Abs(u-d) > 1e-12 {
		t.Errorf("uniform share: %.15g, DiversityPenalty %.15g", u, d)
	}
	grad := flat64(t, out[1])
	const h = 1e-6
	for i := range 3 * k {
		x := slices.Clone(logRho)
		x[i] += h
		up := direct(x, share)
		x[i] -= 2 * h
		if fd := (up - direct(x, share)) / (2 * h); math.Abs(grad[i]-fd) > 1e-7 {
			t.Errorf("∂/∂logρ[%d] = %.10g, finite difference %.10g", i, grad[i], fd)
		}
	}
	if g := grad[3*k:]; g[0] != 0 || g[1] != 0 || g[2] != 0 {
		t.Errorf("padded frame's gradient %v, want 0", g)
	}
}

// randLogRho is b rows of k log posteriors: log-softmax of logits drawn by randSlice.
func randLogRho(rng *rand.Rand, b, k int) []float64 {
	logits := randSlice(rng, b*k, 2)
	logRho := make([]float64, b*k)
	for i := range b {
		lse := 0.0
		for j := range k {
			lse += math.Exp(logits[i*k+j])
		}
		lse = math.Log(lse)
		for j := range k {
			logRho[i*k+j] = logits[i*k+j] - lse
		}
	}
	return logRho
}
