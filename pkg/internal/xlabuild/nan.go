package xlabuild

import (
	"github.com/gomlx/compute"
)

// WithXLANaN wraps a backend (the go backend) so that Sign, Max and Min follow XLA's
// NaN semantics (StableHLO sign, maximum and minimum return NaN for a NaN operand),
// where the go backend returns 0 for Sign(NaN) and the other operand for Max and Min.
// Everything else is the wrapped backend's. Graphs that never let a NaN reach these ops,
// or whose result does not depend on it, give the same values on both.
func WithXLANaN(b compute.Backend) compute.Backend { return &nanBackend{Backend: b} }

type nanBackend struct{ compute.Backend }

func (b *nanBackend) Builder(name string) compute.Builder {
	inner := b.Backend.Builder(name)
	if inner == nil {
		return nil
	}
	return &nanBuilder{Builder: inner}
}

type nanBuilder struct {
	compute.Builder
	main *nanFunction
}

func (b *nanBuilder) Main() compute.Function {
	if b.main == nil {
		b.main = &nanFunction{Function: b.Builder.Main(), builder: b}
	}
	return b.main
}

func (b *nanBuilder) NewFunction(name string) (compute.Function, error) {
	f, err := b.Builder.NewFunction(name)
	if err != nil {
		return nil, err
	}
	return &nanFunction{Function: f, builder: b}, nil
}

// nanFunction is a function of the wrapped builder; closures passed to While, If, Sort and
// Call are unwrapped before they reach it.
type nanFunction struct {
	compute.Function
	builder *nanBuilder
}

func unwrap(f compute.Function) compute.Function {
	if w, ok := f.(*nanFunction); ok {
		return w.Function
	}
	return f
}

func (f *nanFunction) Builder() compute.Builder { return f.builder }

func (f *nanFunction) Closure() (compute.Function, error) {
	c, err := f.Function.Closure()
	if err != nil {
		return nil, err
	}
	return &nanFunction{Function: c, builder: f.builder}, nil
}

func (f *nanFunction) While(cond, body compute.Function, initialState ...compute.Value) ([]compute.Value, error) {
	return f.Function.While(unwrap(cond), unwrap(body), initialState...)
}

func (f *nanFunction) If(pred compute.Value, trueBranch, falseBranch compute.Function) ([]compute.Value, error) {
	return f.Function.If(pred, unwrap(trueBranch), unwrap(falseBranch))
}

func (f *nanFunction) Sort(comparator compute.Function, axis int, isStable bool, inputs ...compute.Value) ([]compute.Value, error) {
	return f.Function.Sort(unwrap(comparator), axis, isStable, inputs...)
}

func (f *nanFunction) Call(fn compute.Function, inputs ...compute.Value) ([]compute.Value, error) {
	return f.Function.Call(unwrap(fn), inputs...)
}

// keepNaN returns Where(IsNaN(x), x, y) for a float x (y unchanged otherwise).
func (f *nanFunction) keepNaN(x, y compute.Value) (compute.Value, error) {
	s, err := f.Shape(x)
	if err != nil || !s.DType.IsFloat() {
		return y, err
	}
	isNaN, err := f.IsNaN(x)
	if err != nil {
		return nil, err
	}
	return f.Function.Where(isNaN, x, y)
}

func (f *nanFunction) Sign(x compute.Value) (compute.Value, error) {
	y, err := f.Function.Sign(x)
	if err != nil {
		return nil, err
	}
	return f.keepNaN(x, y)
}

func (f *nanFunction) Max(lhs, rhs compute.Value) (compute.Value, error) {
	y, err := f.Function.Max(lhs, rhs)
	if err != nil {
		return nil, err
	}
	return f.propagate(lhs, rhs, y)
}

func (f *nanFunction) Min(lhs, rhs compute.Value) (compute.Value, error) {
	y, err := f.Function.Min(lhs, rhs)
	if err != nil {
		return nil, err
	}
	return f.propagate(lhs, rhs, y)
}

// propagate returns y with NaN where lhs or rhs is NaN (implicit broadcasting as in Where).
func (f *nanFunction) propagate(lhs, rhs, y compute.Value) (compute.Value, error) {
	y, err := f.keepNaN(rhs, y)
	if err != nil {
		return nil, err
	}
	return f.keepNaN(lhs, y)
}
