package chmm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzRead: no input panics the model reader, and a model it accepts is written back
// byte for byte. Seeds: small valid models and damaged copies.
func FuzzRead(f *testing.F) {
	for i, clones := range [][]int{{1}, {2, 3}, {1, 1, 4}} {
		m := New(clones, 1+i, rand.New(rand.NewPCG(uint64(i), 1)))
		var b bytes.Buffer
		if err := m.Write(&b); err != nil {
			f.Fatal(err)
		}
		raw := b.Bytes()
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
		flipped := bytes.Clone(raw)
		flipped[len(flipped)/2] ^= 0x10
		f.Add(flipped)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Read(bytes.NewReader(raw))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := m.Write(&b); err != nil {
			t.Fatalf("Write of an accepted model: %v", err)
		}
		if !bytes.Equal(b.Bytes(), raw) {
			t.Fatalf("accepted model does not round-trip (%d bytes in, %d out)", len(raw), b.Len())
		}
	})
}
