package snapshot

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
)

// crdSchema is what the apiserver checks a custom resource of one version
// against: the OpenAPI schema (types, enums, patterns, required fields), its
// CEL rules (x-kubernetes-validations) and its defaults.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

var (
	schemasOnce sync.Once
	schemas     map[schema.GroupVersionKind]*crdSchema
	schemasErr  error
)

// loadSchemas compiles the embedded CRDs' schemas (the ones the cluster
// enforces) once.
func loadSchemas() {
	schemas = map[schema.GroupVersionKind]*crdSchema{}
	for _, crd := range crds.CRDs() {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				schemasErr = fmt.Errorf("CRD %s %s: %w", crd.Name, v.Name, err)
				return
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				schemasErr = fmt.Errorf("CRD %s %s: %w", crd.Name, v.Name, err)
				return
			}
			sv, _, err := validation.NewSchemaValidator(internal)
			if err != nil {
				schemasErr = fmt.Errorf("CRD %s %s: %w", crd.Name, v.Name, err)
				return
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			schemas[gvk] = &crdSchema{structural: s, validator: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
		}
	}
}

// DefaultAndValidate applies the CRD's defaults to obj (an unstructured
// custom resource) and checks it as the apiserver would on create: schema and
// CEL rules. It returns nil for kinds without a CRD here (built-in kinds).
// Every error names the field.
func DefaultAndValidate(ctx context.Context, gvk schema.GroupVersionKind, obj map[string]interface{}) (field.ErrorList, error) {
	schemasOnce.Do(loadSchemas)
	if schemasErr != nil {
		return nil, schemasErr
	}
	s, ok := schemas[gvk]
	if !ok {
		return nil, nil
	}
	structuraldefaulting.Default(obj, s.structural)
	errs := validation.ValidateCustomResource(nil, obj, s.validator)
	if len(errs) > 0 {
		return errs, nil
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs, nil
}

// FieldErrors renders a field.ErrorList one error per line.
func FieldErrors(errs field.ErrorList) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}
