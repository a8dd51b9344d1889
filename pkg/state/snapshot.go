package state

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func resourceCount(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// Snapshot fills a solver input for the given pending pods: existing and in-flight
// capacity with the pods bound to it, the DaemonSets' pod templates, namespace
// labels and the volumes the pods use. NodePools and Options are the caller's.
// Capacity being deleted is left out: its pods come back as pending pods.
func (c *Cluster) Snapshot(ctx context.Context, pods []*corev1.Pod) (*scheduling.Input, error) {
	in := &scheduling.Input{Pods: pods}
	for _, sn := range c.Nodes() {
		if sn.MarkedForDeletion() {
			continue
		}
		in.ExistingNodes = append(in.ExistingNodes, &scheduling.ExistingNode{
			Name:          sn.Name(),
			Labels:        sn.Labels(),
			Taints:        sn.Taints(),
			StartupTaints: sn.StartupTaints(),
			Allocatable:   sn.Allocatable(),
			Pods:          sn.Pods,
			Initialized:   sn.Initialized(),
			InFlight:      sn.InFlight(),
			NodePool:      sn.NodePool(),
		})
	}
	in.DaemonSetPods = c.DaemonSetPods()
	ns := &corev1.NamespaceList{}
	if err := c.kube.List(ctx, ns); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	in.Namespaces = make(map[string]map[string]string, len(ns.Items))
	for i := range ns.Items {
		in.Namespaces[ns.Items[i].Name] = ns.Items[i].Labels
	}
	if err := c.volumes(ctx, in); err != nil {
		return nil, err
	}
	return in, nil
}

// DaemonSetPods returns one pod per DaemonSet, built from its template: what the
// DaemonSet would run on a new node.
func (c *Cluster) DaemonSetPods() []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*corev1.Pod, 0, len(c.daemonSets))
	for _, ds := range c.daemonSets {
		p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
		p.Namespace, p.Name = ds.Namespace, ds.Name
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// PodsOnDeletingCapacity returns the non-DaemonSet pods bound to nodes being
// deleted: they need a new home and are provisioned for along with pending pods.
func (c *Cluster) PodsOnDeletingCapacity() []*corev1.Pod {
	var out []*corev1.Pod
	for _, sn := range c.Nodes() {
		if !sn.MarkedForDeletion() {
			continue
		}
		for _, p := range sn.Pods {
			if p.DeletionTimestamp != nil || ownedByDaemonSet(p) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// volumes adds the claims the pods reference, their bound volumes and storage
// classes. A missing claim is not an error here: the solver reports the pod.
func (c *Cluster) volumes(ctx context.Context, in *scheduling.Input) error {
	seenPVC := map[types.NamespacedName]bool{}
	seenPV := map[string]bool{}
	seenSC := map[string]bool{}
	addSC := func(name string) error {
		if name == "" || seenSC[name] {
			return nil
		}
		seenSC[name] = true
		sc := &storagev1.StorageClass{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, sc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("getting storageclass %s: %w", name, err)
		}
		in.StorageClasses = append(in.StorageClasses, sc)
		return nil
	}
	for _, p := range in.Pods {
		for _, v := range p.Spec.Volumes {
			var claim string
			switch {
			case v.PersistentVolumeClaim != nil:
				claim = v.PersistentVolumeClaim.ClaimName
			case v.Ephemeral != nil:
				claim = p.Name + "-" + v.Name
			default:
				continue
			}
			key := types.NamespacedName{Namespace: p.Namespace, Name: claim}
			if seenPVC[key] {
				continue
			}
			seenPVC[key] = true
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.kube.Get(ctx, key, pvc); err != nil {
				if apierrors.IsNotFound(err) {
					if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
						if sc := v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName; sc != nil {
							if err := addSC(*sc); err != nil {
								return err
							}
						}
					}
					continue
				}
				return fmt.Errorf("getting pvc %s: %w", key, err)
			}
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, pvc)
			if pvc.Spec.StorageClassName != nil {
				if err := addSC(*pvc.Spec.StorageClassName); err != nil {
					return err
				}
			}
			if pv := pvc.Spec.VolumeName; pv != "" && !seenPV[pv] {
				seenPV[pv] = true
				vol := &corev1.PersistentVolume{}
				if err := c.kube.Get(ctx, types.NamespacedName{Name: pv}, vol); err != nil {
					if apierrors.IsNotFound(err) {
						continue
					}
					return fmt.Errorf("getting pv %s: %w", pv, err)
				}
				in.PersistentVolumes = append(in.PersistentVolumes, vol)
			}
		}
	}
	return nil
}
