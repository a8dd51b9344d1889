package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// lastAppliedAnnotation is written by kubectl apply; it holds the previous
// version of the object and would undo the conversion on the next apply.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// serverPopulatedMetadata are the metadata fields the API server owns. They
// are meaningless in a manifest and make an apply fail (resourceVersion) or
// lie (uid, creationTimestamp).
var serverPopulatedMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// controllerAnnotations are written by Karpenter's controllers onto its own
// objects (drift hashes); a manifest that carries them would pin stale values.
var controllerAnnotations = []string{
	"karpenter.sh/nodepool-hash", "karpenter.sh/nodepool-hash-version",
	"karpenter.k8s.aws/ec2nodeclass-hash", "karpenter.k8s.aws/ec2nodeclass-hash-version",
}

// Write prints objects in order, as YAML documents separated by "---" or as
// JSON (one object, or a v1 List when there are several). Keys are sorted, so
// the same input always gives the same bytes.
func Write(w io.Writer, objects []map[string]interface{}, format string) error {
	switch format {
	case FormatYAML, "":
		for i, o := range objects {
			b, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			if i > 0 {
				if _, err := io.WriteString(w, "---\n"); err != nil {
					return err
				}
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	case FormatJSON:
		var v interface{} = map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": objects}
		if len(objects) == 1 {
			v = objects[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	default:
		return fmt.Errorf("unknown output format %q (expected yaml or json)", format)
	}
}

// toUnstructured renders a typed object as the map Write prints, without
// server-populated metadata, status, or the last-applied annotation.
func toUnstructured(obj interface{}) (map[string]interface{}, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	m := map[string]interface{}{}
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	clean(m)
	pruneEmptyMaps(m)
	return m, nil
}

// pruneEmptyMaps drops empty objects from a rendered typed object: Go
// structs without omitempty render as {} (resources: {}, metadata: {}),
// which says nothing in a manifest. Empty lists are kept; they can matter
// (requirements: [] is required by NodePool).
func pruneEmptyMaps(m map[string]interface{}) {
	for k, v := range m {
		switch t := v.(type) {
		case map[string]interface{}:
			pruneEmptyMaps(t)
			if len(t) == 0 {
				delete(m, k)
			}
		case []interface{}:
			for _, item := range t {
				if im, ok := item.(map[string]interface{}); ok {
					pruneEmptyMaps(im)
				}
			}
		}
	}
}

// clean drops what the API server and Karpenter's controllers write onto a
// Karpenter object, in place: server metadata, status, the last-applied
// annotation, drift-hash annotations and finalizers (Karpenter adds its
// termination finalizer itself; one in a manifest would fight a GitOps tool).
func clean(m map[string]interface{}) {
	delete(m, "status")
	md, ok := m["metadata"].(map[string]interface{})
	if !ok {
		return
	}
	for _, k := range serverPopulatedMetadata {
		delete(md, k)
	}
	delete(md, "finalizers")
	if ann, ok := md["annotations"].(map[string]interface{}); ok {
		delete(ann, lastAppliedAnnotation)
		for _, k := range controllerAnnotations {
			delete(ann, k)
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if l, ok := md["labels"].(map[string]interface{}); ok && len(l) == 0 {
		delete(md, "labels")
	}
}
