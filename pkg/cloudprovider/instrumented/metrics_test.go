package instrumented_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// scripted is a provider whose calls return preset errors and take a preset time.
type scripted struct {
	createErr, deleteErr, getErr error
	delay                        time.Duration
	calls                        []string
	instanceTypes                []*scheduling.InstanceType
}

func (s *scripted) Create(_ context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	s.calls = append(s.calls, "Create")
	time.Sleep(s.delay) // the measured work itself, not a wait for a condition
	return nc, s.createErr
}
func (s *scripted) Delete(context.Context, *v1.NodeClaim) error {
	s.calls = append(s.calls, "Delete")
	return s.deleteErr
}
func (s *scripted) Get(context.Context, string) (*v1.NodeClaim, error) {
	s.calls = append(s.calls, "Get")
	return nil, s.getErr
}
func (s *scripted) List(context.Context) ([]*v1.NodeClaim, error) {
	s.calls = append(s.calls, "List")
	return nil, nil
}
func (s *scripted) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	s.calls = append(s.calls, "GetInstanceTypes")
	return s.instanceTypes, nil
}
func (s *scripted) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	s.calls = append(s.calls, "IsDrifted")
	return "", nil
}
func (s *scripted) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
func (s *scripted) Reboot(context.Context, *v1.NodeClaim, string) error {
	return cloudprovider.NewNodeRebootNotImplementedError()
}
func (s *scripted) Name() string                             { return "scripted" }
func (s *scripted) GetSupportedNodeClasses() []client.Object { return nil }

func histogram(t *testing.T, controller, method string) *dto.Histogram {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_cloudprovider_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == controller && labels["method"] == method && labels["provider"] == "scripted" {
				return m.GetHistogram()
			}
		}
	}
	return nil
}

func TestDurationAndErrorsAreRecordedPerControllerMethodAndError(t *testing.T) {
	inner := &scripted{
		createErr: cloudprovider.NewInsufficientCapacityError(errors.New("no capacity")),
		deleteErr: cloudprovider.NewNodeClaimNotFoundError(errors.New("gone")),
		getErr:    errors.New("boom"),
		delay:     20 * time.Millisecond,
	}
	cp := instrumented.Decorate(inner)
	ctx := instrumented.WithController(context.Background(), "nodeclaim.lifecycle")

	claim := &v1.NodeClaim{}
	claim.Labels = map[string]string{v1.NodePoolLabelKey: "pool-a"}
	if _, err := cp.Create(ctx, claim); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("the decorator must return the provider's error unchanged, got %v", err)
	}
	_ = cp.Delete(ctx, claim)
	_, _ = cp.Get(ctx, "x://1")
	_, _ = cp.List(ctx)
	_, _ = cp.GetInstanceTypes(ctx, &v1.NodePool{})
	_, _ = cp.IsDrifted(ctx, &v1.NodeClaim{})
	if got := strings.Join(inner.calls, ","); got != "Create,Delete,Get,List,GetInstanceTypes,IsDrifted" {
		t.Fatalf("calls reaching the provider: %s", got)
	}

	h := histogram(t, "nodeclaim.lifecycle", "Create")
	if h == nil || h.GetSampleCount() != 1 {
		t.Fatalf("expected one Create observation, got %v", h)
	}
	if h.GetSampleSum() < 0.02 {
		t.Fatalf("Create took at least 20ms, histogram sum is %v", h.GetSampleSum())
	}
	for _, m := range []string{"Delete", "Get", "List", "GetInstanceTypes", "IsDrifted"} {
		if h := histogram(t, "nodeclaim.lifecycle", m); h == nil || h.GetSampleCount() != 1 {
			t.Fatalf("expected one %s observation, got %v", m, h)
		}
	}

	// The NodeClaim's NodePool labels the errors of calls about it.
	for _, c := range []struct {
		method, errType, nodePool string
		want                      float64
	}{
		{"Create", "InsufficientCapacityError", "pool-a", 1},
		{"Delete", "NodeClaimNotFoundError", "pool-a", 1},
		{"Get", "", "", 1},
		{"List", "", "", 0},
	} {
		got := testutil.ToFloat64(instrumented.ErrorsTotal.WithLabelValues("nodeclaim.lifecycle", c.method, "scripted", c.errType, c.nodePool))
		if got != c.want {
			t.Errorf("errors_total{method=%s,error=%q} = %v, want %v", c.method, c.errType, got, c.want)
		}
	}
	if instrumented.Decorate(cp) != cp {
		t.Fatal("decorating twice must not double count")
	}
}

func TestErrorType(t *testing.T) {
	for want, err := range map[string]error{
		"NodeClaimNotFoundError":    cloudprovider.NewNodeClaimNotFoundError(errors.New("x")),
		"InsufficientCapacityError": cloudprovider.NewInsufficientCapacityError(errors.New("x")),
		"NodeClassNotReadyError":    cloudprovider.NewNodeClassNotReadyError(errors.New("x")),
		"CreateError":               cloudprovider.NewCreateError(errors.New("x"), "Reason", "msg"),
		"ContextError":              context.DeadlineExceeded,
	} {
		if got := instrumented.ErrorType(err); got != want {
			t.Errorf("ErrorType(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestInstanceTypeGaugesFollowTheProvidersAnswer: every instance type's vCPUs
// and memory and every offering's availability and price are exported, and a
// later answer with an offering gone unavailable turns its gauge to 0.
func TestInstanceTypeGaugesFollowTheProvidersAnswer(t *testing.T) {
	it := &scheduling.InstanceType{
		Name:     "gauge-4x",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Offerings: []scheduling.Offering{
			{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.17, Available: true},
			{Zone: "zone-a", CapacityType: v1.CapacityTypeSpot, Price: 0.05, Available: true},
		},
	}
	inner := &scripted{instanceTypes: []*scheduling.InstanceType{it}}
	cp := instrumented.Decorate(inner)
	if _, err := cp.GetInstanceTypes(context.Background(), &v1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"cpu_cores", testutil.ToFloat64(instrumented.InstanceTypeCPU.WithLabelValues("gauge-4x")), 4},
		{"memory_bytes", testutil.ToFloat64(instrumented.InstanceTypeMemory.WithLabelValues("gauge-4x")), 8 << 30},
		{"offering_available{on-demand}", testutil.ToFloat64(instrumented.OfferingAvailable.WithLabelValues("gauge-4x", v1.CapacityTypeOnDemand, "zone-a")), 1},
		{"offering_price_estimate{on-demand}", testutil.ToFloat64(instrumented.OfferingPrice.WithLabelValues("gauge-4x", v1.CapacityTypeOnDemand, "zone-a")), 0.17},
		{"offering_price_estimate{spot}", testutil.ToFloat64(instrumented.OfferingPrice.WithLabelValues("gauge-4x", v1.CapacityTypeSpot, "zone-a")), 0.05},
	} {
		if c.got != c.want {
			t.Errorf("karpenter_cloudprovider_instance_type_%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	it.Offerings[1].Available = false
	if _, err := cp.GetInstanceTypes(context.Background(), &v1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(instrumented.OfferingAvailable.WithLabelValues("gauge-4x", v1.CapacityTypeSpot, "zone-a")); got != 0 {
		t.Errorf("offering_available{spot} = %v after the provider reported it unavailable, want 0", got)
	}
}
