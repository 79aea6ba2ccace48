package vqvae

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTeachStep: the cross-entropy and accuracy TeachStep reports (before its update)
// equal those computed from Encode's soft posterior and tokens of the same images;
// images without a target count in neither; teaching a fixed relabelling of the four
// bar patterns onto four fixed codes makes the hard tokens follow it, the codes
// unmoved; with SetTeachEMA the codes move.
func TestTeachStep(t *testing.T) {
	m, err := New(testBackend(), tinyConfig(4), 11)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	img, lab := tinyImages(rng, 48)
	if err := m.InitFromData(img); err != nil {
		t.Fatal(err)
	}
	_ = m.SetLearningRate(3e-3)
	target := func(lab []int) []int {
		tg := make([]int, len(lab))
		for i, l := range lab {
			tg[i] = (l + 1) % 4
		}
		return tg
	}
	tg := target(lab)
	for i := 0; i < len(tg); i += 5 {
		tg[i] = NoTarget
	}
	tokens, logRho, err := m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	ce, hit, n := 0.0, 0, 0
	for i, k := range tg {
		if k == NoTarget {
			continue
		}
		n++
		ce -= float64(logRho[i][k])
		if tokens[i] == k {
			hit++
		}
	}
	met, err := m.TeachStep(img, tg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := ce / float64(n); math.Abs(met.CE-want) > 1e-4*max(1, want) {
		t.Errorf("cross-entropy %g, from Encode %g", met.CE, want)
	}
	if want := float64(hit) / float64(n); math.Abs(met.Accuracy-want) > 1e-6 {
		t.Errorf("accuracy %g, from Encode %g", met.Accuracy, want)
	}
	if want := met.Rec + m.Config().Beta*met.Commit + 2*met.CE; math.Abs(met.Loss-want) > 1e-4*max(1, want) {
		t.Errorf("loss %g, want rec + β·commit + 2·CE = %g", met.Loss, want)
	}
	if m.Steps() != 1 {
		t.Errorf("%d steps in the history, want 1", m.Steps())
	}

	none := make([]int, len(tg))
	for i := range none {
		none[i] = NoTarget
	}
	if met, err := m.TeachStep(img, none, 2); err != nil || met.CE != 0 || met.Accuracy != 0 {
		t.Errorf("no targets: CE %g, accuracy %g, %v; want 0, 0", met.CE, met.Accuracy, err)
	}

	// Four fixed codes (the codebook stays as it is by default): the images learn to
	// land on their target's.
	rows := [][]float32{{2, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 2}}
	if err := m.SetCodebook(rows, []float64{1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		img, lab := tinyImages(rng, 32)
		if _, err := m.TeachStep(img, target(lab), 1); err != nil {
			t.Fatal(err)
		}
	}
	for k, row := range m.Codebook() {
		for j, v := range row {
			if v != rows[k][j] {
				t.Fatalf("code %d moved to %v with the codebook fixed", k, row)
			}
		}
	}
	img, lab = tinyImages(rng, 200)
	tokens, _, err = m.Encode(img)
	if err != nil {
		t.Fatal(err)
	}
	hit = 0
	for i, k := range target(lab) {
		if tokens[i] == k {
			hit++
		}
	}
	if acc := float64(hit) / float64(len(lab)); acc < 0.95 {
		t.Errorf("after teaching, %.3f of fresh images get their target token, want ≥ 0.95", acc)
	}
	// With SetTeachEMA the codebook follows the latents.
	m.SetTeachEMA(true)
	if _, err := m.TeachStep(img[:32*64], target(lab[:32]), 1); err != nil {
		t.Fatal(err)
	}
	moved := false
	for k, row := range m.Codebook() {
		for j, v := range row {
			moved = moved || v != rows[k][j]
		}
	}
	if !moved {
		t.Error("SetTeachEMA(true): the codebook did not move")
	}
}

// TestTeachStepBadInput: each bad argument is one error naming it.
func TestTeachStepBadInput(t *testing.T) {
	m, err := New(testBackend(), tinyConfig(4), 12)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := tinyImages(rand.New(rand.NewPCG(33, 34)), 4)
	for _, c := range []struct {
		targets []int
		weight  float64
		want    string
	}{
		{[]int{0, 1, 2}, 1, "3 targets for 4 images"},
		{[]int{0, 1, 4, 0}, 1, "target 4 of image 2"},
		{[]int{0, -2, 1, 0}, 1, "target -2 of image 1"},
		{[]int{0, 1, 2, 3}, -1, "weight -1"},
		{[]int{0, 1, 2, 3}, math.NaN(), "weight NaN"},
		{[]int{0, 1, 2, 3}, math.Inf(1), "weight +Inf"},
	} {
		if _, err := m.TeachStep(img, c.targets, c.weight); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("targets %v, weight %g: %v, want an error with %q", c.targets, c.weight, err, c.want)
		}
	}
	if _, err := m.TeachStep(img[:10], []int{0}, 1); err == nil || !strings.Contains(err.Error(), "TeachStep") {
		t.Errorf("10 values: %v", err)
	}
}
