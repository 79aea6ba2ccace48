package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/atomicfile"
	"github.com/gradcscg/gradcscg/pkg/inputfile"
)

// The IDX format (LeCun et al., the MNIST distribution format): a 4-byte magic
// number 0x00 0x00 <type> <ndims>, then ndims big-endian uint32 sizes, then the
// elements in row-major order. We read and write the unsigned-byte type (0x08)
// only: images are idx3-ubyte [N, Rows, Cols], labels are idx1-ubyte [N].
const (
	idxTypeUByte = 0x08
	magicImages  = 0x00000803 // unsigned bytes, 3 dimensions
	magicLabels  = 0x00000801 // unsigned bytes, 1 dimension

	// maxPayload bounds the element count a header may promise (2 GiB: millions of
	// MNIST-sized images, more than any IDX data set gradcscg reads); a larger one is
	// treated as corruption rather than an allocation request. It bounds a gzip
	// stream's decompressed bytes too: the stream must end after the payload.
	maxPayload = 1 << 31
	// readChunk is the first allocation for a payload; it grows as data arrives,
	// so a corrupt header promising gigabytes costs nothing before the data ends.
	readChunk = 1 << 24
)

// Errors wrapped by this package's errors, for errors.Is.
var (
	// ErrFormat marks a file that is not a valid IDX file of the expected kind.
	ErrFormat = errors.New("invalid IDX file")
	// ErrTruncated marks a file that ends before its header's promised size.
	ErrTruncated = errors.New("truncated file")
	// ErrChecksum marks a file whose SHA-256 differs from the recorded one.
	ErrChecksum = errors.New("checksum mismatch")
)

// Images is a stack of N grey-scale images of Rows×Cols pixels.
// Pixels is row-major with shape [N, Rows, Cols]: pixel (r, c) of image i is
// Pixels[(i*Rows+r)*Cols+c]; 0 is background, 255 full ink (MNIST convention).
type Images struct {
	N, Rows, Cols int
	Pixels        []uint8
}

// Size is the number of pixels of one image, Rows*Cols.
func (im *Images) Size() int { return im.Rows * im.Cols }

// Image returns image i as a sub-slice of Pixels (no copy), shape [Rows, Cols].
func (im *Images) Image(i int) []uint8 {
	s := im.Size()
	return im.Pixels[i*s : (i+1)*s : (i+1)*s]
}

// Validate checks that the sizes are positive, fit in an IDX header and agree
// with len(Pixels).
func (im *Images) Validate() error {
	switch {
	case im == nil:
		return errors.New("images: nil")
	case im.N < 0:
		return fmt.Errorf("images: N = %d is negative", im.N)
	case im.Rows <= 0 || im.Cols <= 0:
		return fmt.Errorf("images: size %d×%d must be positive", im.Rows, im.Cols)
	case int64(im.N) > math.MaxUint32 || int64(im.Rows) > math.MaxUint32 || int64(im.Cols) > math.MaxUint32:
		return fmt.Errorf("images: sizes %d×%d×%d do not fit IDX's 32-bit fields", im.N, im.Rows, im.Cols)
	case int64(len(im.Pixels)) != int64(im.N)*int64(im.Rows)*int64(im.Cols):
		return fmt.Errorf("images: len(Pixels) = %d, want N*Rows*Cols = %d×%d×%d = %d",
			len(im.Pixels), im.N, im.Rows, im.Cols, int64(im.N)*int64(im.Rows)*int64(im.Cols))
	}
	return nil
}

// IDXLimit bounds an IDX file, raw or gzip-compressed: a header and maxPayload bytes.
var IDXLimit = inputfile.Limit{Format: "IDX file", Bytes: maxPayload + 1<<20}

// ReadImages reads an idx3-ubyte image file, raw or gzip-compressed (recognised
// by its magic bytes, whatever the file's name).
func ReadImages(path string) (*Images, error) {
	f, err := inputfile.Open(path, IDXLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeImages(f, path)
}

// ReadLabels reads an idx1-ubyte label file, raw or gzip-compressed.
func ReadLabels(path string) ([]uint8, error) {
	f, err := inputfile.Open(path, IDXLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeLabels(f, path)
}

// DecodeImages decodes an idx3-ubyte image stream, raw or gzip-compressed.
// name (usually the file path) prefixes every error. The stream must end right
// after the last image: trailing bytes are an error, as is a gzip checksum
// mismatch.
func DecodeImages(r io.Reader, name string) (*Images, error) {
	d, err := openIDX(r, name)
	if err != nil {
		return nil, err
	}
	dims, err := d.header(magicImages, "images")
	if err != nil {
		return nil, err
	}
	n, rows, cols := dims[0], dims[1], dims[2]
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("%s: header: image size %d×%d: rows and columns must be positive: %w", name, rows, cols, ErrFormat)
	}
	pix, err := d.payload(n*rows*cols, fmt.Sprintf("%d images of %d×%d", n, rows, cols))
	if err != nil {
		return nil, err
	}
	return &Images{N: int(n), Rows: int(rows), Cols: int(cols), Pixels: pix}, nil
}

// DecodeLabels decodes an idx1-ubyte label stream, raw or gzip-compressed.
func DecodeLabels(r io.Reader, name string) ([]uint8, error) {
	d, err := openIDX(r, name)
	if err != nil {
		return nil, err
	}
	dims, err := d.header(magicLabels, "labels")
	if err != nil {
		return nil, err
	}
	return d.payload(dims[0], fmt.Sprintf("%d labels", dims[0]))
}

// EncodeImages writes im as a raw (uncompressed) idx3-ubyte stream.
func EncodeImages(w io.Writer, im *Images) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if err := writeHeader(w, magicImages, im.N, im.Rows, im.Cols); err != nil {
		return err
	}
	_, err := w.Write(im.Pixels)
	return err
}

// EncodeLabels writes labels as a raw (uncompressed) idx1-ubyte stream.
func EncodeLabels(w io.Writer, labels []uint8) error {
	if int64(len(labels)) > math.MaxUint32 {
		return fmt.Errorf("labels: %d labels do not fit IDX's 32-bit count", len(labels))
	}
	if err := writeHeader(w, magicLabels, len(labels)); err != nil {
		return err
	}
	_, err := w.Write(labels)
	return err
}

// WriteImages writes im to path as idx3-ubyte, gzip-compressed if path ends in
// ".gz". The file is written under a temporary name and renamed into place, so
// path never holds a partial file.
func WriteImages(path string, im *Images) error {
	if err := im.Validate(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeAtomic(path, func(w io.Writer) error { return EncodeImages(w, im) })
}

// WriteLabels writes labels to path as idx1-ubyte, gzip-compressed if path ends
// in ".gz"; atomic like [WriteImages].
func WriteLabels(path string, labels []uint8) error {
	return writeAtomic(path, func(w io.Writer) error { return EncodeLabels(w, labels) })
}

// idxDecoder reads one IDX stream after gzip detection.
type idxDecoder struct {
	r    io.Reader
	name string
	gz   bool
}

// openIDX wraps r in a gzip reader if the stream starts with gzip's magic bytes
// 0x1f 0x8b (an IDX stream starts with 0x00 0x00).
func openIDX(r io.Reader, name string) (*idxDecoder, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(2)
	if len(head) == 0 && (err == io.EOF || err == nil) {
		return nil, fmt.Errorf("%s: empty file, want an IDX header: %w", name, ErrTruncated)
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip header: %v: %w", name, err, ErrFormat)
		}
		return &idxDecoder{r: zr, name: name, gz: true}, nil
	}
	return &idxDecoder{r: br, name: name}, nil
}

// header reads and checks the magic number and the dimension sizes.
func (d *idxDecoder) header(want uint32, kind string) ([]int64, error) {
	var magic [4]byte
	if n, err := io.ReadFull(d.r, magic[:]); err != nil {
		return nil, d.readErr(err, fmt.Sprintf("magic number (%d of 4 bytes)", n))
	}
	got := binary.BigEndian.Uint32(magic[:])
	if got != want {
		return nil, fmt.Errorf("%s: magic number 0x%08x, want 0x%08x (IDX %s: %s): %w",
			d.name, got, want, kind, describeMagic(magic), ErrFormat)
	}
	ndims := int(magic[3])
	buf := make([]byte, 4*ndims)
	if n, err := io.ReadFull(d.r, buf); err != nil {
		return nil, d.readErr(err, fmt.Sprintf("header sizes (%d of %d bytes)", n, len(buf)))
	}
	dims := make([]int64, ndims)
	total := int64(1)
	for i := range dims {
		dims[i] = int64(binary.BigEndian.Uint32(buf[4*i:]))
		if total > maxPayload/max(dims[i], 1) { // total·dims[i] > maxPayload, without overflow
			return nil, fmt.Errorf("%s: header: sizes %v promise more than %d bytes: %w", d.name, dims[:i+1], int64(maxPayload), ErrFormat)
		}
		total *= max(dims[i], 1)
	}
	return dims, nil
}

// describeMagic says what a magic number is, for error messages.
func describeMagic(m [4]byte) string {
	switch {
	case m[0] != 0 || m[1] != 0:
		return "not an IDX file: the first two bytes must be zero"
	case m[2] != idxTypeUByte:
		return fmt.Sprintf("element type 0x%02x, only unsigned bytes (0x08) are supported", m[2])
	case m[3] == 1:
		return "this is a labels file (1 dimension)"
	case m[3] == 3:
		return "this is an images file (3 dimensions)"
	default:
		return fmt.Sprintf("%d dimensions", m[3])
	}
}

// payload reads exactly n bytes and checks that the stream ends there. The
// buffer grows as data arrives, so a truncated file fails before a large
// allocation.
func (d *idxDecoder) payload(n int64, what string) ([]byte, error) {
	buf := make([]byte, min(n, readChunk))
	got := 0
	for {
		m, err := io.ReadFull(d.r, buf[got:])
		got += m
		if err != nil {
			return nil, d.readErr(err, fmt.Sprintf("header promises %s (%d bytes) but the data ends after %d bytes", what, n, got))
		}
		if int64(got) == n {
			break
		}
		buf = append(buf, make([]byte, min(n, 2*int64(len(buf)))-int64(len(buf)))...)
	}
	// Reading past the end also makes gzip verify its CRC-32 and length.
	var one [1]byte
	switch m, err := io.ReadFull(d.r, one[:]); {
	case m > 0:
		return nil, fmt.Errorf("%s: trailing data after the %s the header promises: %w", d.name, what, ErrFormat)
	case err != io.EOF:
		return nil, d.readErr(err, "end of data")
	}
	return buf, nil
}

// readErr turns a read error into one naming the file: an early end is
// ErrTruncated, a corrupt gzip stream ErrFormat.
func (d *idxDecoder) readErr(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%s: %s: %w", d.name, what, ErrTruncated)
	}
	if d.gz {
		return fmt.Errorf("%s: %s: corrupt gzip data: %v: %w", d.name, what, err, ErrFormat)
	}
	return fmt.Errorf("%s: %s: %w", d.name, what, err)
}

// writeHeader writes an unsigned-byte IDX header with the given sizes.
func writeHeader(w io.Writer, magic uint32, dims ...int) error {
	buf := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		buf = binary.BigEndian.AppendUint32(buf, uint32(d))
	}
	_, err := w.Write(buf)
	return err
}

// writeAtomic writes path through write into a temporary file in the same
// directory, gzip-compressed if path ends in ".gz", syncs it and renames it into
// place. On any error the temporary file is removed and path is untouched.
//
// The gzip header carries no name and no time stamp, so equal content gives
// equal bytes (for a given Go version's compressor).
func writeAtomic(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, func(f io.Writer) error {
		bw := bufio.NewWriterSize(f, 1<<16)
		if strings.HasSuffix(path, ".gz") {
			zw, err := gzip.NewWriterLevel(bw, gzip.BestCompression)
			if err != nil {
				return err
			}
			if err := write(zw); err != nil {
				return err
			}
			if err := zw.Close(); err != nil {
				return err
			}
		} else if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}
