// Package instrumented decorates a CloudProvider with Prometheus metrics: how long
// each call takes and which calls fail, labelled by the controller that made the
// call, the method and the provider; and, from every GetInstanceTypes answer,
// each instance type's vCPUs and memory and each offering's availability and
// price. The metrics live on controller-runtime's registry, which the operator
// serves on its metrics port.
package instrumented

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Label names, as upstream Karpenter uses them.
const (
	LabelController = "controller"
	LabelMethod     = "method"
	LabelProvider   = "provider"
	LabelError      = "error"
	LabelNodePool   = "nodepool"

	LabelInstanceType = "instance_type"
	LabelCapacityType = "capacity_type"
	LabelZone         = "zone"
)

var (
	// MethodDuration is karpenter_cloudprovider_duration_seconds.
	MethodDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter",
		Subsystem: "cloudprovider",
		Name:      "duration_seconds",
		Help:      "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
		// From a millisecond (in-memory providers) to a minute (a slow cloud API).
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{LabelController, LabelMethod, LabelProvider})
	// ErrorsTotal is karpenter_cloudprovider_errors_total.
	ErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter",
		Subsystem: "cloudprovider",
		Name:      "errors_total",
		Help:      "Total number of errors returned from cloud provider calls. Labeled by the controller, method name, provider, error type and the NodePool of the call (empty when it has none).",
	}, []string{LabelController, LabelMethod, LabelProvider, LabelError, LabelNodePool})
	// InstanceTypeCPU is karpenter_cloudprovider_instance_type_cpu_cores.
	InstanceTypeCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_cpu_cores",
		Help: "VCPUs cores for a given instance type.",
	}, []string{LabelInstanceType})
	// InstanceTypeMemory is karpenter_cloudprovider_instance_type_memory_bytes.
	InstanceTypeMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_memory_bytes",
		Help: "Memory, in bytes, for a given instance type.",
	}, []string{LabelInstanceType})
	// OfferingAvailable is karpenter_cloudprovider_instance_type_offering_available (1 or 0).
	OfferingAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_offering_available",
		Help: "Instance type offering availability, based on instance type, capacity type, and zone",
	}, []string{LabelInstanceType, LabelCapacityType, LabelZone})
	// OfferingPrice is karpenter_cloudprovider_instance_type_offering_price_estimate.
	OfferingPrice = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider", Name: "instance_type_offering_price_estimate",
		Help: "Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.",
	}, []string{LabelInstanceType, LabelCapacityType, LabelZone})
)

func init() {
	crmetrics.Registry.MustRegister(MethodDuration, ErrorsTotal, InstanceTypeCPU, InstanceTypeMemory, OfferingAvailable, OfferingPrice)
}

// exportInstanceTypes records what the provider answered. Series are only
// set, never removed: an instance type the provider stops offering keeps its
// last values, which is what the gauges' "estimate" means; availability turns
// 0 through the offering itself when the provider reports it unavailable.
func exportInstanceTypes(its []*scheduling.InstanceType) {
	for _, it := range its {
		if cpu, ok := it.Capacity[corev1.ResourceCPU]; ok {
			InstanceTypeCPU.WithLabelValues(it.Name).Set(cpu.AsApproximateFloat64())
		}
		if mem, ok := it.Capacity[corev1.ResourceMemory]; ok {
			InstanceTypeMemory.WithLabelValues(it.Name).Set(mem.AsApproximateFloat64())
		}
		for _, o := range it.Offerings {
			available := 0.0
			if o.Available {
				available = 1
			}
			OfferingAvailable.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(available)
			OfferingPrice.WithLabelValues(it.Name, o.CapacityType, o.Zone).Set(o.Price)
		}
	}
}

type controllerKey struct{}

// WithController records in ctx the name of the controller making cloud
// provider calls; the decorator reads it for the controller label.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

// Controller returns the controller name stored by WithController, or "".
func Controller(ctx context.Context) string {
	name, _ := ctx.Value(controllerKey{}).(string)
	return name
}

// ErrorType is the value of the error label: the name of the cloud provider
// error kind, or "" for errors that are none of them.
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsInsufficientCapacityError(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNodeClassNotReadyError(err):
		return "NodeClassNotReadyError"
	case cloudprovider.IsCreateError(err):
		return "CreateError"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "ContextError"
	}
	return ""
}

// decorator measures every call that reaches the provider.
type decorator struct {
	cloudprovider.CloudProvider
}

// Decorate wraps cp so that its calls are measured.
func Decorate(cp cloudprovider.CloudProvider) cloudprovider.CloudProvider {
	if _, ok := cp.(*decorator); ok {
		return cp
	}
	return &decorator{CloudProvider: cp}
}

// observe starts timing method, a call about nodePool ("" when none); the
// returned func records the duration and, when err is non-nil, the error.
func (d *decorator) observe(ctx context.Context, method, nodePool string) func(err error) {
	start := time.Now()
	controller, provider := Controller(ctx), d.CloudProvider.Name()
	return func(err error) {
		MethodDuration.WithLabelValues(controller, method, provider).Observe(time.Since(start).Seconds())
		if err != nil {
			ErrorsTotal.WithLabelValues(controller, method, provider, ErrorType(err), nodePool).Inc()
		}
	}
}

func (d *decorator) Create(ctx context.Context, nc *v1.NodeClaim) (out *v1.NodeClaim, err error) {
	done := d.observe(ctx, "Create", nc.Labels[v1.NodePoolLabelKey])
	defer func() { done(err) }()
	return d.CloudProvider.Create(ctx, nc)
}

func (d *decorator) Delete(ctx context.Context, nc *v1.NodeClaim) (err error) {
	done := d.observe(ctx, "Delete", nc.Labels[v1.NodePoolLabelKey])
	defer func() { done(err) }()
	return d.CloudProvider.Delete(ctx, nc)
}

func (d *decorator) Get(ctx context.Context, providerID string) (out *v1.NodeClaim, err error) {
	done := d.observe(ctx, "Get", "")
	defer func() { done(err) }()
	return d.CloudProvider.Get(ctx, providerID)
}

func (d *decorator) List(ctx context.Context) (out []*v1.NodeClaim, err error) {
	done := d.observe(ctx, "List", "")
	defer func() { done(err) }()
	return d.CloudProvider.List(ctx)
}

func (d *decorator) GetInstanceTypes(ctx context.Context, np *v1.NodePool) (out []*scheduling.InstanceType, err error) {
	name := ""
	if np != nil {
		name = np.Name
	}
	done := d.observe(ctx, "GetInstanceTypes", name)
	defer func() { done(err) }()
	out, err = d.CloudProvider.GetInstanceTypes(ctx, np)
	if err == nil {
		exportInstanceTypes(out)
	}
	return out, err
}

func (d *decorator) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (out cloudprovider.DriftReason, err error) {
	done := d.observe(ctx, "IsDrifted", nc.Labels[v1.NodePoolLabelKey])
	defer func() { done(err) }()
	return d.CloudProvider.IsDrifted(ctx, nc)
}

func (d *decorator) Reboot(ctx context.Context, nc *v1.NodeClaim, operationID string) (err error) {
	done := d.observe(ctx, "Reboot", nc.Labels[v1.NodePoolLabelKey])
	defer func() { done(err) }()
	return d.CloudProvider.Reboot(ctx, nc, operationID)
}

// Name, RepairPolicies and GetSupportedNodeClasses are static answers, not
// calls to the cloud; they pass through unmeasured.
func (d *decorator) Name() string { return d.CloudProvider.Name() }
func (d *decorator) RepairPolicies() []cloudprovider.RepairPolicy {
	return d.CloudProvider.RepairPolicies()
}
func (d *decorator) GetSupportedNodeClasses() []client.Object {
	return d.CloudProvider.GetSupportedNodeClasses()
}
