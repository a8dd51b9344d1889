package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ErrReadOnly is what every write to a Store returns: the planner runs the
// controller's code against a snapshot, and that code must never get to act.
var ErrReadOnly = errors.New("kubectl-karpenter never writes: the snapshot is read-only")

// Store is a read-only client.Client over a snapshot's objects, so that the
// controller's own code (the provisioner's pending pods, NodeClass readiness,
// solver input) runs unchanged on it. Lists and Gets hand out the stored
// objects without copying: callers must treat them as read-only, as they
// treat an informer cache's.
type Store struct {
	client.Client // nil: methods not overridden below are never called by the planner
	scheme        *runtime.Scheme
	objects       map[schema.GroupKind]map[types.NamespacedName]client.Object
}

var _ client.Client = (*Store)(nil)

func newStore(scheme *runtime.Scheme) *Store {
	return &Store{scheme: scheme, objects: map[schema.GroupKind]map[types.NamespacedName]client.Object{}}
}

func (s *Store) put(obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	gk := gvk.GroupKind()
	m := s.objects[gk]
	if m == nil {
		m = map[types.NamespacedName]client.Object{}
		s.objects[gk] = m
	}
	m[client.ObjectKeyFromObject(obj)] = obj
	return nil
}

func (s *Store) remove(gk schema.GroupKind, key types.NamespacedName) bool {
	if _, ok := s.objects[gk][key]; !ok {
		return false
	}
	delete(s.objects[gk], key)
	return true
}

// Scheme is the scheme objects are typed with.
func (s *Store) Scheme() *runtime.Scheme { return s.scheme }

// Get copies the stored object into obj.
func (s *Store) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	stored, ok := s.objects[gvk.GroupKind()][key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, key.Name)
	}
	src, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(src, obj)
}

// List fills list with the stored objects of its kind (namespace and label
// selector honoured).
func (s *Store) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, s.scheme)
	if err != nil {
		return err
	}
	gk := schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var items []runtime.Object
	for _, o := range s.objects[gk] {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labelSet(o.GetLabels())) {
			continue
		}
		items = append(items, o)
	}
	sortObjects(items)
	return meta.SetList(list, items)
}

// Writes all fail.
func (s *Store) Create(context.Context, client.Object, ...client.CreateOption) error {
	return ErrReadOnly
}
func (s *Store) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return ErrReadOnly
}
func (s *Store) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return ErrReadOnly
}
func (s *Store) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return ErrReadOnly
}
func (s *Store) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return ErrReadOnly
}
func (s *Store) Status() client.SubResourceWriter { return readOnlyWriter{} }
func (s *Store) SubResource(string) client.SubResourceClient {
	return readOnlyWriter{}
}

type readOnlyWriter struct{}

func (readOnlyWriter) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return fmt.Errorf("subresources are not in the snapshot")
}
func (readOnlyWriter) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return ErrReadOnly
}
func (readOnlyWriter) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return ErrReadOnly
}
func (readOnlyWriter) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return ErrReadOnly
}
func (readOnlyWriter) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return ErrReadOnly
}

// Apply fails: the snapshot is read-only.
func (s *Store) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return ErrReadOnly
}
