package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Well-known labels of karpenter.sh.
const (
	// NodePoolLabelKey names the NodePool that owns a NodeClaim or node.
	NodePoolLabelKey = Group + "/nodepool"
	// CapacityTypeLabelKey is the purchase option of a node: spot, on-demand or reserved.
	CapacityTypeLabelKey = Group + "/capacity-type"
	// NodeInitializedLabelKey is set to "true" once Karpenter saw the node initialize.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeRegisteredLabelKey is set to "true" once the node registered for its NodeClaim.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeDoNotSyncTaintsLabelKey on a node tells Karpenter that another
	// component manages its taints; Karpenter then only removes the
	// unregistered taint.
	NodeDoNotSyncTaintsLabelKey = Group + "/do-not-sync-taints"
)

// Values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Well-known annotations of karpenter.sh.
const (
	// DoNotDisruptAnnotationKey on a node ("true") or pod ("true" or a
	// duration such as "4h" counted from pod start) blocks voluntary disruption.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// DoNotRepairAnnotationKey on a node ("true") keeps node repair away from
	// it, whatever its conditions (NodeRepair gate).
	DoNotRepairAnnotationKey = Group + "/do-not-repair"
	// RebootPreBootIDAnnotationKey on a NodeClaim holds the Node's boot ID
	// from just before Karpenter asked the cloud provider to reboot it: a
	// different boot ID proves the reboot happened, so it is not asked again.
	// Removed when the reboot ends.
	RebootPreBootIDAnnotationKey = Group + "/reboot-pre-boot-id"
	// RebootTerminationGracePeriodAnnotationKey on a NodeClaim bounds the
	// drain before a reboot (a Go duration; "0s" skips the drain). Absent,
	// the drain waits for every pod.
	RebootTerminationGracePeriodAnnotationKey = Group + "/reboot-termination-grace-period"
	// DisruptionCostAnnotationKey on a pod is an int32 cost of evicting it:
	// consolidation prefers nodes whose pods cost less. Unset, the pod's
	// controller.kubernetes.io/pod-deletion-cost counts instead, unless
	// Karpenter writes that itself (PodDeletionCostManagement).
	DisruptionCostAnnotationKey = Group + "/disruption-cost"
	// NodePoolHashAnnotationKey holds the hash of the NodePool template a
	// NodeClaim was created from; a mismatch means the NodeClaim drifted.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey is the version of the hashing scheme;
	// hashes are only compared when versions match.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey is the time by which a
	// deleting NodeClaim's node is forcibly drained (deletion + terminationGracePeriod).
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// NodeClaimMinValuesRelaxedAnnotationKey is "true" when minValues were relaxed for the NodeClaim.
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
	// ProviderCompatibilityAnnotationKey carries provider compatibility data.
	ProviderCompatibilityAnnotationKey = CompatibilityGroup + "/provider"
	// KubeletCompatibilityAnnotationKey holds, on v1 objects converted from
	// v1beta1, the JSON of the v1beta1 spec.template.spec.kubelet (v1 moved
	// kubelet settings to the NodeClass).
	KubeletCompatibilityAnnotationKey = CompatibilityGroup + "/v1beta1-kubelet-conversion"
	// NodeClassReferenceAnnotationKey holds, on v1 objects converted from
	// v1beta1, the JSON of the original v1beta1 nodeClassRef when it cannot
	// be derived from the v1 one.
	NodeClassReferenceAnnotationKey = CompatibilityGroup + "/v1beta1-nodeclass-reference"
	// V1OnlyFieldsAnnotationKey holds, on v1beta1 views of v1 objects, the
	// JSON of v1 fields v1beta1 cannot express, so that a v1beta1 client
	// reading and writing back an object does not lose them.
	V1OnlyFieldsAnnotationKey = CompatibilityGroup + "/v1-fields"
	// StoredVersionMigratedAnnotationKey marks objects rewritten in the storage version.
	StoredVersionMigratedAnnotationKey = Group + "/stored-version-migrated"
)

// Finalizers of karpenter.sh.
const (
	// TerminationFinalizer on NodeClaims and nodes lets Karpenter drain the
	// node and delete the instance before the object goes away.
	TerminationFinalizer = Group + "/termination"
)

// Label domains users may not set in NodePool labels or requirements,
// except for the keys and sub-domains listed below.
var (
	RestrictedLabelDomains = []string{"kubernetes.io", "k8s.io", Group}
	// LabelDomainExceptions are sub-domains of restricted domains that users may set.
	LabelDomainExceptions = []string{"kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io"}
	// RestrictedLabels may never be set by users.
	RestrictedLabels = []string{corev1.LabelHostname, NodePoolLabelKey}
)

// WellKnownLabels are the labels Karpenter knows how to satisfy through
// instance selection, even though some lie in restricted domains.
var WellKnownLabels = []string{
	NodePoolLabelKey,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelInstanceTypeStable,
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	CapacityTypeLabelKey,
	corev1.LabelWindowsBuild,
}

// WellKnownValuesForRequirements are the only values Karpenter can satisfy
// for some well-known labels. A NodePool requirement In none of them can
// launch nothing, and its NodePool fails validation, as upstream's. Providers
// add their own keys (at init, before any controller runs).
var WellKnownValuesForRequirements = map[string][]string{
	CapacityTypeLabelKey: {CapacityTypeOnDemand, CapacityTypeSpot, CapacityTypeReserved},
}

// NormalizedLabels maps deprecated label keys to the keys Karpenter uses.
var NormalizedLabels = map[string]string{
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
	"beta.kubernetes.io/arch":           corev1.LabelArchStable,
	"beta.kubernetes.io/os":             corev1.LabelOSStable,
	corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
}

// NodeClassLabelKey is the label naming the NodeClass of a node, e.g.
// karpenter.k8s.aws/ec2nodeclass for group karpenter.k8s.aws, kind EC2NodeClass.
func NodeClassLabelKey(gk schema.GroupKind) string {
	return gk.Group + "/" + lower(gk.Kind)
}

// GroupKind returns the group and kind of the referenced NodeClass.
func (r *NodeClassReference) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
