package awsemulator

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestGoldenUserDataBecomesTheExpectedNode reads every golden file the user data
// generator (pkg/providers/aws/amifamily/bootstrap) writes as the emulator's node
// bootstrap does, and checks the Node it would register: the generator and the
// emulator agree on every family and kubelet setting.
func TestGoldenUserDataBecomesTheExpectedNode(t *testing.T) {
	root := filepath.Join("..", "providers", "aws", "amifamily", "bootstrap", "testdata")
	formats := map[string]string{"al2": BootstrapAL2, "al2023": BootstrapAL2023, "bottlerocket": BootstrapBottlerocket, "windows2022": BootstrapWindows}
	cat, err := loadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	it := cat.index["m5.xlarge"] // 4 vCPUs; ENI formula 4 × (15 - 1) + 2 = 58
	files, err := filepath.Glob(filepath.Join(root, "*", "*.golden"))
	if err != nil || len(files) < 80 {
		t.Fatalf("golden files: %d, %v", len(files), err)
	}
	for _, f := range files {
		family := filepath.Base(filepath.Dir(f))
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		t.Run(family+"/"+name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			nb, err := ParseUserData(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			if family == "custom" {
				// Custom passes the user's data through: whatever it holds is read, and
				// only a bootstrap naming this cluster would join.
				if nb.Format != "" && nb.ClusterName == "test-cluster" {
					t.Fatalf("custom user data joined as %s: %+v", nb.Format, nb)
				}
				return
			}
			if nb.Format != formats[family] || nb.ClusterName != "test-cluster" {
				t.Fatalf("format %q cluster %q, want %q test-cluster", nb.Format, nb.ClusterName, formats[family])
			}
			in := &Instance{ID: "i-0123456789abcdef0", InstanceType: "m5.xlarge", Architecture: "x86_64", Zone: "us-west-2a", ZoneID: "usw2-az1",
				PrivateIP: "10.0.0.5", PrivateDNSName: "ip-10-0-0-5.us-west-2.compute.internal"}
			node := buildNode(Options{Region: "us-west-2"}, in, it, nb, 20, family == "windows2022", "1.34")

			wantLabels := map[string]string{"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand"}
			wantTaints := []string{"karpenter.sh/unregistered:NoExecute"}
			wantPods := int64(29)
			switch name {
			case "labels-taints":
				wantLabels["team"], wantLabels["example.com/tier"] = "payments", "gold"
				wantTaints = []string{"dedicated=gpu:NoExecute", "dedicated=gpu:NoSchedule", "example.com/startup:NoSchedule", "karpenter.sh/unregistered:NoExecute"}
			case "max-pods":
				wantPods = 110
			case "no-kubelet", "kubelet-pass-through":
				wantPods = 58
			case "pods-per-core":
				if family == "al2" || family == "al2023" {
					wantPods = 16 // min(29, 4 per core × 4 vCPUs)
				}
			case "userdata-toml":
				wantLabels["team"] = "payments"
			}
			for k, v := range wantLabels {
				if node.Labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, node.Labels[k], v, node.Labels)
				}
			}
			if got := taintStrings(node.Spec.Taints); !reflect.DeepEqual(got, wantTaints) {
				t.Errorf("taints %v, want %v", got, wantTaints)
			}
			if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Value() != wantPods {
				t.Errorf("pods %d, want %d", pods.Value(), wantPods)
			}
			wantOS := "linux"
			if family == "windows2022" {
				wantOS = "windows"
			}
			if node.Labels[corev1.LabelOSStable] != wantOS || node.Spec.ProviderID != "aws:///us-west-2a/i-0123456789abcdef0" || node.Name != in.PrivateDNSName {
				t.Errorf("node os %q providerID %q name %q", node.Labels[corev1.LabelOSStable], node.Spec.ProviderID, node.Name)
			}
		})
	}
}

func taintStrings(ts []corev1.Taint) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		s += ":" + string(t.Effect)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
