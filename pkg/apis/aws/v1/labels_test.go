package v1_test

import (
	"strings"
	"testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// TestWellKnownLabels pins the label keys users write in NodePool
// requirements: a renamed or dropped key silently breaks their manifests.
func TestWellKnownLabels(t *testing.T) {
	want := []string{
		"karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
		"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
		"karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
		"karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
		"karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
		"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
		"karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name",
		"karpenter.k8s.aws/instance-accelerator-manufacturer", "karpenter.k8s.aws/instance-accelerator-count",
		"karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/instance-tenancy",
		"topology.k8s.aws/zone-id", "node.kubernetes.io/windows-build",
	}
	have := map[string]bool{}
	for _, l := range awsv1.WellKnownLabels {
		if have[l] {
			t.Errorf("%s listed twice", l)
		}
		have[l] = true
	}
	for _, l := range want {
		if !have[l] {
			t.Errorf("WellKnownLabels lacks %s", l)
		}
	}
	if awsv1.LabelTopologyZoneID != "topology.k8s.aws/zone-id" || awsv1.LabelWindowsBuild != "node.kubernetes.io/windows-build" {
		t.Errorf("zone-id/windows-build labels renamed")
	}
	for _, l := range awsv1.WellKnownLabels {
		if strings.HasPrefix(l, awsv1.Group+"/") && !strings.HasPrefix(l, awsv1.RestrictedLabelDomains[0]) {
			t.Errorf("%s is outside the restricted domain", l)
		}
	}
}

func TestAnnotationsTagsAndFinalizer(t *testing.T) {
	for got, want := range map[string]string{
		awsv1.AnnotationEC2NodeClassHash:               "karpenter.k8s.aws/ec2nodeclass-hash",
		awsv1.AnnotationEC2NodeClassHashVersion:        "karpenter.k8s.aws/ec2nodeclass-hash-version",
		awsv1.AnnotationUbuntuCompatibilityKey:         "compatibility.karpenter.k8s.aws/v1beta1-ubuntu",
		awsv1.AnnotationAliasVersionCompatibilityKey:   "compatibility.karpenter.k8s.aws/v1-alias-version",
		awsv1.AnnotationKubeletCompatibilityHash:       "compatibility.karpenter.k8s.aws/kubelet-drift-hash",
		awsv1.AnnotationClusterNameTaggedCompatibility: "compatibility.karpenter.k8s.aws/cluster-name-tagged",
		awsv1.AnnotationInstanceTagged:                 "karpenter.k8s.aws/tagged",
		awsv1.TagEC2NodeClass:                          "karpenter.k8s.aws/ec2nodeclass",
		awsv1.TagEKSClusterName:                        "eks:eks-cluster-name",
		awsv1.TagNodePool:                              "karpenter.sh/nodepool",
		awsv1.TagNodeClaim:                             "karpenter.sh/nodeclaim",
		awsv1.TerminationFinalizer:                     "karpenter.k8s.aws/termination",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
