package instancetype

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// upstreamOptions are upstream's defaults: VM_MEMORY_OVERHEAD_PERCENT 0.075, RESERVED_ENIS 0.
var upstreamOptions = Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075}

// The formulas the expectations below are worked out with (AL2023 unless a
// case says otherwise):
//
//	pods      = ENIs of the default card x (IPv4 per ENI - 1) + 2
//	memory    = MiB (- 64 on arm64) - ceil(that x 0.075)              [capacity]
//	kube-reserved cpu    = 6% of core 1 + 1% of core 2 + 0.5% of cores 3-4 + 0.25% of the rest (millicores, each step truncated)
//	kube-reserved memory = 11 MiB x ENI pods + 255 MiB
//	kube-reserved ephemeral-storage = 1Gi; eviction: memory 100Mi, nodefs 10% of the volume
//	allocatable = capacity - kube-reserved - system-reserved - eviction
//	ephemeral-storage of a 20Gi root volume: 20Gi - 1Gi - 2Gi = 17Gi
func TestCapacityOfRealInstanceTypes(t *testing.T) {
	withKubelet := func(kc awsv1.KubeletConfiguration) func(*awsv1.EC2NodeClass) {
		return func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &kc }
	}
	cases := []struct {
		name   string
		raw    raw
		family string
		mutate func(*awsv1.EC2NodeClass)
		opts   *Options
		// capacity and allocatable hold the resources to check (others are
		// checked to be absent when listed with "0").
		capacity, allocatable map[corev1.ResourceName]string
	}{
		{
			// pods 3x(10-1)+2 = 29; memory 8192 - ceil(614.4)=615 -> 7577Mi;
			// kube-reserved cpu 60+10 = 70m, memory 11x29+255 = 574Mi;
			// allocatable cpu 2000-70 = 1930m, memory 7577-574-100 = 6903Mi; 9 branch ENIs.
			name: "m5.large", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi", awsv1.ResourceAWSPodENI: "9"},
			allocatable: map[corev1.ResourceName]string{"cpu": "1930m", "memory": "6903Mi", "pods": "29", "ephemeral-storage": "17Gi"},
		},
		{
			// pods 4x14+2 = 58; memory 16384 - ceil(1228.8)=1229 -> 15155Mi;
			// cpu 60+10+2x5 = 80m -> 3920m; memory 11x58+255 = 893 -> 15155-893-100 = 14162Mi.
			name: "m5.xlarge", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "58", "memory": "15155Mi", awsv1.ResourceAWSPodENI: "18"},
			allocatable: map[corev1.ResourceName]string{"cpu": "3920m", "memory": "14162Mi"},
		},
		{
			// pods 29; memory 4096 - ceil(307.2)=308 -> 3788Mi; 3788-574-100 = 3114Mi.
			name: "c5.large", raw: raw{name: "c5.large", vcpu: 2, memMiB: 4096, cards: []int32{3}, ipv4: 10}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"memory": "3788Mi", "pods": "29"},
			allocatable: map[corev1.ResourceName]string{"memory": "3114Mi", "cpu": "1930m"},
		},
		{
			// burstable: pods 3x(6-1)+2 = 17; memory 3788Mi; kube-reserved 11x17+255 = 442Mi;
			// 3788-442-100 = 3246Mi; no trunking, so no pod-eni.
			name: "t3.medium", raw: raw{name: "t3.medium", vcpu: 2, memMiB: 4096, cards: []int32{3}, ipv4: 6}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "17", awsv1.ResourceAWSPodENI: "0"},
			allocatable: map[corev1.ResourceName]string{"memory": "3246Mi"},
		},
		{
			// burstable: pods 2x(2-1)+2 = 4; memory 1024 - ceil(76.8)=77 -> 947Mi;
			// kube-reserved 11x4+255 = 299Mi; 947-299-100 = 548Mi.
			name: "t3.micro", raw: raw{name: "t3.micro", vcpu: 2, memMiB: 1024, cards: []int32{2}, ipv4: 2}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "4", "memory": "947Mi"},
			allocatable: map[corev1.ResourceName]string{"memory": "548Mi", "cpu": "1930m"},
		},
		{
			// arm64 burstable: memory 2048-64 = 1984, ceil(148.8)=149 -> 1835Mi; pods 3x3+2 = 11;
			// kube-reserved 11x11+255 = 376Mi; 1835-376-100 = 1359Mi.
			name: "t4g.small", raw: raw{name: "t4g.small", vcpu: 2, memMiB: 2048, arm: true, cards: []int32{3}, ipv4: 4}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "11", "memory": "1835Mi"},
			allocatable: map[corev1.ResourceName]string{"memory": "1359Mi"},
		},
		{
			// arm64: memory 8192-64 = 8128, ceil(609.6)=610 -> 7518Mi; 7518-574-100 = 6844Mi.
			name: "m7g.large", raw: raw{name: "m7g.large", vcpu: 2, memMiB: 8192, arm: true, cards: []int32{3}, ipv4: 10}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"memory": "7518Mi", "pods": "29", awsv1.ResourceAWSPodENI: "9"},
			allocatable: map[corev1.ResourceName]string{"memory": "6844Mi", "cpu": "1930m"},
		},
		{
			// arm64: memory 4096-64 = 4032, ceil(302.4)=303 -> 3729Mi; 3729-574-100 = 3055Mi.
			name: "c6g.large", raw: raw{name: "c6g.large", vcpu: 2, memMiB: 4096, arm: true, cards: []int32{3}, ipv4: 10}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"memory": "3729Mi"},
			allocatable: map[corev1.ResourceName]string{"memory": "3055Mi"},
		},
		{
			// one vCPU: kube-reserved cpu 6% of 1000m = 60m -> 940m; memory 1984-149 = 1835Mi;
			// pods 2x3+2 = 8; kube-reserved 11x8+255 = 343Mi -> 1835-343-100 = 1392Mi.
			name: "a1.medium", raw: raw{name: "a1.medium", vcpu: 1, memMiB: 2048, arm: true, cards: []int32{2}, ipv4: 4}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "8", awsv1.ResourceAWSPodENI: "10"},
			allocatable: map[corev1.ResourceName]string{"cpu": "940m", "memory": "1392Mi"},
		},
		{
			// metal: pods 15x49+2 = 737; memory 393216 - ceil(29491.2)=29492 -> 363724Mi;
			// cpu 60+10+10+92000x0.0025=230 = 310m -> 95690m; memory 11x737+255 = 8362 -> 363724-8362-100 = 355262Mi.
			name: "m5.metal", raw: raw{name: "m5.metal", vcpu: 96, memMiB: 393216, cards: []int32{15}, ipv4: 50}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "737", "memory": "363724Mi", awsv1.ResourceAWSPodENI: "120"},
			allocatable: map[corev1.ResourceName]string{"cpu": "95690m", "memory": "355262Mi"},
		},
		{
			// GPU: as m5.xlarge (58 pods, 14162Mi) plus one NVIDIA A10G; 4 branch ENIs.
			name: "g5.xlarge", raw: raw{name: "g5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15, gpus: []gpu{{"A10G", "NVIDIA", 1, 22888}}, nvmeGB: 250}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{awsv1.ResourceNVIDIAGPU: "1", awsv1.ResourceAWSPodENI: "4", "pods": "58", awsv1.ResourceAMDGPU: "0"},
			allocatable: map[corev1.ResourceName]string{awsv1.ResourceNVIDIAGPU: "1", "memory": "14162Mi", "ephemeral-storage": "17Gi"},
		},
		{
			// AMD GPU: pods 2x3+2 = 8; kube-reserved 11x8+255 = 343Mi -> 15155-343-100 = 14712Mi.
			name: "g4ad.xlarge", raw: raw{name: "g4ad.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{2}, ipv4: 4, gpus: []gpu{{"Radeon Pro V520", "AMD", 1, 8192}}, nvmeGB: 150}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{awsv1.ResourceAMDGPU: "1", awsv1.ResourceNVIDIAGPU: "0", "pods": "8"},
			allocatable: map[corev1.ResourceName]string{"memory": "14712Mi"},
		},
		{
			// 4 network cards of 15 ENIs: only the default card counts -> 15x49+2 = 737 pods
			// (not 60x49+2); memory 1179648 - ceil(88473.6)=88474 -> 1091174Mi;
			// 1091174-8362-100 = 1082712Mi; 8 A100, 4 EFA, 62 branch ENIs.
			name: "p4d.24xlarge", raw: raw{name: "p4d.24xlarge", vcpu: 96, memMiB: 1179648, cards: []int32{15, 15, 15, 15}, ipv4: 50, gpus: []gpu{{"A100", "NVIDIA", 8, 40960}}, efa: 4, nvmeGB: 8000}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "737", "memory": "1091174Mi", awsv1.ResourceNVIDIAGPU: "8", awsv1.ResourceEFA: "4", awsv1.ResourceAWSPodENI: "62"},
			allocatable: map[corev1.ResourceName]string{"cpu": "95690m", "memory": "1082712Mi"},
		},
		{
			// 32 network cards of 2 ENIs: pods 2x49+2 = 100; memory 2097152 - ceil(157286.4)=157287 -> 1939865Mi;
			// cpu 80 + 188000x0.0025=470 = 550m -> 191450m; memory 11x100+255 = 1355 -> 1939865-1355-100 = 1938410Mi.
			name: "p5.48xlarge", raw: raw{name: "p5.48xlarge", vcpu: 192, memMiB: 2097152, cards: repeat(2, 32), ipv4: 50, gpus: []gpu{{"H100", "NVIDIA", 8, 81920}}, efa: 32, nvmeGB: 30400}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "100", "memory": "1939865Mi", awsv1.ResourceNVIDIAGPU: "8", awsv1.ResourceEFA: "32", awsv1.ResourceAWSPodENI: "120"},
			allocatable: map[corev1.ResourceName]string{"cpu": "191450m", "memory": "1938410Mi", "pods": "100"},
		},
		{
			// EFA, 2 network cards of 8: pods 8x49+2 = 394; memory 262144 - ceil(19660.8)=19661 -> 242483Mi;
			// cpu 80 + 124000x0.0025=310 = 390m -> 127610m; memory 11x394+255 = 4589 -> 242483-4589-100 = 237794Mi.
			name: "c6in.32xlarge", raw: raw{name: "c6in.32xlarge", vcpu: 128, memMiB: 262144, cards: []int32{8, 8}, ipv4: 50, efa: 2}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "394", awsv1.ResourceEFA: "2", awsv1.ResourceAWSPodENI: "106"},
			allocatable: map[corev1.ResourceName]string{"cpu": "127610m", "memory": "237794Mi"},
		},
		{
			// pods 15x49+2 = 737; memory 524288 - ceil(39321.6)=39322 -> 484966Mi; 484966-8362-100 = 476504Mi; 1 EFA.
			name: "m6i.32xlarge", raw: raw{name: "m6i.32xlarge", vcpu: 128, memMiB: 524288, cards: []int32{15}, ipv4: 50, efa: 1}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "737", awsv1.ResourceEFA: "1"},
			allocatable: map[corev1.ResourceName]string{"memory": "476504Mi", "cpu": "127610m"},
		},
		{
			// pods 7x49+2 = 345; memory 786432 - ceil(58982.4)=58983 -> 727449Mi; 11x345+255 = 4050 -> 723299Mi.
			name: "g5.48xlarge", raw: raw{name: "g5.48xlarge", vcpu: 192, memMiB: 786432, cards: []int32{7}, ipv4: 50, gpus: []gpu{{"A10G", "NVIDIA", 8, 22888}}, efa: 1, nvmeGB: 7600}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"pods": "345", awsv1.ResourceNVIDIAGPU: "8", awsv1.ResourceAWSPodENI: "115"},
			allocatable: map[corev1.ResourceName]string{"memory": "723299Mi", "cpu": "191450m"},
		},
		{
			// Neuron: 1 Inferentia2 device of 2 cores; as m5.xlarge otherwise.
			name: "inf2.xlarge", raw: raw{name: "inf2.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15, neuron: &neuronDevice{"Inferentia2", 1, 2}}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{awsv1.ResourceAWSNeuron: "1", awsv1.ResourceAWSNeuronCore: "2", awsv1.ResourceAWSPodENI: "18"},
			allocatable: map[corev1.ResourceName]string{"memory": "14162Mi"},
		},
		{
			// 8 vCPUs: cpu 80 + 4000x0.0025=10 = 90m -> 7910m; memory 32768 - ceil(2457.6)=2458 -> 30310Mi; 30310-893-100 = 29317Mi.
			name: "trn1.2xlarge", raw: raw{name: "trn1.2xlarge", vcpu: 8, memMiB: 32768, cards: []int32{4}, ipv4: 15, neuron: &neuronDevice{"Trainium", 1, 2}, nvmeGB: 474}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{awsv1.ResourceAWSNeuron: "1", awsv1.ResourceAWSNeuronCore: "2"},
			allocatable: map[corev1.ResourceName]string{"cpu": "7910m", "memory": "29317Mi"},
		},
		{
			// memory 16384 - 1229 = 15155Mi; pods 29 -> 15155-574-100 = 14481Mi.
			name: "r5.large", raw: raw{name: "r5.large", vcpu: 2, memMiB: 16384, cards: []int32{3}, ipv4: 10}, family: "al2023",
			allocatable: map[corev1.ResourceName]string{"memory": "14481Mi"},
		},
		{
			// arm64, 1 vCPU, much memory: 16384-64 = 16320, 16320x0.075 = 1224 exactly -> 15096Mi;
			// pods 8 -> 15096-343-100 = 14653Mi.
			name: "x2gd.medium", raw: raw{name: "x2gd.medium", vcpu: 1, memMiB: 16384, arm: true, cards: []int32{2}, ipv4: 4, nvmeGB: 59}, family: "al2023",
			capacity:    map[corev1.ResourceName]string{"memory": "15096Mi"},
			allocatable: map[corev1.ResourceName]string{"memory": "14653Mi", "cpu": "940m"},
		},
		{
			// Windows: 110 pods (no ENI density), kube-reserved 11x110+255 = 1465Mi -> 7577-1465-100 = 6012Mi;
			// root /dev/sda1 50Gi: 50-1-5 = 44Gi; 10-1 = 9 private IPv4 addresses.
			name: "m5.large windows2022", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "windows2022",
			capacity:    map[corev1.ResourceName]string{"pods": "110", "ephemeral-storage": "50Gi", awsv1.ResourcePrivateIPv4Address: "9"},
			allocatable: map[corev1.ResourceName]string{"memory": "6012Mi", "ephemeral-storage": "44Gi"},
		},
		{
			// Bottlerocket: pods from ENIs (58) and reserved memory from them too; the
			// data volume /dev/xvdb is 20Gi -> 17Gi.
			name: "m5.xlarge bottlerocket", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "bottlerocket",
			capacity:    map[corev1.ResourceName]string{"pods": "58", "ephemeral-storage": "20Gi"},
			allocatable: map[corev1.ResourceName]string{"memory": "14162Mi", "ephemeral-storage": "17Gi"},
		},
		{
			// Bottlerocket with maxPods 110: it reserves memory for the pods it runs,
			// 11x110+255 = 1465 -> 15155-1465-100 = 13590Mi.
			name: "m5.xlarge bottlerocket maxPods", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "bottlerocket",
			mutate:      withKubelet(awsv1.KubeletConfiguration{MaxPods: ptr[int32](110)}),
			capacity:    map[corev1.ResourceName]string{"pods": "110"},
			allocatable: map[corev1.ResourceName]string{"memory": "13590Mi"},
		},
		{
			// AL2023 with maxPods 50: 50 pods, but reserved memory still from the
			// 29 ENI pods (574Mi), so memory stays 6903Mi.
			name: "m5.large maxPods", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate:      withKubelet(awsv1.KubeletConfiguration{MaxPods: ptr[int32](50)}),
			capacity:    map[corev1.ResourceName]string{"pods": "50"},
			allocatable: map[corev1.ResourceName]string{"memory": "6903Mi"},
		},
		{
			// podsPerCore 4 x 4 vCPUs = 16 < 58 ENI pods.
			name: "m5.xlarge podsPerCore", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "al2023",
			mutate:   withKubelet(awsv1.KubeletConfiguration{PodsPerCore: ptr[int32](4)}),
			capacity: map[corev1.ResourceName]string{"pods": "16"},
		},
		{
			// podsPerCore 40 x 4 = 160 > maxPods 100: maxPods wins.
			name: "m5.xlarge podsPerCore above maxPods", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "al2023",
			mutate:   withKubelet(awsv1.KubeletConfiguration{PodsPerCore: ptr[int32](40), MaxPods: ptr[int32](100)}),
			capacity: map[corev1.ResourceName]string{"pods": "100"},
		},
		{
			// Windows ignores podsPerCore: 110.
			name: "m5.xlarge windows podsPerCore", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "windows2019",
			mutate:   withKubelet(awsv1.KubeletConfiguration{PodsPerCore: ptr[int32](4)}),
			capacity: map[corev1.ResourceName]string{"pods": "110"},
		},
		{
			// Bottlerocket ignores podsPerCore too (upstream: its settings have
			// no pods-per-core): the 58 ENI pods.
			name: "m5.xlarge bottlerocket podsPerCore", raw: raw{name: "m5.xlarge", vcpu: 4, memMiB: 16384, cards: []int32{4}, ipv4: 15}, family: "bottlerocket",
			mutate:   withKubelet(awsv1.KubeletConfiguration{PodsPerCore: ptr[int32](4)}),
			capacity: map[corev1.ResourceName]string{"pods": "58"},
		},
		{
			// Overrides: kubeReserved cpu 200m, memory 1Gi; systemReserved cpu 100m, memory 512Mi,
			// ephemeral-storage 2Gi; evictionHard memory.available 5% (of 7577Mi = 7945060352 bytes:
			// 397253017.6, rounded up to 397253018 bytes), nodefs.available 1Gi.
			// cpu 2000-200-100 = 1700m; ephemeral 20Gi - 1Gi (kube) - 2Gi (system) - 1Gi (eviction) = 16Gi;
			// memory 7577Mi - 1024Mi - 512Mi = 6041Mi = 6334447616 bytes, - 397253018 = 5937194598 bytes.
			name: "m5.large reserved overrides", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate: withKubelet(awsv1.KubeletConfiguration{
				KubeReserved:   map[string]string{"cpu": "200m", "memory": "1Gi", "pid": "100"},
				SystemReserved: map[string]string{"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "2Gi"},
				EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "1Gi"},
			}),
			allocatable: map[corev1.ResourceName]string{"cpu": "1700m", "ephemeral-storage": "16Gi", "memory": "5937194598"},
		},
		{
			// RESERVED_ENIS 1: (3-1)x9+2 = 20 pods; reserved memory keeps the 29 ENI pods
			// (the AMI's bootstrap ignores reserved ENIs): 6903Mi.
			name: "m5.large reserved ENI", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			opts:        &Options{VMMemoryOverheadPercent: 0.075, ReservedENIs: 1},
			capacity:    map[corev1.ResourceName]string{"pods": "20"},
			allocatable: map[corev1.ResourceName]string{"memory": "6903Mi"},
		},
		{
			// VM_MEMORY_OVERHEAD_PERCENT 0: capacity = 8192Mi; 8192-574-100 = 7518Mi.
			name: "m5.large no VM overhead", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			opts:        &Options{VMMemoryOverheadPercent: 0},
			capacity:    map[corev1.ResourceName]string{"memory": "8Gi"},
			allocatable: map[corev1.ResourceName]string{"memory": "7518Mi"},
		},
		{
			// RAID0 of 75 GB NVMe: 75e9 bytes; - 1Gi (1073741824) - 10% (7.5e9) = 66426258176 bytes.
			name: "m5d.large RAID0", raw: raw{name: "m5d.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10, nvmeGB: 75}, family: "al2023",
			mutate:      func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0) },
			capacity:    map[corev1.ResourceName]string{"ephemeral-storage": "75G"},
			allocatable: map[corev1.ResourceName]string{"ephemeral-storage": "66426258176"},
		},
		{
			// RAID0 on a type without instance store falls back to the root volume: 20Gi.
			name: "m5.large RAID0 without instance store", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate:   func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0) },
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "20Gi"},
		},
		{
			// rootVolume mapping of 100Gi: 100 - 1 - 10 = 89Gi.
			name: "m5.large custom root volume", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("500Gi")}},
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("100Gi")}, RootVolume: true},
				}
			},
			capacity:    map[corev1.ResourceName]string{"ephemeral-storage": "100Gi"},
			allocatable: map[corev1.ResourceName]string{"ephemeral-storage": "89Gi"},
		},
		{
			// No rootVolume flag: the family's device (/dev/xvda for AL2023) decides: 60Gi.
			name: "m5.large mapping of the family device", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvdz"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("500Gi")}},
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("60Gi")}},
				}
			},
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "60Gi"},
		},
		{
			// Bottlerocket keeps pods on /dev/xvdb: a 40Gi xvdb wins over a 100Gi xvda (OS volume).
			name: "m5.large bottlerocket data volume", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "bottlerocket",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("100Gi")}},
					{DeviceName: ptr("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("40Gi")}},
				}
			},
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "40Gi"},
		},
		{
			// Custom AMI family: the last mapping is taken as the data volume: 80Gi.
			name: "m5.large custom family", raw: raw{name: "m5.large", vcpu: 2, memMiB: 8192, cards: []int32{3}, ipv4: 10}, family: "al2023",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-123"}}
				nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyCustom)
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("30Gi")}},
					{DeviceName: ptr("/dev/sdf"), EBS: &awsv1.BlockDevice{VolumeSize: quantity("80Gi")}},
				}
			},
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "80Gi"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mutate []func(*awsv1.EC2NodeClass)
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			s, err := newSettings(nodeClass(tc.family, mutate...))
			if err != nil {
				t.Fatal(err)
			}
			opts := upstreamOptions
			if tc.opts != nil {
				opts = *tc.opts
			}
			info := tc.raw.info()
			c := capacity(info, s, opts)
			it := &scheduling.InstanceType{Capacity: c, Overhead: overhead(info, s, opts, c)}
			alloc := it.Allocatable()
			check(t, "capacity", c, tc.capacity)
			check(t, "allocatable", alloc, tc.allocatable)
		})
	}
}

func check(t *testing.T, what string, got corev1.ResourceList, want map[corev1.ResourceName]string) {
	t.Helper()
	for n, w := range want {
		q, ok := got[n]
		if w == "0" {
			if ok && !q.IsZero() {
				t.Errorf("%s %s = %s, want none", what, n, q.String())
			}
			continue
		}
		if !ok {
			t.Errorf("%s %s missing, want %s", what, n, w)
			continue
		}
		if q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("%s %s = %s, want %s", what, n, q.String(), w)
		}
	}
}

func repeat(n int32, times int) []int32 {
	out := make([]int32, times)
	for i := range out {
		out[i] = n
	}
	return out
}
