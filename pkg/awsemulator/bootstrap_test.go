package awsemulator_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily/bootstrap"
)

const al2023UserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: users-cluster
  kubelet:
    config:
      maxPods: 42
      clusterDNS: [10.0.0.99]
    flags:
    - --node-labels=team=user,owner=me

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "user script"

--//
Content-Type: application/node.eks.aws

# Karpenter Generated NodeConfig
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    apiServerEndpoint: https://ABC.gr7.us-west-2.eks.amazonaws.com
    certificateAuthority: Y2EtYnVuZGxl
    cidr: 10.100.0.0/16
    name: karpenter-demo
  kubelet:
    config:
      clusterDNS:
      - 10.100.0.10
      maxPods: 110
    flags:
    - --node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=karpenter"
    - --register-with-taints="karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule"

--//--
`

const al2UserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash -xe
exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1
/etc/eks/bootstrap.sh 'karpenter-demo' --apiserver-endpoint 'https://ABC.gr7.us-west-2.eks.amazonaws.com' --b64-cluster-ca 'Y2EtYnVuZGxl' \
--dns-cluster-ip '10.100.0.10' \
--use-max-pods false \
--kubelet-extra-args '--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default" --register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=29'
--BOUNDARY--
`

const bottlerocketUserData = `[settings]
[settings.kubernetes]
api-server = 'https://ABC.gr7.us-west-2.eks.amazonaws.com'
cluster-certificate = 'Y2EtYnVuZGxl'
cluster-name = 'karpenter-demo'
cluster-dns-ip = '10.100.0.10'
max-pods = 58

[settings.kubernetes.node-labels]
'karpenter.sh/capacity-type' = 'on-demand'
'karpenter.sh/nodepool' = 'default'

[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
dedicated = ['gpu:NoSchedule', 'gpu:NoExecute']
`

const windowsUserData = `<powershell>
[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"
& $EKSBootstrapScriptFile -EKSClusterName 'karpenter-demo' -APIServerEndpoint 'https://ABC.gr7.us-west-2.eks.amazonaws.com' -Base64ClusterCA 'Y2EtYnVuZGxl' -KubeletExtraArgs '--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=win" --register-with-taints="os=windows:NoSchedule" --max-pods=110' -DNSClusterIP '10.100.0.10'
</powershell>
`

func taint(k, v string, e corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: k, Value: v, Effect: e}
}

func TestParseUserDataPerFamily(t *testing.T) {
	for _, tc := range []struct {
		name, userData string
		want           awsemulator.NodeBootstrap
	}{
		{"AL2023: later NodeConfig parts win, flags of every part apply in order", al2023UserData, awsemulator.NodeBootstrap{
			Format: awsemulator.BootstrapAL2023, ClusterName: "karpenter-demo", APIServer: "https://ABC.gr7.us-west-2.eks.amazonaws.com",
			CABundle: "Y2EtYnVuZGxl", DNSClusterIP: "10.100.0.10", MaxPods: 110,
			Labels: map[string]string{"team": "karpenter", "owner": "me", "karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "default"},
			Taints: []corev1.Taint{taint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute), taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)},
		}},
		{"AL2: bootstrap.sh arguments and --kubelet-extra-args", al2UserData, awsemulator.NodeBootstrap{
			Format: awsemulator.BootstrapAL2, ClusterName: "karpenter-demo", APIServer: "https://ABC.gr7.us-west-2.eks.amazonaws.com",
			CABundle: "Y2EtYnVuZGxl", DNSClusterIP: "10.100.0.10", MaxPods: 29,
			Labels: map[string]string{"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "default"},
			Taints: []corev1.Taint{taint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute)},
		}},
		{"Bottlerocket: settings.kubernetes TOML", bottlerocketUserData, awsemulator.NodeBootstrap{
			Format: awsemulator.BootstrapBottlerocket, ClusterName: "karpenter-demo", APIServer: "https://ABC.gr7.us-west-2.eks.amazonaws.com",
			CABundle: "Y2EtYnVuZGxl", DNSClusterIP: "10.100.0.10", MaxPods: 58,
			Labels: map[string]string{"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "default"},
			Taints: []corev1.Taint{taint("dedicated", "gpu", corev1.TaintEffectNoSchedule), taint("dedicated", "gpu", corev1.TaintEffectNoExecute),
				taint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute)},
		}},
		{"Windows: Start-EKSBootstrap.ps1 parameters", windowsUserData, awsemulator.NodeBootstrap{
			Format: awsemulator.BootstrapWindows, ClusterName: "karpenter-demo", APIServer: "https://ABC.gr7.us-west-2.eks.amazonaws.com",
			CABundle: "Y2EtYnVuZGxl", DNSClusterIP: "10.100.0.10", MaxPods: 110,
			Labels: map[string]string{"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "win"},
			Taints: []corev1.Taint{taint("os", "windows", corev1.TaintEffectNoSchedule)},
		}},
		{"Custom: a script without a known bootstrap gives nothing", "#!/bin/bash\necho hello\n", awsemulator.NodeBootstrap{Labels: map[string]string{}}},
		{"bare NodeConfig without MIME", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: c1\n", awsemulator.NodeBootstrap{
			Format: awsemulator.BootstrapAL2023, ClusterName: "c1", Labels: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := awsemulator.ParseUserData(tc.userData)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("parsed\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
}

func TestParseUserDataErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ userData, want string }{
		{strings.Replace(al2023UserData, "maxPods: 110", "maxPods: lots", 1), "spec.kubelet.config.maxPods"},
		{strings.Replace(al2UserData, "--max-pods=29", "--max-pods=0", 1), "--max-pods"},
		{strings.Replace(bottlerocketUserData, "gpu:NoSchedule", "gpu:Sometimes", 1), "settings.kubernetes.node-taints.dedicated"},
		{strings.Replace(windowsUserData, "os=windows:NoSchedule", "os=windows", 1), "--register-with-taints"},
		{strings.Replace(al2023UserData, "kind: NodeConfig", "kind: Other", 1), "kind \"Other\""},
		{"[settings.kubernetes]\ncluster-name = \n", "Bottlerocket settings TOML"},
	} {
		_, err := awsemulator.ParseUserData(tc.userData)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %q", err, tc.want)
		}
	}
}

// User data carrying kubelet fields Karpenter does not read (the AL2
// kubelet-config.json merge, Bottlerocket's extra settings, Windows' extra
// kubelet flags) still registers the node with its cluster, labels, taints
// and max pods.
func TestParseUserDataWithKubeletPassThrough(t *testing.T) {
	for family, kubelet := range map[string]string{
		"AL2":          `{"maxPods":42,"clusterDNS":["10.100.0.10"],"shutdownGracePeriod":"30s","clusterDomain":"it's.local","featureGates":{"A":true}}`,
		"Bottlerocket": `{"maxPods":42,"clusterDNS":["10.100.0.10"],"shutdownGracePeriod":"30s","cpuManagerPolicyOptions":{"full-pcpus-only":"true"}}`,
		"Windows2022":  `{"maxPods":42,"clusterDNS":["10.100.0.10"],"featureGates":{"A":true},"registryPullQPS":5,"tlsCipherSuites":["X","Y"]}`,
	} {
		t.Run(family, func(t *testing.T) {
			k := &awsv1.KubeletConfiguration{}
			if err := json.Unmarshal([]byte(kubelet), k); err != nil {
				t.Fatal(err)
			}
			userData, err := bootstrap.Generate(family, bootstrap.Options{
				ClusterName: "karpenter-demo", ClusterEndpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", CABundle: "Y2EtYnVuZGxl",
				Kubelet: k, Labels: map[string]string{"karpenter.sh/nodepool": "default"},
				Taints: []corev1.Taint{taint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute)},
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := awsemulator.ParseUserData(userData)
			if err != nil {
				t.Fatal(err)
			}
			if got.ClusterName != "karpenter-demo" || got.DNSClusterIP != "10.100.0.10" || got.MaxPods != 42 ||
				got.Labels["karpenter.sh/nodepool"] != "default" || len(got.Taints) != 1 {
				t.Errorf("parsed %+v from\n%s", *got, userData)
			}
		})
	}
}
