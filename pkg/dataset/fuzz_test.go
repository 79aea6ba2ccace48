package dataset

import (
	"bytes"
	"testing"
)

// FuzzDecodeIDX: no input panics the IDX readers, and images or labels they accept
// encode back to the same bytes. Seeds: small valid files and damaged copies.
func FuzzDecodeIDX(f *testing.F) {
	var im, lb bytes.Buffer
	if err := EncodeImages(&im, &Images{N: 2, Rows: 2, Cols: 3, Pixels: []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}); err != nil {
		f.Fatal(err)
	}
	if err := EncodeLabels(&lb, []uint8{3, 7}); err != nil {
		f.Fatal(err)
	}
	for _, raw := range [][]byte{im.Bytes(), lb.Bytes()} {
		f.Add(raw)
		f.Add(raw[:len(raw)-1])
		f.Add(append(bytes.Clone(raw), 0))
		big := bytes.Clone(raw)
		big[4], big[5] = 0x7f, 0xff // a huge first dimension
		f.Add(big)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, err := DecodeImages(bytes.NewReader(raw), "fuzz"); err == nil {
			var b bytes.Buffer
			if err := EncodeImages(&b, got); err != nil || !bytes.Equal(b.Bytes(), raw) {
				t.Fatalf("accepted images do not round-trip: %v", err)
			}
		}
		if got, err := DecodeLabels(bytes.NewReader(raw), "fuzz"); err == nil {
			var b bytes.Buffer
			if err := EncodeLabels(&b, got); err != nil || !bytes.Equal(b.Bytes(), raw) {
				t.Fatalf("accepted labels do not round-trip: %v", err)
			}
		}
	})
}
