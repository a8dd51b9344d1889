package bootstrap

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/BurntSushi/toml"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// Bottlerocket is the user data of Bottlerocket AMIs: the class's TOML with
// Karpenter's settings.kubernetes.* written over it. The user's other
// settings (and the node labels Karpenter does not set) are kept; node
// taints are Karpenter's alone, as upstream does. Bottlerocket has no
// podsPerCore setting, so that field is not written (the instance type's
// capacity does not count on it either); the other kubelet fields go to
// their settings.kubernetes keys (see bottlerocketKubeletSettings).
func Bottlerocket(o Options) (string, error) {
	doc := map[string]any{}
	if o.CustomUserData != "" {
		if _, err := toml.Decode(o.CustomUserData, &doc); err != nil {
			return "", fmt.Errorf("spec.userData is not valid Bottlerocket TOML: %w", err)
		}
	}
	settings, err := table(doc, "settings", "settings")
	if err != nil {
		return "", err
	}
	k8s, err := table(settings, "kubernetes", "settings.kubernetes")
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = o.ClusterName
	k8s["api-server"] = o.ClusterEndpoint
	if o.CABundle != "" {
		k8s["cluster-certificate"] = o.CABundle
	}
	kc := o.kubelet()
	switch len(kc.ClusterDNS) {
	case 0:
	case 1:
		k8s["cluster-dns-ip"] = kc.ClusterDNS[0]
	default:
		k8s["cluster-dns-ip"] = append([]string(nil), kc.ClusterDNS...)
	}
	if len(o.Labels) > 0 {
		labels, err := table(k8s, "node-labels", "settings.kubernetes.node-labels")
		if err != nil {
			return "", err
		}
		for key, v := range o.Labels {
			labels[key] = v
		}
	}
	if len(o.Taints) > 0 {
		taints := map[string]any{}
		for _, t := range o.Taints {
			prev, _ := taints[t.Key].([]string)
			taints[t.Key] = append(prev, t.Value+":"+string(t.Effect))
		}
		k8s["node-taints"] = taints
	}
	if kc.MaxPods != nil {
		k8s["max-pods"] = int64(*kc.MaxPods)
	}
	setStringMap(k8s, "kube-reserved", kc.KubeReserved)
	setStringMap(k8s, "system-reserved", kc.SystemReserved)
	setStringMap(k8s, "eviction-hard", kc.EvictionHard)
	if kc.EvictionMaxPodGracePeriod != nil {
		k8s["eviction-max-pod-grace-period"] = int64(*kc.EvictionMaxPodGracePeriod)
	}
	if kc.ImageGCHighThresholdPercent != nil {
		k8s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*kc.ImageGCHighThresholdPercent))
	}
	if kc.ImageGCLowThresholdPercent != nil {
		k8s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*kc.ImageGCLowThresholdPercent))
	}
	if kc.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *kc.CPUCFSQuota
	}
	setStringMap(k8s, "eviction-soft", kc.EvictionSoft)
	setStringMap(k8s, "eviction-soft-grace-period", durations(kc.EvictionSoftGracePeriod))
	if err := o.bottlerocketPassThrough(k8s); err != nil {
		return "", err
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		cmds, err := table(settings, "bootstrap-commands", "settings.bootstrap-commands")
		if err != nil {
			return "", err
		}
		// Stripe the instance store volumes and mount them where the
		// kubelet and containerd keep their data, on every boot.
		cmds["000-mount-instance-storage"] = map[string]any{
			"commands": [][]string{
				{"apiclient", "ephemeral-storage", "init"},
				{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"mode":      "always",
			"essential": true,
		}
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("serializing Bottlerocket TOML: %w", err)
	}
	return buf.String(), nil
}

// table returns m[key] as a TOML table, creating it when absent; a key
// holding something else is an error naming its path.
func table(m map[string]any, key, path string) (map[string]any, error) {
	v, ok := m[key]
	if !ok {
		t := map[string]any{}
		m[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec.userData: %s must be a TOML table, got %T", path, v)
	}
	return t, nil
}

func setStringMap(m map[string]any, key string, v map[string]string) {
	if len(v) == 0 {
		return
	}
	t := make(map[string]any, len(v))
	for k, val := range v {
		t[k] = val
	}
	m[key] = t
}
