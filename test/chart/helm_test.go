package chart_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
)

var e *env.Environment

// Without a logger controller-runtime prints a warning with a stack trace.
func init() { ctrllog.SetLogger(logr.Discard()) }

func TestMain(m *testing.M) { env.Main(m, &e) }

// runHelm runs the repository's helm (pkg/test/helm).
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return helm.Run(args...)
}

func chartDir(name string) string { return filepath.Join(e.Root, "charts", name) }

// render runs helm template for the release "karpenter" in namespace
// "karpenter" and decodes the objects.
func render(t *testing.T, chart string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helm.Template(chart, "karpenter", "karpenter", args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the one rendered object of kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	var have []string
	for _, o := range objs {
		have = append(have, o.GetKind()+"/"+o.GetName())
	}
	t.Fatalf("no %s/%s rendered; have %v", kind, name, have)
	return nil
}

func nested(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s/%s: no field %s (%v)", o.GetKind(), o.GetName(), strings.Join(path, "."), err)
	}
	return v
}

// containerEnv maps the first container's env var names to their values
// (valueFrom ones to "<from>").
func containerEnv(t *testing.T, deploy *unstructured.Unstructured) map[string]string {
	t.Helper()
	c := firstContainer(t, deploy)
	out := map[string]string{}
	for _, ev := range c["env"].([]any) {
		m := ev.(map[string]any)
		if v, ok := m["value"]; ok {
			out[m["name"].(string)] = fmt.Sprint(v)
		} else {
			out[m["name"].(string)] = "<from>"
		}
	}
	return out
}

func firstContainer(t *testing.T, deploy *unstructured.Unstructured) map[string]any {
	t.Helper()
	return nested(t, deploy, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
}
