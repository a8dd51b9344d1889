// Command crdpatch adds to generated CRDs the schema constraints that
// controller-gen markers cannot express: constraints on the values of maps.
// Label values in NodePool templates must be bounded so that the CEL rules
// over them fit in the apiserver's cost budget, and controller-gen has no
// marker for a map's value schema.
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

// patches maps a CRD name to the dotted property paths whose map values are
// label values.
var patches = map[string][]string{
	"nodepools.karpenter.sh": {"spec.template.metadata.labels"},
}

// schemaEdit changes the schema at a dotted path of one version ("[]"
// steps into array items).
type schemaEdit struct {
	version, path string
	edit          func(*apiextensionsv1.JSONSchemaProps)
}

// schemaEdits are per-CRD schema details controller-gen cannot express for
// one kind only.
var schemaEdits = map[string][]schemaEdit{
	"ec2nodeclasses.karpenter.k8s.aws": {
		// spec.kubelet is a free-form object whose values keep their
		// unknown fields too.
		{version: "v1", path: "spec.kubelet", edit: func(s *apiextensionsv1.JSONSchemaProps) {
			s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}}
		}},
		// EC2NodeClass condition reasons are never empty.
		{version: "v1", path: "status.conditions.[].reason", edit: func(s *apiextensionsv1.JSONSchemaProps) {
			s.MinLength = ptr.To[int64](1)
			s.Pattern = `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
		}},
	},
}

// editAt returns a copy of s with edit applied at path.
func editAt(s apiextensionsv1.JSONSchemaProps, path []string, edit func(*apiextensionsv1.JSONSchemaProps)) (apiextensionsv1.JSONSchemaProps, error) {
	if len(path) == 0 {
		edit(&s)
		return s, nil
	}
	if path[0] == "[]" {
		if s.Items == nil || s.Items.Schema == nil {
			return s, fmt.Errorf("not an array")
		}
		patched, err := editAt(*s.Items.Schema, path[1:], edit)
		if err != nil {
			return s, err
		}
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &patched}
		return s, nil
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		return s, fmt.Errorf("no property %q", path[0])
	}
	patched, err := editAt(child, path[1:], edit)
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
	edits := schemaEdits[crd.Name]
	if len(paths) == 0 && len(edits) == 0 {
		return nil
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		for _, p := range paths {
			patched, err := setMapValues(*v.Schema.OpenAPIV3Schema, strings.Split(p, "."), labelValue)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", crd.Name, v.Name, p, err)
			}
			v.Schema.OpenAPIV3Schema = &patched
		}
		for _, e := range edits {
			if e.version != v.Name {
				continue
			}
			patched, err := editAt(*v.Schema.OpenAPIV3Schema, strings.Split(e.path, "."), e.edit)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", crd.Name, v.Name, e.path, err)
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

// setMapValues returns a copy of s in which the map at path has values of
// schema value. JSONSchemaProps stores properties by value, hence the copies.
func setMapValues(s apiextensionsv1.JSONSchemaProps, path []string, value apiextensionsv1.JSONSchemaProps) (apiextensionsv1.JSONSchemaProps, error) {
	if len(path) == 0 {
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			return s, fmt.Errorf("not a map")
		}
		v := value
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}
		return s, nil
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		return s, fmt.Errorf("no property %q", path[0])
	}
	patched, err := setMapValues(child, path[1:], value)
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
