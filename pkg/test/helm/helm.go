// Package helm runs the helm CLI that hack/helm/build.sh builds from its Go
// module (cached in bin/), for the chart tests and the e2e tests that install
// the charts' objects.
package helm

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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

var (
	once   sync.Once
	binary string
	err    error
)

// Binary returns bin/helm, building it on first use (a copy from the machine
// cache when another clone built it already).
func Binary() (string, error) {
	once.Do(func() {
		var root string
		if root, err = env.Root(); err != nil {
			return
		}
		out, runErr := exec.Command(filepath.Join(root, "hack/helm/build.sh")).CombinedOutput()
		if runErr != nil {
			err = fmt.Errorf("hack/helm/build.sh: %v\n%s", runErr, out)
			return
		}
		binary = filepath.Join(root, "bin/helm")
	})
	return binary, err
}

// Run runs helm with its configuration, cache and data directories in a
// fresh temporary directory, so that the user's helm set-up is never read or
// written. The error carries helm's stderr.
func Run(args ...string) (string, error) {
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	home, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Chart is the path of a chart of this repository (charts/<name>).
func Chart(name string) (string, error) {
	root, err := env.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", name), nil
}

// Template renders a chart of this repository as release in namespace and
// decodes the objects.
func Template(chart, release, namespace string, args ...string) ([]*unstructured.Unstructured, error) {
	dir, err := Chart(chart)
	if err != nil {
		return nil, err
	}
	out, err := Run(append([]string{"template", release, dir, "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(out)
	if err != nil {
		return nil, fmt.Errorf("decoding the rendered %s chart: %w", chart, err)
	}
	return objs, nil
}

// Decode splits a multi-document manifest into objects (empty documents skipped).
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
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
