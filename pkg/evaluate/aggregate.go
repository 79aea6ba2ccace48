package evaluate

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Stat is the mean and sample standard deviation (n-1 denominator; 0 for a
// single run) of one metric over runs.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	N    int     `json:"n"`
}

// Format writes "mean ± sd" with prec decimals, e.g. "0.98 ± 0.01".
func (s Stat) Format(prec int) string {
	return fmt.Sprintf("%.*f ± %.*f", prec, s.Mean, prec, s.SD)
}

// String is Format(2).
func (s Stat) String() string { return s.Format(2) }

// Summary aggregates reports of repeated runs (seeds).
type Summary struct {
	Runs    int      `json:"runs"`
	Env     string   `json:"env"`     // common value, or "mixed"
	Dataset string   `json:"dataset"` // common value, or "mixed"
	Trainer string   `json:"trainer"` // common value, or "mixed"
	Seeds   []uint64 `json:"seeds"`
	// Metrics lists the aggregated metric names in presentation order; the
	// names are JSON paths such as "viterbi_map.f1" or "projected_map@0.01.precision".
	Metrics []string        `json:"metrics"`
	Stats   map[string]Stat `json:"stats"`
}

// headline returns the aggregated metrics of one report, in order. Sweep
// entries are named by their cutoff or threshold.
func headline(r *Report) (names []string, vals []float64) {
	add := func(n string, v float64) { names, vals = append(names, n), append(vals, v) }
	add("perplexity", r.Perplexity)
	add("active_codes", float64(r.ActiveCodes))
	if r.ClassesShown > 0 { // reports written before the token class metrics lack them
		add("token_class_purity", r.TokenClassPurity)
		add("class_perplexity", r.ClassPerplexity)
	}
	add("clone_purity", r.ClonePurity)
	add("state_place_purity", r.StatePlacePurity)
	add("represented_place_fraction", r.RepresentedPlaceFraction)
	add("states_per_place", r.StatesPerPlace)
	add("action_accuracy", r.ActionAccuracy)
	add("action_coverage", r.ActionCoverage)
	add("viterbi_map.precision", r.ViterbiMap.Precision)
	add("viterbi_map.recall", r.ViterbiMap.Recall)
	add("viterbi_map.f1", r.ViterbiMap.F1)
	for _, s := range r.ViterbiMapSweep {
		add(fmt.Sprintf("viterbi_map_sweep@%g.f1", s.CutoffFraction), s.F1)
	}
	for _, s := range r.ProjectedMap {
		p := fmt.Sprintf("projected_map@%g.", s.Threshold)
		add(p+"precision", s.Precision)
		add(p+"recall", s.Recall)
		add(p+"f1", s.F1)
	}
	add("h_token_given_place", r.HTokenGivenPlace)
	add("h_place_given_token", r.HPlaceGivenToken)
	add("tokens_per_place_mean", r.TokensPerPlaceMean)
	add("places_per_token_mean", r.PlacesPerTokenMean)
	for _, k := range slices.Sorted(maps.Keys(r.Seconds)) {
		add("seconds."+k, r.Seconds[k])
	}
	return names, vals
}

// Aggregate returns the mean and sample s.d. of every headline metric over
// the reports (nil entries are skipped). A metric missing from some reports
// (a threshold not evaluated everywhere) is aggregated over those that have
// it; Stat.N tells how many.
func Aggregate(rs []*Report) Summary {
	s := Summary{Stats: map[string]Stat{}}
	values := map[string][]float64{}
	common := func(cur *string, v string) {
		if s.Runs == 1 {
			*cur = v
		} else if *cur != v {
			*cur = "mixed"
		}
	}
	for _, r := range rs {
		if r == nil {
			continue
		}
		s.Runs++
		common(&s.Env, r.Env)
		common(&s.Dataset, r.Dataset)
		common(&s.Trainer, r.Trainer)
		s.Seeds = append(s.Seeds, r.Seed)
		names, vals := headline(r)
		for i, n := range names {
			if _, seen := values[n]; !seen {
				s.Metrics = append(s.Metrics, n)
			}
			values[n] = append(values[n], vals[i])
		}
	}
	for n, xs := range values {
		s.Stats[n] = MeanSD(xs)
	}
	return s
}

// MeanSD returns the mean and sample standard deviation (0 for one value) of xs.
func MeanSD(xs []float64) Stat {
	st := Stat{N: len(xs)}
	if len(xs) == 0 {
		return st
	}
	for _, x := range xs {
		st.Mean += x
	}
	st.Mean /= float64(len(xs))
	if len(xs) > 1 {
		ss := 0.0
		for _, x := range xs {
			ss += (x - st.Mean) * (x - st.Mean)
		}
		st.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return st
}

// Get returns the statistic of a metric (zero Stat when absent).
func (s Summary) Get(metric string) Stat { return s.Stats[metric] }

// Format returns "mean ± sd" of a metric with prec decimals, or "-" when the
// metric is absent.
func (s Summary) Format(metric string, prec int) string {
	st, ok := s.Stats[metric]
	if !ok || st.N == 0 {
		return "-"
	}
	return st.Format(prec)
}

// WriteTable writes one aligned line per metric: name, mean ± sd, runs.
func (s Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s / %s / %s\t%d runs\t\n", orDash(s.Env), orDash(s.Dataset), orDash(s.Trainer), s.Runs)
	for _, m := range s.Metrics {
		st := s.Stats[m]
		prec := 3
		if strings.HasPrefix(m, "seconds") {
			prec = 1
		}
		fmt.Fprintf(tw, "%s\t%s\tn=%d\n", m, st.Format(prec), st.N)
	}
	return tw.Flush()
}
