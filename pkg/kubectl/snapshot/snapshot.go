package snapshot

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis"
	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Snapshot is a cluster's objects, in memory.
type Snapshot struct {
	Store *Store
	// Source says where it came from ("cluster https://...", "dump FILE").
	Source string
	// Notes are what a user should know about how the snapshot was edited.
	Notes []string
}

// Scheme knows the built-in kinds and every Karpenter group/version.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	return s
}

// New returns an empty snapshot.
func New(source string) *Snapshot {
	return &Snapshot{Store: newStore(Scheme()), Source: source}
}

// Add puts objects into the snapshot, replacing any of the same kind and name.
func (s *Snapshot) Add(objs ...client.Object) error {
	for _, o := range objs {
		if err := s.Store.put(o); err != nil {
			return err
		}
	}
	return nil
}

// lists are what the controllers read, in the order they are listed. NodeClass
// kinds may not be installed; their lists are skipped then.
func lists() []client.ObjectList {
	return []client.ObjectList{
		&v1.NodePoolList{}, &v1.NodeClaimList{}, &corev1.NodeList{}, &corev1.PodList{},
		&appsv1.DaemonSetList{}, &appsv1.DeploymentList{}, &policyv1.PodDisruptionBudgetList{},
		&corev1.NamespaceList{}, &corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{},
		&storagev1.StorageClassList{}, &kwokv1alpha1.KWOKNodeClassList{}, &awsv1.EC2NodeClassList{},
		&v1alpha1.NodeOverlayList{},
		// CapacityBuffers and what they name (their chunk's shape).
		&autoscalingv1beta1.CapacityBufferList{}, &corev1.PodTemplateList{}, &appsv1.StatefulSetList{}, &appsv1.ReplicaSetList{},
	}
}

// readOnlyTransport refuses every request but GET, so that nothing built on
// the live client can ever change the cluster.
type readOnlyTransport struct{ next http.RoundTripper }

func (t readOnlyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nil, fmt.Errorf("kubectl-karpenter refuses to send %s %s: it never writes to the cluster", r.Method, r.URL.Path)
	}
	return t.next.RoundTrip(r)
}

// ReadOnly returns a copy of cfg whose transport refuses writes.
func ReadOnly(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	prev := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return readOnlyTransport{next: rt}
	}
	return c
}

// FromCluster lists everything the planner needs from the cluster cfg points
// at. It fails within kubeflags.ReachTimeout, naming the address, when the
// cluster does not answer.
func FromCluster(ctx context.Context, cfg *rest.Config) (*Snapshot, error) {
	if err := kubeflags.CheckReachable(ctx, cfg); err != nil {
		return nil, err
	}
	scheme := Scheme()
	kube, err := client.New(ReadOnly(cfg), client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cluster at %s: %w", cfg.Host, err)
	}
	s := New("cluster " + cfg.Host)
	for _, l := range lists() {
		if err := kube.List(ctx, l); err != nil {
			if meta.IsNoMatchError(err) || isNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("listing %T from %s: %w", l, cfg.Host, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if err := s.Store.put(it.(client.Object)); err != nil {
				return nil, err
			}
		}
	}
	s.markUnscheduled()
	return s, nil
}

// markUnscheduled: a pod the kube-scheduler has not looked at yet (no
// PodScheduled condition, no node) counts as pending, as it will be within a
// second; the provisioner otherwise only takes pods marked Unschedulable.
func (s *Snapshot) markUnscheduled() {
	for _, o := range s.Store.objects[schema.GroupKind{Kind: "Pod"}] {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		seen := false
		for _, c := range p.Status.Conditions {
			seen = seen || c.Type == corev1.PodScheduled
		}
		if !seen {
			p.Status.Conditions = append(p.Status.Conditions, unschedulable())
		}
	}
}

func unschedulable() corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "kubectl-karpenter: not scheduled yet"}
}

// All returns the snapshot's objects of T's kind, sorted by namespace and name.
func All[T client.Object](s *Snapshot) []T {
	var zero T
	gk := groupKindOf(s.Store.scheme, reflect.New(reflect.TypeOf(zero).Elem()).Interface().(runtime.Object))
	items := make([]runtime.Object, 0, len(s.Store.objects[gk]))
	for _, o := range s.Store.objects[gk] {
		items = append(items, o)
	}
	sortObjects(items)
	out := make([]T, len(items))
	for i, o := range items {
		out[i] = o.(T)
	}
	return out
}

func groupKindOf(scheme *runtime.Scheme, obj runtime.Object) schema.GroupKind {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupKind{}
	}
	return gvks[0].GroupKind()
}

// Cluster feeds the snapshot into a fresh state.Cluster, as the informers do
// for the controller.
func (s *Snapshot) Cluster(clk clock.Clock) *state.Cluster {
	c := state.NewCluster(clk, s.Store)
	feed(s, c.UpdateNode)
	feed(s, c.UpdateNodeClaim)
	feed(s, c.UpdatePod)
	feed(s, c.UpdateDaemonSet)
	feed(s, c.UpdateNodePool)
	feed(s, c.UpdateNamespace)
	feed(s, c.UpdatePersistentVolumeClaim)
	feed(s, c.UpdatePersistentVolume)
	feed(s, c.UpdateStorageClass)
	return c
}

// feed hands every object of one kind to the state's update for it.
func feed[T client.Object](s *Snapshot, update func(T)) {
	for _, o := range All[T](s) {
		update(o)
	}
}

// Counts of the main kinds, for a one-line summary.
func (s *Snapshot) Counts() string {
	return fmt.Sprintf("%d nodepools, %d nodeclaims, %d nodes, %d pods", len(s.Store.objects[gkNodePool]),
		len(s.Store.objects[gkNodeClaim]), len(s.Store.objects[schema.GroupKind{Kind: "Node"}]), len(s.Store.objects[schema.GroupKind{Kind: "Pod"}]))
}

var (
	gkNodePool  = v1.SchemeGroupVersion.WithKind("NodePool").GroupKind()
	gkNodeClaim = v1.SchemeGroupVersion.WithKind("NodeClaim").GroupKind()
)
