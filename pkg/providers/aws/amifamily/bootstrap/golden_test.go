package bootstrap

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// base is the options every golden case starts from: what the resolver
// passes for a NodeClaim of NodePool "default" on an on-demand m5.large.
func base() Options {
	return Options{
		ClusterName:     "test-cluster",
		ClusterEndpoint: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		CABundle:        "Y2EtYnVuZGxl",
		ClusterCIDR:     "10.100.0.0/16",
		Kubelet:         &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](29), ClusterDNS: []string{"10.100.0.10"}},
		Labels: map[string]string{
			"karpenter.sh/nodepool":      "default",
			"karpenter.sh/capacity-type": "on-demand",
		},
		Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
	}
}

const (
	shellUserData = "#!/bin/bash\necho \"hello from the user\"\n"
	mimeUserData  = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "first user part"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 5
      shutdownGracePeriod: 30s

--BOUNDARY--
`
	// mimeShellUserData is what an AL2 user writes: scripts only (AL2 has no
	// nodeadm, so a NodeConfig part would be ignored by the node).
	mimeShellUserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="==BOUNDARY=="

--==BOUNDARY==
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "first user part"

--==BOUNDARY==
Content-Type: text/cloud-config; charset="us-ascii"

packages:
- jq

--==BOUNDARY==--
`
	nodeConfigUserData = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: user-cluster
  kubelet:
    config:
      maxPods: 5
      imageMinimumGCAge: 5m
    flags:
    - --v=4
`
	tomlUserData = `[settings.kubernetes]
cluster-name = "user-cluster"
max-pods = 5
allowed-unsafe-sysctls = ["net.core.somaxconn"]

[settings.kubernetes.node-labels]
"team" = "payments"
"karpenter.sh/capacity-type" = "spot"

[settings.kubernetes.node-taints]
"user-taint" = ["x:NoSchedule"]

[settings.host-containers.admin]
enabled = true
`
	powershellUserData = "<powershell>\nWrite-Host \"hello from the user\"\n</powershell>\n"
)

// kubeletJSON replaces the case's kubelet settings with a spec.kubelet
// object as the API server stores it.
func kubeletJSON(raw string) func(*Options) {
	return func(o *Options) {
		o.Kubelet = &awsv1.KubeletConfiguration{}
		if err := json.Unmarshal([]byte(raw), o.Kubelet); err != nil {
			panic(err)
		}
	}
}

type goldenCase struct {
	name     string
	families []string // nil: every family
	mutate   func(*Options)
}

var allFamilies = []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyCustom}

func goldenCases() []goldenCase {
	kubelet := func(f func(k *awsv1.KubeletConfiguration)) func(*Options) {
		return func(o *Options) { f(o.Kubelet) }
	}
	linuxScripts := []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom}
	return []goldenCase{
		{name: "defaults"},
		{name: "no-kubelet", mutate: func(o *Options) { o.Kubelet = nil }},
		{name: "no-ca-bundle", mutate: func(o *Options) { o.CABundle = "" }},
		{name: "max-pods", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.MaxPods = ptr.To[int32](110) })},
		{name: "pods-per-core", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.PodsPerCore = ptr.To[int32](4) })},
		{name: "system-reserved", mutate: kubelet(func(k *awsv1.KubeletConfiguration) {
			k.SystemReserved = map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi", "pid": "100"}
		})},
		{name: "kube-reserved", mutate: kubelet(func(k *awsv1.KubeletConfiguration) {
			k.KubeReserved = map[string]string{"cpu": "70m", "memory": "574Mi", "ephemeral-storage": "1Gi"}
		})},
		{name: "eviction-hard", mutate: kubelet(func(k *awsv1.KubeletConfiguration) {
			k.EvictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"}
		})},
		{name: "eviction-soft", mutate: kubelet(func(k *awsv1.KubeletConfiguration) {
			k.EvictionSoft = map[string]string{"memory.available": "500Mi", "imagefs.available": "15%"}
			k.EvictionSoftGracePeriod = map[string]metav1.Duration{"memory.available": {Duration: time.Minute}, "imagefs.available": {Duration: 90 * time.Second}}
		})},
		{name: "eviction-max-pod-grace-period", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.EvictionMaxPodGracePeriod = ptr.To[int32](120) })},
		{name: "image-gc-thresholds", mutate: kubelet(func(k *awsv1.KubeletConfiguration) {
			k.ImageGCHighThresholdPercent = ptr.To[int32](85)
			k.ImageGCLowThresholdPercent = ptr.To[int32](80)
		})},
		{name: "cpu-cfs-quota", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.CPUCFSQuota = ptr.To(false) })},
		{name: "cluster-dns", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.ClusterDNS = []string{"10.0.0.10", "10.0.0.11"} })},
		{name: "cluster-dns-ipv6", mutate: kubelet(func(k *awsv1.KubeletConfiguration) { k.ClusterDNS = []string{"fd01:ab::a"} })},
		{name: "labels-taints", mutate: func(o *Options) {
			o.Labels["team"] = "payments"
			o.Labels["example.com/tier"] = "gold"
			o.Taints = append([]corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
				{Key: "example.com/startup", Effect: corev1.TaintEffectNoSchedule},
			}, o.Taints...)
		}},
		{name: "raid0", mutate: func(o *Options) { o.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) }},
		// Fields Karpenter does not read reach the kubelet: AL2023 writes
		// them into its NodeConfig, AL2 merges them into the AMI's
		// kubelet-config.json (a single quote in a value shows the shell
		// quoting), Bottlerocket writes its settings.kubernetes keys and
		// Windows passes kubelet flags. Each family's case holds fields it
		// can write; the others are refused by the EC2NodeClass controller.
		{name: "kubelet-pass-through", families: []string{awsv1.AMIFamilyAL2023}, mutate: kubeletJSON(`{"maxPods":58,"shutdownGracePeriod":"45s","containerLogMaxSize":"50Mi","featureGates":{"InPlacePodVerticalScaling":true},"allowedUnsafeSysctls":["net.core.somaxconn"]}`)},
		{name: "kubelet-pass-through", families: []string{awsv1.AMIFamilyAL2}, mutate: kubeletJSON(`{"maxPods":58,"shutdownGracePeriod":"45s","containerLogMaxSize":"50Mi","featureGates":{"InPlacePodVerticalScaling":true},"allowedUnsafeSysctls":["net.core.somaxconn"],"clusterDomain":"it's.local","evictionMinimumReclaim":{"memory.available":"0Mi"}}`)},
		{name: "kubelet-pass-through", families: []string{awsv1.AMIFamilyBottlerocket}, mutate: kubeletJSON(`{"maxPods":58,"shutdownGracePeriod":"45s","shutdownGracePeriodCriticalPods":"15s","containerLogMaxSize":"50Mi","containerLogMaxFiles":4,"allowedUnsafeSysctls":["net.core.somaxconn"],"cpuManagerPolicy":"static","cpuManagerPolicyOptions":{"full-pcpus-only":"true","distribute-cpus-across-numa":"false"},"cpuManagerReconcilePeriod":"10s","topologyManagerPolicy":"single-numa-node","topologyManagerScope":"pod","topologyManagerPolicyOptions":{"prefer-closest-numa-nodes":"true"},"registryPullQPS":10,"registryBurst":20,"eventRecordQPS":50,"eventBurst":100,"kubeAPIQPS":30,"kubeAPIBurst":60,"podPidsLimit":4096,"seccompDefault":true,"memoryManagerPolicy":"Static","evictionSoft":{"memory.available":"500Mi"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`)},
		{name: "kubelet-pass-through", families: []string{awsv1.AMIFamilyWindows2022}, mutate: kubeletJSON(`{"maxPods":58,"containerLogMaxSize":"50Mi","containerLogMaxFiles":4,"featureGates":{"WindowsHostNetwork":false,"InPlacePodVerticalScaling":true},"registryPullQPS":10,"serializeImagePulls":false,"kubeAPIQPS":30,"imageMinimumGCAge":"5m","podPidsLimit":4096,"evictionMinimumReclaim":{"memory.available":"100Mi","nodefs.available":"1Gi"},"tlsCipherSuites":["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256","TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]}`)},
		{name: "userdata-shell", families: linuxScripts, mutate: func(o *Options) { o.CustomUserData = shellUserData }},
		{name: "userdata-mime", families: []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyCustom}, mutate: func(o *Options) { o.CustomUserData = mimeShellUserData }},
		{name: "userdata-mime", families: []string{awsv1.AMIFamilyAL2023}, mutate: func(o *Options) { o.CustomUserData = mimeUserData }},
		{name: "userdata-nodeconfig", families: []string{awsv1.AMIFamilyAL2023}, mutate: func(o *Options) { o.CustomUserData = nodeConfigUserData }},
		{name: "userdata-toml", families: []string{awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom}, mutate: func(o *Options) { o.CustomUserData = tomlUserData }},
		{name: "userdata-powershell", families: []string{awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyCustom}, mutate: func(o *Options) { o.CustomUserData = powershellUserData }},
	}
}

// TestGolden compares every family's user data for every case with
// testdata/<family>/<case>.golden; go test -update rewrites them.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		families := c.families
		if families == nil {
			families = allFamilies
		}
		for _, family := range families {
			t.Run(family+"/"+c.name, func(t *testing.T) {
				o := base()
				if c.mutate != nil {
					c.mutate(&o)
				}
				got, err := Generate(family, o)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				again, err := Generate(family, o)
				if err != nil || again != got {
					t.Fatalf("Generate is not deterministic:\n%s\n----\n%s", got, again)
				}
				compareGolden(t, filepath.Join("testdata", strings.ToLower(family), c.name+".golden"), got)
			})
		}
	}
}

// TestWindowsVersionsShareBootstrap: the three Windows families bootstrap alike.
func TestWindowsVersionsShareBootstrap(t *testing.T) {
	o := base()
	o.CustomUserData = powershellUserData
	want, err := Generate(awsv1.AMIFamilyWindows2022, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2025} {
		got, err := Generate(f, o)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s user data differs from Windows2022's:\n%s", f, got)
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if string(want) != got {
		t.Errorf("user data differs from %s (run go test -update after checking the change):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
