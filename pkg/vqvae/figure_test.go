package vqvae

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/figures"
)

// TestReconstructionFigure checks the geometry and pixels of the reconstruction PNG
// (pkg/figures) and its input validation.
func TestReconstructionFigure(t *testing.T) {
	const side, n = 4, 3
	in := make([]float32, n*side*side)
	rec := make([]float32, n*side*side)
	for i := range in {
		in[i] = float32(i%17) / 16
		rec[i] = 1 - in[i]
	}
	img, err := figures.Reconstructions(in, rec, []int{0, 5, 12}, side, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Width: margins 2·6 + row labels 44 + 3 cells of 12 + 2 gaps of 4 = 100.
	// Height: 2·6 + 2 cells of 12 + gap 4 + label row 15 = 55.
	if b := img.Bounds(); b.Dx() != 100 || b.Dy() != 55 {
		t.Fatalf("figure is %dx%d, want 100x55", b.Dx(), b.Dy())
	}
	// Image 1, pixel (y=2, x=3): input top row, reconstruction second row.
	i, y, x := 1, 2, 3
	x0 := 6 + 44 + i*(12+4)
	v := in[i*16+y*4+x]
	if got := img.RGBAAt(x0+x*3+1, 6+y*3+1).R; got != uint8(v*255+0.5) {
		t.Errorf("input pixel = %d, want %d", got, uint8(v*255+0.5))
	}
	if got := img.RGBAAt(x0+x*3, 6+12+4+y*3+2).R; got != uint8((1-v)*255+0.5) {
		t.Errorf("reconstruction pixel = %d, want %d", got, uint8((1-v)*255+0.5))
	}
	for _, bad := range []func() error{
		func() error { _, err := figures.Reconstructions(in, rec[:10], []int{0, 1, 2}, side, 3); return err },
		func() error { _, err := figures.Reconstructions(in, rec, []int{0, 1}, side, 3); return err },
		func() error { _, err := figures.Reconstructions(in[:5], rec[:5], []int{0}, side, 3); return err },
	} {
		if bad() == nil {
			t.Error("mismatched inputs: no error")
		}
	}
	path := filepath.Join(t.TempDir(), "recon.png")
	if err := figures.WriteReconstructionsPNG(path, in, rec, []int{0, 5, 12}, side); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Bounds().Dx() != 100 {
		t.Errorf("PNG width %d", dec.Bounds().Dx())
	}
}
