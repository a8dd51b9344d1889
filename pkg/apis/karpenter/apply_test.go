package karpenter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

func environment(t *testing.T) *env.Environment {
	t.Helper()
	if testEnv == nil {
		t.Fatal("test environment not started")
	}
	return testEnv
}

func readManifest(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &obj.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// TestValidManifestsApplyWithDefaults applies every manifest under
// testdata/valid (the seed documents' NodePools and NodeClaims in released v1
// field names, plus realistic ones), reads each back, and checks that every
// field written survived and that the documented defaults filled the rest.
func TestValidManifestsApplyWithDefaults(t *testing.T) {
	e := environment(t)
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil || len(files) < 8 {
		t.Fatalf("expected at least 8 manifests, got %d (%v)", len(files), err)
	}
	ctx := context.Background()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in := readManifest(t, f)
			obj := in.DeepCopy()
			if err := e.Client.Create(ctx, obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
			out := &unstructured.Unstructured{}
			out.SetGroupVersionKind(in.GroupVersionKind())
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), out); err != nil {
				t.Fatal(err)
			}
			if diff := missing(in.Object["spec"], out.Object["spec"], "spec"); diff != "" {
				t.Errorf("fields lost on the round trip through the apiserver: %s", diff)
			}
			switch in.GetKind() {
			case "NodePool":
				checkNodePoolDefaults(t, in, out)
				// The typed client must decode what the apiserver returns.
				np := &v1.NodePool{}
				if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), np); err != nil {
					t.Fatalf("typed get: %v", err)
				}
				if np.Spec.Template.Spec.NodeClassRef == nil || np.Spec.Template.Spec.NodeClassRef.Name == "" {
					t.Errorf("typed NodePool lost nodeClassRef: %+v", np.Spec.Template.Spec)
				}
			case "NodeClaim":
				expectString(t, out, "720h", "spec", "expireAfter")
				nc := &v1.NodeClaim{}
				if err := e.Client.Get(ctx, client.ObjectKeyFromObject(obj), nc); err != nil {
					t.Fatalf("typed get: %v", err)
				}
				if nc.Spec.ExpireAfter.Duration == nil || nc.Spec.ExpireAfter.String() != "720h" {
					t.Errorf("typed NodeClaim expireAfter = %v, want 720h", nc.Spec.ExpireAfter)
				}
			}
		})
	}
}

func checkNodePoolDefaults(t *testing.T, in, out *unstructured.Unstructured) {
	t.Helper()
	if _, set, _ := unstructured.NestedFieldNoCopy(in.Object, "spec", "template", "spec", "expireAfter"); !set {
		expectString(t, out, "720h", "spec", "template", "spec", "expireAfter")
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(in.Object, "spec", "disruption", "consolidationPolicy"); !set {
		expectString(t, out, "WhenEmptyOrUnderutilized", "spec", "disruption", "consolidationPolicy")
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(in.Object, "spec", "disruption", "consolidateAfter"); !set {
		expectString(t, out, "0s", "spec", "disruption", "consolidateAfter")
	}
	budgets, _, _ := unstructured.NestedSlice(out.Object, "spec", "disruption", "budgets")
	if _, set, _ := unstructured.NestedFieldNoCopy(in.Object, "spec", "disruption", "budgets"); !set {
		want := []interface{}{map[string]interface{}{"nodes": "10%"}}
		if !reflect.DeepEqual(budgets, want) {
			t.Errorf("budgets = %v, want default %v", budgets, want)
		}
	} else {
		for i, b := range budgets {
			if _, ok := b.(map[string]interface{})["nodes"]; !ok {
				t.Errorf("budget %d has no nodes after defaulting: %v", i, b)
			}
		}
	}
}

func expectString(t *testing.T, obj *unstructured.Unstructured, want string, path ...string) {
	t.Helper()
	got, _, err := unstructured.NestedString(obj.Object, path...)
	if err != nil || got != want {
		t.Errorf("%s = %q (%v), want %q", strings.Join(path, "."), got, err, want)
	}
}

// missing returns a description of the first value in want that got lacks
// or contradicts. Scalars compare by their printed form, since the apiserver
// may return 8 for "8" in int-or-string fields.
func missing(want, got interface{}, path string) string {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return fmt.Sprintf("%s: want object, got %v", path, got)
		}
		for k, v := range w {
			if d := missing(v, g[k], path+"."+k); d != "" {
				return d
			}
		}
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %v, got %v", path, w, got)
		}
		for i := range w {
			if d := missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	default:
		if wf, ok := number(want); ok {
			if gf, ok := number(got); ok && wf == gf {
				return ""
			}
		}
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
	}
	return ""
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}
