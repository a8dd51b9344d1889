package nodeclass_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func kubelet(t *testing.T, raw string) *v1.KubeletConfiguration {
	t.Helper()
	k := &v1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(raw), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// Fields the schema accepts but whose behaviour is not built, and spec
// values the API server no longer checks, make ValidationSucceeded (and
// so Ready) False with a message naming the field; nothing is dry-run or
// launched for such a class. Removing the field makes the class Ready.
func TestSpecProblemsBlockTheClass(t *testing.T) {
	for _, c := range []struct {
		name, reason, message string
		family                string
		mutate                func(*v1.EC2NodeClass)
	}{
		{"several", nodeclass.ReasonUnsupportedField, "spec.amiSelectorTerms[0].ssmParameter combined with name, spec.amiSelectorTerms[1].ssmParameter combined with owner are not supported", "",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To(v1.AMIFamilyAL2023)
				nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{SSMParameter: "/my/ami", Name: "x"}, {SSMParameter: "/my/other", Owner: "self"}}
			}},
		{"ssmParameter beside name", nodeclass.ReasonUnsupportedField, "spec.amiSelectorTerms[0].ssmParameter combined with name", "",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To(v1.AMIFamilyAL2023)
				nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{SSMParameter: "/my/ami", Name: "x"}}
			}},
		{"volumeSize without a number", nodeclass.ReasonInvalidSpec, `spec.blockDeviceMappings[0].ebs.volumeSize: "Ti" is not a volume size`, "",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*v1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &v1.BlockDevice{InvalidVolumeSize: "Ti"}}}
			}},
		{"ssmParameter too long", nodeclass.ReasonInvalidSpec, "spec.amiSelectorTerms[0].ssmParameter: 2049 characters", "",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To(v1.AMIFamilyAL2023)
				nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{SSMParameter: strings.Repeat("p", 2049)}}
			}},
		{"kubelet wrong type", nodeclass.ReasonInvalidKubeletConfiguration, "spec.kubelet.podsPerCore", "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"podsPerCore":"abc"}`) }},
		{"kubelet unknown field", nodeclass.ReasonInvalidKubeletConfiguration, `unknown field "maxPod"`, "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"maxPod":10}`) }},
		{"kubelet imageGC order", nodeclass.ReasonInvalidKubeletConfiguration, "spec.kubelet.imageGCHighThresholdPercent: 50 must be greater than imageGCLowThresholdPercent", "",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.Kubelet = kubelet(t, `{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":50}`)
			}},
		{"kubelet soft without grace", nodeclass.ReasonInvalidKubeletConfiguration, "spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod", "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"evictionSoft":{"memory.available":"5%"}}`) }},
		{"kubelet eviction signal", nodeclass.ReasonInvalidKubeletConfiguration, `spec.kubelet.evictionHard: "memory.free" is not an eviction signal`, "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"evictionHard":{"memory.free":"5%"}}`) }},
		{"kubelet reserved quantity", nodeclass.ReasonInvalidKubeletConfiguration, `spec.kubelet.kubeReserved[cpu]: "-1" cannot be a negative`, "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"kubeReserved":{"cpu":"-1"}}`) }},
		{"kubelet negative maxPods", nodeclass.ReasonInvalidKubeletConfiguration, "spec.kubelet.maxPods: -1 cannot be negative", "",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"maxPods":-1}`) }},
		{"kubelet field bootstrap.sh writes on AL2", nodeclass.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.cgroupDriver: not applied by the AL2 AMI family's bootstrap, /etc/eks/bootstrap.sh", "al2@latest",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.Kubelet = kubelet(t, `{"shutdownGracePeriod":"30s","cgroupDriver":"cgroupfs"}`)
			}},
		{"kubelet podsPerCore on Bottlerocket", nodeclass.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.podsPerCore: not applied by the Bottlerocket AMI family's bootstrap", "bottlerocket@latest",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"podsPerCore":2}`) }},
		{"kubelet field without a Bottlerocket setting", nodeclass.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.serializeImagePulls: not applied by the Bottlerocket AMI family's bootstrap, Bottlerocket has no settings.kubernetes key for it", "bottlerocket@latest",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.Kubelet = kubelet(t, `{"shutdownGracePeriod":"30s","serializeImagePulls":false}`)
			}},
		{"kubelet field without a flag on Windows", nodeclass.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.shutdownGracePeriod: not applied by the Windows2022 AMI family's bootstrap, the kubelet has no command-line flag", "windows2022@latest",
			func(nc *v1.EC2NodeClass) {
				nc.Spec.Kubelet = kubelet(t, `{"registryPullQPS":5,"shutdownGracePeriod":"30s"}`)
			}},
		{"kubelet two DNS addresses on Windows", nodeclass.ReasonUnsupportedKubeletConfiguration, "spec.kubelet.clusterDNS: the Windows2022 AMI family takes one address, 2 were set", "windows2022@latest",
			func(nc *v1.EC2NodeClass) { nc.Spec.Kubelet = kubelet(t, `{"clusterDNS":["10.0.0.10","10.0.0.11"]}`) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			nc := newNodeClass("spec-problem")
			if c.family != "" {
				nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{Alias: c.family}}
			}
			c.mutate(nc)
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			f.expectBlocked(t, nc, c.reason, c.message)
		})
	}
}

// What the build carries is accepted: pass-through kubelet fields on
// AL2023, and the launch options that go into the launch template.
func TestSupportedSpecIsReady(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("supported")
	nc.Spec.Kubelet = kubelet(t, `{"maxPods":58,"shutdownGracePeriod":"45s","featureGates":{"InPlacePodVerticalScaling":true},"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`)
	nc.Spec.ConnectionTracking = &v1.ConnectionTracking{UDPTimeout: ptr.To(int32(30))}
	nc.Spec.EnclaveOptions = &v1.EnclaveOptions{Enabled: true}
	nc.Spec.CPUOptions = &v1.CPUOptions{NestedVirtualization: ptr.To("enabled")}
	nc.Spec.IPPrefixCount = ptr.To(int32(2))
	nc.Spec.NetworkInterfaces = []*v1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: v1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: v1.InterfaceTypeEFAOnly},
	}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")

	// A kubelet object that no typed view can read still round-trips
	// through the API server and the informer-facing client.
	stored := ExpectExists(f.ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	stored.Spec.Kubelet = kubelet(t, `{"maxPods":"abc","podsPerCore":"x"}`)
	ExpectApplied(f.ctx, t, e.Client, stored)
	got := ExpectExists(f.ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if string(got.Spec.Kubelet.Extra["maxPods"].Raw) != `"abc"` {
		t.Errorf("stored kubelet %s", got.Spec.Kubelet.String())
	}
	nc = f.reconcile(t, got)
	expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, nodeclass.ReasonInvalidKubeletConfiguration, "spec.kubelet.podsPerCore")
}

// Kubelet fields Karpenter does not read are accepted on every family whose
// bootstrap writes them: AL2 merges them into the AMI's kubelet-config.json,
// Bottlerocket has settings for them, Windows passes them as kubelet flags.
func TestKubeletPassThroughAcceptedPerFamily(t *testing.T) {
	for _, c := range []struct{ alias, kubelet string }{
		// No AL2 AMIs are published for the cluster's version: the class
		// names an AMI and sets the family.
		{"AL2", `{"shutdownGracePeriod":"30s","featureGates":{"InPlacePodVerticalScaling":true},"clusterDomain":"it's.local"}`},
		{"bottlerocket@latest", `{"shutdownGracePeriod":"30s","containerLogMaxSize":"50Mi","registryPullQPS":5,"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`},
		{"windows2022@latest", `{"registryPullQPS":5,"featureGates":{"InPlacePodVerticalScaling":true},"containerLogMaxFiles":4}`},
	} {
		t.Run(c.alias, func(t *testing.T) {
			f := setup(t)
			nc := newNodeClass("pass-through")
			nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{Alias: c.alias}}
			if c.alias == v1.AMIFamilyAL2 {
				nc.Spec.AMIFamily = ptr.To(v1.AMIFamilyAL2)
				nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-standard-*"}}
			}
			nc.Spec.Kubelet = kubelet(t, c.kubelet)
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
			expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
		})
	}
}
