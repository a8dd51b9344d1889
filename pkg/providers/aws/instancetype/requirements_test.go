package instancetype

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func TestRequirementsOfRealInstanceTypes(t *testing.T) {
	zones := []zone{{name: "us-west-2a", id: "usw2-az1"}, {name: "us-west-2b", id: "usw2-az2"}}
	withDetails := func(info *ec2types.InstanceTypeInfo, manufacturer string, ghz float64, ebsMbps int32, eit bool) *ec2types.InstanceTypeInfo {
		info.ProcessorInfo.Manufacturer = aws.String(manufacturer)
		info.ProcessorInfo.SustainedClockSpeedInGhz = aws.Float64(ghz)
		info.EbsInfo = &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault, EbsOptimizedInfo: &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(ebsMbps)}}
		info.NetworkInfo.EncryptionInTransitSupported = aws.Bool(eit)
		return info
	}
	cases := []struct {
		name   string
		info   *ec2types.InstanceTypeInfo
		family string
		zones  []zone
		// want maps label to its single value; "" means the label must not exist
		// (DoesNotExist); "*" skips the value check.
		want map[string]string
	}{
		{
			name: "m5.large", family: "al2023", zones: zones,
			info: withDetails(raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}.info(), "Intel", 3.1, 4750, false),
			want: map[string]string{
				corev1.LabelInstanceTypeStable:                  "m5.large",
				corev1.LabelArchStable:                          "amd64",
				corev1.LabelOSStable:                            "linux",
				corev1.LabelTopologyRegion:                      "us-west-2",
				corev1.LabelWindowsBuild:                        "",
				awsv1.LabelInstanceCategory:                     "m",
				awsv1.LabelInstanceGeneration:                   "5",
				awsv1.LabelInstanceFamily:                       "m5",
				awsv1.LabelInstanceSize:                         "large",
				awsv1.LabelInstanceCPU:                          "2",
				awsv1.LabelInstanceMemory:                       "8192",
				awsv1.LabelInstanceCPUManufacturer:              "intel",
				awsv1.LabelInstanceCPUSustainedClockSpeedMhz:    "3100",
				awsv1.LabelInstanceEBSBandwidth:                 "4750",
				awsv1.LabelInstanceNetworkBandwidth:             "750",
				awsv1.LabelInstanceHypervisor:                   "nitro",
				awsv1.LabelInstanceEncryptionInTransitSupported: "false",
				awsv1.LabelInstanceCapabilityFlex:               "false",
				awsv1.LabelInstanceLocalNVME:                    "",
				awsv1.LabelInstanceGPUName:                      "",
				awsv1.LabelInstanceGPUCount:                     "",
				awsv1.LabelInstanceAcceleratorName:              "",
				awsv1.LabelCapacityReservationID:                "",
			},
		},
		{
			name: "g4ad.xlarge", family: "al2023", zones: zones,
			info: withDetails(raw{name: "g4ad.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{2}, ipv4: 4, gpus: []gpu{{"Radeon Pro V520", "AMD", 1, 8192}}, nvmeGB: 150}.info(), "AMD", 3.0, 3170, true),
			want: map[string]string{
				awsv1.LabelInstanceGPUName:                      "radeon-pro-v520",
				awsv1.LabelInstanceGPUManufacturer:              "amd",
				awsv1.LabelInstanceGPUCount:                     "1",
				awsv1.LabelInstanceGPUMemory:                    "8192",
				awsv1.LabelInstanceLocalNVME:                    "150",
				awsv1.LabelInstanceCPUManufacturer:              "amd",
				awsv1.LabelInstanceEncryptionInTransitSupported: "true",
				awsv1.LabelInstanceNetworkBandwidth:             "2000",
			},
		},
		{
			name: "inf2.xlarge", family: "al2023", zones: zones,
			info: raw{name: "inf2.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15, neuron: &neuronDevice{"Inferentia2", 1, 2}}.info(),
			want: map[string]string{
				awsv1.LabelInstanceAcceleratorName:         "inferentia2",
				awsv1.LabelInstanceAcceleratorManufacturer: "aws",
				awsv1.LabelInstanceAcceleratorCount:        "1",
				awsv1.LabelInstanceGPUName:                 "",
				awsv1.LabelInstanceCategory:                "inf",
				awsv1.LabelInstanceGeneration:              "2",
			},
		},
		{
			name: "m7i-flex.large", family: "al2023", zones: zones,
			info: raw{name: "m7i-flex.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}.info(),
			want: map[string]string{
				awsv1.LabelInstanceCapabilityFlex: "true",
				awsv1.LabelInstanceFamily:         "m7i-flex",
				awsv1.LabelInstanceCategory:       "m",
				awsv1.LabelInstanceGeneration:     "7",
			},
		},
		{
			// High-memory names: the -6tb infix is not the generation.
			name: "u-6tb1.metal", family: "al2023", zones: zones,
			info: raw{name: "u-6tb1.metal", vcpu: 448, memMiB: 6291456, cards: []int32{15}, ipv4: 50}.info(),
			want: map[string]string{
				awsv1.LabelInstanceCategory:   "u",
				awsv1.LabelInstanceGeneration: "1",
				awsv1.LabelInstanceFamily:     "u-6tb1",
				awsv1.LabelInstanceSize:       "metal",
			},
		},
		{
			name: "m5.large windows2022", family: "windows2022", zones: zones,
			info: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}.info(),
			want: map[string]string{corev1.LabelOSStable: "windows", corev1.LabelWindowsBuild: "10.0.20348"},
		},
		{
			name: "t4g.small arm64", family: "al2023", zones: zones,
			info: raw{name: "t4g.small", vcpu: 2, memMiB: 2048, arm: true, cards: []int32{3}, ipv4: 4}.info(),
			want: map[string]string{corev1.LabelArchStable: "arm64", awsv1.LabelInstanceMemory: "2048"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSettings(nodeClass(tc.family))
			if err != nil {
				t.Fatal(err)
			}
			reqs := requirements(tc.info, s, "us-west-2", tc.zones)
			for key, want := range tc.want {
				r, ok := reqs.Get(key)
				if !ok {
					t.Errorf("%s: no requirement", key)
					continue
				}
				if want == "" {
					if r.Operator() != corev1.NodeSelectorOpDoesNotExist {
						t.Errorf("%s = %s, want DoesNotExist", key, r.String())
					}
					continue
				}
				if v, single := r.Single(); !single || v != want {
					t.Errorf("%s = %s, want %q", key, r.String(), want)
				}
			}
			// Every type offers both capacity types in both zones, with their ids.
			for key, values := range map[string][]string{
				corev1.LabelTopologyZone:     {"us-west-2a", "us-west-2b"},
				awsv1.LabelTopologyZoneID:    {"usw2-az1", "usw2-az2"},
				scheduling.LabelCapacityType: {"on-demand", "spot"},
			} {
				r, _ := reqs.Get(key)
				if got := strings.Join(r.Values(), ","); got != strings.Join(values, ",") {
					t.Errorf("%s = %s, want %v", key, r.String(), values)
				}
			}
		})
	}
}

// A Windows class cannot run arm64 types: they get no OS, so no pod can
// select them.
func TestWindowsHasNoArm64(t *testing.T) {
	s, err := newSettings(nodeClass("windows2019"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := requirements(raw{name: "m7g.large", vcpu: 2, memMiB: 8192, arm: true, cards: []int32{3}, ipv4: 10}.info(), s, "us-west-2", nil)
	if reqs.Has(corev1.LabelOSStable, "windows") || reqs.Has(corev1.LabelOSStable, "linux") {
		r, _ := reqs.Get(corev1.LabelOSStable)
		t.Fatalf("os = %s, want no value", r.String())
	}
}

func TestNameParts(t *testing.T) {
	for name, want := range map[string][4]string{
		"m5.large":           {"m", "5", "m5", "large"},
		"c7gn.16xlarge":      {"c", "7", "c7gn", "16xlarge"},
		"u-12tb1.112xlarge":  {"u", "1", "u-12tb1", "112xlarge"},
		"x8aedz.metal-12xl":  {"x", "8", "x8aedz", "metal-12xl"},
		"mac2-m2pro.metal":   {"mac", "2", "mac2-m2pro", "metal"},
		"notaninstancetype":  {"", "", "", ""},
		"m5.large.something": {"m", "5", "", ""},
	} {
		c, g, f, s := nameParts(name)
		if got := [4]string{c, g, f, s}; got != want {
			t.Errorf("nameParts(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestBadKubeletSettingsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		kubelet awsv1.KubeletConfiguration
		bdms    []*awsv1.BlockDeviceMapping
		want    string
	}{
		{kubelet: awsv1.KubeletConfiguration{KubeReserved: map[string]string{"gpu": "vcpus"}}, want: `spec.kubelet.kubeReserved.gpu: unknown resource`},
		{kubelet: awsv1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "-1Gi"}}, want: `spec.kubelet.systemReserved.memory: "-1Gi" is negative`},
		{kubelet: awsv1.KubeletConfiguration{SystemReserved: map[string]string{"gpu": "1"}}, want: `spec.kubelet.systemReserved.gpu: unknown resource`},
		{kubelet: awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "ten%"}}, want: `spec.kubelet.evictionHard.memory.available: "ten%" is not a percentage`},
		{kubelet: awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "150%"}}, want: `spec.kubelet.evictionHard.nodefs.available: "150%" is not a percentage`},
		{kubelet: awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "1Gb"}}, want: `spec.kubelet.evictionHard.nodefs.available: "1Gb" is neither a quantity nor a percentage`},
		{bdms: []*awsv1.BlockDeviceMapping{nil}, want: "spec.blockDeviceMappings[0]: must not be null"},
	} {
		nc := nodeClass("al2023", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &tc.kubelet
			nc.Spec.BlockDeviceMappings = tc.bdms
		})
		_, err := newSettings(nc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newSettings error = %v, want it to contain %q", err, tc.want)
		}
	}
}

// evictionHard at 100% disables the threshold: nothing is held back.
func TestEvictionAtHundredPercentIsDisabled(t *testing.T) {
	s, err := newSettings(nodeClass("al2023", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "100%"}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	info := raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}.info()
	c := capacity(info, s, upstreamOptions)
	ev := evictionThreshold(s, c)
	if q := ev[corev1.ResourceEphemeralStorage]; !q.IsZero() {
		t.Fatalf("nodefs eviction = %s, want 0", q.String())
	}
}
