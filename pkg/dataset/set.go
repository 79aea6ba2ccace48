package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// Split selects the training or the held-out test part of a data set.
type Split string

const (
	Train Split = "train"
	Test  Split = "test"
)

// ModulePath is the Go module whose root holds the data/ directory.
const ModulePath = "github.com/gradcscg/gradcscg"

// DataEnv names the environment variable that overrides the data directory
// (the directory holding mnist/); by default it is <repository root>/data.
const DataEnv = "GRADCSCG_DATA"

// FashionDir is where Debian's dataset-fashion-mnist package installs the
// Fashion-MNIST IDX files.
const FashionDir = "/usr/share/datasets/fashion-mnist"

// fashionDir is FashionDir; tests point it elsewhere.
var fashionDir = FashionDir

// MNISTClassNames and FashionClassNames are the class names by label.
var (
	MNISTClassNames   = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	FashionClassNames = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
		"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
)

// Set is one split of a labelled image data set: image i has class Labels[i],
// with 0 <= Labels[i] < NumClasses.
type Set struct {
	Name       string // "mnist", "fashion" or the directory it was read from
	Split      Split
	Images     *Images
	Labels     []uint8 // [Images.N]
	NumClasses int
	ClassNames []string // [NumClasses]
	ImagesPath string   // the file the images were read from
	LabelsPath string   // the file the labels were read from
}

// Load returns one split of a data set. name is
//
//   - "mnist": the repository's data/mnist (10,000 MNIST digits, 80/20 per class;
//     see data/mnist/README.md), verified against its SHA256SUMS on every load.
//     The data directory is $GRADCSCG_DATA if set, else the data/ directory of
//     the repository root: the first directory at or above the working
//     directory (then the executable's, then this source file's) whose go.mod
//     declares module github.com/gradcscg/gradcscg.
//   - "fashion": Fashion-MNIST from /usr/share/datasets/fashion-mnist, installed by
//     `make setup` (Debian's dataset-fashion-mnist package); train is its 60,000
//     training images, test its 10,000 t10k images.
//   - a directory holding standard IDX files, e.g. the full MNIST: for the train
//     split train-images-idx3-ubyte and train-labels-idx1-ubyte, for the test split
//     t10k-… or test-… (also the "train-images.idx3-ubyte" spelling), each raw
//     or .gz. A SHA256SUMS file there is verified. NumClasses is 10 unless a
//     label of either split is larger (then the largest label + 1).
func Load(name string, split Split) (*Set, error) {
	if split != Train && split != Test {
		return nil, fmt.Errorf("dataset %s: split %q: want %q or %q", name, split, Train, Test)
	}
	switch name {
	case "mnist":
		dataDir, err := DataDir()
		if err != nil {
			return nil, fmt.Errorf("dataset mnist: %w", err)
		}
		dir := filepath.Join(dataDir, "mnist")
		listed, err := verifyChecksums(dir)
		if err != nil {
			return nil, fmt.Errorf("dataset mnist: %w", err)
		}
		s, err := loadDir(dir, split, MNISTClassNames, listed)
		if err != nil {
			return nil, err
		}
		s.Name = "mnist"
		return s, nil
	case "fashion", "fashion-mnist":
		if _, err := os.Stat(fashionDir); err != nil {
			return nil, fmt.Errorf("dataset fashion: Fashion-MNIST is not installed (%v): run `make setup` "+
				"(or `sudo apt-get install dataset-fashion-mnist`), or pass the directory holding its IDX files", err)
		}
		s, err := loadDir(fashionDir, split, FashionClassNames, nil)
		if err != nil {
			return nil, err
		}
		if err := checkContent(s, fashionContent, fashionSource); err != nil {
			return nil, err
		}
		s.Name = "fashion"
		return s, nil
	}
	if st, err := os.Stat(name); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("dataset %q: want \"mnist\", \"fashion\" or a directory holding IDX files", name)
	}
	var listed map[string]bool
	if _, err := os.Lstat(filepath.Join(name, ChecksumFile)); err == nil {
		if listed, err = verifyChecksums(name); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", name, err)
		}
	}
	return loadDir(name, split, nil, listed)
}

// loadDir reads one split's images and labels from dir. classNames fixes the
// classes; nil derives them from the labels of both splits. listed, if not nil, holds
// the only file names that may be read: those of the directory's checked checksum
// list (a file beside them, such as a raw copy of a listed .gz, is never read).
func loadDir(dir string, split Split, classNames []string, listed map[string]bool) (*Set, error) {
	imgPath, err := findIDX(dir, split, "images", "idx3-ubyte", listed)
	if err != nil {
		return nil, err
	}
	lblPath, err := findIDX(dir, split, "labels", "idx1-ubyte", listed)
	if err != nil {
		return nil, err
	}
	im, err := ReadImages(imgPath)
	if err != nil {
		return nil, err
	}
	labels, err := ReadLabels(lblPath)
	if err != nil {
		return nil, err
	}
	if len(labels) != im.N {
		return nil, fmt.Errorf("%s has %d labels but %s has %d images: %w", lblPath, len(labels), imgPath, im.N, ErrFormat)
	}
	maxLabel := maxOf(labels)
	if classNames == nil {
		numClasses := max(10, int(maxLabel)+1)
		// The other split's labels fix the class count too, so train and test agree.
		other := Train
		if split == Train {
			other = Test
		}
		if p, err := findIDX(dir, other, "labels", "idx1-ubyte", listed); err == nil {
			if l, err := ReadLabels(p); err == nil {
				numClasses = max(numClasses, int(maxOf(l))+1)
			}
		}
		for c := range numClasses {
			classNames = append(classNames, strconv.Itoa(c))
		}
	}
	if im.N > 0 && int(maxLabel) >= len(classNames) {
		return nil, fmt.Errorf("%s: label %d is out of range: the data set has %d classes: %w", lblPath, maxLabel, len(classNames), ErrFormat)
	}
	return &Set{Name: dir, Split: split, Images: im, Labels: labels, NumClasses: len(classNames), ClassNames: classNames,
		ImagesPath: imgPath, LabelsPath: lblPath}, nil
}

func maxOf(l []uint8) uint8 {
	var m uint8
	for _, v := range l {
		m = max(m, v)
	}
	return m
}

// findIDX returns the path of a split's images or labels file in dir, trying the
// usual names: train-images-idx3-ubyte, train-images.idx3-ubyte, t10k-…, test-…,
// each raw or .gz; only those of listed when it is not nil.
func findIDX(dir string, split Split, kind, ext string, listed map[string]bool) (string, error) {
	prefixes := []string{"train"}
	if split == Test {
		prefixes = []string{"t10k", "test"}
	}
	var tried []string
	for _, p := range prefixes {
		for _, sep := range []string{"-", "."} {
			base := p + "-" + kind + sep + ext
			for _, suffix := range []string{"", ".gz"} {
				path := filepath.Join(dir, base+suffix)
				if listed != nil && !listed[base+suffix] {
					continue
				}
				if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
					return path, nil
				}
			}
			tried = append(tried, base+"[.gz]")
		}
	}
	among := ""
	if listed != nil {
		among = " among the files " + ChecksumFile + " lists"
	}
	return "", fmt.Errorf("%s: no %s %s file (looked for %s%s): %w", dir, split, kind, strings.Join(tried, ", "), among, fs.ErrNotExist)
}

// DataDir returns the data directory: $GRADCSCG_DATA if set, else <root>/data
// for the repository root found by [RepoRoot].
func DataDir() (string, error) {
	if d := os.Getenv(DataEnv); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("$%s=%q is not a directory", DataEnv, d)
		}
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "data"), nil
}

// RepoRoot returns the root of the gradcscg repository: the first directory at
// or above the working directory whose go.mod declares module
// github.com/gradcscg/gradcscg; failing that, the same search from the running
// executable's directory and from this source file's directory (which finds the
// repository for tests and `go run` wherever the working directory is).
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, s := range starts {
		if root, ok := findModuleRoot(s); ok {
			return root, nil
		}
	}
	return "", errors.New("the gradcscg repository root (a go.mod declaring module " + ModulePath +
		") is not at or above the working directory; run inside the repository or set $" + DataEnv)
}

// findModuleRoot walks up from dir to a go.mod declaring ModulePath.
func findModuleRoot(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if goModDeclares(filepath.Join(dir, "go.mod"), ModulePath) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// goModLimit bounds a go.mod file read to find the repository root.
var goModLimit = inputfile.Limit{Format: "go.mod file", Bytes: 1 << 20}

// goModDeclares reports whether the go.mod at path has the line "module <mod>".
func goModDeclares(path, mod string) bool {
	f, err := inputfile.Open(path, goModLimit)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == mod
		}
	}
	return false
}
