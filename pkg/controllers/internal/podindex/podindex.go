// Package podindex is the manager cache's field index of pods by spec.nodeName,
// shared by the controllers that look pods up by node (termination drains a
// node's pods) and by the one that wants the unbound pods (provisioning decides
// for them). Unbound pods are indexed under "": at 100,000 nodes the cache holds
// a million bound pods, and a decision that listed them all would copy every one
// to find the few pending.
package podindex

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeName is the index's name, also the field selector an API server
// understands for pods, so a direct (uncached) client answers the same query.
const NodeName = "spec.nodeName"

var registered sync.Map // client.FieldIndexer -> struct{}

// Register adds the index to the cache behind indexer once, however many
// controllers ask for it.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if _, done := registered.LoadOrStore(indexer, struct{}{}); done {
		return nil
	}
	err := indexer.IndexField(ctx, &corev1.Pod{}, NodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	})
	if err != nil {
		registered.Delete(indexer)
	}
	return err
}

// OnNode lists the pods bound to nodeName, or the unbound pods for "". A reader
// without the index (a cache it was not registered with) refuses the selector:
// then a full list is filtered, so callers work either way, only slower.
func OnNode(ctx context.Context, c client.Reader, nodeName string) ([]*corev1.Pod, error) {
	return onNode(ctx, c, nodeName)
}

// OnNodeReadOnly is OnNode without the cache's deep copy of each pod: the pods
// share their maps, slices and pointers with the cache and must not be changed.
// For a reader that only looks (the provisioner deciding for the unbound pods):
// with 30,000 pods pending in a 5,000-node scale-up, copying them for every
// decision was a fifth of Karpenter's CPU, and its garbage as much again.
func OnNodeReadOnly(ctx context.Context, c client.Reader, nodeName string) ([]*corev1.Pod, error) {
	return onNode(ctx, c, nodeName, client.UnsafeDisableDeepCopy)
}

func onNode(ctx context.Context, c client.Reader, nodeName string, opts ...client.ListOption) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, append([]client.ListOption{client.MatchingFields{NodeName: nodeName}}, opts...)...); err != nil {
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, err
		}
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Spec.NodeName == nodeName {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
