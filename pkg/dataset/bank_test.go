package dataset

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// smallSet has 4 classes: class 0 has images {0, 3, 5}, class 1 {1, 4}, class 2
// none, class 3 {2}; image i's single pixel is 10*i.
func smallSet() *Set {
	labels := []uint8{0, 1, 3, 0, 1, 0}
	im := &Images{N: 6, Rows: 1, Cols: 1, Pixels: []uint8{0, 10, 20, 30, 40, 50}}
	return &Set{Name: "small", Split: Train, Images: im, Labels: labels, NumClasses: 4}
}

func TestBankGroupsByClass(t *testing.T) {
	b, err := NewBank(smallSet())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ class, count int }{{0, 3}, {1, 2}, {2, 0}, {3, 1}, {4, 0}, {-1, 0}} {
		if got := b.Count(tc.class); got != tc.count {
			t.Errorf("Count(%d) = %d, want %d", tc.class, got, tc.count)
		}
	}
	if b.NumClasses() != 4 || b.Len() != 6 || b.Rows() != 1 || b.Cols() != 1 {
		t.Errorf("NumClasses %d Len %d size %d×%d", b.NumClasses(), b.Len(), b.Rows(), b.Cols())
	}
	for _, tc := range []struct {
		classes []int
		want    string // "" = no error
	}{
		{[]int{0, 1, 3, 0}, ""},
		{[]int{0, 2}, "class 2 has no images"},
		{[]int{4}, "class 4 is out of range: the data set has 4 classes (0..3)"},
		{[]int{-1}, "class -1 is out of range"},
	} {
		err := b.Check(tc.classes)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%v) = %v, want %q", tc.classes, err, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []int{2, 4, -1} {
		if got := b.Sample(rng, c); got != -1 {
			t.Errorf("Sample(class %d) = %d, want -1", c, got)
		}
	}
}

func TestNewBankErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Set) *Set
		want string
	}{
		{"nil", func(*Set) *Set { return nil }, "nil set"},
		{"label count", func(s *Set) *Set { s.Labels = s.Labels[:5]; return s }, "5 labels for 6 images"},
		{"label range", func(s *Set) *Set { s.NumClasses = 3; return s }, "image 2 has label 3, want < NumClasses = 3"},
		{"pixels", func(s *Set) *Set { s.Images.Pixels = s.Images.Pixels[:5]; return s }, "len(Pixels) = 5"},
		{"no classes", func(s *Set) *Set { s.NumClasses = 0; return s }, "NumClasses = 0"},
	} {
		if _, err := NewBank(tc.mod(smallSet())); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewBank = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestBankSampleUniform draws many images of class 0 (images 0, 3, 5) and
// checks that each appears 1/3 of the time (chi-square, 2 degrees of freedom)
// and that every draw has the right class.
func TestBankSampleUniform(t *testing.T) {
	b, err := NewBank(smallSet())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const draws = 30000
	count := map[int]int{}
	for range draws {
		i := b.Sample(rng, 0)
		if b.Label(i) != 0 {
			t.Fatalf("Sample(class 0) = image %d of class %d", i, b.Label(i))
		}
		count[i]++
	}
	chi2 := 0.0
	for _, i := range []int{0, 3, 5} {
		d := float64(count[i]) - draws/3.0
		chi2 += d * d / (draws / 3.0)
	}
	// P(chi2 > 13.8) = 0.001 for 2 degrees of freedom.
	if len(count) != 3 || chi2 > 13.8 {
		t.Errorf("class-0 draws %v: chi2 = %.2f, want ≤ 13.8 over images {0,3,5}", count, chi2)
	}
}

func TestBankFramesOnMNIST(t *testing.T) {
	s, err := Load("mnist", Test)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBank(s)
	if err != nil {
		t.Fatal(err)
	}
	// An episode that visits a class-3 place 2000 times: about as many
	// distinct images as 2000 uniform draws from 207 give (207·(1-(1-1/207)^2000) ≈ 207),
	// all of class 3, plus some other classes.
	classes := make([]int, 2000)
	for t := range classes {
		classes[t] = 3
	}
	classes = append(classes, 0, 9, 5, 3)
	if err := b.Check(classes); err != nil {
		t.Fatal(err)
	}
	idx := b.Frames(rand.New(rand.NewPCG(3, 4)), classes)
	if len(idx) != len(classes) {
		t.Fatalf("Frames returned %d indices for %d visits", len(idx), len(classes))
	}
	distinct := map[int]bool{}
	for t2, i := range idx {
		if b.Label(i) != classes[t2] {
			t.Fatalf("visit %d: image %d has class %d, want %d", t2, i, b.Label(i), classes[t2])
		}
		if classes[t2] == 3 {
			distinct[i] = true
		}
	}
	if n := len(distinct); n < 200 || n > b.Count(3) {
		t.Errorf("2000 class-3 visits drew %d distinct images, want ≈ %d", n, b.Count(3))
	}
	// Same seed, same frames.
	again := b.Frames(rand.New(rand.NewPCG(3, 4)), classes)
	for t2 := range idx {
		if idx[t2] != again[t2] {
			t.Fatal("Frames is not reproducible for a fixed seed")
		}
	}
}

func TestBankPixelsAndFloat(t *testing.T) {
	im := &Images{N: 2, Rows: 1, Cols: 3, Pixels: []uint8{0, 51, 255, 1, 2, 128}}
	b, err := NewBank(&Set{Name: "px", Images: im, Labels: []uint8{1, 0}, NumClasses: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Pixels(1); len(got) != 3 || got[0] != 1 || got[2] != 128 {
		t.Errorf("Pixels(1) = %v", got)
	}
	dst := make([]float32, 4)
	dst[3] = -1
	b.Float(0, dst)
	if dst[0] != 0 || dst[1] != 0.2 || dst[2] != 1 || dst[3] != -1 {
		t.Errorf("Float(0) = %v, want [0 0.2 1] and dst[3] untouched", dst)
	}
	batch := b.Floats([]int{1, 0, 1}, nil)
	want := []float32{1.0 / 255, 2.0 / 255, 128.0 / 255, 0, 0.2, 1, 1.0 / 255, 2.0 / 255, 128.0 / 255}
	if len(batch) != len(want) {
		t.Fatalf("Floats: %d values, want %d", len(batch), len(want))
	}
	for i := range want {
		if batch[i] != want[i] {
			t.Errorf("Floats[%d] = %v, want %v", i, batch[i], want[i])
		}
	}
	if reused := b.Floats([]int{0}, batch); &reused[0] != &batch[0] || len(reused) != 3 {
		t.Error("Floats did not reuse a large enough dst")
	}
}
