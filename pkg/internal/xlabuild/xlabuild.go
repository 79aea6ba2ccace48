//go:build cgo

// Package xlabuild drives go-xla's own StableHLO builder without a PJRT plugin, so that
// tests can check on any machine that XLA accepts a graph: every op goes through
// go-xla's compute/xla builder exactly as on a GPU (its per-program closure caches, its
// rules on which function an operand belongs to, its shape inference, the precision
// setting of float32 dot products), and Compile stops after the StableHLO program text is
// written, where go-xla would hand it to the PJRT plugin. Nothing can be executed.
//
// It sets unexported fields of go-xla's Backend and pjrt.Plugin (the plugin's name and a
// non-nil plugin), checked by name and type against the pinned go-xla version: New fails
// with an error, never silently, when they change.
package xlabuild

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
	"github.com/gomlx/go-xla/stablehlo"
)

// Available reports whether this binary can build StableHLO (it is built with cgo).
const Available = true

// Built is the error Compile returns when the StableHLO program was built: Program holds its
// text. Use ProgramOf to tell it from a build error.
type Built struct {
	Name    string // the computation's name
	Program string // StableHLO text
}

func (b *Built) Error() string {
	return fmt.Sprintf("xlabuild: StableHLO of %q built (%d bytes); not compiled: no PJRT plugin", b.Name, len(b.Program))
}

// ProgramOf returns the StableHLO text when err is (or wraps) a *Built, else err itself.
func ProgramOf(err error) (string, error) {
	var b *Built
	if errors.As(err, &b) {
		return b.Program, nil
	}
	if err == nil {
		return "", errors.New("xlabuild: Compile returned no error: the graph was not compiled by an xlabuild backend")
	}
	return "", err
}

// New returns a go-xla backend that builds programs as the PJRT plugin pluginName would get
// them (e.g. "cuda": dot products carry a precision setting; "cpu": a dot algorithm when TF32
// is asked for), with DotGeneralUseTF32 = tf32.
func New(pluginName string, tf32 bool) (compute.Backend, error) {
	plugin := &pjrt.Plugin{}
	be := &xla.Backend{DotGeneralUseTF32: tf32}
	for _, s := range []struct {
		obj   any
		field string
		val   any
	}{
		{plugin, "name", pluginName},
		{be, "plugin", plugin},
		{be, "pluginName", pluginName},
		{be, "capabilities", xla.Capabilities.Clone()},
		{be, "numDevices", 1},
	} {
		if err := setField(s.obj, s.field, s.val); err != nil {
			return nil, err
		}
	}
	return &backend{Backend: be}, nil
}

// setField sets the (possibly unexported) field name of the struct *obj to val.
func setField(obj any, name string, val any) error {
	v := reflect.ValueOf(obj).Elem()
	f := v.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeOf(val) {
		return fmt.Errorf("xlabuild: %s has no field %s of type %T (go-xla changed)", v.Type(), name, val)
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(val))
	return nil
}

// getField returns the value of the (possibly unexported) field name of *obj as T.
func getField[T any](obj any, name string) (T, error) {
	var zero T
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("xlabuild: %T is not a pointer to a struct", obj)
	}
	f := v.Elem().FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeOf(zero) {
		return zero, fmt.Errorf("xlabuild: %s has no field %s of type %T (go-xla changed)", v.Elem().Type(), name, zero)
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(T), nil
}

// backend is go-xla's Backend whose builders stop at the StableHLO text; it holds no device
// resources (Finalize only marks it finalized).
type backend struct {
	*xla.Backend
	finalized bool
}

func (b *backend) Builder(name string) compute.Builder {
	inner := b.Backend.Builder(name)
	if inner == nil {
		return nil
	}
	return &builder{Builder: inner}
}

func (b *backend) Finalize()         { b.finalized = true }
func (b *backend) IsFinalized() bool { return b.finalized }

type builder struct {
	compute.Builder
}

// Compile builds the StableHLO program (go-xla's Builder.Compile up to the PJRT call) and
// returns it as a *Built error.
func (b *builder) Compile() (compute.Executable, error) {
	xb, ok := b.Builder.(*xla.Builder)
	if !ok {
		return nil, fmt.Errorf("xlabuild: builder is a %T, not go-xla's", b.Builder)
	}
	if err := xb.CheckValid(); err != nil {
		return nil, err
	}
	hb, err := getField[*stablehlo.Builder](xb, "builder")
	if err != nil {
		return nil, err
	}
	program, err := hb.Build()
	if err != nil {
		return nil, fmt.Errorf("xlabuild: failed to build StableHLO from computation %q: %w", b.Name(), err)
	}
	return nil, &Built{Name: b.Name(), Program: string(program)}
}
