package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRawBesideChecksummed: a raw train-images-idx3-ubyte beside the checksummed .gz
// (as `gunzip -k` leaves it), here a damaged copy, is never read: Load returns the
// .gz's images, for the repository's data set and for a directory with a checksum
// list alike; without the .gz, the raw file alone is refused (not listed).
func TestRawBesideChecksummed(t *testing.T) {
	data := t.TempDir()
	mnist := copyMNIST(t)
	if err := os.Rename(mnist, filepath.Join(data, "mnist")); err != nil {
		t.Fatal(err)
	}
	mnist = filepath.Join(data, "mnist")
	t.Setenv(DataEnv, data)
	want, err := Load("mnist", Train)
	if err != nil {
		t.Fatal(err)
	}
	damaged := *want.Images
	damaged.Pixels = slices.Clone(want.Images.Pixels)
	for i := range damaged.Pixels[:784] {
		damaged.Pixels[i] = 255 - damaged.Pixels[i]
	}
	raw := filepath.Join(mnist, strings.TrimSuffix(TrainImagesFile, ".gz"))
	if err := WriteImages(raw, &damaged); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mnist", mnist} {
		got, err := Load(name, Train)
		if err != nil {
			t.Fatalf("Load(%s): %v", name, err)
		}
		if !slices.Equal(got.Images.Pixels, want.Images.Pixels) || got.ImagesPath != filepath.Join(mnist, TrainImagesFile) {
			t.Errorf("Load(%s) read %s, not the checksummed %s", name, got.ImagesPath, TrainImagesFile)
		}
	}
	if err := os.Remove(filepath.Join(mnist, TrainImagesFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("mnist", Train); err == nil {
		t.Errorf("Load with the listed .gz gone read the unlisted raw file")
	}
}

// TestFashionContentChecked: Fashion-MNIST's files are checked against the content
// checksums of the Debian package: another valid IDX set in their place is refused,
// naming the file.
func TestFashionContentChecked(t *testing.T) {
	defer func(d string) { fashionDir = d }(fashionDir)
	fashionDir = t.TempDir()
	writeSet(t, fashionDir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", []uint8{0, 1, 2})
	_, err := Load("fashion", Train)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), filepath.Join(fashionDir, "train-images-idx3-ubyte.gz")) {
		t.Errorf("Load(fashion) of other files = %v, want ErrChecksum naming the images file", err)
	}
}

// TestCheckSide: images of another size than the configuration's side are one error
// naming the file, both sizes and the setting.
func TestCheckSide(t *testing.T) {
	dir := t.TempDir()
	writeSet(t, dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", []uint8{0, 1})
	s, err := Load(dir, Train)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBank(s)
	if err != nil {
		t.Fatal(err)
	}
	err = b.CheckSide(28, "vqvae.side")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "train-images-idx3-ubyte.gz")+" holds 1×2 images, but vqvae.side is 28") {
		t.Errorf("CheckSide = %v", err)
	}
	if err := b.CheckSide(28, ""); err == nil || !strings.Contains(err.Error(), "the VQ-VAE reads 28×28") {
		t.Errorf("CheckSide, fixed side = %v", err)
	}
	sq := &Set{Name: "sq", Images: &Images{N: 1, Rows: 3, Cols: 3, Pixels: make([]uint8, 9)}, Labels: []uint8{0}, NumClasses: 1}
	if b, err := NewBank(sq); err != nil || b.CheckSide(3, "vqvae.side") != nil {
		t.Errorf("3×3 images, side 3: %v", err)
	}
}
