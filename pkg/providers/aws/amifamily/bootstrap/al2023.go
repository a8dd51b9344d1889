package bootstrap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// NodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1)
// Karpenter writes.
type NodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       NodeConfigSpec `json:"spec"`
}

// NodeConfigSpec is NodeConfig.spec.
type NodeConfigSpec struct {
	Cluster  NodeConfigCluster   `json:"cluster"`
	Kubelet  NodeConfigKubelet   `json:"kubelet"`
	Instance *NodeConfigInstance `json:"instance,omitempty"`
}

// NodeConfigCluster is NodeConfig.spec.cluster.
type NodeConfigCluster struct {
	Name              string `json:"name"`
	APIServerEndpoint string `json:"apiServerEndpoint"`
	// CertificateAuthority is base64 PEM, as nodeadm reads it.
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr"`
}

// NodeConfigKubelet is NodeConfig.spec.kubelet: config is merged into the
// kubelet's configuration file, flags are appended to its command line.
type NodeConfigKubelet struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

// NodeConfigInstance is NodeConfig.spec.instance.
type NodeConfigInstance struct {
	LocalStorage NodeConfigLocalStorage `json:"localStorage"`
}

// NodeConfigLocalStorage is NodeConfig.spec.instance.localStorage.
type NodeConfigLocalStorage struct {
	Strategy string `json:"strategy"`
}

// NodeConfig API identity.
const (
	NodeConfigAPIVersion = "node.eks.aws/v1alpha1"
	NodeConfigKind       = "NodeConfig"
)

// AL2023 is the user data of Amazon Linux 2023 EKS AMIs: a MIME archive of
// the class's parts followed by Karpenter's NodeConfig. nodeadm merges
// NodeConfigs in order, so Karpenter's settings override the user's.
func AL2023(o Options) (string, error) {
	nc, err := o.NodeConfig()
	if err != nil {
		return "", err
	}
	doc, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("serializing NodeConfig: %w", err)
	}
	parts, err := userParts(o.CustomUserData, true)
	if err != nil {
		return "", err
	}
	parts = append(parts, newPart(ContentTypeNodeConfig, "# Karpenter Generated NodeConfig\n"+string(doc)))
	return WriteMIME(parts)
}

// NodeConfig is Karpenter's NodeConfig for these options. The kubelet
// settings go into spec.kubelet.config under the kubelet's own field names;
// labels and taints go into spec.kubelet.flags (--node-labels,
// --register-with-taints), the taints also into config.registerWithTaints.
func (o Options) NodeConfig() (*NodeConfig, error) {
	if o.ClusterCIDR == "" {
		return nil, errors.New("AL2023 user data needs the cluster's service CIDR (spec.cluster.cidr of the NodeConfig), which is not known yet")
	}
	if o.CABundle != "" {
		if _, err := base64.StdEncoding.DecodeString(o.CABundle); err != nil {
			return nil, fmt.Errorf("cluster CA bundle is not base64: %w", err)
		}
	}
	config, err := kubeletConfigMap(o.kubelet(), o.Taints)
	if err != nil {
		return nil, err
	}
	nc := &NodeConfig{
		APIVersion: NodeConfigAPIVersion,
		Kind:       NodeConfigKind,
		Spec: NodeConfigSpec{
			Cluster: NodeConfigCluster{
				Name:                 o.ClusterName,
				APIServerEndpoint:    o.ClusterEndpoint,
				CertificateAuthority: o.CABundle,
				CIDR:                 o.ClusterCIDR,
			},
			Kubelet: NodeConfigKubelet{Config: config},
		},
	}
	if len(o.Labels) > 0 {
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, fmt.Sprintf("--node-labels=%q", labelList(o.Labels)))
	}
	if len(o.Taints) > 0 {
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, fmt.Sprintf("--register-with-taints=%q", taintList(o.Taints)))
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		nc.Spec.Instance = &NodeConfigInstance{LocalStorage: NodeConfigLocalStorage{Strategy: "RAID0"}}
	}
	return nc, nil
}

// kubeletConfigMap renders the class's kubelet settings with the field
// names of the kubelet's KubeletConfiguration (the EC2NodeClass uses the
// same names), plus registerWithTaints.
func kubeletConfigMap(k *awsv1.KubeletConfiguration, taints []corev1.Taint) (map[string]any, error) {
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("serializing kubelet configuration: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("serializing kubelet configuration: %w", err)
	}
	if len(taints) > 0 {
		out["registerWithTaints"] = taints
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// looksLikeNodeConfig reports whether bare (non-MIME) user data is a YAML
// document naming an apiVersion or kind, which nodeadm would read as a
// NodeConfig; anything else is treated as a shell script.
func looksLikeNodeConfig(userData string) bool {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(userData), &m); err != nil {
		return false
	}
	_, hasKind := m["kind"]
	_, hasAPIVersion := m["apiVersion"]
	return hasKind || hasAPIVersion
}
