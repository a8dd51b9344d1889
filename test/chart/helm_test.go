package chart_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helmCLI returns bin/helm, building it on first use (a cache hit after the
// first build on this machine).
func helmCLI(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		root, err := env.Root()
		if err != nil {
			helmErr = err
			return
		}
		out, err := exec.Command(filepath.Join(root, "hack/helm/build.sh")).CombinedOutput()
		if err != nil {
			helmErr = fmt.Errorf("hack/helm/build.sh: %v\n%s", err, out)
			return
		}
		helmBin = filepath.Join(root, "bin/helm")
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmBin
}

// runHelm runs helm with its state directories in a temporary directory, so
// tests never read or write the user's helm configuration.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmCLI(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func chartDir(name string) string { return filepath.Join(e.Root, "charts", name) }

// render runs helm template for the release "karpenter" in namespace
// "karpenter" and decodes the objects.
func render(t *testing.T, chart string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "karpenter", chartDir(chart), "--namespace", "karpenter"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("decoding the rendered %s chart: %v", chart, err)
	}
	return objs
}

func decode(manifest string) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
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
