package kubeletcel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/kubeletcel"
)

// m5large is m5.large as DescribeInstanceTypes reports it, with its
// ENI-limited pod count.
var m5large = kubeletcel.Vars{VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 29, InstanceType: "m5.large"}

func env(t *testing.T) *kubeletcel.Environment {
	t.Helper()
	e, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func quiet() context.Context { return log.IntoContext(context.Background(), logr.Discard()) }

// Every variable is bound to the instance type's value.
func TestEvaluateVariables(t *testing.T) {
	e := env(t)
	vars := kubeletcel.Vars{VCPUs: 16, MemoryMiB: 65536, DefaultENIs: 8, IPsPerENI: 30, MaxPods: 234, InstanceType: "m5.4xlarge"}
	for expr, want := range map[string]int64{
		"vcpus":        16,
		"memory_mib":   65536,
		"default_enis": 8,
		"ips_per_eni":  30,
		"max_pods":     234,
		"(default_enis - 1) * (ips_per_eni - 1) + 2": 205,
		"11 * max_pods + 255":                        11*234 + 255,
		`instance_type == "m5.4xlarge" ? 1 : 2`:      1,
		`instance_type.startsWith("c5") ? 1 : 2`:     2,
		"memory_mib / 100":                           655,
		"double(memory_mib) * 0.5":                   32768,
		"vcpus - 100":                                -84, // negative is the caller's business
	} {
		got, err := e.Evaluate(expr, vars)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", expr, got, err, want)
		}
	}
}

// max and min take ints, doubles and their mixes; a double result is
// truncated toward zero.
func TestEvaluateMaxMin(t *testing.T) {
	e := env(t)
	for expr, want := range map[string]int64{
		"max(3, 7)":            7,
		"max(3.9, 7.9)":        7,
		"max(3, 7.9)":          7,
		"max(7.9, 3)":          7,
		"min(3, 7)":            3,
		"min(3.9, 7.9)":        3,
		"min(3, 7.9)":          3,
		"min(7.9, 3)":          3,
		"max(60, vcpus * 30)":  60,
		"min(110, max_pods)":   29,
		"max(vcpus, 60.5)":     60,
		"min(110.5, max_pods)": 29,
		"min(250, ((default_enis - 1) * (ips_per_eni - 1)) * 16 + 2)": 250,
		"max(-2.7, -3)": -2,
		// Large ints compare exactly, not through doubles.
		"max(9007199254740993, 9007199254740992)": 9007199254740993,
	} {
		got, err := e.Evaluate(expr, m5large)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", expr, got, err, want)
		}
	}
}

// What does not compile, does not return a number, or has no finite
// result is an error.
func TestEvaluateErrors(t *testing.T) {
	e := env(t)
	for _, expr := range []string{
		"",
		"   ",
		"((default_enis -",
		"undefined_var + 1",
		"vcpus > 4",     // bool
		"instance_type", // string
		"dyn(1)",        // not statically a number
		"3u",            // uint
		"max(1, 2, 3)",  // no such overload
		"100 / (vcpus - vcpus)",
		"100 % (vcpus - vcpus)",
		"100.0 / 0.0",
		"0.0 / 0.0",
		"9223372036854775807 + vcpus", // int overflow
	} {
		if got, err := e.Evaluate(expr, m5large); err == nil {
			t.Errorf("%q = %d, want an error", expr, got)
		}
	}
	for _, expr := range []string{"", "vcpus > 4", "instance_type", "nope"} {
		if err := e.Validate(expr); err == nil {
			t.Errorf("Validate(%q) accepted", expr)
		}
	}
	if err := e.Validate("((default_enis - 1) * (ips_per_eni - 1)) + 2"); err != nil {
		t.Error(err)
	}
	if err := e.Validate("100 / (vcpus - vcpus)"); err != nil {
		t.Errorf("Validate only compiles: %v", err)
	}
}

// Reserved results carry the unit of their resource and are rounded up,
// never down: cpu to 10m, memory to 16Mi; ephemeral-storage is whole GiB,
// pid a bare count; quantities are kept as written.
func TestResolveReservedUnitsAndRounding(t *testing.T) {
	e := env(t)
	vars := func() (kubeletcel.Vars, error) { return m5large, nil }
	for _, c := range []struct {
		in, want map[string]string
	}{
		{map[string]string{"cpu": "100m", "memory": "256Mi"}, map[string]string{"cpu": "100m", "memory": "256Mi"}},
		{map[string]string{"cpu": "max(60, vcpus * 30)"}, map[string]string{"cpu": "60m"}},
		{map[string]string{"cpu": "vcpus * 250"}, map[string]string{"cpu": "500m"}},
		{map[string]string{"cpu": "70 + vcpus"}, map[string]string{"cpu": "80m"}},
		{map[string]string{"cpu": "60 + vcpus - 1"}, map[string]string{"cpu": "70m"}},
		{map[string]string{"cpu": "80 - vcpus"}, map[string]string{"cpu": "80m"}},
		{map[string]string{"memory": "max_pods + vcpus"}, map[string]string{"memory": "32Mi"}},
		{map[string]string{"memory": "memory_mib / 100"}, map[string]string{"memory": "96Mi"}},
		{map[string]string{"memory": "memory_mib / 64"}, map[string]string{"memory": "128Mi"}},
		{map[string]string{"memory": "double(memory_mib) * 0.5"}, map[string]string{"memory": "4096Mi"}},
		{map[string]string{"cpu": "vcpus - vcpus", "memory": "vcpus - vcpus"}, map[string]string{"cpu": "0m", "memory": "0Mi"}},
		{map[string]string{"ephemeral-storage": "vcpus + 1", "pid": "70 + vcpus - 1"}, map[string]string{"ephemeral-storage": "3Gi", "pid": "71"}},
		// Negative results and evaluation errors leave the entry out.
		{map[string]string{"cpu": "vcpus - 100", "memory": "128Mi"}, map[string]string{"memory": "128Mi"}},
		{map[string]string{"cpu": "100 / (vcpus - vcpus)", "memory": "max_pods * 11"}, map[string]string{"memory": "320Mi"}},
	} {
		got, err := e.ResolveReserved(quiet(), "kubeReserved", c.in, vars)
		if err != nil {
			t.Fatalf("%v: %v", c.in, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v resolved to %v, want %v", c.in, got, c.want)
		}
		for k, v := range got {
			if _, err := resource.ParseQuantity(v); err != nil {
				t.Errorf("%s=%s is not a quantity", k, v)
			}
		}
	}
	got, _ := e.ResolveReserved(quiet(), "kubeReserved", map[string]string{"cpu": "max(60, vcpus * 30)"}, vars)
	if q := resource.MustParse(got["cpu"]); q.MilliValue() != 60 {
		t.Errorf("cpu %s is %d millicores, want 60 (a bare number would be cores)", got["cpu"], q.MilliValue())
	}
	got, _ = e.ResolveReserved(quiet(), "kubeReserved", map[string]string{"cpu": "9223372036854775807 - vcpus + 2"}, vars)
	if q, err := resource.ParseQuantity(got["cpu"]); err != nil || q.Sign() <= 0 {
		t.Errorf("near-max cpu resolved to %q (%v), want a positive quantity", got["cpu"], err)
	}
}

// vars is called once and only when there is an expression; its error is
// returned with nothing resolved.
func TestResolveReservedVars(t *testing.T) {
	e := env(t)
	calls := 0
	counting := func() (kubeletcel.Vars, error) { calls++; return m5large, nil }
	for _, m := range []map[string]string{nil, {}, {"cpu": "100m"}} {
		if _, err := e.ResolveReserved(quiet(), "kubeReserved", m, counting); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 0 {
		t.Errorf("vars called %d times for maps without expressions", calls)
	}
	if _, err := e.ResolveReserved(quiet(), "kubeReserved", map[string]string{"cpu": "vcpus * 30", "memory": "max_pods * 11"}, counting); err != nil || calls != 1 {
		t.Errorf("vars called %d times (%v), want once", calls, err)
	}
	boom := errors.New("no instance type data")
	got, err := e.ResolveReserved(quiet(), "kubeReserved", map[string]string{"cpu": "vcpus", "memory": "1Gi"}, func() (kubeletcel.Vars, error) { return kubeletcel.Vars{}, boom })
	if !errors.Is(err, boom) || got != nil {
		t.Errorf("got %v, %v; want nil and the vars error", got, err)
	}
}

func TestIsExpressionAndStaticOnly(t *testing.T) {
	for v, want := range map[string]bool{"100m": false, "1Gi": false, "5": false, "vcpus * 10": true, "abc": true, "": true} {
		if kubeletcel.IsExpression(v) != want {
			t.Errorf("IsExpression(%q) != %v", v, want)
		}
	}
	got := kubeletcel.StaticOnly(map[string]string{"cpu": "vcpus * 10", "memory": "1Gi"})
	if len(got) != 1 || got["memory"] != "1Gi" {
		t.Errorf("StaticOnly kept %v", got)
	}
}

// Expressions stay exact over the range of real instance types, the 24 TiB
// ones included.
func TestEvaluateLargeInstanceTypes(t *testing.T) {
	e := env(t)
	vars := kubeletcel.Vars{VCPUs: 448, MemoryMiB: 25165824, DefaultENIs: 15, IPsPerENI: 50, MaxPods: 737, InstanceType: "u-24tb1.metal"}
	for expr, want := range map[string]int64{
		"memory_mib / 100":          251658,
		"max(100, memory_mib / 64)": 393216,
		"memory_mib * 1024 * 1024":  25165824 * 1024 * 1024,
	} {
		if got, err := e.Evaluate(expr, vars); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", expr, got, err, want)
		}
	}
	if _, err := e.Evaluate("memory_mib * memory_mib * memory_mib", vars); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("overflow not reported: %v", err)
	}
}

// One Environment is shared by scheduling, launch templates and validation:
// concurrent evaluations of the same and of different expressions give
// their own results (run with -race).
func TestConcurrentEvaluation(t *testing.T) {
	e := env(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				for expr, want := range map[string]int64{"max(60, vcpus * 30)": 60, fmt.Sprintf("100 + %d", g): int64(100 + g)} {
					if got, err := e.Evaluate(expr, m5large); err != nil || got != want {
						select {
						case errs <- fmt.Errorf("%s = %d, %v; want %d", expr, got, err, want):
						default:
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
