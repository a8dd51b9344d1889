// Package informer holds the controllers that feed cluster state from the API
// server's watch: one small reconciler per kind, each copying the cached object
// into state.Cluster (or forgetting it once it is gone).
//
// Nodes, NodeClaims and Pods, the kinds that grow with the cluster, are fed
// differently when registered with a manager: an event handler on the
// manager's shared informer hands state the cached object itself (no Get, no
// copy, no work queue), and the cache holds objects slimmed by Transform. At
// 100,000 nodes and a million pods, a copy per object in state plus the full
// objects in the cache would take about four times the memory (see
// BenchmarkStateMemory). Reconcile still copies, for callers that feed state
// from objects they own (tests, a direct client).
package informer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Controller copies one kind into cluster state.
type Controller struct {
	name        string
	kube        client.Reader
	newObj      func() client.Object
	update      func(client.Object)
	forget      func(reconcile.Request)
	concurrency int
	// share, when set, records the informer's cached object itself (see the package comment).
	share func(client.Object)
}

// Shared reports whether the kind is fed from the informer's objects (Handler) once registered.
func (c *Controller) Shared() bool { return c.share != nil }

// Handler is the event handler feeding state from a shared informer's own objects: adds and
// updates record the cached object, deletes forget it.
func (c *Controller) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.record(obj) },
		UpdateFunc: func(_, obj interface{}) { c.record(obj) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(client.Object); ok {
				c.forget(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		},
	}
}

func (c *Controller) record(obj interface{}) {
	if o, ok := obj.(client.Object); ok {
		c.share(o)
	}
}

// Reconcile reads the object from the cache and records or forgets it.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := c.newObj()
	if err := c.kube.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	c.update(obj)
	return reconcile.Result{}, nil
}

// Register watches the kind with the manager: through Handler on the manager's informer for
// the shared kinds, as a reconciler otherwise.
func (c *Controller) Register(mgr manager.Manager) error {
	if c.share != nil {
		inf, err := mgr.GetCache().GetInformer(context.Background(), c.newObj())
		if err != nil {
			return fmt.Errorf("%s: informer: %w", c.name, err)
		}
		_, err = inf.AddEventHandler(c.Handler())
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.name).
		For(c.newObj()).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.concurrency}).
		Complete(c)
}

// Name of the controller (state.node, state.pod, ...).
func (c *Controller) Name() string { return c.name }

// NewNodeController feeds Nodes.
func NewNodeController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.node", kube: kube, concurrency: 10,
		newObj: func() client.Object { return &corev1.Node{} },
		update: func(o client.Object) { cluster.UpdateNode(o.(*corev1.Node)) },
		share:  func(o client.Object) { cluster.UpdateNodeShared(o.(*corev1.Node)) },
		forget: func(r reconcile.Request) { cluster.DeleteNode(r.Name) },
	}
}

// NewNodeClaimController feeds NodeClaims.
func NewNodeClaimController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.nodeclaim", kube: kube, concurrency: 10,
		newObj: func() client.Object { return &v1.NodeClaim{} },
		update: func(o client.Object) { cluster.UpdateNodeClaim(o.(*v1.NodeClaim)) },
		share:  func(o client.Object) { cluster.UpdateNodeClaimShared(o.(*v1.NodeClaim)) },
		forget: func(r reconcile.Request) { cluster.DeleteNodeClaim(r.Name) },
	}
}

// NewPodController feeds pod bindings, and the pods of DaemonSets that size
// the daemon overhead (state.Cluster.DaemonSetPods), bound or not.
func NewPodController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.pod", kube: kube, concurrency: 20,
		newObj: func() client.Object { return &corev1.Pod{} },
		update: func(o client.Object) { cluster.UpdatePod(o.(*corev1.Pod)) },
		share:  func(o client.Object) { cluster.UpdatePodShared(o.(*corev1.Pod)) },
		forget: func(r reconcile.Request) { cluster.DeletePod(r.NamespacedName) },
	}
}

// NewDaemonSetController feeds DaemonSets.
func NewDaemonSetController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.daemonset", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &appsv1.DaemonSet{} },
		update: func(o client.Object) { cluster.UpdateDaemonSet(o.(*appsv1.DaemonSet)) },
		forget: func(r reconcile.Request) { cluster.DeleteDaemonSet(r.NamespacedName) },
	}
}

// NewNodePoolController feeds NodePools.
func NewNodePoolController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.nodepool", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &v1.NodePool{} },
		update: func(o client.Object) { cluster.UpdateNodePool(o.(*v1.NodePool)) },
		forget: func(r reconcile.Request) { cluster.DeleteNodePool(r.Name) },
	}
}

// NewNamespaceController feeds namespaces' labels (pod affinity namespaceSelector).
func NewNamespaceController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.namespace", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &corev1.Namespace{} },
		update: func(o client.Object) { cluster.UpdateNamespace(o.(*corev1.Namespace)) },
		forget: func(r reconcile.Request) { cluster.DeleteNamespace(r.Name) },
	}
}

// NewPersistentVolumeClaimController feeds PersistentVolumeClaims (volume topology).
func NewPersistentVolumeClaimController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.persistentvolumeclaim", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &corev1.PersistentVolumeClaim{} },
		update: func(o client.Object) { cluster.UpdatePersistentVolumeClaim(o.(*corev1.PersistentVolumeClaim)) },
		forget: func(r reconcile.Request) { cluster.DeletePersistentVolumeClaim(r.NamespacedName) },
	}
}

// NewPersistentVolumeController feeds PersistentVolumes (volume topology).
func NewPersistentVolumeController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.persistentvolume", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &corev1.PersistentVolume{} },
		update: func(o client.Object) { cluster.UpdatePersistentVolume(o.(*corev1.PersistentVolume)) },
		forget: func(r reconcile.Request) { cluster.DeletePersistentVolume(r.Name) },
	}
}

// NewStorageClassController feeds StorageClasses (allowed topologies of unbound claims).
func NewStorageClassController(kube client.Reader, cluster *state.Cluster) *Controller {
	return &Controller{
		name: "state.storageclass", kube: kube, concurrency: 2,
		newObj: func() client.Object { return &storagev1.StorageClass{} },
		update: func(o client.Object) { cluster.UpdateStorageClass(o.(*storagev1.StorageClass)) },
		forget: func(r reconcile.Request) { cluster.DeleteStorageClass(r.Name) },
	}
}

// All returns every state controller (the five that track capacity first, in this order).
func All(kube client.Reader, cluster *state.Cluster) []*Controller {
	return []*Controller{
		NewNodeController(kube, cluster),
		NewNodeClaimController(kube, cluster),
		NewPodController(kube, cluster),
		NewDaemonSetController(kube, cluster),
		NewNodePoolController(kube, cluster),
		NewNamespaceController(kube, cluster),
		NewPersistentVolumeClaimController(kube, cluster),
		NewPersistentVolumeController(kube, cluster),
		NewStorageClassController(kube, cluster),
	}
}

// Update records obj as Reconcile does after reading it (a copy is taken for the kinds that copy).
func (c *Controller) Update(obj client.Object) { c.update(obj) }
