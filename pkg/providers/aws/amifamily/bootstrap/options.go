package bootstrap

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// Options are everything a node's bootstrap needs. The caller (the amifamily
// resolver) has already defaulted the kubelet settings: clusterDNS from the
// cluster's DNS service and maxPods from the instance type when the class
// leaves them unset.
type Options struct {
	ClusterName     string
	ClusterEndpoint string
	// CABundle is the cluster's CA certificate, base64-encoded PEM; "" leaves
	// the bootstrap to fetch it (AL2 and Windows call DescribeCluster).
	CABundle string
	// ClusterCIDR is the service CIDR; AL2023's NodeConfig requires it.
	ClusterCIDR string
	Kubelet     *awsv1.KubeletConfiguration
	// Labels the kubelet registers the node with (already filtered to what
	// the NodeRestriction admission plugin lets a kubelet set).
	Labels map[string]string
	// Taints the kubelet registers the node with.
	Taints []corev1.Taint
	// CustomUserData is the EC2NodeClass's spec.userData ("" when unset).
	CustomUserData      string
	InstanceStorePolicy *awsv1.InstanceStorePolicy
}

// Generate returns the user data (plain text, not base64) of an AMI family.
func Generate(family string, o Options) (string, error) {
	switch family {
	case awsv1.AMIFamilyAL2:
		return AL2(o)
	case awsv1.AMIFamilyAL2023:
		return AL2023(o)
	case awsv1.AMIFamilyBottlerocket:
		return Bottlerocket(o)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return Windows(o)
	case awsv1.AMIFamilyCustom:
		return Custom(o), nil
	}
	return "", fmt.Errorf("amiFamily %q has no bootstrap; use one of AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Windows2025, Custom", family)
}

func (o Options) kubelet() *awsv1.KubeletConfiguration {
	if o.Kubelet == nil {
		return &awsv1.KubeletConfiguration{}
	}
	return o.Kubelet
}

// clusterDNS is the first DNS address, which is what the bootstraps take.
func (o Options) clusterDNS() string {
	if k := o.kubelet(); len(k.ClusterDNS) > 0 {
		return k.ClusterDNS[0]
	}
	return ""
}

// labelList renders labels as the kubelet's --node-labels value: k=v pairs,
// sorted by key, comma-separated.
func labelList(labels map[string]string) string {
	keys := sortedKeys(labels)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// taintList renders taints as the kubelet's --register-with-taints value:
// key=value:Effect (key:Effect without a value), in the order given.
func taintList(taints []corev1.Taint) string {
	parts := make([]string, 0, len(taints))
	for _, t := range taints {
		parts = append(parts, t.ToString())
	}
	return strings.Join(parts, ",")
}

// kubeletFlags are the kubelet command-line flags AL2's bootstrap.sh and the
// Windows bootstrap pass through (--kubelet-extra-args / -KubeletExtraArgs).
// Values holding lists are double-quoted, as upstream writes them.
func (o Options) kubeletFlags(podsPerCore, evictionSoft bool) []string {
	var args []string
	if len(o.Labels) > 0 {
		args = append(args, fmt.Sprintf("--node-labels=%q", labelList(o.Labels)))
	}
	if len(o.Taints) > 0 {
		args = append(args, fmt.Sprintf("--register-with-taints=%q", taintList(o.Taints)))
	}
	k := o.kubelet()
	if k.MaxPods != nil {
		args = append(args, fmt.Sprintf("--max-pods=%d", *k.MaxPods))
	}
	if podsPerCore && k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	args = appendMapFlag(args, "--system-reserved", k.SystemReserved, "=")
	args = appendMapFlag(args, "--kube-reserved", k.KubeReserved, "=")
	args = appendMapFlag(args, "--eviction-hard", k.EvictionHard, "<")
	if evictionSoft {
		args = appendMapFlag(args, "--eviction-soft", k.EvictionSoft, "<")
		args = appendMapFlag(args, "--eviction-soft-grace-period", durations(k.EvictionSoftGracePeriod), "=")
	}
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

// appendMapFlag adds name="k<sep>v,..." with keys sorted, or nothing for an
// empty map.
func appendMapFlag(args []string, name string, m map[string]string, sep string) []string {
	if len(m) == 0 {
		return args
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+sep+m[k])
	}
	return append(args, fmt.Sprintf("%s=%q", name, strings.Join(parts, ",")))
}

// durations renders grace periods as Go durations (1m0s), the form the
// kubelet's flags and config accept.
func durations(m map[string]metav1.Duration) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Duration.String()
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isMIME reports whether user data is already a MIME document (it then
// starts with one of the two headers a multi-part archive opens with).
func isMIME(userData string) bool {
	s := strings.TrimSpace(userData)
	return strings.HasPrefix(s, "MIME-Version:") || strings.HasPrefix(s, "Content-Type:")
}
