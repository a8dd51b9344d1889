package informer

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Interning: most of what a cached object holds repeats across thousands of objects (every
// pod of a Deployment has the same labels, owner, containers, tolerations and spread
// constraints; every node of an instance type the same capacity; every string of a label key
// or condition reason is the same few bytes). The decoder allocates each of them afresh per
// object, so at a million pods the repeats are most of the cache. Transform replaces each
// repeated part by one shared copy, found by content:
//
//   - strings through the unique package (canonical copies, freed once unreferenced);
//   - maps, slices and pointed-to structs through bounded tables keyed by their encoding.
//
// Sharing is safe because cached objects are never modified: the manager's cache hands out
// deep copies (Get/List), and state only reads the objects it shares with the cache. The
// tables are bounded (cleared when full), so a cluster whose objects never repeat costs at
// most maxInterned entries per table and loses only the sharing, never a value.

// maxInterned bounds each table: a few thousand distinct pod templates, instance types and
// label sets cover a large cluster; beyond it a table starts afresh.
const maxInterned = 1 << 14

type table[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// get returns the value interned under key, or interns v (built by the caller from the
// object being transformed, so it is fresh and unshared) and returns it.
func (t *table[T]) get(key string, v T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if got, ok := t.m[key]; ok {
		return got
	}
	if t.m == nil || len(t.m) >= maxInterned {
		t.m = make(map[string]T, 64)
	}
	t.m[key] = v
	return v
}

var (
	labelMaps     table[map[string]string]
	annotMaps     table[map[string]string] // apart from labels: annotations often never repeat
	resourceLists table[corev1.ResourceList]
	containers    table[[]corev1.Container]
	tolerations   table[[]corev1.Toleration]
	spreads       table[[]corev1.TopologySpreadConstraint]
	affinities    table[*corev1.Affinity]
	ownerRefs     table[[]metav1.OwnerReference]
	taints        table[[]corev1.Taint]
	strSlices     table[[]string]
	podSecurity   table[*corev1.PodSecurityContext]
	nodeSelReqs   table[[]corev1.NodeSelectorRequirement]
	jsonShared    sync.Map // type name -> *table[any] for CRD parts keyed by JSON
)

// str returns the canonical copy of s.
func str(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internMap shares a string map by content; its keys and values are interned as well, so a
// map that never repeats (a node's labels, which name the node) still shares its strings.
func internMap(t *table[map[string]string], m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	fresh := make(map[string]string, len(m))
	for k, v := range m {
		fresh[str(k)] = str(v)
	}
	return t.get(b.String(), fresh)
}

// internMapStrings keeps a map that names its object (and so never repeats) but shares its
// keys and values; a value equal to self (the hostname label of a node) shares self's bytes.
func internMapStrings(m map[string]string, self string) map[string]string {
	if m == nil {
		return nil
	}
	fresh := make(map[string]string, len(m))
	for k, v := range m {
		if v == self {
			fresh[str(k)] = self
		} else {
			fresh[str(k)] = str(v)
		}
	}
	return fresh
}

func internResources(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
	}
	fresh := make(corev1.ResourceList, len(rl))
	for n, q := range rl {
		fresh[corev1.ResourceName(str(string(n)))] = q
	}
	return resourceLists.get(b.String(), fresh)
}

// protoKey is the protobuf encoding of parts of an object (every core type has one); "" when
// it cannot be encoded, in which case the part is left as it is.
type marshaler interface{ Marshal() ([]byte, error) }

func protoKey[T any, PT interface {
	*T
	marshaler
}](items []T) (string, bool) {
	var b strings.Builder
	for i := range items {
		raw, err := PT(&items[i]).Marshal()
		if err != nil {
			return "", false
		}
		b.Write(raw)
		b.WriteByte(0xff) // not a valid start of a field: separates the items
	}
	return b.String(), true
}

func internSlice[T any, PT interface {
	*T
	marshaler
}](t *table[[]T], items []T) []T {
	if len(items) == 0 {
		return items
	}
	key, ok := protoKey[T, PT](items)
	if !ok {
		return items
	}
	return t.get(key, slices.Clip(items))
}

func internStrings(s []string) []string {
	if len(s) == 0 {
		return s
	}
	return strSlices.get(strings.Join(s, "\x00"), slices.Clip(s))
}

// internJSON shares a part of a CRD object (no protobuf encoding) by its JSON encoding.
func internJSON[T any](kind string, v T) T {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	t, _ := jsonShared.LoadOrStore(kind, &table[any]{})
	return t.(*table[any]).get(string(raw), v).(T)
}

// internMeta shares the metadata that repeats; name, UID and resourceVersion are the
// object's own. The labels and annotations maps are shared whole when shareMaps is set (pods,
// whose labels are their template's), else only their strings (nodes, whose labels name them).
func internMeta(m *metav1.ObjectMeta, shareMaps bool) {
	m.Namespace = str(m.Namespace)
	m.GenerateName = str(m.GenerateName)
	if shareMaps {
		m.Labels = internMap(&labelMaps, m.Labels)
	} else {
		m.Labels = internMapStrings(m.Labels, m.Name)
	}
	m.Annotations = internMap(&annotMaps, m.Annotations)
	m.OwnerReferences = internSlice(&ownerRefs, m.OwnerReferences)
	m.Finalizers = internStrings(m.Finalizers)
}
