package crds_test

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/karpenter-go/karpenter/pkg/apis/crds"
)

// TestCRDsPassAPIServerValidation runs the apiserver's own CRD validation,
// including CEL compilation and the CEL cost budget, over every embedded CRD.
// It catches a rule the apiserver would refuse at install time in
// milliseconds; the envtest suites then prove the install for real.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	list, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no CRDs embedded")
	}
	scheme := runtime.NewScheme()
	if err := apiextensions.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, crd := range list {
		t.Run(crd.Name, func(t *testing.T) {
			crd = crd.DeepCopy()
			// A CRD object read back from a server carries its stored
			// versions; validation insists on them.
			for _, v := range crd.Spec.Versions {
				if v.Storage {
					crd.Status.StoredVersions = []string{v.Name}
				}
			}
			internal := &apiextensions.CustomResourceDefinition{}
			if err := scheme.Convert(crd, internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := validation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
				for _, e := range errs {
					t.Error(e)
				}
			}
		})
	}
}
