package kubeletcel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Granularities that reserved cpu and memory results are rounded up to. A
// reservation is never made smaller than the expression asked for; the
// rounding lets instance types whose results are close share a launch
// template.
const (
	CPUGranularityMillis = 10
	MemoryGranularityMiB = 16
)

// unusedTTL is how long a compiled expression stays cached after its last use.
const unusedTTL = 12 * time.Hour

// Vars are the values of one instance type an expression sees.
type Vars struct {
	VCPUs        int64
	MemoryMiB    int64
	DefaultENIs  int64
	IPsPerENI    int64
	MaxPods      int64
	InstanceType string
}

func (v Vars) activation() map[string]any {
	return map[string]any{
		"vcpus":         v.VCPUs,
		"memory_mib":    v.MemoryMiB,
		"default_enis":  v.DefaultENIs,
		"ips_per_eni":   v.IPsPerENI,
		"max_pods":      v.MaxPods,
		"instance_type": v.InstanceType,
	}
}

// Environment compiles and evaluates kubelet expressions.
type Environment struct {
	env *cel.Env
	now func() time.Time

	mu       sync.Mutex
	programs map[string]*cached
	swept    time.Time
}

type cached struct {
	program cel.Program
	used    time.Time
}

var (
	sharedOnce sync.Once
	shared     *Environment
)

// Shared is the process's Environment, so that scheduling, launch templates
// and validation compile each expression once.
func Shared() *Environment {
	sharedOnce.Do(func() {
		e, err := New()
		if err != nil {
			// The declarations are fixed; failing here is a bug.
			panic(fmt.Sprintf("building the kubelet CEL environment: %v", err))
		}
		shared = e
	})
	return shared
}

// New builds an Environment with the kubelet expression variables and the
// max and min functions.
func New() (*Environment, error) {
	opts := []cel.EnvOption{
		cel.Variable("vcpus", cel.IntType),
		cel.Variable("memory_mib", cel.IntType),
		cel.Variable("default_enis", cel.IntType),
		cel.Variable("ips_per_eni", cel.IntType),
		cel.Variable("max_pods", cel.IntType),
		cel.Variable("instance_type", cel.StringType),
		pairFunction("max", true),
		pairFunction("min", false),
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	return &Environment{env: env, now: time.Now, programs: map[string]*cached{}}, nil
}

// pairFunction declares name(a, b) over every mix of int and double: two
// ints give an int, anything with a double gives a double (the int widened).
// larger says whether the function returns the larger argument (max) or the
// smaller (min); on a tie, or when the two do not compare, it returns b.
func pairFunction(name string, larger bool) cel.EnvOption {
	ints := func(a, b ref.Val) ref.Val {
		x, y := a.(types.Int), b.(types.Int)
		if (larger && x > y) || (!larger && x < y) {
			return x
		}
		return y
	}
	doubles := func(a, b ref.Val) ref.Val {
		x, y := toDouble(a), toDouble(b)
		// As written, a NaN first argument never wins.
		if (larger && x > y) || (!larger && x < y) {
			return x
		}
		return y
	}
	return cel.Function(name,
		cel.Overload(name+"_int_int", []*cel.Type{cel.IntType, cel.IntType}, cel.IntType, cel.BinaryBinding(ints)),
		cel.Overload(name+"_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(doubles)),
		cel.Overload(name+"_int_double", []*cel.Type{cel.IntType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(doubles)),
		cel.Overload(name+"_double_int", []*cel.Type{cel.DoubleType, cel.IntType}, cel.DoubleType, cel.BinaryBinding(doubles)),
	)
}

func toDouble(v ref.Val) types.Double {
	if i, ok := v.(types.Int); ok {
		return types.Double(i)
	}
	return v.(types.Double)
}

// program compiles expression, or returns the cached program.
func (e *Environment) program(expression string) (cel.Program, error) {
	now := e.now()
	e.mu.Lock()
	if c, ok := e.programs[expression]; ok {
		c.used = now
		e.mu.Unlock()
		return c.program, nil
	}
	e.mu.Unlock()
	prg, err := e.compile(expression)
	if err != nil {
		// Failures are not cached: they are cheap to find again.
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Sub(e.swept) > time.Hour {
		for k, c := range e.programs {
			if now.Sub(c.used) > unusedTTL {
				delete(e.programs, k)
			}
		}
		e.swept = now
	}
	if c, ok := e.programs[expression]; ok {
		c.used = now
		return c.program, nil
	}
	e.programs[expression] = &cached{program: prg, used: now}
	return prg, nil
}

func (e *Environment) compile(expression string) (cel.Program, error) {
	ast, issues := e.env.Compile(expression)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("compiling %q: %w", expression, issues.Err())
	}
	if out := ast.OutputType(); !out.IsExactType(cel.IntType) && !out.IsExactType(cel.DoubleType) {
		return nil, fmt.Errorf("%q returns %s, an expression must return an int or a double", expression, out)
	}
	prg, err := e.env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("building a program of %q: %w", expression, err)
	}
	return prg, nil
}

// Validate reports whether expression compiles and returns an int or a
// double, without evaluating it.
func (e *Environment) Validate(expression string) error {
	_, err := e.program(expression)
	return err
}

// Evaluate evaluates expression for one instance type. A double result is
// truncated toward zero; an infinite or NaN one is an error. A negative
// result is returned as is: callers decide what it means.
func (e *Environment) Evaluate(expression string, vars Vars) (int64, error) {
	prg, err := e.program(expression)
	if err != nil {
		return 0, err
	}
	out, _, err := prg.Eval(vars.activation())
	if err != nil {
		return 0, fmt.Errorf("evaluating %q for %s: %w", expression, vars.InstanceType, err)
	}
	switch v := out.Value().(type) {
	case int64:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("evaluating %q for %s: the result %v is not a finite number", expression, vars.InstanceType, v)
		}
		return int64(v), nil
	default:
		return 0, fmt.Errorf("evaluating %q for %s: the result is a %T, not a number", expression, vars.InstanceType, out.Value())
	}
}

// IsExpression reports whether a kubeReserved or systemReserved value is an
// expression: anything that does not parse as a resource quantity.
func IsExpression(value string) bool {
	_, err := resource.ParseQuantity(value)
	return err != nil
}

// StaticOnly returns the entries of a reserved map that are quantities,
// dropping the expressions (what the NodeClassCEL gate being off means).
func StaticOnly(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !IsExpression(v) {
			out[k] = v
		}
	}
	return out
}

// HasExpressions reports whether any value of the reserved map is an
// expression.
func HasExpressions(m map[string]string) bool {
	for _, v := range m {
		if IsExpression(v) {
			return true
		}
	}
	return false
}

// ErrNegative is the error of a reserved expression whose result is negative.
var ErrNegative = errors.New("the result is negative")

// ResolveReserved replaces the expressions of a kubeReserved or
// systemReserved map with their results for one instance type (see Format);
// quantities are kept as written. An entry whose expression fails to
// evaluate or gives a negative result is left out and logged. vars is
// called once, and only when the map holds an expression; its error is
// returned and nothing is resolved.
func (e *Environment) ResolveReserved(ctx context.Context, field string, m map[string]string, vars func() (Vars, error)) (map[string]string, error) {
	if !HasExpressions(m) {
		return m, nil
	}
	v, err := vars()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, value := range m {
		if !IsExpression(value) {
			out[k] = value
			continue
		}
		n, err := e.Evaluate(value, v)
		if err == nil && n < 0 {
			err = fmt.Errorf("%q for %s gives %d: %w", value, v.InstanceType, n, ErrNegative)
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "leaving out a kubelet reservation whose expression has no usable result, the default applies",
				"field", fmt.Sprintf("spec.kubelet.%s[%s]", field, k), "instanceType", v.InstanceType,
				"vcpus", v.VCPUs, "memoryMiB", v.MemoryMiB, "defaultENIs", v.DefaultENIs, "ipsPerENI", v.IPsPerENI, "maxPods", v.MaxPods)
			continue
		}
		out[k] = Format(k, n)
	}
	return out, nil
}

// Format writes a reserved expression's result as a quantity in the unit of
// its resource: cpu in millicores rounded up to CPUGranularityMillis, memory
// in MiB rounded up to MemoryGranularityMiB, ephemeral-storage in GiB, any
// other key (pid) as a bare number.
func Format(key string, n int64) string {
	switch corev1.ResourceName(key) {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%dm", roundUp(n, CPUGranularityMillis))
	case corev1.ResourceMemory:
		return fmt.Sprintf("%dMi", roundUp(n, MemoryGranularityMiB))
	case corev1.ResourceEphemeralStorage:
		return fmt.Sprintf("%dGi", n)
	default:
		return fmt.Sprint(n)
	}
}

// roundUp rounds n up to a multiple of step; values so large that the next
// multiple would overflow are kept as they are.
func roundUp(n, step int64) int64 {
	if n <= 0 || n%step == 0 || n > math.MaxInt64-step {
		return n
	}
	return (n/step + 1) * step
}
