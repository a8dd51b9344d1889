package snapshot

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/convert/migrate"
)

// deletedAt is the deletion timestamp objects deleted in memory get.
var deletedAt = metav1.Unix(0, 0)

// Delete deletes the manifests' objects in memory, as `kubectl delete -f`
// would start to: a NodePool is marked deleting (it launches nothing) and so
// are its NodeClaims (its nodes are drained, their pods provisioned
// elsewhere); other objects are removed. Deleting an object that does not
// exist is an error naming it.
func (s *Snapshot) Delete(ms []Manifest) error {
	for _, m := range ms {
		gvk := m.Object.GetObjectKind().GroupVersionKind()
		key := client.ObjectKeyFromObject(m.Object)
		cur, ok := s.Store.objects[gvk.GroupKind()][key]
		if !ok {
			return fmt.Errorf("--delete: %s not found in %s", m.Describe(), s.Source)
		}
		if np, ok := cur.(*v1.NodePool); ok {
			np.DeletionTimestamp = &deletedAt
			n := 0
			for _, o := range s.Store.objects[gkNodeClaim] {
				nc := o.(*v1.NodeClaim)
				if nc.Labels[v1.NodePoolLabelKey] == np.Name && nc.DeletionTimestamp == nil {
					nc.DeletionTimestamp = &deletedAt
					n++
				}
			}
			s.Notes = append(s.Notes, fmt.Sprintf("deleted NodePool %s (%d nodeclaims drained)", np.Name, n))
			continue
		}
		s.Store.remove(gvk.GroupKind(), key)
		s.Notes = append(s.Notes, fmt.Sprintf("deleted %s", m.Describe()))
	}
	return nil
}

// Scale is one --scale deploy/NAME=N.
type Scale struct {
	Namespace, Name string
	Replicas        int
}

// ParseScale parses "deploy/NAME=N" (also deployment/, deployments/,
// NAMESPACE/ is taken from -n).
func ParseScale(arg, namespace string) (Scale, error) {
	target, n, ok := strings.Cut(arg, "=")
	kind, name, ok2 := strings.Cut(target, "/")
	if !ok || !ok2 || name == "" {
		return Scale{}, fmt.Errorf("--scale %q: want deploy/NAME=REPLICAS", arg)
	}
	switch kind {
	case "deploy", "deployment", "deployments", "deployment.apps", "deployments.apps":
	default:
		return Scale{}, fmt.Errorf("--scale %q: only Deployments can be scaled (deploy/NAME=REPLICAS)", arg)
	}
	r, err := strconv.Atoi(n)
	if err != nil || r < 0 {
		return Scale{}, fmt.Errorf("--scale %q: replicas must be a number >= 0", arg)
	}
	return Scale{Namespace: namespace, Name: name, Replicas: r}, nil
}

// Scale sets a Deployment's replicas in memory: missing pods are added,
// pending, from its pod template (the ReplicaSet controller would create
// them and the scheduler find no room, or some); extra pods are removed,
// pending ones first, then the newest, as the ReplicaSet controller picks.
func (s *Snapshot) Scale(sc Scale) error {
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	o, ok := s.Store.objects[gk][types.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}]
	if !ok {
		return fmt.Errorf("--scale: deployment %s/%s not found in %s", sc.Namespace, sc.Name, s.Source)
	}
	d := o.(*appsv1.Deployment)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("--scale: deployment %s/%s: %w", sc.Namespace, sc.Name, err)
	}
	var pods []*corev1.Pod
	for _, po := range s.Store.objects[schema.GroupKind{Kind: "Pod"}] {
		p := po.(*corev1.Pod)
		if p.Namespace == d.Namespace && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded &&
			p.Status.Phase != corev1.PodFailed && sel.Matches(labelSet(p.Labels)) {
			pods = append(pods, p)
		}
	}
	// Pending first, then newest first: the order pods go on scale-down.
	sort.Slice(pods, func(i, j int) bool {
		if (pods[i].Spec.NodeName == "") != (pods[j].Spec.NodeName == "") {
			return pods[i].Spec.NodeName == ""
		}
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp)
		}
		return pods[i].Name > pods[j].Name
	})
	cur := len(pods)
	for i := 0; i < cur-sc.Replicas; i++ {
		s.Store.remove(schema.GroupKind{Kind: "Pod"}, client.ObjectKeyFromObject(pods[i]))
	}
	for i := cur; i < sc.Replicas; i++ {
		p := &corev1.Pod{
			ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(),
			Spec:       *d.Spec.Template.Spec.DeepCopy(),
		}
		p.Namespace = d.Namespace
		p.Name = fmt.Sprintf("%s-plan-%d", d.Name, i)
		p.UID = types.UID(fmt.Sprintf("plan-%s-%s-%d", d.Namespace, d.Name, i))
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: d.Name + "-plan", UID: types.UID("plan-rs-" + d.Name)}}
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{unschedulable()}}
		if err := s.Store.put(p); err != nil {
			return err
		}
	}
	r := int32(sc.Replicas)
	d.Spec.Replicas = &r
	s.Notes = append(s.Notes, fmt.Sprintf("scaled deployment %s/%s from %d to %d pods", d.Namespace, d.Name, cur, sc.Replicas))
	return nil
}

// FromDump reads a dump made by `kubectl get ... -o yaml` (a List, or any
// multi-document YAML/JSON): objects of kinds the planner reads go into the
// snapshot, others are ignored. Karpenter objects are not validated (the
// cluster already accepted them).
func FromDump(path string, stdin io.Reader) (*Snapshot, error) {
	if s, ok, err := fromJSONDump(path); ok || err != nil {
		return s, err
	}
	docs, err := migrate.ReadPaths([]string{path}, false, stdin)
	if err != nil {
		return nil, err
	}
	s := New("dump " + path)
	scheme := s.Store.scheme
	for _, d := range docs {
		gv, err := schema.ParseGroupVersion(d.APIVersion())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Source, err)
		}
		gvk := gv.WithKind(d.Kind())
		if !planned[gvk.GroupKind()] {
			continue
		}
		typed, err := scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", d.Source, gvk, err)
		}
		if err := fromUnstructured(d.Object, typed); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", d.Source, gvk.Kind, d.Name(), err)
		}
		if err := s.Store.put(typed.(client.Object)); err != nil {
			return nil, err
		}
	}
	s.markUnscheduled()
	return s, nil
}

// planned are the kinds a dump contributes.
var planned = func() map[schema.GroupKind]bool {
	m := map[schema.GroupKind]bool{}
	scheme := Scheme()
	for _, l := range lists() {
		gk := groupKindOf(scheme, l)
		gk.Kind = strings.TrimSuffix(gk.Kind, "List")
		m[gk] = true
	}
	return m
}()
