package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/convert/migrate"
	"github.com/karpenter-go/karpenter/pkg/test/env"
)

// TestGoldenOutputsApply creates every v1 and v1beta1 object of every golden
// output (YAML and JSON) in a real kube-apiserver with the project's CRDs:
// the converter's output must pass the schemas and CEL rules. v1beta1 is
// served here as the conversion webhook would serve it; requests are
// dry-run, so no conversion is needed to store anything.
func TestGoldenOutputsApply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "stdout.golden"))
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		file string
		obj  *unstructured.Unstructured
	}
	var objects []object
	versions := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := migrate.ReadDocuments(strings.NewReader(string(b)), f)
		if err != nil {
			// Help text and report tables are not manifests.
			continue
		}
		for _, d := range docs {
			group, version, _ := strings.Cut(d.APIVersion(), "/")
			if (group != "karpenter.sh" && group != "karpenter.k8s.aws") || (version != "v1" && version != "v1beta1") {
				continue
			}
			versions[d.APIVersion()+" "+d.Kind()]++
			objects = append(objects, object{file: f, obj: &unstructured.Unstructured{Object: d.Object}})
		}
	}
	for _, want := range []string{"karpenter.sh/v1 NodePool", "karpenter.k8s.aws/v1 EC2NodeClass", "karpenter.sh/v1beta1 NodePool", "karpenter.k8s.aws/v1beta1 EC2NodeClass"} {
		if versions[want] == 0 {
			t.Fatalf("no golden output holds a %s; the test would not cover it", want)
		}
	}

	e := env.StartT(t)
	ctx := context.Background()
	serveV1beta1(t, e, "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws")
	for _, o := range objects {
		// The role placeholder is what envsubst replaces; an unexpanded "$"
		// is still a valid role string for the schema.
		if err := e.Client.Create(ctx, o.obj, client.DryRunAll); err != nil {
			t.Errorf("%s: %s %s %q rejected by the API server: %v", o.file, o.obj.GetAPIVersion(), o.obj.GetKind(), o.obj.GetName(), err)
		}
	}
	t.Logf("%d objects accepted (%v)", len(objects), versions)

	// The check can fail: what the converter refuses to emit (an AMI term
	// with an id beside tags) is rejected by the same API server.
	docs, err := migrate.ReadDocuments(strings.NewReader(`
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: invalid}
spec:
  role: r
  amiFamily: AL2
  amiSelectorTerms: [{id: ami-0123, tags: {a: b}}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`), "inline")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &unstructured.Unstructured{Object: docs[0].Object}, client.DryRunAll); err == nil {
		t.Fatal("an AMI term with id and tags was accepted; the apply test would prove nothing")
	}
}

// serveV1beta1 turns on the v1beta1 version of the named CRDs, as enabling
// the conversion webhook does, and waits until the API server serves it.
func serveV1beta1(t *testing.T, e *env.Environment, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == "v1beta1" {
				crd.Spec.Versions[i].Served = true
			}
		}
		if err := e.Client.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(crd.Spec.Group + "/v1beta1")
			list.SetKind(crd.Spec.Names.Kind + "List")
			return e.Client.List(ctx, list) == nil, nil
		})
		if err != nil {
			t.Fatalf("%s v1beta1 never became served: %v", name, err)
		}
	}
}
