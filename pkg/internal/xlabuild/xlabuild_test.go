package xlabuild

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // graph code reads like the equations
)

// loopSum builds Σ_i x (ten times) in a While loop whose body sums x with ReduceSum (when
// inBody) or adds a sum taken in the main function; the main function also sums x.
func loopSum(inBody bool) func(x *Node) *Node {
	return func(x *Node) *Node {
		g := x.Graph()
		total := ReduceAllSum(x)
		cond := NewClosure(g, func(g *Graph) []*Node {
			i := Parameter(g, "i", shapes.Make(dtypes.Int32))
			_ = Parameter(g, "s", shapes.Make(dtypes.Float32))
			return []*Node{LessThan(i, Const(g, int32(10)))}
		})
		body := NewClosure(g, func(g *Graph) []*Node {
			i := Parameter(g, "i", shapes.Make(dtypes.Int32))
			s := Parameter(g, "s", shapes.Make(dtypes.Float32))
			step := Gather(InsertAxes(total, 0), Reshape(Const(g, int32(0)), 1)) // main's sum, read by Gather
			if inBody {
				step = ReduceAllSum(x)
			}
			return []*Node{Add(i, Const(g, int32(1))), Add(s, step)}
		})
		return While(cond, body, Const(g, int32(0)), Const(g, float32(0)))[1]
	}
}

// TestGoXLARefusesReductionInLoopBody: go-xla's own builder refuses a reduction inside a While
// body when the main function uses the same (dtype, reduction), with the message XLA gave on the
// GPU, and builds the same program when the body reads the main function's sum instead.
func TestGoXLARefusesReductionInLoopBody(t *testing.T) {
	if !Available {
		t.Skip("go-xla is compiled in only with cgo")
	}
	be, err := New("cuda", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, inBody := range []bool{true, false} {
		e, err := NewExec(be, loopSum(inBody))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Compile(shapes.Make(dtypes.Float32, 3))
		prog, err := ProgramOf(err)
		switch {
		case inBody && (err == nil || !strings.Contains(err.Error(), "cannot add operation Reduce because reductionFn is not a StableHLO closure of closure")):
			t.Errorf("reduction in the loop body: error %v, want go-xla's refusal", err)
		case !inBody && err != nil:
			t.Errorf("reduction in the main function only: %v", err)
		case !inBody && (!strings.Contains(prog, `"stablehlo.while"`) || !strings.Contains(prog, `"stablehlo.reduce"`)):
			t.Errorf("program lacks the loop or the reduction:\n%s", prog)
		}
	}
}

// TestWithXLANaN: Sign, Max and Min return NaN for a NaN operand through the wrapper (the go
// backend alone returns 0, the other operand), other values are unchanged, and While loops run
// through it.
func TestWithXLANaN(t *testing.T) {
	goBE, err := gobackend.New("parallelism=-1")
	if err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	for _, c := range []struct {
		wrap bool
		want []float32 // Sign(x), Max(x, 1), Min(1, x) for x = NaN, then for x = 2
	}{
		{true, []float32{nan, nan, nan, 1, 2, 1}},
		{false, []float32{0, 1, 1, 1, 2, 1}},
	} {
		be := goBE
		if c.wrap {
			be = WithXLANaN(goBE)
		}
		e, err := NewExec(be, func(x *Node) []*Node {
			one := OnesLike(x)
			return []*Node{Sign(x), Max(x, one), Min(one, x), loopSum(false)(x)}
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call([]float32{nan, 2})
		if err != nil {
			t.Fatal(err)
		}
		var got []float32
		for i := range 3 {
			got = append(got, out[i].Value().([]float32)...)
		}
		for i, w := range c.want {
			g := got[i/3+2*(i%3)] // out[k] holds [x=NaN, x=2]
			if !(g == w || math.IsNaN(float64(g)) && math.IsNaN(float64(w))) {
				t.Errorf("wrap %v: result %d = %v, want %v (all: %v)", c.wrap, i, g, w, got)
			}
		}
		if s := out[3].Value().(float32); !math.IsNaN(float64(s)) {
			t.Errorf("wrap %v: loop sum over [NaN, 2] = %v, want NaN", c.wrap, s)
		}
	}
}
