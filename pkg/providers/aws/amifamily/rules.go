package amifamily

import (
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// ParseMinor reads the minor of a Kubernetes 1.x version ("1.34", "v1.34.2",
// "1.34+").
func ParseMinor(k8sVersion string) (int, error) {
	s := strings.TrimPrefix(strings.TrimSpace(k8sVersion), "v")
	major, rest, ok := strings.Cut(s, ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("kubernetes version %q is not 1.x", k8sVersion)
	}
	minor, _, _ := strings.Cut(rest, ".")
	minor = strings.TrimRight(minor, "+")
	n, err := strconv.Atoi(minor)
	if err != nil {
		return 0, fmt.Errorf("kubernetes version %q has no numeric minor", k8sVersion)
	}
	return n, nil
}

// CheckAlias applies the rules an alias must meet for the cluster's
// Kubernetes version before any AWS call: a known family, windows families
// only at "latest", and the Kubernetes versions AWS publishes the family for
// (no AL2 from 1.33, Windows Server 2025 only from 1.35). The error says
// what to change.
func CheckAlias(alias v1.Alias, k8sVersion string) (*Family, error) {
	f := ForAlias(alias.Family)
	if f == nil {
		return nil, fmt.Errorf("family %q is not supported, use one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025", alias.Family)
	}
	if f.LatestOnly && alias.Version != v1.AliasVersionLatest {
		return nil, fmt.Errorf("%s AMIs are only published as %s@latest, not @%s", f.Name, f.Alias, alias.Version)
	}
	minor, err := ParseMinor(k8sVersion)
	if err != nil {
		return nil, err
	}
	if f.MaxKubernetesMinor > 0 && minor > f.MaxKubernetesMinor {
		return nil, fmt.Errorf("%s AMIs are not published for Kubernetes 1.%d and later (the cluster runs %s); use al2023 or bottlerocket", f.Name, f.MaxKubernetesMinor+1, k8sVersion)
	}
	if f.MinKubernetesMinor > 0 && minor < f.MinKubernetesMinor {
		return nil, fmt.Errorf("%s AMIs are only published for Kubernetes 1.%d and later (the cluster runs %s)", f.Name, f.MinKubernetesMinor, k8sVersion)
	}
	return f, nil
}
