package snapshot

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

// sortObjects orders by namespace then name, so every run sees the same order.
func sortObjects(items []runtime.Object) {
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].(client.Object), items[j].(client.Object)
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// fromUnstructured types an object read from YAML/JSON (numbers may be
// json.Number) through a JSON round trip.
func fromUnstructured(obj map[string]interface{}, out runtime.Object) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
