package aws_test

import (
	"strings"
	"testing"
)

func kubectl(t *testing.T, args ...string) string { return e.Kubectl(t, args...) }

// explain waits for the CRD's OpenAPI to be published (TestMain just switched
// v1beta1 on) before it answers.
func explain(t *testing.T, field string) string { return e.KubectlEventually(t, "explain", field) }

// TestKubectlExplain: the doc comments reach users through kubectl explain,
// under the short name too.
func TestKubectlExplain(t *testing.T) {
	out := explain(t, "ec2nc.spec.metadataOptions")
	for _, want := range []string{"httpPutResponseHopLimit", "httpTokens", "instance metadata service", "pods (one hop further away)"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain ec2nc.spec.metadataOptions lacks %q:\n%s", want, out)
		}
	}
	out = explain(t, "ec2nodeclass.spec.amiSelectorTerms.alias")
	if !strings.Contains(out, "family@version") {
		t.Errorf("kubectl explain of alias lacks its format:\n%s", out)
	}
	out = explain(t, "awsnodetemplates.spec.amiSelector")
	if !strings.Contains(out, "aws::owners") {
		t.Errorf("kubectl explain of AWSNodeTemplate amiSelector lacks the reserved keys:\n%s", out)
	}
}

// TestKubectlGetColumns: short names, the karpenter category and the
// printer columns (Role only in wide output) as upstream.
func TestKubectlGetColumns(t *testing.T) {
	u := parseManifest(t, baseV1)
	u.SetName("columns")
	if err := create(t, u); err != nil {
		t.Fatal(err)
	}
	// Listing a category prints every kind in it, each name qualified.
	if out := kubectl(t, "get", "karpenter"); !strings.Contains(out, "ec2nodeclass.karpenter.k8s.aws/columns") {
		t.Errorf("kubectl get karpenter does not list the EC2NodeClass:\n%s", out)
	}
	for _, resource := range []string{"ec2nc", "ec2ncs", "ec2nodeclasses"} {
		out := kubectl(t, "get", resource)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if strings.Join(header, " ") != "NAME READY AGE" || !strings.Contains(out, "columns") {
			t.Errorf("kubectl get %s: header %v, want NAME READY AGE and the object:\n%s", resource, header, out)
		}
	}
	wide := kubectl(t, "get", "ec2nc", "columns", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(wide), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE ROLE" || !strings.HasSuffix(lines[1], "KarpenterNodeRole") {
		t.Errorf("kubectl get ec2nc -o wide:\n%s", wide)
	}
}
