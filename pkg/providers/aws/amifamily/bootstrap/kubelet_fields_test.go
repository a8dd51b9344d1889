package bootstrap

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

func kubeletFrom(t *testing.T, raw string) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(raw), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestUnappliedKubelet: each family names exactly the fields its bootstrap
// cannot write, and writes the rest.
func TestUnappliedKubelet(t *testing.T) {
	for _, c := range []struct {
		family, kubelet string
		want            []string
	}{
		{awsv1.AMIFamilyAL2023, `{"providerID":"x","shutdownGracePeriod":"30s","podsPerCore":2}`, nil},
		{awsv1.AMIFamilyCustom, `{"shutdownGracePeriod":"30s"}`, nil},
		{awsv1.AMIFamilyAL2, `{"shutdownGracePeriod":"30s","featureGates":{"A":true},"podsPerCore":2}`, nil},
		{awsv1.AMIFamilyAL2, `{"cgroupDriver":"cgroupfs","providerID":"x","kubeReservedCgroup":"/k","systemReservedCgroup":"/s","shutdownGracePeriod":"30s"}`,
			[]string{"cgroupDriver", "kubeReservedCgroup", "providerID", "systemReservedCgroup"}},
		{awsv1.AMIFamilyBottlerocket, `{"shutdownGracePeriod":"30s","evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m"},"cpuManagerPolicyOptions":{"full-pcpus-only":"true"}}`, nil},
		{awsv1.AMIFamilyBottlerocket, `{"podsPerCore":2,"serializeImagePulls":false,"featureGates":{"A":true},"cpuManagerPolicyOptions":{"full-pcpus-only":"maybe"},"topologyManagerPolicyOptions":{"other":"1"},"registryPullQPS":5}`,
			[]string{"cpuManagerPolicyOptions", "featureGates", "podsPerCore", "serializeImagePulls", "topologyManagerPolicyOptions"}},
		{awsv1.AMIFamilyWindows2019, `{"featureGates":{"A":true},"registryPullQPS":5,"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`, nil},
		{awsv1.AMIFamilyWindows2025, `{"podsPerCore":2,"shutdownGracePeriod":"30s","clusterDomain":"a b","cgroupDriver":"systemd","containerLogMaxSize":"10Mi"}`,
			[]string{"cgroupDriver", "clusterDomain", "podsPerCore", "shutdownGracePeriod"}},
	} {
		t.Run(c.family, func(t *testing.T) {
			var got []string
			for _, f := range UnappliedKubelet(c.family, kubeletFrom(t, c.kubelet)) {
				if f.Reason == "" {
					t.Errorf("%s has no reason", f.Field)
				}
				got = append(got, f.Field)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s %s: unapplied %v, want %v", c.family, c.kubelet, got, c.want)
			}
			// The generators refuse the same pass-through fields and
			// write every other one.
			o := base()
			o.Kubelet = kubeletFrom(t, c.kubelet)
			_, err := Generate(c.family, o)
			passThroughRefused := false
			for _, f := range c.want {
				passThroughRefused = passThroughRefused || !awsv1.IsTypedKubeletField(f)
			}
			if passThroughRefused != (err != nil) {
				t.Errorf("Generate error %v, want an error: %t", err, passThroughRefused)
			}
			for _, f := range c.want {
				if err != nil && !awsv1.IsTypedKubeletField(f) && !strings.Contains(err.Error(), "spec.kubelet."+f) {
					t.Errorf("Generate error %q does not name %s", err, f)
				}
			}
		})
	}
}

// TestAL2KubeletConfigMergeRuns runs the AL2 script's merge step with bash
// and jq on a kubelet-config.json like the AMI's: the fields land with
// their exact values (a single quote included), the AMI's own feature gates
// are kept beside the class's, and the AMI's other fields stay.
func TestAL2KubeletConfigMergeRuns(t *testing.T) {
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	o := base()
	o.Kubelet = kubeletFrom(t, `{"maxPods":20,"clusterDomain":"it's.local","featureGates":{"InPlacePodVerticalScaling":true},"allowedUnsafeSysctls":["net.core.*"],"containerLogMaxFiles":3}`)
	o.CustomUserData = mimeShellUserData
	userData, err := Generate(awsv1.AMIFamilyAL2, o)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParseMIME(userData)
	if err != nil {
		t.Fatal(err)
	}
	// The user's parts come first, Karpenter's script last.
	if len(parts) != 3 || !strings.Contains(parts[0].Content, "first user part") {
		t.Fatalf("parts %+v", parts)
	}
	script := parts[2].Content
	if strings.Index(script, "jq ") > strings.Index(script, "/etc/eks/bootstrap.sh") {
		t.Fatalf("the merge does not run before bootstrap.sh:\n%s", script)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "kubelet-config.json")
	if err := os.WriteFile(config, []byte(`{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","featureGates":{"RotateKubeletServerCertificate":true},"serializeImagePulls":false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(line, "exec ") || strings.Contains(line, "bootstrap.sh") || strings.HasPrefix(line, "--") {
			continue
		}
		steps = append(steps, strings.ReplaceAll(line, al2KubeletConfigFile, config))
	}
	cmd := exec.Command("bash", "-e", "-c", strings.Join(steps, "\n"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("merge step failed: %v\n%s\n%s", err, out, strings.Join(steps, "\n"))
	}
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("merged file is not JSON: %v\n%s", err, data)
	}
	want := map[string]any{
		"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
		"featureGates":         map[string]any{"RotateKubeletServerCertificate": true, "InPlacePodVerticalScaling": true},
		"serializeImagePulls":  false,
		"clusterDomain":        "it's.local",
		"allowedUnsafeSysctls": []any{"net.core.*"},
		"containerLogMaxFiles": float64(3),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged kubelet-config.json\n%s\nwant %v", data, want)
	}
}
