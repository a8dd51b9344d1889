package aws_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// metadataDefaults are the documented defaults of spec.metadataOptions per
// API version: v1 allows one hop (IMDS unreachable from pods), v1beta1 two.
var metadataDefaults = map[string]map[string]any{
	"karpenter.k8s.aws/v1":      {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(1), "httpTokens": "required"},
	"karpenter.k8s.aws/v1beta1": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(2), "httpTokens": "required"},
}

// TestManifestsApplyAndReadBack applies every EC2NodeClass and
// AWSNodeTemplate manifest from the seeds and our own realistic ones, reads
// each back through the version it was written in, and checks that every
// field survived and that the documented defaults were filled in.
func TestManifestsApplyAndReadBack(t *testing.T) {
	var files []string
	for _, dir := range []string{"seeds", "manifests"} {
		m, err := filepath.Glob(testdata(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 12 {
		t.Fatalf("found only %d manifests under testdata", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			u := readManifest(t, f)
			status, hasStatus, _ := unstructured.NestedMap(u.Object, "status")
			unstructured.RemoveNestedField(u.Object, "status")
			manifest := u.DeepCopy().Object
			if err := create(t, u); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if hasStatus {
				// Status is written by Karpenter through the subresource.
				cur := get(t, u)
				cur.Object["status"] = status
				if err := e.Client.Status().Update(context.Background(), cur); err != nil {
					t.Fatalf("writing status: %v", err)
				}
				manifest["status"] = status
			}
			got := get(t, u)
			expectSubset(t, "", manifest, got.Object)

			if u.GetKind() != "EC2NodeClass" {
				// The alpha API has no schema defaults.
				if _, found, _ := unstructured.NestedMap(got.Object, "spec", "metadataOptions"); found != hasNested(manifest, "spec", "metadataOptions") {
					t.Errorf("AWSNodeTemplate metadataOptions must not be defaulted")
				}
				return
			}
			want := metadataDefaults[u.GetAPIVersion()]
			given, _, _ := unstructured.NestedMap(manifest, "spec", "metadataOptions")
			gotMO, _, _ := unstructured.NestedMap(got.Object, "spec", "metadataOptions")
			for k, def := range want {
				wantV := def
				if v, ok := given[k]; ok {
					wantV = v
				}
				if jsonString(gotMO[k]) != jsonString(wantV) {
					t.Errorf("spec.metadataOptions.%s = %s, want %s", k, jsonString(gotMO[k]), jsonString(wantV))
				}
			}
		})
	}
}

func hasNested(obj map[string]any, fields ...string) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	return found
}

// TestDefaultsOfMinimalClasses pins the whole defaulted spec of the smallest
// valid class in each version.
func TestDefaultsOfMinimalClasses(t *testing.T) {
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			u := parseManifest(t, strings.NewReplacer("VERSION", version, "AMI", map[string]string{
				"v1": "amiSelectorTerms: [{alias: al2023@latest}]", "v1beta1": "amiFamily: AL2023",
			}[version]).Replace(`
apiVersion: karpenter.k8s.aws/VERSION
kind: EC2NodeClass
metadata: {name: minimal-VERSION}
spec:
  AMI
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`))
			if err := create(t, u); err != nil {
				t.Fatal(err)
			}
			got := get(t, u)
			mo, _, _ := unstructured.NestedMap(got.Object, "spec", "metadataOptions")
			if want := metadataDefaults[u.GetAPIVersion()]; jsonString(mo) != jsonString(want) {
				t.Errorf("metadataOptions = %s, want %s", jsonString(mo), jsonString(want))
			}
			spec, _, _ := unstructured.NestedMap(got.Object, "spec")
			for _, absent := range []string{"amiFamily", "blockDeviceMappings", "kubelet", "instanceStorePolicy", "detailedMonitoring", "associatePublicIPAddress", "userData", "tags", "context", "instanceProfile"} {
				if version == "v1beta1" && absent == "amiFamily" {
					continue
				}
				if v, ok := spec[absent]; ok {
					t.Errorf("spec.%s = %s, want no default", absent, jsonString(v))
				}
			}
		})
	}
}
