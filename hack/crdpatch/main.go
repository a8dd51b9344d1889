// Command crdpatch adds to generated CRDs the schema constraints that
// controller-gen markers cannot express: the schema of a map's values (label
// values in NodePool templates, bounded so that the CEL rules over them fit in
// the apiserver's cost budget) and the fields of types we do not declare
// (corev1.Taint's key, value and effect, bounded as upstream's CRDs bound them).
//
// Usage: go run ./hack/crdpatch <crd.yaml>...
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// labelValue is the schema of a Kubernetes label value.
var labelValue = apiextensionsv1.JSONSchemaProps{
	Type:      "string",
	MaxLength: ptr.To[int64](63),
	Pattern:   `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`,
}

// qualifiedName is the pattern upstream's CRDs give taint keys and values.
const qualifiedName = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`

// An edit changes the schema found at a dotted property path.
type edit func(*apiextensionsv1.JSONSchemaProps) error

// mapValues gives the map's values the schema v.
func mapValues(v apiextensionsv1.JSONSchemaProps) edit {
	return func(s *apiextensionsv1.JSONSchemaProps) error {
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			return fmt.Errorf("not a map")
		}
		value := v
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
		return nil
	}
}

// taintItems bounds the key, value and effect of a list of corev1.Taint, whose
// fields carry no markers: keys and values are qualified names, keys are not
// empty, effects one of the three the kubelet knows.
func taintItems(s *apiextensionsv1.JSONSchemaProps) error {
	if s.Items == nil || s.Items.Schema == nil {
		return fmt.Errorf("not a list")
	}
	item := s.Items.Schema
	props := make(map[string]apiextensionsv1.JSONSchemaProps, len(item.Properties))
	for k, v := range item.Properties {
		props[k] = v
	}
	for _, f := range []string{"key", "value", "effect"} {
		if _, ok := props[f]; !ok {
			return fmt.Errorf("taint has no %q", f)
		}
	}
	key, value, effect := props["key"], props["value"], props["effect"]
	key.MinLength, key.Pattern = ptr.To[int64](1), qualifiedName
	value.Pattern = qualifiedName
	effect.Enum = nil
	for _, e := range []string{"NoSchedule", "PreferNoSchedule", "NoExecute"} {
		effect.Enum = append(effect.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + e + `"`)})
	}
	props["key"], props["value"], props["effect"] = key, value, effect
	item.Properties = props
	return nil
}

// patches maps a CRD name to the edits of its schemas, by dotted property path.
var patches = map[string]map[string]edit{
	"nodepools.karpenter.sh": {
		"spec.template.metadata.labels":    mapValues(labelValue),
		"spec.template.spec.taints":        taintItems,
		"spec.template.spec.startupTaints": taintItems,
	},
	"nodeclaims.karpenter.sh": {
		"spec.taints":        taintItems,
		"spec.startupTaints": taintItems,
	},
}

func main() {
	for _, path := range os.Args[1:] {
		if err := patchFile(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func patchFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	paths := patches[crd.Name]
	if len(paths) == 0 {
		return nil
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		for p, e := range paths {
			patched, err := apply(*v.Schema.OpenAPIV3Schema, strings.Split(p, "."), e)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", crd.Name, v.Name, p, err)
			}
			v.Schema.OpenAPIV3Schema = &patched
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	// Match controller-gen's document framing.
	out = append([]byte("---\n"), bytes.ReplaceAll(out, []byte("status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"), nil)...)
	return os.WriteFile(path, out, 0o644)
}

// apply returns a copy of s in which the schema at path has been edited.
// JSONSchemaProps stores properties by value, hence the copies.
func apply(s apiextensionsv1.JSONSchemaProps, path []string, e edit) (apiextensionsv1.JSONSchemaProps, error) {
	if len(path) == 0 {
		return s, e(&s)
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		return s, fmt.Errorf("no property %q", path[0])
	}
	patched, err := apply(child, path[1:], e)
	if err != nil {
		return s, err
	}
	props := make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
	for k, v := range s.Properties {
		props[k] = v
	}
	props[path[0]] = patched
	s.Properties = props
	return s, nil
}
