package instancetype

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/kubeletcel"
)

// Eviction signals that reduce allocatable resources.
const (
	signalMemoryAvailable = "memory.available"
	signalNodeFSAvailable = "nodefs.available"
)

// settings are the parts of an EC2NodeClass that shape instance types, parsed
// and checked once per class rather than once per instance type.
type settings struct {
	familyName     string
	family         *amifamily.Family
	maxPods        *int32
	podsPerCore    *int32
	kubeReserved   corev1.ResourceList
	systemReserved corev1.ResourceList
	// maxPodsExpression, kubeReservedExpressions and
	// systemReservedExpressions are the CEL expressions of spec.kubelet
	// (the string maxPods, the reserved values that are not quantities).
	// They are evaluated per instance type when the NodeClassCEL gate is
	// on (forType); when it is off they are not honoured: the family's
	// default applies in their place.
	maxPodsExpression         string
	hasMaxPodsExpression      bool
	kubeReservedExpressions   map[string]string
	systemReservedExpressions map[string]string
	evictionMemory            *threshold
	evictionNodeFS            *threshold
	blockDeviceMappings       []*awsv1.BlockDeviceMapping
	instanceStorePolicy       awsv1.InstanceStorePolicy
	// nitroEnclaves and nestedVirtualization keep only the instance types
	// DescribeInstanceTypes reports supporting them (enclaveOptions.enabled,
	// cpuOptions.nestedVirtualization enabled).
	nitroEnclaves        bool
	nestedVirtualization bool
	// networkInterfaces are the class's spec.networkInterfaces (nil: the
	// default single interface). When set, only the types with the network
	// cards, device indexes and EFA interfaces they name are offered, and
	// the EFA resource counts their efa-only interfaces.
	networkInterfaces []*awsv1.NetworkInterface
}

// threshold is an eviction threshold: an absolute quantity or a percentage of
// the resource's capacity.
type threshold struct {
	quantity resource.Quantity
	percent  float64
	relative bool
}

// of returns the amount the threshold holds back from capacity.
func (t threshold) of(capacity resource.Quantity) resource.Quantity {
	if !t.relative {
		return t.quantity
	}
	// The kubelet reads a percentage of the capacity, rounded up to a byte.
	return *resource.NewQuantity(int64(ceil(capacity.AsApproximateFloat64()/100*t.percent)), resource.BinarySI)
}

// newSettings parses the class's kubelet block and storage settings. Errors
// name the offending field, e.g. spec.kubelet.kubeReserved.memory.
func newSettings(nc *awsv1.EC2NodeClass) (*settings, error) {
	s := &settings{
		familyName:          nc.AMIFamily(),
		blockDeviceMappings: nc.Spec.BlockDeviceMappings,
	}
	s.family = familyOf(s.familyName)
	s.nitroEnclaves = nc.Spec.EnclaveOptions != nil && nc.Spec.EnclaveOptions.Enabled
	s.nestedVirtualization = nc.Spec.CPUOptions != nil && nc.Spec.CPUOptions.NestedVirtualization != nil && *nc.Spec.CPUOptions.NestedVirtualization == "enabled"
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni != nil {
			s.networkInterfaces = append(s.networkInterfaces, ni)
		}
	}
	if nc.Spec.InstanceStorePolicy != nil {
		s.instanceStorePolicy = *nc.Spec.InstanceStorePolicy
	}
	for i, bdm := range nc.Spec.BlockDeviceMappings {
		if bdm == nil {
			return nil, fmt.Errorf("spec.blockDeviceMappings[%d]: must not be null", i)
		}
	}
	kc := nc.Spec.Kubelet
	if kc == nil {
		return s, nil
	}
	s.maxPods, s.podsPerCore = kc.MaxPods, kc.PodsPerCore
	s.maxPodsExpression, s.hasMaxPodsExpression = kc.MaxPodsExpression()
	var err error
	if s.kubeReserved, s.kubeReservedExpressions, err = parseReserved("spec.kubelet.kubeReserved", kc.KubeReserved); err != nil {
		return nil, err
	}
	if s.systemReserved, s.systemReservedExpressions, err = parseReserved("spec.kubelet.systemReserved", kc.SystemReserved); err != nil {
		return nil, err
	}
	if v, ok := kc.EvictionHard[signalMemoryAvailable]; ok {
		if s.evictionMemory, err = parseThreshold("spec.kubelet.evictionHard."+signalMemoryAvailable, v); err != nil {
			return nil, err
		}
	}
	if v, ok := kc.EvictionHard[signalNodeFSAvailable]; ok {
		if s.evictionNodeFS, err = parseThreshold("spec.kubelet.evictionHard."+signalNodeFSAvailable, v); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseReserved reads a kubeReserved/systemReserved map: its quantities, and
// apart the values that are not quantities, which are CEL expressions. pid
// is accepted (the kubelet reserves process ids) but is not a node resource
// the solver tracks.
func parseReserved(field string, m map[string]string) (corev1.ResourceList, map[string]string, error) {
	if len(m) == 0 {
		return nil, nil, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := corev1.ResourceList{}
	var expressions map[string]string
	for _, k := range keys {
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		case "pid":
			continue
		default:
			return nil, nil, fmt.Errorf("%s.%s: unknown resource, valid keys are cpu, memory, ephemeral-storage, pid", field, k)
		}
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			if expressions == nil {
				expressions = map[string]string{}
			}
			expressions[k] = m[k]
			continue
		}
		if q.Sign() < 0 {
			return nil, nil, fmt.Errorf("%s.%s: %q is negative", field, k, m[k])
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, expressions, nil
}

// hasExpressions reports whether the class's kubelet holds CEL expressions.
func (s *settings) hasExpressions() bool {
	return s.hasMaxPodsExpression || len(s.kubeReservedExpressions) > 0 || len(s.systemReservedExpressions) > 0
}

// forType returns the settings of one instance type: the class's, with its
// kubelet expressions evaluated for the type when the NodeClassCEL gate is
// on. maxPods is evaluated first, its max_pods being the count the type
// would have without it; the reserved expressions then see the resolved
// count. A maxPods expression without a result in [0, 2147483647] fails the
// type; a reserved expression without a usable result is left out (logged),
// so the default for its resource applies.
func (s *settings) forType(ctx context.Context, info *ec2types.InstanceTypeInfo, opts Options) (*settings, error) {
	if !opts.NodeClassCEL || !s.hasExpressions() {
		return s, nil
	}
	env := kubeletcel.Shared()
	t := *s
	if s.hasMaxPodsExpression {
		n, err := env.Evaluate(s.maxPodsExpression, celVars(info, &t, opts.ReservedENIs))
		if err != nil {
			return nil, fmt.Errorf("spec.kubelet.maxPods: %w", err)
		}
		if n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("spec.kubelet.maxPods: %q gives %d for %s, outside [0, %d]", s.maxPodsExpression, n, info.InstanceType, math.MaxInt32)
		}
		n32 := int32(n)
		t.maxPods = &n32
	}
	vars := func() (kubeletcel.Vars, error) { return celVars(info, &t, opts.ReservedENIs), nil }
	for _, r := range []struct {
		field       string
		expressions map[string]string
		into        *corev1.ResourceList
	}{
		{"kubeReserved", s.kubeReservedExpressions, &t.kubeReserved},
		{"systemReserved", s.systemReservedExpressions, &t.systemReserved},
	} {
		if len(r.expressions) == 0 {
			continue
		}
		resolved, err := env.ResolveReserved(ctx, r.field, r.expressions, vars)
		if err != nil {
			return nil, fmt.Errorf("spec.kubelet.%s: %w", r.field, err)
		}
		values, _, err := parseReserved("spec.kubelet."+r.field, resolved)
		if err != nil {
			return nil, err
		}
		merged := corev1.ResourceList{}
		for n, q := range *r.into {
			merged[n] = q
		}
		for n, q := range values {
			merged[n] = q
		}
		*r.into = merged
	}
	return &t, nil
}

// celVars are the values of an instance type kubelet expressions see, its
// max_pods the pod count under s.
func celVars(info *ec2types.InstanceTypeInfo, s *settings, reservedENIs int) kubeletcel.Vars {
	defaultENIs, ipsPerENI := eniLimits(info)
	return kubeletcel.Vars{
		VCPUs:        vcpus(info),
		MemoryMiB:    memoryMiB(info),
		DefaultENIs:  defaultENIs,
		IPsPerENI:    ipsPerENI,
		MaxPods:      pods(info, s, reservedENIs),
		InstanceType: string(info.InstanceType),
	}
}

// eniLimits are the network interfaces of the default network card and the
// IPv4 addresses of each, as DescribeInstanceTypes reports them.
func eniLimits(info *ec2types.InstanceTypeInfo) (defaultENIs, ipsPerENI int64) {
	if info.NetworkInfo != nil && info.NetworkInfo.Ipv4AddressesPerInterface != nil {
		ipsPerENI = int64(*info.NetworkInfo.Ipv4AddressesPerInterface)
	}
	return int64(defaultCardInterfaces(info)), ipsPerENI
}

// parseThreshold reads an eviction threshold: a quantity (100Mi) or a
// percentage (10%). 100% disables a threshold in the kubelet, so it holds
// nothing back.
func parseThreshold(field, v string) (*threshold, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return nil, fmt.Errorf("%s: %q is not a percentage between 0%% and 100%%", field, v)
		}
		if f == 100 {
			f = 0
		}
		return &threshold{percent: f, relative: true}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is neither a quantity nor a percentage: %w", field, v, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("%s: %q is negative", field, v)
	}
	return &threshold{quantity: q}, nil
}

// checkExpressions evaluates the class's kubelet expressions for one
// instance type as forType does, but fails on every expression without a
// usable result (a reserved one too, which forType leaves out).
func (s *settings) checkExpressions(ctx context.Context, info *ec2types.InstanceTypeInfo, opts Options) error {
	t, err := s.forType(ctx, info, opts)
	if err != nil {
		return err
	}
	env := kubeletcel.Shared()
	vars := celVars(info, t, opts.ReservedENIs)
	for _, r := range []struct {
		field       string
		expressions map[string]string
	}{{"kubeReserved", s.kubeReservedExpressions}, {"systemReserved", s.systemReservedExpressions}} {
		keys := make([]string, 0, len(r.expressions))
		for k := range r.expressions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n, err := env.Evaluate(r.expressions[k], vars)
			if err == nil && n < 0 {
				err = fmt.Errorf("%q gives %d for %s: %w", r.expressions[k], n, info.InstanceType, kubeletcel.ErrNegative)
			}
			if err != nil {
				return fmt.Errorf("spec.kubelet.%s[%s]: %w", r.field, k, err)
			}
		}
	}
	return nil
}
