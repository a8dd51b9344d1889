// Package aws_test checks the karpenter.k8s.aws CRDs against a real
// kube-apiserver: manifests apply and read back with the documented defaults,
// and the CEL rules reject invalid objects naming the offending field.
package aws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

var e *env.Environment

func TestMain(m *testing.M) {
	env.MainWithSetup(m, &e, func(*env.Environment) error { return serveV1beta1(context.Background()) })
}

// serveV1beta1 turns on the v1beta1 version of the EC2NodeClass CRD, as the
// conversion webhook does when it runs, so that the v1beta1 schema's
// defaults and CEL rules can be exercised. Without the webhook the API server
// relabels objects instead of converting them; the tests here only read
// v1beta1 objects back through v1beta1, where that makes no difference.
func serveV1beta1(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "ec2nodeclasses.karpenter.k8s.aws"}, crd); err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == "v1beta1" {
			crd.Spec.Versions[i].Served = true
		}
	}
	if err := e.Client.Update(ctx, crd); err != nil {
		return fmt.Errorf("serving v1beta1: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("karpenter.k8s.aws/v1beta1")
		list.SetKind("EC2NodeClassList")
		// Discovery and the client's REST mapper lag behind the CRD update;
		// a successful list proves the version is served.
		return e.Client.List(ctx, list) == nil, nil
	})
}

// readManifest parses one YAML object from testdata.
func readManifest(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifest(t, string(b))
}

func parseManifest(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("parsing manifest: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// create sends u to the API server and deletes it when the test ends.
func create(t *testing.T, u *unstructured.Unstructured) error {
	t.Helper()
	err := e.Client.Create(context.Background(), u)
	if err == nil {
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), u.DeepCopy()) })
	}
	return err
}

// get reads the object named like u back through u's API version.
func get(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(u.GroupVersionKind())
	if err := e.Client.Get(context.Background(), client.ObjectKey{Name: u.GetName()}, out); err != nil {
		t.Fatalf("reading back %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// expectSubset fails unless every value in want appears, equal, in got.
// Lists must have the same length; maps may have extra keys in got (that is
// where defaults show up).
func expectSubset(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %s", path, jsonString(got))
			return
		}
		for k, v := range w {
			gv, ok := g[k]
			if v == nil {
				// A merge patch's null deletes the field.
				if gv != nil {
					t.Errorf("%s.%s: want absent, got %s", path, k, jsonString(gv))
				}
				continue
			}
			if !ok {
				t.Errorf("%s.%s: missing after read back (want %s)", path, k, jsonString(v))
				continue
			}
			expectSubset(t, path+"."+k, v, gv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: want %s, got %s", path, jsonString(want), jsonString(got))
			return
		}
		for i := range w {
			expectSubset(t, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		if jsonString(want) != jsonString(got) {
			t.Errorf("%s: want %s, got %s", path, jsonString(want), jsonString(got))
		}
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// expectRejected fails unless err is an Invalid error with a cause on field
// whose message contains message.
func expectRejected(t *testing.T, err error, field, message string) {
	t.Helper()
	if err == nil {
		t.Errorf("accepted, want rejection on %s: %q", field, message)
		return
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) {
		t.Errorf("want an Invalid error on %s, got %v", field, err)
		return
	}
	var causes []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Field == field && strings.Contains(c.Message, message) {
				return
			}
			causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Message))
		}
	}
	t.Errorf("no cause on field %q containing %q; causes:\n  %s", field, message, strings.Join(causes, "\n  "))
}

func testdata(parts ...string) string {
	return filepath.Join(append([]string{"testdata"}, parts...)...)
}
