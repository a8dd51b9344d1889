package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// UpstreamOnlyCRDs are the CRDs of upstream's KWOK chart (kwok/charts/crds in
// the module) for kinds none of ours defines. The suites' cleanup lists every
// kind it may have created (NodeOverlay, CapacityBuffer, ...) after each spec,
// and a list of a kind the API server does not serve fails it; with these
// installed the cleanup runs, and the specs that need those kinds served fail
// on their own assertions.
func UpstreamOnlyCRDs(upstreamDir string, ours []*apiextensionsv1.CustomResourceDefinition) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	have := map[string]bool{}
	for _, c := range ours {
		have[c.Name] = true
	}
	files, err := filepath.Glob(filepath.Join(upstreamDir, "kwok", "charts", "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s/kwok/charts/crds", upstreamDir)
	}
	sort.Strings(files)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return nil, fmt.Errorf("%s: not a CustomResourceDefinition", f)
		}
		if !have[crd.Name] {
			out = append(out, crd)
		}
	}
	return out, nil
}
