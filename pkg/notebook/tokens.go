package notebook

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gradcscg/gradcscg/pkg/dataset"
	"github.com/gradcscg/gradcscg/pkg/experiment"
	"github.com/gradcscg/gradcscg/pkg/figures"
	"github.com/gradcscg/gradcscg/pkg/pipeline"
)

// KeyFacts is what a token key (figures.TokenKey: the classes of the frames each token
// holds on a decoded episode) says in numbers, for the notebooks' prose. A token is
// shared where the key names more than one class for it (figures.TokenEntry.Listed: at
// least 5 % of the token's frames); a class is spread where more than one token holds
// at least splitMinShare of the class's frames, so that a few stray frames on a token
// of their own do not count.
type KeyFacts struct {
	Frames  int   // frames counted
	Tokens  int   // tokens in use
	Classes []int // the classes the frames show, ascending
	// Perplexity is exp H(token) over the frames: the number of tokens in effective use.
	Perplexity float64
	// Purity is the token class purity Σ_k max_c n(k,c) / n: the share of frames whose
	// token's majority class is their own class.
	Purity float64
	// ClassesPerToken is the mean, over the tokens in use, of the classes the key names.
	ClassesPerToken float64
	Shared          []figures.TokenEntry // tokens whose key names more than one class, in token order
	Split           []ClassTokens        // classes spread over more than one token, ascending
}

// ClassTokens is a class and the tokens that hold at least splitMinShare of its
// frames, ascending.
type ClassTokens struct {
	Class  int
	Tokens []int
}

// splitMinShare is the smallest share of a class's frames that a token must hold for
// the class to count as spread over it.
const splitMinShare = 0.05

// FactsOf reads a token key's facts. It returns an error for a nil or empty key.
func FactsOf(key *figures.TokenKey) (KeyFacts, error) {
	var f KeyFacts
	if key == nil || len(key.Entries) == 0 {
		return f, errors.New("notebook: a token key without tokens")
	}
	classFrames := map[int]int{}
	listed := 0
	for _, e := range key.Entries {
		f.Frames += e.Frames
		if len(e.Classes) > 0 {
			f.Purity += float64(e.Classes[0].Frames) // Classes is sorted: the first has the most frames
		}
		for _, cc := range e.Classes {
			classFrames[cc.Class] += cc.Frames
		}
		l := e.Listed()
		listed += len(l)
		if len(l) > 1 {
			f.Shared = append(f.Shared, e)
		}
	}
	if f.Frames == 0 {
		return f, errors.New("notebook: a token key without frames")
	}
	f.Tokens = len(key.Entries)
	f.Purity /= float64(f.Frames)
	f.ClassesPerToken = float64(listed) / float64(f.Tokens)
	h := 0.0
	for _, e := range key.Entries {
		if e.Frames > 0 {
			p := float64(e.Frames) / float64(f.Frames)
			h -= p * math.Log(p)
		}
	}
	f.Perplexity = math.Exp(max(0, h))
	for c := range classFrames {
		f.Classes = append(f.Classes, c)
	}
	slices.Sort(f.Classes)
	tokensOf := map[int][]int{}     // class → tokens holding at least splitMinShare of its frames
	for _, e := range key.Entries { // in token order
		for _, cc := range e.Classes {
			if float64(cc.Frames) >= splitMinShare*float64(classFrames[cc.Class]) {
				tokensOf[cc.Class] = append(tokensOf[cc.Class], e.Token)
			}
		}
	}
	for _, c := range f.Classes {
		if ts := tokensOf[c]; len(ts) > 1 {
			f.Split = append(f.Split, ClassTokens{Class: c, Tokens: ts})
		}
	}
	return f, nil
}

// className is class c as the prose names it: its id, then names[c] when names has it
// and it differs from the id ("1 Trouser").
func className(c int, names []string) string {
	id := fmt.Sprint(c)
	if c >= 0 && c < len(names) && names[c] != "" && names[c] != id {
		return id + " " + names[c]
	}
	return id
}

// thousands formats n with a comma between groups of three digits ("10,000").
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Sentence says the facts in one paragraph of markdown: the tokens in use for the
// classes shown, perplexity, classes per token and token class purity; then which
// tokens hold several classes (each with at most sentenceMaxClasses of them) and which
// classes are spread over several tokens — or only how many, where there are more than
// sentenceMaxItems — or that each token holds one class. names[c] names class c (nil:
// the class ids).
func (f KeyFacts) Sentence(names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s in use for %d %s (perplexity %.2f, %.2f classes per token); token class purity %.2f, "+
		"the share of frames whose token's majority class is their own.",
		f.Tokens, plural(f.Tokens, "token", "tokens"), len(f.Classes), plural(len(f.Classes), "class", "classes"),
		f.Perplexity, f.ClassesPerToken, f.Purity)
	if len(f.Shared) == 0 && len(f.Split) == 0 {
		b.WriteString(" Each token holds one class, and each class has one token.")
		return b.String()
	}
	switch {
	case len(f.Shared) == 0:
		b.WriteString(" Each token holds one class.")
	case len(f.Shared) > sentenceMaxItems:
		fmt.Fprintf(&b, " **%d of the %d tokens are shared by classes** (the key lists them).", len(f.Shared), f.Tokens)
	default:
		var parts []string
		for _, e := range f.Shared {
			l := e.Listed()
			var cs []string
			for _, cc := range l[:min(len(l), sentenceMaxClasses)] {
				cs = append(cs, fmt.Sprintf("%s (%s)", className(cc.Class, names), percent(cc.Frames, e.Frames)))
			}
			if more := len(l) - sentenceMaxClasses; more > 0 {
				cs = append(cs, fmt.Sprintf("%d more", more))
			}
			parts = append(parts, fmt.Sprintf("t%d holds %s", e.Token, strings.Join(cs, ", ")))
		}
		fmt.Fprintf(&b, " **Tokens shared by classes**: %s.", strings.Join(parts, "; "))
	}
	switch {
	case len(f.Split) > sentenceMaxItems:
		fmt.Fprintf(&b, " **%d of the %d classes are spread over tokens.**", len(f.Split), len(f.Classes))
	case len(f.Split) > 0:
		var parts []string
		for _, ct := range f.Split {
			var ts []string
			for _, t := range ct.Tokens {
				ts = append(ts, fmt.Sprintf("t%d", t))
			}
			parts = append(parts, fmt.Sprintf("%s on %s", className(ct.Class, names), strings.Join(ts, ", ")))
		}
		fmt.Fprintf(&b, " **Classes spread over tokens**: %s.", strings.Join(parts, "; "))
	}
	return b.String()
}

// Bounds of Sentence's lists: the token key in the figure lists everything.
const (
	sentenceMaxItems   = 5 // shared tokens or spread classes named one by one
	sentenceMaxClasses = 4 // classes named for one shared token
)

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// percent formats n/of as a whole percentage ("<1%" for a nonzero share under 0.5 %).
func percent(n, of int) string {
	p := 100 * float64(n) / float64(max(of, 1))
	if p < 0.5 && n > 0 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// ClassNames returns the class names of a run's data set for the prose: Fashion-MNIST's
// names, nil for MNIST (a digit is its own name).
func ClassNames(res *pipeline.Result) []string {
	if res != nil && res.Config.Dataset == "fashion" {
		return dataset.FashionClassNames
	}
	return nil
}

// runLabel names a pixel run in captions: "two_rooms seed 1", with the data set
// when it is not MNIST.
func runLabel(res *pipeline.Result) string {
	s := fmt.Sprintf("`%s` seed %d", res.Config.Env, res.Config.Seed)
	if res.Config.Dataset != "mnist" {
		s += " (" + res.Config.Dataset + ")"
	}
	return s
}

// reconstructions is ReconstructionsFigure with the held-out token key it draws.
func reconstructions(res *pipeline.Result, n int) (*figures.Figure, *figures.TokenKey, error) {
	h, err := DecodeHeldOut(res)
	if err != nil {
		return nil, nil, err
	}
	p := h.Side * h.Side
	n = min(n, len(h.Images)/p)
	if n < 1 {
		return nil, nil, fmt.Errorf("notebook: Reconstructions of %d images", n)
	}
	in := h.Images[:n*p]
	rec, tokens, err := res.VQVAE.Reconstruct(in)
	if err != nil {
		return nil, nil, err
	}
	key, err := experiment.HeldOutKey(h)
	if err != nil {
		return nil, nil, err
	}
	fig, err := figures.ReconstructionFigure(in, rec, tokens, h.Side,
		fmt.Sprintf("%s seed %d: the first %d held-out images", res.Config.Env, res.Config.Seed, n), key)
	return fig, key, err
}

// Figure4 displays paper Figure 4 for a pixel run — the first n images of its held-out
// walk above the VQ-VAE's reconstructions through their hard codes, each labelled
// with its token, above the token key of the whole held-out walk — and under it a
// caption read from the run: the tokens in use, perplexity, classes per token, token
// class purity, the tokens shared by classes and the classes spread over tokens
// (KeyFacts). committed, when not "", is the committed full-size figure shown beside
// it at CI size (Beside).
func Figure4(res *pipeline.Result, n int, committed string) error {
	fig, key, err := reconstructions(res, n)
	if err != nil {
		return err
	}
	b, err := fig.PNG()
	if err != nil {
		return err
	}
	if committed != "" {
		err = Beside(b, committed)
	} else {
		err = PNG(b)
	}
	if err != nil {
		return err
	}
	facts, err := FactsOf(key)
	if err != nil {
		return err
	}
	Markdownf("*Figure 4, %s:* the first %d images of the held-out walk (top) and their reconstructions through "+
		"their hard codes (bottom), each labelled with its token. On the walk's %s frames (labels used only to count): %s",
		runLabel(res), min(n, facts.Frames), thousands(facts.Frames), facts.Sentence(ClassNames(res)))
	return nil
}

// MapTokens displays, for each pixel run and its readout (RunReadout, in the same
// order), what the token key drawn in its Figure 5 column says (KeyFacts.Sentence),
// one paragraph per run.
func MapTokens(runs []*pipeline.Result, rs []*figures.Readout) error {
	if len(runs) != len(rs) {
		return fmt.Errorf("notebook: %d runs for %d readouts", len(runs), len(rs))
	}
	var paras []string
	for i, r := range rs {
		if r == nil || runs[i] == nil {
			return fmt.Errorf("notebook: MapTokens of no run or readout (%d)", i)
		}
		facts, err := FactsOf(r.Key)
		if err != nil {
			return err
		}
		paras = append(paras, fmt.Sprintf("**Tokens of %s** (%s held-out frames): %s", runLabel(runs[i]), thousands(facts.Frames),
			facts.Sentence(ClassNames(runs[i]))))
	}
	Markdown(strings.Join(paras, "\n\n"))
	return nil
}
