package bootstrap

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// nodeadmMerge merges NodeConfig documents in order, later values winning
// key by key, as nodeadm does with the NodeConfig parts of user data.
func nodeadmMerge(t *testing.T, docs []string) map[string]any {
	t.Helper()
	merged := map[string]any{}
	var merge func(dst, src map[string]any)
	merge = func(dst, src map[string]any) {
		for k, v := range src {
			if sm, ok := v.(map[string]any); ok {
				if dm, ok := dst[k].(map[string]any); ok {
					merge(dm, sm)
					continue
				}
			}
			dst[k] = v
		}
	}
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("NodeConfig part is not YAML: %v\n%s", err, d)
		}
		merge(merged, m)
	}
	return merged
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// TestAL2023KarpenterNodeConfigWins is the v1 rule: the user's NodeConfig
// parts come first and Karpenter's last, so that nodeadm's in-order merge
// keeps Karpenter's cluster and kubelet settings and the user's others.
func TestAL2023KarpenterNodeConfigWins(t *testing.T) {
	for name, userData := range map[string]string{"bare NodeConfig": nodeConfigUserData, "MIME": mimeUserData} {
		t.Run(name, func(t *testing.T) {
			o := base()
			o.CustomUserData = userData
			out, err := AL2023(o)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := ParseMIME(out)
			if err != nil {
				t.Fatalf("output is not MIME: %v", err)
			}
			var configs []string
			for _, p := range parts {
				if p.ContentType() == ContentTypeNodeConfig {
					configs = append(configs, p.Content)
				}
			}
			if len(configs) != 2 || !strings.HasPrefix(configs[1], "# Karpenter Generated NodeConfig") {
				t.Fatalf("want the user's NodeConfig then Karpenter's, got %d NodeConfig parts:\n%s", len(configs), out)
			}
			m := nodeadmMerge(t, configs)
			if got := dig(m, "spec", "kubelet", "config", "maxPods"); got != float64(29) {
				t.Errorf("merged maxPods %v, want Karpenter's 29", got)
			}
			if got := dig(m, "spec", "cluster", "name"); got != "test-cluster" {
				t.Errorf("merged cluster name %v, want Karpenter's test-cluster", got)
			}
			// Settings Karpenter does not write survive from the user's part.
			userKey := "imageMinimumGCAge"
			if name == "MIME" {
				userKey = "shutdownGracePeriod"
			}
			if dig(m, "spec", "kubelet", "config", userKey) == nil {
				t.Errorf("the user's kubelet %s was lost in the merge", userKey)
			}
		})
	}
}

func TestAL2023ShellUserDataStaysAScript(t *testing.T) {
	o := base()
	o.CustomUserData = shellUserData
	out, err := AL2023(o)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParseMIME(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].ContentType() != "text/x-shellscript" || parts[0].Content != shellUserData {
		t.Fatalf("want the script unchanged as a shell part first, got %+v", parts)
	}
}

func TestAL2MergesUserPartsFirst(t *testing.T) {
	o := base()
	o.CustomUserData = mimeShellUserData
	out, err := AL2(o)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParseMIME(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("want the user's 2 parts and Karpenter's script, got %d", len(parts))
	}
	if !strings.Contains(parts[0].Content, "first user part") || parts[1].ContentType() != "text/cloud-config" {
		t.Errorf("user parts changed or reordered: %+v", parts[:2])
	}
	if !strings.Contains(parts[2].Content, "/etc/eks/bootstrap.sh 'test-cluster'") {
		t.Errorf("last part is not Karpenter's bootstrap:\n%s", parts[2].Content)
	}
}

// TestBottlerocketKeepsUserSettings: Karpenter's keys win, the user's other
// settings and labels stay.
func TestBottlerocketKeepsUserSettings(t *testing.T) {
	o := base()
	o.CustomUserData = tomlUserData
	out, err := Bottlerocket(o)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.Decode(out, &doc); err != nil {
		t.Fatalf("output is not TOML: %v\n%s", err, out)
	}
	k8s := func(path ...string) any { return dig(doc, append([]string{"settings", "kubernetes"}, path...)...) }
	checks := map[string][2]any{
		"cluster-name":                  {k8s("cluster-name"), "test-cluster"},
		"max-pods":                      {k8s("max-pods"), int64(29)},
		"node-labels.team":              {k8s("node-labels", "team"), "payments"},
		"node-labels.capacity-type":     {k8s("node-labels", "karpenter.sh/capacity-type"), "on-demand"},
		"host-containers.admin.enabled": {dig(doc, "settings", "host-containers", "admin", "enabled"), true},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %#v, want %#v", what, c[0], c[1])
		}
	}
	// Taints are Karpenter's alone (upstream replaces the user's).
	if taints, _ := k8s("node-taints").(map[string]any); len(taints) != 1 || taints["karpenter.sh/unregistered"] == nil {
		t.Errorf("node-taints %v, want only karpenter.sh/unregistered", k8s("node-taints"))
	}
	if k8s("allowed-unsafe-sysctls") == nil {
		t.Error("the user's allowed-unsafe-sysctls was dropped")
	}
}

func TestBadUserDataIsAnError(t *testing.T) {
	cases := []struct {
		family, userData, want string
	}{
		{awsv1.AMIFamilyBottlerocket, "[settings.kubernetes\nbroken", "spec.userData is not valid Bottlerocket TOML"},
		{awsv1.AMIFamilyBottlerocket, "settings = 3\n", "settings must be a TOML table"},
		{awsv1.AMIFamilyBottlerocket, "[settings]\nkubernetes = \"x\"\n", "settings.kubernetes must be a TOML table"},
		{awsv1.AMIFamilyAL2, "MIME-Version: 1.0\nContent-Type: text/plain\n\nhello\n", "spec.userData is not a valid MIME"},
		{awsv1.AMIFamilyAL2023, "Content-Type: multipart/mixed\n\nhello\n", "spec.userData is not a valid MIME"},
	}
	for _, c := range cases {
		o := base()
		o.CustomUserData = c.userData
		_, err := Generate(c.family, o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %q: error %v, want one containing %q", c.family, c.userData, err, c.want)
		}
	}
	o := base()
	o.ClusterCIDR = ""
	if _, err := AL2023(o); err == nil || !strings.Contains(err.Error(), "CIDR") {
		t.Errorf("AL2023 without a cluster CIDR: error %v, want one naming the CIDR", err)
	}
	o = base()
	o.CABundle = "not base64!"
	if _, err := AL2023(o); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("AL2023 with a bad CA bundle: error %v", err)
	}
	if _, err := Generate("Ubuntu", base()); err == nil || !strings.Contains(err.Error(), `"Ubuntu"`) {
		t.Errorf("unknown family: error %v", err)
	}
}

func TestMIMERoundTrip(t *testing.T) {
	parts := []Part{newPart(ContentTypeShellScript, "#!/bin/bash\necho a\n"), newPart(ContentTypeNodeConfig, "kind: NodeConfig")}
	parts[0].Header.Set("X-Extra", "1")
	doc, err := WriteMIME(parts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseMIME(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Content != parts[0].Content || got[1].Content != parts[1].Content || got[0].Header.Get("X-Extra") != "1" {
		t.Fatalf("round trip changed the parts: %+v", got)
	}
	if _, err := WriteMIME([]Part{newPart(ContentTypeShellScript, "echo\n--//\n")}); err == nil {
		t.Error("a part containing the boundary was written")
	}
}

func TestCustomIsUnchanged(t *testing.T) {
	o := base()
	o.CustomUserData = mimeUserData
	if got, _ := Generate(awsv1.AMIFamilyCustom, o); got != mimeUserData {
		t.Errorf("Custom changed the user data:\n%s", got)
	}
}
