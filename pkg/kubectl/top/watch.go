package top

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Watcher runs the informers that feed a Model.
type Watcher struct {
	informers []cache.SharedIndexInformer
	// handlers sync once the Model has seen every object of the initial
	// lists (an informer syncs when its cache has them, before its handlers
	// ran).
	handlers []cache.ResourceEventHandlerRegistration
	// karpenter is false when the cluster serves no karpenter.sh/v1 API: top
	// then shows the nodes alone.
	karpenter bool

	mu      sync.Mutex
	lastErr error
	errAt   time.Time
}

// Watch starts informers on Nodes, Pods, NodeClaims and NodePools that keep m
// up to date, calling changed after each event (changed must not block: the
// redraw loop coalesces). It returns once they are started.
func Watch(ctx context.Context, cfg *rest.Config, m *Model, changed func()) (*Watcher, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w := &Watcher{}
	add := func(lw cache.ListerWatcher, obj runtime.Object, transform cache.TransformFunc, upsert func(any), forget func(key string)) error {
		inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
		if err := inf.SetTransform(transform); err != nil {
			return err
		}
		if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { w.setErr(err) }); err != nil {
			return err
		}
		del := func(o any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
				forget(key)
			}
			changed()
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { upsert(o); changed() },
			UpdateFunc: func(_, o any) { upsert(o); changed() },
			DeleteFunc: del,
		})
		if err != nil {
			return err
		}
		w.informers = append(w.informers, inf)
		w.handlers = append(w.handlers, reg)
		return nil
	}
	core := kube.CoreV1().RESTClient()
	if err := add(cache.NewListWatchFromClient(core, "nodes", "", fields.Everything()), &corev1.Node{}, slimNode,
		func(o any) { m.UpsertNode(o.(*corev1.Node)) }, m.DeleteNode); err != nil {
		return nil, err
	}
	if err := add(cache.NewListWatchFromClient(core, "pods", "", fields.Everything()), &corev1.Pod{}, slimPod,
		func(o any) { m.UpsertPod(o.(*corev1.Pod)) }, m.DeletePod); err != nil {
		return nil, err
	}

	// NodeClaims and NodePools only where Karpenter's API is installed.
	if _, err := kube.Discovery().ServerResourcesForGroupVersion(v1.SchemeGroupVersion.String()); err == nil {
		w.karpenter = true
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		gv := schema.GroupVersion{Group: v1.SchemeGroupVersion.Group, Version: v1.SchemeGroupVersion.Version}
		if err := add(dynamicLW(dyn, gv.WithResource("nodeclaims")), &unstructured.Unstructured{}, slimNodeClaim,
			func(o any) { m.UpsertNodeClaim(o.(*v1.NodeClaim)) }, m.DeleteNodeClaim); err != nil {
			return nil, err
		}
		if err := add(dynamicLW(dyn, gv.WithResource("nodepools")), &unstructured.Unstructured{}, slimNodePool,
			func(o any) { m.UpsertNodePool(o.(*v1.NodePool)) }, m.DeleteNodePool); err != nil {
			return nil, err
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("discovering %s: %w", v1.SchemeGroupVersion, err)
	}
	for _, inf := range w.informers {
		go inf.RunWithContext(ctx)
	}
	return w, nil
}

func dynamicLW(dyn dynamic.Interface, gvr schema.GroupVersionResource) cache.ListerWatcher {
	r := dyn.Resource(gvr)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, o)
		},
	}
}

func (w *Watcher) setErr(err error) {
	w.mu.Lock()
	w.lastErr, w.errAt = err, time.Now()
	w.mu.Unlock()
}

// Err is the last error a watch reported (nil when none).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// RecentErr is the last watch error if it is younger than d: watches retry,
// so an old error says nothing about now.
func (w *Watcher) RecentErr(d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastErr != nil && time.Since(w.errAt) < d {
		return w.lastErr
	}
	return nil
}

// WaitSynced waits until the Model saw every watch's initial list, the
// context ends, or a watch is refused for good (forbidden: listing
// cluster-wide needs RBAC the user may not have).
func (w *Watcher) WaitSynced(ctx context.Context) error {
	for {
		done := true
		for _, h := range w.handlers {
			done = done && h.HasSynced()
		}
		if done {
			return nil
		}
		if err := w.Err(); err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			if err := w.Err(); err != nil {
				return fmt.Errorf("%w (last watch error: %v)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Karpenter reports whether NodeClaims and NodePools are watched.
func (w *Watcher) Karpenter() bool { return w.karpenter }
