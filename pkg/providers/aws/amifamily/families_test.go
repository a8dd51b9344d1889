package amifamily

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

func paths(ps []Parameter) []string {
	var out []string
	for _, p := range ps {
		var vs []string
		for _, v := range p.Variants {
			vs = append(vs, string(v))
		}
		out = append(out, p.Path+" "+strings.Join(vs, ","))
	}
	return out
}

func TestSSMParametersAreUpstreams(t *testing.T) {
	cases := []struct {
		family, k8s, version string
		want                 []string
	}{
		{"AL2", "1.32", "latest", []string{
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id standard",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id standard",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id neuron,nvidia",
		}},
		{"AL2", "1.32", "v20251101", []string{
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/amazon-eks-node-1.32-v20251101/image_id standard",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20251101/image_id standard",
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20251101/image_id neuron,nvidia",
		}},
		{"AL2023", "1.34", "latest", []string{
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id standard",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id nvidia",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/recommended/image_id neuron",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id standard",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/recommended/image_id nvidia",
		}},
		{"AL2023", "1.34", "v20251115", []string{
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.34-v20251115/image_id standard",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.34-v20251115/image_id nvidia",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.34-v20251115/image_id neuron",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.34-v20251115/image_id standard",
			"/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.34-v20251115/image_id nvidia",
		}},
		{"Bottlerocket", "1.34", "v1.50.0", []string{
			"/aws/service/bottlerocket/aws-k8s-1.34/x86_64/1.50.0/image_id standard,neuron",
			"/aws/service/bottlerocket/aws-k8s-1.34/arm64/1.50.0/image_id standard",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/1.50.0/image_id nvidia",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/1.50.0/image_id nvidia",
		}},
		{"Bottlerocket", "1.34", "latest", []string{
			"/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id standard,neuron",
			"/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id standard",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/x86_64/latest/image_id nvidia",
			"/aws/service/bottlerocket/aws-k8s-1.34-nvidia/arm64/latest/image_id nvidia",
		}},
		{"Windows2019", "1.34", "latest", []string{"/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.34/image_id windows"}},
		{"Windows2022", "1.34", "latest", []string{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.34/image_id windows"}},
		{"Windows2025", "1.35", "latest", []string{"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id windows"}},
		{"Custom", "1.34", "latest", nil},
	}
	for _, c := range cases {
		got := paths(Get(c.family).Parameters(c.k8s, c.version))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s %s@%s:\ngot  %v\nwant %v", c.family, c.k8s, c.version, got, c.want)
		}
	}
}

func TestCheckAlias(t *testing.T) {
	cases := []struct {
		alias, k8s, wantErr string
	}{
		{"al2023@latest", "1.34", ""},
		{"al2@latest", "1.32", ""},
		{"al2@v20251101", "1.33", "AL2 AMIs are not published for Kubernetes 1.33 and later (the cluster runs 1.33)"},
		{"AL2@latest", "1.37", "AL2 AMIs are not published for Kubernetes 1.33 and later"},
		{"windows2025@latest", "1.34", "Windows2025 AMIs are only published for Kubernetes 1.35 and later (the cluster runs 1.34)"},
		{"windows2025@latest", "1.35", ""},
		{"windows2022@v20240101", "1.34", "only published as windows2022@latest, not @v20240101"},
		{"ubuntu@latest", "1.34", `family "ubuntu" is not supported`},
		{"bottlerocket@v1.50.0", "2.0", `kubernetes version "2.0" is not 1.x`},
	}
	for _, c := range cases {
		a, _ := v1.ParseAlias(c.alias)
		_, err := CheckAlias(a, c.k8s)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s on %s: unexpected %v", c.alias, c.k8s, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s on %s: err %v, want %q", c.alias, c.k8s, err, c.wantErr)
		}
	}
}

func TestParseMinor(t *testing.T) {
	for in, want := range map[string]int{"1.34": 34, "v1.37.2": 37, "1.31+": 31, "1.30.1-eks-abc": 30} {
		if got, err := ParseMinor(in); err != nil || got != want {
			t.Errorf("ParseMinor(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "2.1", "1.x"} {
		if _, err := ParseMinor(in); err == nil {
			t.Errorf("ParseMinor(%q) must fail", in)
		}
	}
}

func TestFamilyTable(t *testing.T) {
	for _, f := range Families {
		if len(f.DefaultBlockDeviceMappings) == 0 || f.EphemeralBlockDevice == "" || f.OS == "" {
			t.Errorf("%s incomplete: %+v", f.Name, f)
		}
		found := false
		for _, b := range f.DefaultBlockDeviceMappings {
			found = found || ptr.Deref(b.DeviceName, "") == f.EphemeralBlockDevice
		}
		if !found {
			t.Errorf("%s: ephemeral device %s has no default mapping", f.Name, f.EphemeralBlockDevice)
		}
	}
	if br := Get("Bottlerocket"); br.DefaultBlockDeviceMappings[0].EBS.VolumeSize.String() != "4Gi" || br.EphemeralBlockDevice != "/dev/xvdb" {
		t.Error("bottlerocket keeps a 4Gi OS volume and the ephemeral /dev/xvdb")
	}
	if w := Get("Windows2022"); w.DefaultBlockDeviceMappings[0].EBS.VolumeSize.String() != "50Gi" || w.OS != "windows" || w.WindowsBuild != "10.0.20348" {
		t.Errorf("windows2022: %+v", w)
	}
	nc := &v1.EC2NodeClass{Spec: v1.EC2NodeClassSpec{AMISelectorTerms: []v1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}}}
	if ForNodeClass(nc).Name != "Bottlerocket" {
		t.Error("alias family")
	}
	nc.Spec.AMIFamily = ptr.To("Custom")
	if ForNodeClass(nc).Name != "Custom" {
		t.Error("explicit amiFamily wins")
	}
	if ForNodeClass(&v1.EC2NodeClass{}).Name != "Custom" {
		t.Error("default Custom")
	}
}

func TestVariantRequirements(t *testing.T) {
	w := Get("Windows2019")
	reqs := VariantWindows.Requirements(w)
	if len(reqs) != 2 || reqs[0].Key != corev1.LabelOSStable || reqs[1].Values[0] != "10.0.17763" {
		t.Errorf("windows: %v", reqs)
	}
	if r := VariantNvidia.Requirements(nil); r[0].Key != v1.LabelInstanceGPUCount || r[0].Operator != corev1.NodeSelectorOpExists {
		t.Errorf("nvidia: %v", r)
	}
	if r := VariantNeuron.Requirements(nil); r[0].Key != v1.LabelInstanceAcceleratorCount || r[0].Operator != corev1.NodeSelectorOpExists {
		t.Errorf("neuron: %v", r)
	}
	if r := VariantStandard.Requirements(nil); len(r) != 2 || r[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("standard: %v", r)
	}
}
