package figures

import (
	"fmt"
	"math"
	"slices"
)

// Codec is the part of a VQ-VAE (*vqvae.Model) TokenImages needs.
type Codec interface {
	// Latents returns the encoder outputs z [n][D] of n images.
	Latents(images []float32) ([][]float32, error)
	// Codebook returns the code vectors e [K][D].
	Codebook() [][]float32
	// Reconstruct returns the decoder's output through each image's hard code,
	// D(e_k) for an image of code k, and the tokens.
	Reconstruct(images []float32) ([]float32, []int, error)
	// Tokens returns the token of each code, nil when token k is code k.
	Tokens() []int
}

// TokenImages returns an image per token for Figure 5c: for token g, among the
// given images (n images of side² values) whose hard code k has token g (Codec.Tokens),
// the one whose latent is nearest to its code e_k (nearest), and the decoder's output
// D(e_k) computed by reconstructing that image (decoded: the reconstruction of any
// image of code k is D(e_k)). Tokens no image maps to get nil in both.
func TokenImages(codec Codec, images []float32, side int) (decoded, nearest [][]float32, err error) {
	p := side * side
	tok, dist, numTokens, err := hardCodes("figures.TokenImages", codec, images, side)
	if err != nil {
		return nil, nil, err
	}
	best := make([]int, numTokens)
	for g := range best {
		best[g] = -1
	}
	for i, g := range tok {
		if g >= 0 && (best[g] < 0 || dist[i] < dist[best[g]]) {
			best[g] = i
		}
	}
	var sel []float32
	var order []int
	for k, i := range best {
		if i >= 0 {
			sel = append(sel, images[i*p:(i+1)*p]...)
			order = append(order, k)
		}
	}
	decoded = make([][]float32, len(best))
	nearest = make([][]float32, len(best))
	if len(order) == 0 {
		return decoded, nearest, nil
	}
	rec, _, err := codec.Reconstruct(sel)
	if err != nil {
		return nil, nil, err
	}
	if len(rec) != len(sel) {
		return nil, nil, fmt.Errorf("figures.TokenImages: %d reconstructed values for %d", len(rec), len(sel))
	}
	for j, k := range order {
		nearest[k] = append([]float32(nil), sel[j*p:(j+1)*p]...)
		decoded[k] = append([]float32(nil), rec[j*p:(j+1)*p]...)
	}
	return decoded, nearest, nil
}

// TokenClassImages returns, for every pair (token g, class c) that occurs among
// the given images (n images of side² values, classes[i] the true class of image
// i, used only to choose what to draw), the image of class c with token g whose
// latent lies nearest to its code: Figure 5c draws a clone of token g at a place
// of class c as this image, so that the node shows its place's class while its
// frame shows the token. Keys are {g, c}.
func TokenClassImages(codec Codec, images []float32, classes []int, side int) (map[[2]int][]float32, error) {
	p := side * side
	tok, dist, _, err := hardCodes("figures.TokenClassImages", codec, images, side)
	if err != nil {
		return nil, err
	}
	if len(classes) != len(tok) {
		return nil, fmt.Errorf("figures.TokenClassImages: %d classes for %d images", len(classes), len(tok))
	}
	best := map[[2]int]int{}
	for i, g := range tok {
		if g < 0 {
			continue
		}
		key := [2]int{g, classes[i]}
		if j, ok := best[key]; !ok || dist[i] < dist[j] {
			best[key] = i
		}
	}
	out := make(map[[2]int][]float32, len(best))
	for key, i := range best {
		out[key] = append([]float32(nil), images[i*p:(i+1)*p]...)
	}
	return out, nil
}

// hardCodes encodes n images of side² values and returns each image's token (the
// token of its hard code, the nearest code vector as vqvae.Quantize, ties to the
// lowest code; −1 for a latent no code is at a finite distance from), its squared
// distance to that code, and the number of tokens (1 +
// the largest token of the codec's map). fn names the caller in errors.
func hardCodes(fn string, codec Codec, images []float32, side int) (tok []int, dist []float64, numTokens int, err error) {
	p := side * side
	if side < 1 || len(images) == 0 || len(images)%p != 0 {
		return nil, nil, 0, fmt.Errorf("%s: %d values is not a positive number of %d×%d images", fn, len(images), side, side)
	}
	z, err := codec.Latents(images)
	if err != nil {
		return nil, nil, 0, err
	}
	book := codec.Codebook()
	n := len(images) / p
	if len(z) != n || len(book) == 0 {
		return nil, nil, 0, fmt.Errorf("%s: %d latents for %d images, %d codes", fn, len(z), n, len(book))
	}
	tokenOf := codec.Tokens()
	if tokenOf == nil {
		tokenOf = make([]int, len(book))
		for k := range tokenOf {
			tokenOf[k] = k
		}
	}
	if len(tokenOf) != len(book) {
		return nil, nil, 0, fmt.Errorf("%s: a token map of %d codes for a codebook of %d", fn, len(tokenOf), len(book))
	}
	tok, dist = make([]int, n), make([]float64, n)
	for i, zi := range z {
		k, dk := -1, math.Inf(1)
		for j, e := range book {
			if d := dist2(zi, e); d < dk {
				k, dk = j, d
			}
		}
		tok[i], dist[i] = -1, dk
		if k >= 0 {
			tok[i] = tokenOf[k]
		}
	}
	return tok, dist, slices.Max(tokenOf) + 1, nil
}

// dist2 is the squared Euclidean distance of two vectors of equal length.
func dist2(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s
}
