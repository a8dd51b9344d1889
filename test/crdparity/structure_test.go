package crdparity_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// compareStructure compares what no verdict shows, for each version upstream
// serves: scope and names, printer columns, subresources, and the list and
// map types of every field path. ours nil (the kind missing) is reported by
// the caller.
func compareStructure(up, ours *apiextensionsv1.CustomResourceDefinition) []disagreement {
	if ours == nil {
		return nil
	}
	kind := up.Spec.Names.Kind
	var out []disagreement
	add := func(name, what string, u, o any) {
		out = append(out, disagreement{kind: kind, name: "structure: " + name, mutation: what, upstream: compact(u, 2000), ours: compact(o, 2000)})
	}
	if up.Spec.Scope != ours.Spec.Scope {
		add("scope", "the CRD's scope", up.Spec.Scope, ours.Spec.Scope)
	}
	un, on := up.Spec.Names, ours.Spec.Names
	for _, f := range []struct {
		name string
		u, o any
	}{
		{"plural", un.Plural, on.Plural}, {"singular", un.Singular, on.Singular}, {"listKind", un.ListKind, on.ListKind},
		{"shortNames", un.ShortNames, on.ShortNames}, {"categories", un.Categories, on.Categories},
	} {
		if !reflect.DeepEqual(f.u, f.o) {
			add("names."+f.name, "the CRD's names."+f.name, f.u, f.o)
		}
	}
	for _, uv := range up.Spec.Versions {
		if !uv.Served {
			continue
		}
		var ov *apiextensionsv1.CustomResourceDefinitionVersion
		for i := range ours.Spec.Versions {
			if ours.Spec.Versions[i].Name == uv.Name {
				ov = &ours.Spec.Versions[i]
			}
		}
		if ov == nil || !ov.Served {
			add(uv.Name+" served", "version "+uv.Name+" is served", true, false)
			continue
		}
		if uc, oc := columns(uv.AdditionalPrinterColumns), columns(ov.AdditionalPrinterColumns); !reflect.DeepEqual(uc, oc) {
			add(uv.Name+" printer columns", "additionalPrinterColumns (name type format priority jsonPath)", uc, oc)
		}
		if us, os := subresources(uv.Subresources), subresources(ov.Subresources); !reflect.DeepEqual(us, os) {
			add(uv.Name+" subresources", "subresources", us, os)
		}
		ua, oa := map[string]string{}, map[string]string{}
		if uv.Schema != nil {
			listMapTypes(uv.Schema.OpenAPIV3Schema, "", ua)
		}
		if ov.Schema != nil {
			listMapTypes(ov.Schema.OpenAPIV3Schema, "", oa)
		}
		paths := map[string]bool{}
		for p := range ua {
			paths[p] = true
		}
		for p := range oa {
			paths[p] = true
		}
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			if ua[p] != oa[p] {
				u, o := ua[p], oa[p]
				if u == "" {
					u = "(none)"
				}
				if o == "" {
					o = "(none)"
				}
				out = append(out, disagreement{kind: kind, name: "structure: " + uv.Name + " " + p, mutation: "x-kubernetes-list-type / list-map-keys / map-type at " + p, upstream: u, ours: o})
			}
		}
	}
	return out
}

func columns(cols []apiextensionsv1.CustomResourceColumnDefinition) []string {
	out := make([]string, 0, len(cols))
	for _, c := range cols {
		out = append(out, fmt.Sprintf("%s %s %s %d %s", c.Name, c.Type, c.Format, c.Priority, c.JSONPath))
	}
	return out
}

func subresources(s *apiextensionsv1.CustomResourceSubresources) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	data, _ := json.Marshal(s)
	_ = json.Unmarshal(data, &out)
	return out
}

// listMapTypes records, per field path, the list and map type annotations.
func listMapTypes(s *apiextensionsv1.JSONSchemaProps, p string, out map[string]string) {
	if s == nil {
		return
	}
	var attrs []string
	if s.XListType != nil {
		attrs = append(attrs, "list-type="+*s.XListType)
	}
	if len(s.XListMapKeys) > 0 {
		attrs = append(attrs, "list-map-keys="+strings.Join(s.XListMapKeys, ","))
	}
	if s.XMapType != nil {
		attrs = append(attrs, "map-type="+*s.XMapType)
	}
	if len(attrs) > 0 {
		out[p] = strings.Join(attrs, " ")
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		child := s.Properties[k]
		listMapTypes(&child, p+"."+k, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		listMapTypes(s.Items.Schema, p+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		listMapTypes(s.AdditionalProperties.Schema, p+"[*]", out)
	}
}
