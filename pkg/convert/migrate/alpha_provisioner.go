package migrate

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// Keys of the requirements the alpha AWS webhook added to every Provisioner
// that did not constrain them; the conversion writes them out because
// NodePool has no such defaulting.
const (
	labelInstanceCategory   = awsv1.Group + "/instance-category"
	labelInstanceFamily     = awsv1.Group + "/instance-family"
	labelInstanceGeneration = awsv1.Group + "/instance-generation"
)

// deprecatedRequirementKeys were valid alpha requirement keys that NodePool
// rejects (karpenter.sh is a restricted domain); nodes of a NodePool carry
// karpenter.sh/nodepool instead, which is set by Karpenter.
var deprecatedRequirementKeys = []string{"karpenter.sh/provisioner-name"}

// provisionerToNodePool converts a Provisioner into a v1beta1 NodePool and,
// when the Provisioner has an inline spec.provider, an EC2NodeClass named
// after it that the NodePool points to.
func provisionerToNodePool(in *v1alpha5.Provisioner, opts Options, warn func(string)) (*v1beta1.NodePool, *awsv1beta1.EC2NodeClass, error) {
	s := &in.Spec
	out := &v1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: keptMetadata(in.ObjectMeta),
	}
	tmpl := &out.Spec.Template
	tmpl.ObjectMeta.Labels = maps.Clone(s.Labels)
	tmpl.ObjectMeta.Annotations = maps.Clone(s.Annotations)
	tmpl.Spec.Taints = copyTaints(s.Taints)
	tmpl.Spec.StartupTaints = copyTaints(s.StartupTaints)

	reqs := make([]v1beta1.NodeSelectorRequirementWithMinValues, 0, len(s.Requirements))
	for _, r := range s.Requirements {
		if contains(deprecatedRequirementKeys, r.Key) {
			warn(fmt.Sprintf("spec.requirements[%s] dropped: NodePool nodes are labelled %s by Karpenter", r.Key, v1.NodePoolLabelKey))
			continue
		}
		reqs = append(reqs, v1beta1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: append([]string(nil), r.Values...)})
	}
	if !opts.IgnoreDefaults {
		reqs = appendDefaultRequirements(reqs)
	}
	tmpl.Spec.Requirements = reqs

	if k := s.KubeletConfiguration; k != nil {
		tmpl.Spec.Kubelet = kubeletToV1beta1(k)
		if k.ContainerRuntime != nil {
			warn(fmt.Sprintf("spec.kubeletConfiguration.containerRuntime (%s) dropped: containerd is the only runtime", *k.ContainerRuntime))
		}
	}

	var nodeClass *awsv1beta1.EC2NodeClass
	switch {
	case s.Provider != nil && s.ProviderRef != nil:
		return nil, nil, fmt.Errorf("spec.provider and spec.providerRef are mutually exclusive")
	case s.Provider != nil:
		provider, err := awsv1alpha1.DeserializeProvider(s.Provider.Raw)
		if err != nil {
			return nil, nil, err
		}
		template := &awsv1alpha1.AWSNodeTemplate{ObjectMeta: metav1.ObjectMeta{Name: in.Name}}
		template.Spec.AWS = *provider
		nodeClass, err = nodeTemplateToEC2NodeClass(template, opts, "spec.provider", warn)
		if err != nil {
			return nil, nil, err
		}
		tmpl.Spec.NodeClassRef = &v1beta1.NodeClassReference{APIVersion: awsv1beta1.SchemeGroupVersion.String(), Kind: "EC2NodeClass", Name: in.Name}
	case s.ProviderRef != nil:
		ref, err := nodeClassRefFromProviderRef(s.ProviderRef)
		if err != nil {
			return nil, nil, err
		}
		tmpl.Spec.NodeClassRef = ref
	default:
		return nil, nil, fmt.Errorf("neither spec.provider nor spec.providerRef is set, so the EC2NodeClass of its nodes is unknown: add providerRef naming the AWSNodeTemplate")
	}

	d := &out.Spec.Disruption
	if s.TTLSecondsUntilExpired != nil {
		expire, err := secondsDuration(*s.TTLSecondsUntilExpired, "spec.ttlSecondsUntilExpired")
		if err != nil {
			return nil, nil, err
		}
		d.ExpireAfter = expire
	} else {
		// Provisioner nodes never expired unless asked to; NodePool's default is 720h.
		d.ExpireAfter = v1.NeverDuration()
	}
	switch {
	case s.Consolidation != nil && s.Consolidation.Enabled != nil && *s.Consolidation.Enabled:
		d.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
	case s.TTLSecondsAfterEmpty != nil:
		d.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
		after, err := secondsDuration(*s.TTLSecondsAfterEmpty, "spec.ttlSecondsAfterEmpty")
		if err != nil {
			return nil, nil, err
		}
		d.ConsolidateAfter = &after
	default:
		// A Provisioner without either never removed a node for being empty
		// or underused. NodePool's default (WhenUnderutilized) would start
		// consolidating, so the old behaviour is written out.
		d.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
		never := v1.NeverDuration()
		d.ConsolidateAfter = &never
		warn("neither consolidation.enabled nor ttlSecondsAfterEmpty: written as consolidationPolicy WhenEmpty, consolidateAfter Never (the NodePool default would consolidate)")
	}
	if s.Limits != nil && len(s.Limits.Resources) > 0 {
		out.Spec.Limits = v1beta1.Limits(s.Limits.Resources.DeepCopy())
	}
	out.Spec.Weight = convert.CopyPtr(s.Weight)
	return out, nodeClass, nil
}

// nodeClassRefFromProviderRef points at the EC2NodeClass that the
// referenced AWSNodeTemplate becomes (same name).
func nodeClassRefFromProviderRef(ref *v1alpha5.MachineTemplateRef) (*v1beta1.NodeClassReference, error) {
	if ref.Name == "" {
		return nil, fmt.Errorf("spec.providerRef.name is empty")
	}
	switch ref.Kind {
	case "", "AWSNodeTemplate", "EC2NodeClass":
	default:
		return nil, fmt.Errorf("spec.providerRef.kind %q is not an AWSNodeTemplate; only AWS node templates can be converted", ref.Kind)
	}
	if ref.APIVersion != "" && !strings.HasPrefix(ref.APIVersion, awsv1.Group+"/") {
		return nil, fmt.Errorf("spec.providerRef.apiVersion %q is not in group %s", ref.APIVersion, awsv1.Group)
	}
	return &v1beta1.NodeClassReference{APIVersion: awsv1beta1.SchemeGroupVersion.String(), Kind: "EC2NodeClass", Name: ref.Name}, nil
}

// appendDefaultRequirements adds, after the user's own, the requirements
// the alpha AWS webhook defaulted: linux, amd64, on-demand, and instance
// categories c/m/r of generation > 2 unless an instance-type constraint
// exists. Deprecated label aliases (beta.kubernetes.io/arch, ...) count as
// the key they alias.
func appendDefaultRequirements(reqs []v1beta1.NodeSelectorRequirementWithMinValues) []v1beta1.NodeSelectorRequirementWithMinValues {
	has := func(keys ...string) bool {
		for _, r := range reqs {
			key := r.Key
			if n, ok := v1.NormalizedLabels[key]; ok {
				key = n
			}
			if contains(keys, key) {
				return true
			}
		}
		return false
	}
	var add []v1beta1.NodeSelectorRequirementWithMinValues
	if !has(corev1.LabelOSStable) {
		add = append(add, v1beta1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}})
	}
	if !has(corev1.LabelArchStable) {
		add = append(add, v1beta1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	}
	if !has(v1.CapacityTypeLabelKey) {
		add = append(add, v1beta1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	}
	if !has(corev1.LabelInstanceTypeStable, labelInstanceFamily, labelInstanceCategory, labelInstanceGeneration) {
		add = append(add,
			v1beta1.NodeSelectorRequirementWithMinValues{Key: labelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
			v1beta1.NodeSelectorRequirementWithMinValues{Key: labelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
		)
	}
	return append(reqs, add...)
}

func kubeletToV1beta1(k *v1alpha5.KubeletConfiguration) *v1beta1.KubeletConfiguration {
	out := &v1beta1.KubeletConfiguration{
		ClusterDNS:                  append([]string(nil), k.ClusterDNS...),
		MaxPods:                     convert.CopyPtr(k.MaxPods),
		PodsPerCore:                 convert.CopyPtr(k.PodsPerCore),
		SystemReserved:              resourceListToStrings(k.SystemReserved),
		KubeReserved:                resourceListToStrings(k.KubeReserved),
		EvictionHard:                maps.Clone(k.EvictionHard),
		EvictionSoft:                maps.Clone(k.EvictionSoft),
		EvictionSoftGracePeriod:     maps.Clone(k.EvictionSoftGracePeriod),
		EvictionMaxPodGracePeriod:   convert.CopyPtr(k.EvictionMaxPodGracePeriod),
		ImageGCHighThresholdPercent: convert.CopyPtr(k.ImageGCHighThresholdPercent),
		ImageGCLowThresholdPercent:  convert.CopyPtr(k.ImageGCLowThresholdPercent),
		CPUCFSQuota:                 convert.CopyPtr(k.CPUCFSQuota),
	}
	if len(out.ClusterDNS) == 0 {
		out.ClusterDNS = nil
	}
	return out
}

func resourceListToStrings(rl corev1.ResourceList) map[string]string {
	if rl == nil {
		return nil
	}
	out := make(map[string]string, len(rl))
	for k, q := range rl {
		out[string(k)] = q.String()
	}
	return out
}

func copyTaints(in []corev1.Taint) []corev1.Taint {
	if in == nil {
		return nil
	}
	out := make([]corev1.Taint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// secondsDuration turns an alpha TTL into a NodePool duration.
func secondsDuration(n int64, field string) (v1.NillableDuration, error) {
	if n < 0 || n > int64(math.MaxInt64/time.Second) {
		return v1.NillableDuration{}, fmt.Errorf("%s is %d, expected 0 to %d seconds", field, n, int64(math.MaxInt64/time.Second))
	}
	return v1.ParseNillableDuration(formatSeconds(n))
}

// formatSeconds renders whole seconds the way people write them (2592000
// -> "720h", 90 -> "1m30s"), which also matches the NodePool duration
// pattern; Go's Duration.String would say "720h0m0s".
func formatSeconds(n int64) string {
	if n == 0 {
		return "0s"
	}
	h, m, sec := n/3600, (n%3600)/60, n%60
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec > 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}
