package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is spec.kubelet: a free-form kubelet configuration
// object, stored as the user wrote it. The typed fields are the part
// Karpenter reads itself (to size nodes and to write bootstrap); every other
// key, and every typed key whose value does not have the expected type, is
// kept verbatim in Extra. Decoding therefore never fails on what the API
// server stored, and encoding gives back the same object: typed fields
// first, then Extra for the keys the typed fields do not carry.
//
// ValidateKubelet reports what is wrong with the object (unknown fields,
// wrong types, out-of-range values); the EC2NodeClass controller turns that
// into ValidationSucceeded=False.
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs the kubelet gives to pods.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods caps the number of pods on a node. When unset, the limit comes
	// from the instance type's ENI limits. A string maxPods is a CEL
	// expression (feature gate NodeClassCEL): it stays in Extra, see
	// MaxPodsExpression.
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per vCPU; the lower of this and maxPods wins.
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved is the capacity held back for OS daemons, keyed by cpu,
	// memory, ephemeral-storage or pid. A value that is not a quantity is a
	// CEL expression evaluated per instance type (feature gate NodeClassCEL).
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is the capacity held back for Kubernetes daemons. When
	// unset, Karpenter computes it from the instance type like the EKS AMIs.
	// A value that is not a quantity is a CEL expression, as in
	// SystemReserved.
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard are the thresholds at which the kubelet evicts pods at once.
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft are the thresholds at which the kubelet evicts pods after
	// the grace period of the same key in evictionSoftGracePeriod.
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is how long each evictionSoft threshold must be
	// exceeded before pods are evicted.
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest termination grace period, in
	// seconds, given to pods evicted because a soft threshold was met.
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage at which image garbage
	// collection always runs.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage below which image garbage
	// collection never runs.
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enforces CPU limits of containers with CFS quota.
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`

	// Extra holds every other key of spec.kubelet, and the keys above whose
	// stored value did not decode into the typed field, as stored.
	Extra map[string]apiextensionsv1.JSON `json:"-"`
}

// kubeletTyped has the typed fields without the JSON methods.
type kubeletTyped KubeletConfiguration

// kubeletTypedKeys are the JSON names of the typed fields.
var kubeletTypedKeys = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(KubeletConfiguration{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}()

// IsTypedKubeletField reports whether Karpenter reads the kubelet field
// itself (as opposed to passing it through).
func IsTypedKubeletField(key string) bool { return kubeletTypedKeys[key] }

// UnmarshalJSON keeps every key: typed ones that decode go to their field,
// everything else to Extra. It fails only on input that is not a JSON object.
func (in *KubeletConfiguration) UnmarshalJSON(data []byte) error {
	*in = KubeletConfiguration{}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	typed := kubeletTyped{}
	for key, value := range raw {
		if kubeletTypedKeys[key] {
			one, _ := json.Marshal(map[string]json.RawMessage{key: value})
			candidate := typed
			if err := json.Unmarshal(one, &candidate); err == nil {
				typed = candidate
				continue
			}
		}
		if typed.Extra == nil {
			typed.Extra = map[string]apiextensionsv1.JSON{}
		}
		typed.Extra[key] = apiextensionsv1.JSON{Raw: append([]byte(nil), value...)}
	}
	*in = KubeletConfiguration(typed)
	return nil
}

// MarshalJSON writes the typed fields and the Extra keys the typed fields do
// not set.
func (in KubeletConfiguration) MarshalJSON() ([]byte, error) {
	data, err := json.Marshal(kubeletTyped(in))
	if err != nil {
		return nil, err
	}
	if len(in.Extra) == 0 {
		return data, nil
	}
	out := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	for key, value := range in.Extra {
		if _, set := out[key]; set {
			continue
		}
		if len(value.Raw) == 0 {
			out[key] = json.RawMessage("null")
			continue
		}
		out[key] = json.RawMessage(value.Raw)
	}
	return json.Marshal(out)
}

// PassThrough returns the keys of spec.kubelet Karpenter does not read
// itself, with their values decoded, for the AMI families that write them
// into the kubelet's configuration. Keys that are typed fields with a wrong
// value are not included (ValidateKubelet reports them).
func (in *KubeletConfiguration) PassThrough() map[string]any {
	if in == nil {
		return nil
	}
	out := map[string]any{}
	for key, value := range in.Extra {
		if kubeletTypedKeys[key] {
			continue
		}
		var v any
		if err := json.Unmarshal(value.Raw, &v); err != nil {
			continue
		}
		out[key] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// PassThroughKeys are the sorted keys of PassThrough.
func (in *KubeletConfiguration) PassThroughKeys() []string {
	var out []string
	for k := range in.PassThrough() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String is the object's JSON, with sorted keys.
func (in *KubeletConfiguration) String() string {
	if in == nil {
		return "null"
	}
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Sprintf("%#v", *in)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return string(data)
	}
	sorted, _ := json.Marshal(v)
	return string(sorted)
}

// MaxPodsExpression returns maxPods when it is a string: a CEL expression
// evaluated per instance type (feature gate NodeClassCEL). The string is
// kept in Extra, as stored, and MaxPods is nil.
func (in *KubeletConfiguration) MaxPodsExpression() (string, bool) {
	if in == nil || in.MaxPods != nil {
		return "", false
	}
	raw, ok := in.Extra["maxPods"]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw.Raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// HasExpressions reports whether spec.kubelet holds a CEL expression: a
// string maxPods, or a kubeReserved or systemReserved value that is not a
// resource quantity.
func (in *KubeletConfiguration) HasExpressions() bool {
	if _, ok := in.MaxPodsExpression(); ok {
		return true
	}
	return in.HasReservedExpressions()
}

// HasReservedExpressions reports whether a kubeReserved or systemReserved
// value is not a resource quantity, i.e. is a CEL expression.
func (in *KubeletConfiguration) HasReservedExpressions() bool {
	if in == nil {
		return false
	}
	for _, m := range []map[string]string{in.KubeReserved, in.SystemReserved} {
		for _, v := range m {
			if _, err := resource.ParseQuantity(v); err != nil {
				return true
			}
		}
	}
	return false
}
