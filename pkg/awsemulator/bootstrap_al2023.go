package awsemulator

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// mergeNodeConfigs reads nodeadm NodeConfigs (node.eks.aws/v1alpha1) in order: maps
// merge key by key with the later document winning, kubelet flags append (the kubelet
// takes a repeated flag's last value), other lists are replaced.
func mergeNodeConfigs(nb *NodeBootstrap, docs []string) error {
	merged := map[string]any{}
	for i, doc := range docs {
		for j, sub := range strings.Split(doc, "\n---") {
			if strings.TrimSpace(sub) == "" {
				continue
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(sub), &m); err != nil {
				return fmt.Errorf("NodeConfig %d.%d: %w", i+1, j+1, err)
			}
			if kind, _ := m["kind"].(string); kind != "NodeConfig" {
				return fmt.Errorf("NodeConfig %d.%d: kind %q, want NodeConfig", i+1, j+1, m["kind"])
			}
			if av, _ := m["apiVersion"].(string); !strings.HasPrefix(av, "node.eks.aws/") {
				return fmt.Errorf("NodeConfig %d.%d: apiVersion %q, want node.eks.aws/v1alpha1", i+1, j+1, m["apiVersion"])
			}
			deepMerge(merged, m, "")
		}
	}
	spec, _ := merged["spec"].(map[string]any)
	cluster, _ := spec["cluster"].(map[string]any)
	nb.ClusterName, _ = cluster["name"].(string)
	nb.APIServer, _ = cluster["apiServerEndpoint"].(string)
	nb.CABundle, _ = cluster["certificateAuthority"].(string)
	kubelet, _ := spec["kubelet"].(map[string]any)
	config, _ := kubelet["config"].(map[string]any)
	if v, ok := config["maxPods"]; ok {
		n, err := toInt(v)
		if err != nil || n < 1 {
			return fmt.Errorf("NodeConfig spec.kubelet.config.maxPods: %v is not a positive integer", v)
		}
		nb.MaxPods = n
	}
	if v, ok := config["podsPerCore"]; ok {
		n, err := toInt(v)
		if err != nil || n < 0 {
			return fmt.Errorf("NodeConfig spec.kubelet.config.podsPerCore: %v is not a non-negative integer", v)
		}
		nb.PodsPerCore = n
	}
	if dns, ok := config["clusterDNS"].([]any); ok && len(dns) > 0 {
		nb.DNSClusterIP, _ = dns[0].(string)
	}
	if taints, ok := config["registerWithTaints"].([]any); ok {
		for i, raw := range taints {
			tm, _ := raw.(map[string]any)
			t := corev1.Taint{}
			t.Key, _ = tm["key"].(string)
			t.Value, _ = tm["value"].(string)
			effect, _ := tm["effect"].(string)
			t.Effect = corev1.TaintEffect(effect)
			if err := checkTaint(t); err != nil {
				return fmt.Errorf("NodeConfig spec.kubelet.config.registerWithTaints[%d]: %w", i, err)
			}
			nb.Taints = append(nb.Taints, t)
		}
	}
	var flags []string
	if raw, ok := kubelet["flags"].([]any); ok {
		for i, f := range raw {
			s, ok := f.(string)
			if !ok {
				return fmt.Errorf("NodeConfig spec.kubelet.flags[%d]: %v is not a string", i, f)
			}
			flags = append(flags, s)
		}
	}
	return applyKubeletArgs(nb, flags, "NodeConfig spec.kubelet.flags")
}

func deepMerge(dst, src map[string]any, path string) {
	for k, v := range src {
		p := path + "." + k
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				deepMerge(dm, sm, p)
				continue
			}
		}
		if p == ".spec.kubelet.flags" {
			if prev, ok := dst[k].([]any); ok {
				if add, ok := v.([]any); ok {
					dst[k] = append(append([]any(nil), prev...), add...)
					continue
				}
			}
		}
		dst[k] = v
	}
}

func toInt(v any) (int, error) {
	switch n := v.(type) {
	case float64:
		if n != float64(int(n)) {
			return 0, fmt.Errorf("not an integer")
		}
		return int(n), nil
	case int64:
		return int(n), nil
	case int:
		return n, nil
	case string:
		return strconv.Atoi(n)
	}
	return 0, fmt.Errorf("not a number")
}
