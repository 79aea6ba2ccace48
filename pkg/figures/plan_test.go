package figures

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/gradcscg/gradcscg/pkg/gridworld"
	"github.com/gradcscg/gradcscg/pkg/plan"
)

// TestPlanTrials draws a traced trial, checks the belief projection by hand and
// refuses an untraced trial and a graph environment.
func TestPlanTrials(t *testing.T) {
	env, err := gridworld.Named("aliased")
	if err != nil {
		t.Fatal(err)
	}
	// States 0–2 assigned to places 5, 5 and 7; state 3 to none.
	chi := []int{5, 5, 7, -1}
	m := placeMass([]float64{0.2, 0.3, 0.25, 0.25}, chi, env.NumPlaces())
	if math.Abs(m[5]-0.5/0.75) > 1e-12 || math.Abs(m[7]-0.25/0.75) > 1e-12 {
		t.Errorf("place mass %v: want 2/3 at place 5 and 1/3 at place 7", m)
	}
	tr := plan.Trial{Pair: 2, Start: 0, Goal: 5, End: 5, Steps: 2, Shortest: 2, Success: true, Path: []int{0, 1, 5},
		StartBelief: []float64{0, 0, 1, 0}, GoalBelief: []float64{1, 0, 0, 0}}
	fig, err := PlanTrials(env, plan.MPC, chi, tr, tr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fig.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != int(fig.Width*DPI/72) {
		t.Errorf("PNG: %v, width %d", err, img.Bounds().Dx())
	}
	untraced := tr
	untraced.Path = nil
	if _, err := PlanTrials(env, plan.MPC, chi, untraced); err == nil || !strings.Contains(err.Error(), "Trace") {
		t.Errorf("untraced trial: %v", err)
	}
	graph, _ := gridworld.Named("three_rooms")
	if _, err := PlanTrials(graph, plan.MPC, chi, tr); err == nil {
		t.Error("graph environment: no error")
	}
}
