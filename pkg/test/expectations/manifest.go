package expectations

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Manifest is the YAML object base with the YAML patch merged over it as a
// JSON merge patch: objects merge, a null deletes the key, anything else
// replaces.
func Manifest(t testing.TB, base, patch string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(base), &obj); err != nil {
		t.Fatal(err)
	}
	p := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(patch), &p); err != nil {
		t.Fatalf("patch: %v", err)
	}
	MergePatch(obj, p)
	return &unstructured.Unstructured{Object: obj}
}

// MergePatch applies patch to dst as a JSON merge patch.
func MergePatch(dst, patch map[string]interface{}) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]interface{}:
			d, ok := dst[k].(map[string]interface{})
			if !ok {
				d = map[string]interface{}{}
				dst[k] = d
			}
			MergePatch(d, pv)
		default:
			dst[k] = v
		}
	}
}

// NamesField reports whether one cause of the API server's rejection err is
// about field (the cause's field, or named in its message) and carries message.
func NamesField(err error, field, message string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if (c.Field == field || strings.Contains(c.Message, field)) && strings.Contains(c.Message, message) {
			return true
		}
	}
	return false
}
