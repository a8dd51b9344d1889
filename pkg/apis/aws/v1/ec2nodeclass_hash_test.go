package v1

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func hashClass() *EC2NodeClass {
	q := resource.MustParse("100Gi")
	return &EC2NodeClass{Spec: EC2NodeClassSpec{
		SubnetSelectorTerms: []SubnetSelectorTerm{{ID: "subnet-1"}},
		AMISelectorTerms:    []AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                "role",
		Tags:                map[string]string{"a": "1", "b": "2"},
		BlockDeviceMappings: []*BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: &BlockDevice{VolumeSize: &q}},
			{DeviceName: ptr.To("/dev/xvdb")},
		},
	}}
}

func TestHash(t *testing.T) {
	base := hashClass().Hash()
	// The hash of an unchanged class is the one earlier releases stamped
	// on NodeClaims: fields added since are left out while unset (kgo-v2
	// added the kubelet, which this class does not set).
	if base != "422306938898983637" {
		t.Errorf("hash of the reference class is %s, want 422306938898983637", base)
	}
	if base == "" || base != hashClass().Hash() {
		t.Fatalf("hash %q not stable", base)
	}
	same := map[string]func(*EC2NodeClass){
		"selector terms": func(nc *EC2NodeClass) { nc.Spec.SubnetSelectorTerms[0].ID = "subnet-2" },
		"ami terms":      func(nc *EC2NodeClass) { nc.Spec.AMISelectorTerms[0].Alias = "al2023@v20250101" },
		"empty kubelet":  func(nc *EC2NodeClass) { nc.Spec.Kubelet = &KubeletConfiguration{} },
		"bdm order":      func(nc *EC2NodeClass) { b := nc.Spec.BlockDeviceMappings; b[0], b[1] = b[1], b[0] },
		"equal quantity": func(nc *EC2NodeClass) {
			q := resource.MustParse("102400Mi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		},
		"tag order": func(nc *EC2NodeClass) { nc.Spec.Tags = map[string]string{"b": "2", "a": "1"} },
		"status":    func(nc *EC2NodeClass) { nc.Status.InstanceProfile = "x" },
		// As upstream, ipPrefixCount does not drift nodes.
		"ipPrefixCount": func(nc *EC2NodeClass) { nc.Spec.IPPrefixCount = ptr.To(int32(2)) },
	}
	for name, f := range same {
		nc := hashClass()
		f(nc)
		if h := nc.Hash(); h != base {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]func(*EC2NodeClass){
		"role": func(nc *EC2NodeClass) { nc.Spec.Role = "other" },
		"tags": func(nc *EC2NodeClass) { nc.Spec.Tags["a"] = "3" },
		"volume size": func(nc *EC2NodeClass) {
			q := resource.MustParse("200Gi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		},
		"user data":  func(nc *EC2NodeClass) { nc.Spec.UserData = ptr.To("x") },
		"metadata":   func(nc *EC2NodeClass) { nc.Spec.MetadataOptions = &MetadataOptions{HTTPTokens: ptr.To("optional")} },
		"monitoring": func(nc *EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr.To(true) },
		"context":    func(nc *EC2NodeClass) { nc.Spec.Context = ptr.To("ctx") },
		"connection tracking": func(nc *EC2NodeClass) {
			nc.Spec.ConnectionTracking = &ConnectionTracking{UDPTimeout: ptr.To(int32(40))}
		},
		"enclave options": func(nc *EC2NodeClass) { nc.Spec.EnclaveOptions = &EnclaveOptions{} },
		"cpu options":     func(nc *EC2NodeClass) { nc.Spec.CPUOptions = &CPUOptions{NestedVirtualization: ptr.To("disabled")} },
		"volume initialization rate": func(nc *EC2NodeClass) {
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeInitializationRate = ptr.To(int32(100))
		},
		// As upstream, a kubelet change drifts the class's nodes, a
		// passed-through field included.
		"kubelet": func(nc *EC2NodeClass) { nc.Spec.Kubelet = &KubeletConfiguration{MaxPods: ptr.To(int32(10))} },
		"kubelet pass-through": func(nc *EC2NodeClass) {
			nc.Spec.Kubelet = &KubeletConfiguration{Extra: map[string]apiextensionsv1.JSON{"shutdownGracePeriod": {Raw: []byte(`"30s"`)}}}
		},
		"placement group": func(nc *EC2NodeClass) { nc.Spec.PlacementGroupSelector = &PlacementGroupSelector{Name: ptr.To("pg")} },
		"network interfaces": func(nc *EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []*NetworkInterface{{InterfaceType: InterfaceTypeInterface}}
		},
	}
	for name, f := range differ {
		nc := hashClass()
		f(nc)
		if h := nc.Hash(); h == base {
			t.Errorf("%s did not change the hash", name)
		}
	}
}

// Network interfaces hash as a set, as upstream's: listing them in another
// order drifts no node, while changing one does.
func TestHashNetworkInterfacesAsSet(t *testing.T) {
	with := func(nis ...NetworkInterface) string {
		nc := hashClass()
		for i := range nis {
			nc.Spec.NetworkInterfaces = append(nc.Spec.NetworkInterfaces, &nis[i])
		}
		return nc.Hash()
	}
	primary := NetworkInterface{InterfaceType: InterfaceTypeInterface}
	efa := NetworkInterface{NetworkCardIndex: 1, InterfaceType: InterfaceTypeEFAOnly}
	if with(primary, efa) != with(efa, primary) {
		t.Errorf("reordering the network interfaces changed the hash")
	}
	if with(primary, efa) == with(primary, NetworkInterface{NetworkCardIndex: 2, InterfaceType: InterfaceTypeEFAOnly}) {
		t.Errorf("moving the efa-only interface to another card kept the hash")
	}
	if with(primary, efa) == with(primary) {
		t.Errorf("removing the efa-only interface kept the hash")
	}
}
