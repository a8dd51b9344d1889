// Command crdpatch adds to generated CRDs the schema constraints that
// controller-gen markers cannot express:
//
//   - constraints on the values of maps: label values in NodePool templates
//     must be bounded so that the CEL rules over them fit in the apiserver's
//     cost budget, and controller-gen has no marker for a map's value schema;
//   - the fields of corev1.Taint in NodePool and NodeClaim taint lists, bounded
//     as upstream's CRDs bound them;
//   - NodeOverlay's schema where upstream's differs from what our shared Go
//     types generate: the condition reason bounds of upstream's condition
//     type (our status.Condition also admits an empty reason), and the string
//     bounds upstream's CRD puts on the requirement values array itself. The
//     apiserver applies string bounds to strings only, so on the array they
//     constrain nothing; they are carried so that the schema equals
//     upstream's field by field, and the verdicts stay upstream's.
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

const labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`

// labelValue is the schema of a Kubernetes label value.
var labelValue = apiextensionsv1.JSONSchemaProps{
	Type:      "string",
	MaxLength: ptr.To[int64](63),
	Pattern:   labelValuePattern,
}

// patch changes the schema at a dotted property path; "[]" steps into the
// items of an array, "{}" into the values of a map.
type patch struct {
	path  string
	apply func(*apiextensionsv1.JSONSchemaProps) error
	// version limits the patch to one version of the CRD ("" = every version).
	version string
}

// mapValues makes the values of the map at the path label values.
func mapValues(path string) patch {
	return patch{path: path + ".{}", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
		*s = labelValue
		return nil
	}}
}

// strictConditionReason gives the conditions' reason upstream's bounds: a
// non-empty CamelCase identifier.
func strictConditionReason(conditions string) patch {
	return patch{path: conditions + ".[].reason", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
		s.MinLength = ptr.To[int64](1)
		s.Pattern = `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
		return nil
	}}
}

// arrayStringBounds puts label value bounds on the array at the path itself.
func arrayStringBounds(path string) patch {
	return patch{path: path, apply: func(s *apiextensionsv1.JSONSchemaProps) error {
		if s.Type != "array" {
			return fmt.Errorf("not an array")
		}
		s.MaxLength = ptr.To[int64](63)
		s.Pattern = labelValuePattern
		return nil
	}}
}

// qualifiedName is the pattern upstream's CRDs give taint keys and values.
const qualifiedName = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`

// taintItems bounds the key, value and effect of the corev1.Taint list at the
// path (a type we do not declare, so without markers) as upstream's CRDs do:
// keys and values are qualified names, keys are not empty, effects one of the
// three the kubelet knows.
func taintItems(list string) []patch {
	return []patch{
		{path: list + ".[].key", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
			s.MinLength, s.Pattern = ptr.To[int64](1), qualifiedName
			return nil
		}},
		{path: list + ".[].value", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
			s.Pattern = qualifiedName
			return nil
		}},
		{path: list + ".[].effect", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
			s.Enum = nil
			for _, e := range []string{"NoSchedule", "PreferNoSchedule", "NoExecute"} {
				s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + e + `"`)})
			}
			return nil
		}},
	}
}

func withVersion(v string, p patch) patch {
	p.version = v
	return p
}

func concat(groups ...[]patch) []patch {
	var out []patch
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// patches maps a CRD name to its patches.
var patches = map[string][]patch{
	"nodepools.karpenter.sh": concat(
		[]patch{mapValues("spec.template.metadata.labels"), arrayStringBounds("spec.template.spec.requirements.[].values")},
		taintItems("spec.template.spec.taints"), taintItems("spec.template.spec.startupTaints")),
	"ec2nodeclasses.karpenter.k8s.aws": {
		// spec.kubelet is a free-form object whose values keep their unknown
		// fields too (any KubeletConfiguration field; the controller checks it).
		{version: "v1", path: "spec.kubelet", apply: func(s *apiextensionsv1.JSONSchemaProps) error {
			s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}}
			return nil
		}},
		// EC2NodeClass condition reasons are never empty.
		withVersion("v1", strictConditionReason("status.conditions")),
	},
	"nodeclaims.karpenter.sh": concat(
		[]patch{arrayStringBounds("spec.requirements.[].values")},
		taintItems("spec.taints"), taintItems("spec.startupTaints")),
	"nodeoverlays.karpenter.sh": {
		strictConditionReason("status.conditions"),
		arrayStringBounds("spec.requirements.[].values"),
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
	ps := patches[crd.Name]
	if len(ps) == 0 {
		return nil
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		for _, p := range ps {
			if p.version != "" && p.version != v.Name {
				continue
			}
			patched, err := apply(*v.Schema.OpenAPIV3Schema, strings.Split(p.path, "."), p.apply)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", crd.Name, v.Name, p.path, err)
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

// apply returns a copy of s with f applied to the schema at path.
// JSONSchemaProps stores properties, items and map values by value or by
// shared pointer, hence the copies.
func apply(s apiextensionsv1.JSONSchemaProps, path []string, f func(*apiextensionsv1.JSONSchemaProps) error) (apiextensionsv1.JSONSchemaProps, error) {
	if len(path) == 0 {
		err := f(&s)
		return s, err
	}
	switch path[0] {
	case "[]":
		if s.Items == nil || s.Items.Schema == nil {
			return s, fmt.Errorf("not an array of one schema")
		}
		patched, err := apply(*s.Items.Schema, path[1:], f)
		if err != nil {
			return s, err
		}
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &patched}
		return s, nil
	case "{}":
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			return s, fmt.Errorf("not a map")
		}
		patched, err := apply(*s.AdditionalProperties.Schema, path[1:], f)
		if err != nil {
			return s, err
		}
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &patched}
		return s, nil
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		return s, fmt.Errorf("no property %q", path[0])
	}
	patched, err := apply(child, path[1:], f)
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
