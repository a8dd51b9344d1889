package awsemulator

import (
	"fmt"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
)

// bottlerocketSettings is the part of Bottlerocket's settings TOML that decides how the
// node registers.
type bottlerocketSettings struct {
	Settings struct {
		Kubernetes struct {
			ClusterName        string              `toml:"cluster-name"`
			APIServer          string              `toml:"api-server"`
			ClusterCertificate string              `toml:"cluster-certificate"`
			ClusterDNSIP       any                 `toml:"cluster-dns-ip"` // a string or a list
			MaxPods            int                 `toml:"max-pods"`
			PodsPerCore        int                 `toml:"pods-per-core"`
			NodeLabels         map[string]string   `toml:"node-labels"`
			NodeTaints         map[string][]string `toml:"node-taints"`
		} `toml:"kubernetes"`
	} `toml:"settings"`
}

func parseBottlerocket(nb *NodeBootstrap, doc string) error {
	var s bottlerocketSettings
	if _, err := toml.Decode(doc, &s); err != nil {
		return fmt.Errorf("Bottlerocket settings TOML: %w", err)
	}
	k := s.Settings.Kubernetes
	nb.Format = BootstrapBottlerocket
	nb.ClusterName, nb.APIServer, nb.CABundle = k.ClusterName, k.APIServer, k.ClusterCertificate
	switch ip := k.ClusterDNSIP.(type) {
	case string:
		nb.DNSClusterIP = ip
	case []any:
		if len(ip) > 0 {
			nb.DNSClusterIP, _ = ip[0].(string)
		}
	}
	if k.MaxPods < 0 {
		return fmt.Errorf("settings.kubernetes.max-pods: %d is not positive", k.MaxPods)
	}
	if k.PodsPerCore < 0 {
		return fmt.Errorf("settings.kubernetes.pods-per-core: %d is not positive", k.PodsPerCore)
	}
	nb.MaxPods, nb.PodsPerCore = k.MaxPods, k.PodsPerCore
	for key, v := range k.NodeLabels {
		nb.Labels[key] = v
	}
	for _, key := range sortedKeys(k.NodeTaints) {
		for _, ve := range k.NodeTaints[key] {
			t, err := parseTaint(key + "=" + ve)
			if err != nil {
				return fmt.Errorf("settings.kubernetes.node-taints.%s: %w", key, err)
			}
			nb.Taints = append(nb.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	return nil
}
