package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// handImages is a 2-image 2×3 stack and its IDX bytes, written out by hand from
// the format's definition (magic 0x00000803, three big-endian uint32 sizes,
// pixels row-major).
var (
	handImages = &Images{N: 2, Rows: 2, Cols: 3, Pixels: []uint8{0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255}}
	handBytes  = []byte{
		0, 0, 8, 3, // magic
		0, 0, 0, 2, // N
		0, 0, 0, 2, // rows
		0, 0, 0, 3, // cols
		0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255,
	}
	handLabels      = []uint8{7, 0, 9}
	handLabelsBytes = []byte{0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9}
)

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t testing.TB, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEncodeMatchesHandBytes(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeImages(&buf, handImages); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), handBytes) {
		t.Errorf("EncodeImages = % x, want % x", buf.Bytes(), handBytes)
	}
	buf.Reset()
	if err := EncodeLabels(&buf, handLabels); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), handLabelsBytes) {
		t.Errorf("EncodeLabels = % x, want % x", buf.Bytes(), handLabelsBytes)
	}
}

func TestDecodeHandBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"raw", handBytes},
		{"gzip", gz(t, handBytes)},
	} {
		im, err := DecodeImages(bytes.NewReader(tc.data), tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if im.N != 2 || im.Rows != 2 || im.Cols != 3 || !bytes.Equal(im.Pixels, handImages.Pixels) {
			t.Errorf("%s: got %+v, want %+v", tc.name, im, handImages)
		}
		if got := im.Image(1); !bytes.Equal(got, []uint8{250, 251, 252, 253, 254, 255}) {
			t.Errorf("%s: Image(1) = %v", tc.name, got)
		}
	}
	for _, data := range [][]byte{handLabelsBytes, gz(t, handLabelsBytes)} {
		l, err := DecodeLabels(bytes.NewReader(data), "labels")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(l, handLabels) {
			t.Errorf("labels = %v, want %v", l, handLabels)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	big := &Images{N: 300, Rows: 28, Cols: 28, Pixels: make([]uint8, 300*28*28)}
	for i := range big.Pixels {
		big.Pixels[i] = uint8(i*7 + i/13)
	}
	bigLabels := make([]uint8, 300)
	for i := range bigLabels {
		bigLabels[i] = uint8(i % 10)
	}
	empty := &Images{N: 0, Rows: 28, Cols: 28, Pixels: []uint8{}}
	for _, tc := range []struct {
		file   string
		im     *Images
		labels []uint8
		gzip   bool
	}{
		{"hand", handImages, handLabels, false},
		{"hand.gz", handImages, handLabels, true},
		{"big", big, bigLabels, false},
		{"big.gz", big, bigLabels, true},
		{"empty", empty, []uint8{}, false},
		{"empty.gz", empty, []uint8{}, true},
	} {
		ip := filepath.Join(dir, "images-"+tc.file)
		lp := filepath.Join(dir, "labels-"+tc.file)
		if err := WriteImages(ip, tc.im); err != nil {
			t.Fatal(err)
		}
		if err := WriteLabels(lp, tc.labels); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(ip)
		if isGz := raw[0] == 0x1f && raw[1] == 0x8b; isGz != tc.gzip {
			t.Errorf("%s: gzip-compressed = %v, want %v", ip, isGz, tc.gzip)
		}
		im, err := ReadImages(ip)
		if err != nil {
			t.Fatal(err)
		}
		if im.N != tc.im.N || im.Rows != tc.im.Rows || im.Cols != tc.im.Cols || !bytes.Equal(im.Pixels, tc.im.Pixels) {
			t.Errorf("%s: round trip changed the images: %d×%d×%d", ip, im.N, im.Rows, im.Cols)
		}
		l, err := ReadLabels(lp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(l, tc.labels) {
			t.Errorf("%s: round trip changed the labels", lp)
		}
	}
	// Atomic writes leave no temporary files behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriteInvalidImagesLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, im := range []*Images{
		{N: 2, Rows: 2, Cols: 3, Pixels: make([]uint8, 11)},
		{N: 1, Rows: 0, Cols: 3, Pixels: nil},
		{N: -1, Rows: 1, Cols: 1},
		nil,
	} {
		path := filepath.Join(dir, "bad.gz")
		if err := WriteImages(path, im); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("WriteImages(%+v) error = %v, want one naming %s", im, err, path)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	// An existing file survives a failed write.
	path := filepath.Join(dir, "keep")
	writeFile(t, path, []byte("old"))
	if err := WriteImages(path, &Images{N: 1, Rows: 1, Cols: 1}); err == nil {
		t.Fatal("want an error")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("failed write changed %s to %q", path, b)
	}
}

// corrupt returns a copy of b with f applied.
func corrupt(b []byte, f func([]byte) []byte) []byte { return f(slices.Clone(b)) }

func TestDecodeErrors(t *testing.T) {
	set := func(i int, v byte) func([]byte) []byte {
		return func(b []byte) []byte { b[i] = v; return b }
	}
	gzHand := gz(t, handBytes)
	for _, tc := range []struct {
		name   string
		data   []byte
		labels bool // decode as labels
		want   error
		substr string
	}{
		{"empty", nil, false, ErrTruncated, "empty file"},
		{"short magic", handBytes[:3], false, ErrTruncated, "magic number"},
		{"short sizes", handBytes[:10], false, ErrTruncated, "header sizes"},
		{"truncated pixels", handBytes[:len(handBytes)-1], false, ErrTruncated, "2 images of 2×3 (12 bytes) but the data ends after 11 bytes"},
		{"header only", handBytes[:16], false, ErrTruncated, "ends after 0 bytes"},
		{"trailing byte", append(slices.Clone(handBytes), 0), false, ErrFormat, "trailing data"},
		{"labels file as images", handLabelsBytes, false, ErrFormat, "labels file"},
		{"images file as labels", handBytes, true, ErrFormat, "images file"},
		{"not IDX", []byte("P5 28 28 255\n...."), false, ErrFormat, "not an IDX file"},
		{"element type float", corrupt(handBytes, set(2, 0x0d)), false, ErrFormat, "element type 0x0d"},
		{"two dimensions", corrupt(handBytes, set(3, 2)), false, ErrFormat, "2 dimensions"},
		{"zero rows", corrupt(handBytes, set(11, 0)), false, ErrFormat, "image size 0×3"},
		{"huge header", corrupt(handBytes, func(b []byte) []byte { b[4], b[8], b[12] = 0xff, 0xff, 0xff; return b }), false, ErrFormat, "promise more than"},
		{"big N, short data", corrupt(handBytes, set(4, 0x10)), false, ErrTruncated, "268435458 images"},
		{"truncated labels", handLabelsBytes[:len(handLabelsBytes)-2], true, ErrTruncated, "3 labels"},
		{"truncated gzip", gzHand[:len(gzHand)-10], false, ErrTruncated, ""},
		{"gzip CRC", corrupt(gzHand, func(b []byte) []byte { b[len(b)-6] ^= 0xff; return b }), false, ErrFormat, "corrupt gzip"},
		{"gzip header", corrupt(gzHand, set(2, 7)), false, ErrFormat, "gzip header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), "f-idx3-ubyte"), tc.data)
			var err error
			if tc.labels {
				_, err = ReadLabels(path)
			} else {
				_, err = ReadImages(path)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %q does not wrap %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %q does not start with the file name", err)
			}
			if !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("error %q does not say %q", err, tc.substr)
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	if _, err := ReadImages(path); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadImages(missing) = %v", err)
	}
}
