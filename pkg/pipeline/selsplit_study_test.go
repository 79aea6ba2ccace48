//go:build study

package pipeline

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gradcscg/gradcscg/pkg/chmm"
	"github.com/gradcscg/gradcscg/pkg/gridworld"
)

// TestSelectiveSplitStudy is a measurement, not a check (skipped unless SELSPLIT_ENV
// names a built-in environment or a layout file): the EM finalisation's split rounds
// splitting every kept clone (hooks.splitAll, the finalisations begun before
// finalEMState.Selective) against splitting only the clones that kept both copies of
// their last split (today's), and the same dropping both copies of a split that hold
// chmm.UsedShare only together (hooks.dropPairs, the finalisations begun before
// finalEMState.FoldPairs), on the environment's reference walks (Defaults: episodes ×
// steps, SELSPLIT_STEPS for other lengths) whose tokens are misread with probability
// SELSPLIT_P (default 0.05), each as one of two fixed other tokens. SELSPLIT_MODE=all,
// selective or dropped runs one of them (default all and selective). Each prints its rounds, E-steps and
// seconds, and scores the kept map against the true places (labels only to score) by
// decoding the training walks through its confusion matrix: state→place purity,
// place→state purity, the states the paths visit. Results: results/notes/bigger-pixels.md.
//
//	SELSPLIT_ENV=big_room go test -tags study ./pkg/pipeline -run TestSelectiveSplitStudy -v -timeout 6h
func TestSelectiveSplitStudy(t *testing.T) {
	name := os.Getenv("SELSPLIT_ENV")
	if name == "" {
		t.Skip("a measurement: set SELSPLIT_ENV")
	}
	var env *gridworld.Env
	var err error
	if strings.Contains(name, "/") || strings.HasSuffix(name, ".txt") {
		env, err = gridworld.LoadLayout(name)
	} else {
		env, err = gridworld.Named(name)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := 0.05
	if v := os.Getenv("SELSPLIT_P"); v != "" {
		if p, err = strconv.ParseFloat(v, 64); err != nil || p < 0 || p >= 0.5 {
			t.Fatalf("SELSPLIT_P=%q: want a number in [0, 0.5)", v)
		}
	}
	def := env.Defaults()
	steps := def.Steps
	if v := os.Getenv("SELSPLIT_STEPS"); v != "" {
		if steps, err = strconv.Atoi(v); err != nil || steps < 100 {
			t.Fatalf("SELSPLIT_STEPS=%q: want an integer of 100 or more", v)
		}
	}
	modes := []string{"all", "selective"}
	if v := os.Getenv("SELSPLIT_MODE"); v != "" {
		if v != "all" && v != "selective" && v != "dropped" {
			t.Fatalf("SELSPLIT_MODE=%q: want all, selective or dropped", v)
		}
		modes = []string{v}
	}
	k := env.NumClasses()
	rng := gridworld.NewRand(1)
	confusers := make([][2]int, k)
	for c := range confusers {
		confusers[c] = [2]int{(c + 1 + rng.IntN(k-1)) % k, (c + 1 + rng.IntN(k-1)) % k}
	}
	var seqs []chmm.Sequence
	var places [][]int
	for range def.Episodes {
		ep := env.Walk(rng, steps)
		obs := append([]int(nil), ep.Obs...)
		for i := range obs {
			if rng.Float64() < p {
				obs[i] = confusers[obs[i]][rng.IntN(2)]
			}
		}
		seqs = append(seqs, chmm.Sequence{Obs: obs, Actions: ep.Actions})
		places = append(places, ep.Places)
	}
	fmt.Printf("%s: %d places, %d tokens, %d × %d steps misread with probability %.2f\n", env.Name, env.NumPlaces(), k, def.Episodes, steps, p)
	cfg, err := DefaultConfig("aliased")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.WithFinalTrainer(FinalEM)
	// SELSPLIT_SHARES=1: after each round, the class at the most places: its clones by
	// share of the class's decoded visits (≥ chmm.UsedShare, below), and its places whose
	// most visited clone (in visits there) holds less than chmm.UsedShare of the class's
	// visits in all, and is pruned.
	shares := os.Getenv("SELSPLIT_SHARES") != ""
	bigClass, most := 0, 0
	perClass := map[int]int{}
	for _, c := range env.Class {
		if perClass[c]++; perClass[c] > most {
			bigClass, most = c, perClass[c]
		}
	}
	for _, mode := range modes {
		h := &hooks{splitAll: mode == "all", dropPairs: mode == "dropped"}
		if shares {
			h.emRound = func(round int, m *chmm.Model, conf [][]float64) error {
				visits := make([]int, m.N())
				at := map[[2]int]int{} // (state, place) visits
				tot := 0
				for q, seq := range seqs {
					path, _, err := chmm.Decode(m, chmm.Confused{Tokens: seq.Obs, C: conf}, seq.Actions)
					if err != nil {
						return err
					}
					for i, s := range path {
						if m.Token(s) == bigClass {
							visits[s]++
							at[[2]int{s, places[q][i]}]++
							tot++
						}
					}
				}
				above, below := 0, 0
				for s := m.FirstState(bigClass); s < m.FirstState(bigClass)+m.Clones[bigClass]; s++ {
					switch {
					case float64(visits[s]) >= chmm.UsedShare*float64(tot):
						above++
					case visits[s] > 0:
						below++
					}
				}
				best := map[int][2]int{} // place → its most visited clone and that clone's visits there
				for sp, n := range at {
					if b, ok := best[sp[1]]; !ok || n > b[1] {
						best[sp[1]] = [2]int{sp[0], n}
					}
				}
				lost := 0
				for _, b := range best {
					if float64(visits[b[0]]) < chmm.UsedShare*float64(tot) {
						lost++
					}
				}
				fmt.Printf("%s: round %d, class %d at %d places: %d clones at ≥ %g of its visits, %d below; %d places whose most visited clone is below\n",
					mode, round, bigClass, most, above, chmm.UsedShare, below, lost)
				return nil
			}
		}
		var out strings.Builder
		f := testFinaliser(cfg, nil, &prefixWriter{w: os.Stdout, prefix: mode + ": ", buf: &out}, h)
		t0 := time.Now()
		m, err := f.em(seqs, k, env.NumActions())
		if err != nil {
			t.Fatal(err)
		}
		secs := time.Since(t0).Seconds()
		made := f.st.Made
		esteps := 0
		var rounds []string
		for _, r := range made.Runs {
			esteps += r.Iterations
			rounds = append(rounds, fmt.Sprintf("%d", r.Iterations))
		}
		count := map[[2]int]int{}
		for q, seq := range seqs {
			path, _, err := chmm.Decode(m, chmm.Confused{Tokens: seq.Obs, C: made.Confusion}, seq.Actions)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range path {
				count[[2]int{s, places[q][i]}]++
			}
		}
		bestOfState, bestOfPlace := map[int]int{}, map[int]int{}
		total := 0
		for sp, n := range count {
			bestOfState[sp[0]] = max(bestOfState[sp[0]], n)
			bestOfPlace[sp[1]] = max(bestOfPlace[sp[1]], n)
			total += n
		}
		sum := func(m map[int]int) int {
			s := 0
			for _, v := range m {
				s += v
			}
			return s
		}
		fmt.Printf("%s: kept round %d, %d states (%d visited); held-out ends %v; E-steps %d (%s); %.0f s; state→place purity %.4f, place→state %.4f\n",
			mode, made.Doublings, m.N(), len(bestOfState), fmtBits(made.HeldOutBits), esteps, strings.Join(rounds, " "), secs,
			float64(sum(bestOfState))/float64(total), float64(sum(bestOfPlace))/float64(total))
	}
}

func fmtBits(b []float64) string {
	var s []string
	for _, v := range b {
		s = append(s, fmt.Sprintf("%.4f", v))
	}
	return strings.Join(s, " ")
}

// prefixWriter copies the judge's and the trainings' final lines to w, each with prefix
// (the progress bars' redraws are left out), and everything to buf.
type prefixWriter struct {
	w      *os.File
	prefix string
	buf    *strings.Builder
	line   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for _, c := range b {
		if c == '\n' || c == '\r' {
			l := string(p.line)
			p.line = p.line[:0]
			if c == '\n' && l != "" {
				fmt.Fprintf(p.w, "%s%s %s\n", p.prefix, time.Now().Format("15:04:05"), l)
			}
			continue
		}
		p.line = append(p.line, c)
	}
	return len(b), nil
}
