package dataset

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Bank groups a split's images by class and draws observation images: every
// visit to a place of class d shows a fresh image x_t ~ D_d, drawn uniformly with
// replacement from the split's images of class d (paper Section 2.11, "Image"
// observation model). A Bank shares the Set's pixels; it
// is safe for concurrent use with separate random sources.
type Bank struct {
	set     *Set
	byClass [][]int32 // [NumClasses][Count(class)]: image indices of each class, ascending
}

// NewBank indexes the images of s by class.
func NewBank(s *Set) (*Bank, error) {
	if s == nil || s.Images == nil {
		return nil, errors.New("bank: nil set")
	}
	if err := s.Images.Validate(); err != nil {
		return nil, fmt.Errorf("bank %s: %w", s.Name, err)
	}
	if len(s.Labels) != s.Images.N {
		return nil, fmt.Errorf("bank %s: %d labels for %d images", s.Name, len(s.Labels), s.Images.N)
	}
	if s.NumClasses <= 0 {
		return nil, fmt.Errorf("bank %s: NumClasses = %d must be positive", s.Name, s.NumClasses)
	}
	b := &Bank{set: s, byClass: make([][]int32, s.NumClasses)}
	for i, l := range s.Labels {
		if int(l) >= s.NumClasses {
			return nil, fmt.Errorf("bank %s: image %d has label %d, want < NumClasses = %d", s.Name, i, l, s.NumClasses)
		}
		b.byClass[l] = append(b.byClass[l], int32(i))
	}
	return b, nil
}

// Set returns the set the bank draws from.
func (b *Bank) Set() *Set { return b.set }

// NumClasses is the number of classes, whether or not each has images.
func (b *Bank) NumClasses() int { return len(b.byClass) }

// Count is the number of images of class (0 for a class out of range).
func (b *Bank) Count(class int) int {
	if class < 0 || class >= len(b.byClass) {
		return 0
	}
	return len(b.byClass[class])
}

// Len is the total number of images.
func (b *Bank) Len() int { return b.set.Images.N }

// Rows and Cols are the image size.
func (b *Bank) Rows() int { return b.set.Images.Rows }
func (b *Bank) Cols() int { return b.set.Images.Cols }

// Check returns an error naming the first class in classes that is out of range
// or has no image; call it once before [Bank.Sample] or [Bank.Frames].
func (b *Bank) Check(classes []int) error {
	for _, c := range classes {
		if c < 0 || c >= len(b.byClass) {
			return fmt.Errorf("bank %s: class %d is out of range: the data set has %d classes (0..%d)",
				b.set.Name, c, len(b.byClass), len(b.byClass)-1)
		}
		if len(b.byClass[c]) == 0 {
			return fmt.Errorf("bank %s (%s split): class %d has no images", b.set.Name, b.set.Split, c)
		}
	}
	return nil
}

// CheckSide returns an error naming the set's image file, its image size and side
// unless the images are side×side pixels. setting names the configuration field that
// sets side, for the message; "" when side is fixed.
func (b *Bank) CheckSide(side int, setting string) error {
	if b.Rows() == side && b.Cols() == side {
		return nil
	}
	file := b.set.ImagesPath
	if file == "" {
		file = "data set " + b.set.Name
	}
	if setting == "" {
		return fmt.Errorf("%s holds %d×%d images; the VQ-VAE reads %d×%d", file, b.Rows(), b.Cols(), side, side)
	}
	return fmt.Errorf("%s holds %d×%d images, but %s is %d (%d×%d images): use images of that size, or set %s to match them",
		file, b.Rows(), b.Cols(), setting, side, side, side, setting)
}

// Sample returns the index of an image of class drawn uniformly with
// replacement, or -1 if the class is out of range or empty (see [Bank.Check]).
func (b *Bank) Sample(rng *rand.Rand, class int) int {
	if class < 0 || class >= len(b.byClass) || len(b.byClass[class]) == 0 {
		return -1
	}
	idx := b.byClass[class]
	return int(idx[rng.IntN(len(idx))])
}

// Frames draws one fresh image per visit: idx[t] = Sample(rng, classes[t]) for
// the class sequence of an episode.
func (b *Bank) Frames(rng *rand.Rand, classes []int) (idx []int) {
	idx = make([]int, len(classes))
	for t, c := range classes {
		idx[t] = b.Sample(rng, c)
	}
	return idx
}

// Label is the class of image idx.
func (b *Bank) Label(idx int) int { return int(b.set.Labels[idx]) }

// Pixels returns image idx as a [Rows, Cols] row-major sub-slice of the set's
// pixels (no copy; do not modify).
func (b *Bank) Pixels(idx int) []uint8 { return b.set.Images.Image(idx) }

// Float writes image idx into dst[:Rows*Cols] scaled to [0, 1] (pixel/255).
func (b *Bank) Float(idx int, dst []float32) {
	px := b.Pixels(idx)
	dst = dst[:len(px)]
	for i, p := range px {
		dst[i] = unitScale[p]
	}
}

// unitScale[p] = p/255 rounded to float32, so 255 maps to exactly 1.
var unitScale = func() (t [256]float32) {
	for p := range t {
		t[p] = float32(p) / 255
	}
	return t
}()

// Floats writes the images idx into a batch of shape [len(idx), Rows, Cols]
// scaled to [0, 1], reusing dst when it is large enough, and returns it.
func (b *Bank) Floats(idx []int, dst []float32) []float32 {
	size := b.set.Images.Size()
	if cap(dst) < len(idx)*size {
		dst = make([]float32, len(idx)*size)
	}
	dst = dst[:len(idx)*size]
	for i, j := range idx {
		b.Float(j, dst[i*size:(i+1)*size])
	}
	return dst
}

// LoadBank loads split of the data set name (Load) and indexes it by class
// (NewBank), checking that every class in classes has an image (Bank.Check).
func LoadBank(name string, split Split, classes []int) (*Bank, error) {
	set, err := Load(name, split)
	if err != nil {
		return nil, err
	}
	bank, err := NewBank(set)
	if err != nil {
		return nil, err
	}
	if err := bank.Check(classes); err != nil {
		return nil, err
	}
	return bank, nil
}
