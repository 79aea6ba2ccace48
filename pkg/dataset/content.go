package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// fashionSource names where fashionContent was taken from, for errors.
const fashionSource = "Debian's dataset-fashion-mnist 0.0~git20200523.55506a9-1"

// fashionContent is the SHA-256 of the IDX content (decompressed) of Fashion-MNIST's
// images and labels, by split: a check of what is read that holds whether the files
// are compressed or not, and however they were compressed.
var fashionContent = map[Split][2]string{
	Train: {"c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888", "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"},
	Test:  {"5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b", "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"},
}

// checkContent checks the images and labels of s, as IDX content (raw, uncompressed),
// against the SHA-256 want gives for s's split (source names want, for errors);
// a mismatch wraps ErrChecksum and names the file.
func checkContent(s *Set, want map[Split][2]string, source string) error {
	w, ok := want[s.Split]
	if !ok {
		return fmt.Errorf("dataset %s: no checksum for split %s", s.Name, s.Split)
	}
	hi, hl := sha256.New(), sha256.New()
	if err := EncodeImages(hi, s.Images); err != nil {
		return err
	}
	if err := EncodeLabels(hl, s.Labels); err != nil {
		return err
	}
	for i, c := range []struct {
		path string
		got  []byte
	}{{s.ImagesPath, hi.Sum(nil)}, {s.LabelsPath, hl.Sum(nil)}} {
		if got := hex.EncodeToString(c.got); got != w[i] {
			return fmt.Errorf("%s: content SHA-256 %s, want %s (%s); the file is corrupt or was changed: %w",
				c.path, got, w[i], source, ErrChecksum)
		}
	}
	return nil
}
