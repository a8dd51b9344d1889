package state

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The solver reads, besides capacity, namespace labels (pod affinity namespaceSelector) and the
// volumes pods mount (their topology). State keeps copies of them, fed by the informer
// controllers like everything else, so that a snapshot never reads the API.

// UpdateNamespace records a namespace's labels.
func (c *Cluster) UpdateNamespace(ns *corev1.Namespace) {
	lbls := make(map[string]string, len(ns.Labels))
	for k, v := range ns.Labels {
		lbls[k] = v
	}
	record(c, c.namespaces, ns.Name, lbls)
}

// DeleteNamespace forgets a namespace.
func (c *Cluster) DeleteNamespace(name string) { forget(c, c.namespaces, name) }

// UpdatePersistentVolumeClaim records a PersistentVolumeClaim.
func (c *Cluster) UpdatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	record(c, c.pvcs, client.ObjectKeyFromObject(pvc), pvc.DeepCopy())
}

// DeletePersistentVolumeClaim forgets a PersistentVolumeClaim.
func (c *Cluster) DeletePersistentVolumeClaim(key types.NamespacedName) { forget(c, c.pvcs, key) }

// UpdatePersistentVolume records a PersistentVolume.
func (c *Cluster) UpdatePersistentVolume(pv *corev1.PersistentVolume) {
	record(c, c.pvs, pv.Name, pv.DeepCopy())
}

// DeletePersistentVolume forgets a PersistentVolume.
func (c *Cluster) DeletePersistentVolume(name string) { forget(c, c.pvs, name) }

// UpdateStorageClass records a StorageClass.
func (c *Cluster) UpdateStorageClass(sc *storagev1.StorageClass) {
	record(c, c.storageClasses, sc.Name, sc.DeepCopy())
}

// DeleteStorageClass forgets a StorageClass.
func (c *Cluster) DeleteStorageClass(name string) { forget(c, c.storageClasses, name) }

// record stores v under k in one of state's maps and bumps the generation
// (snapshots cached by generation are then rebuilt), under the lock.
func record[K comparable, V any](c *Cluster, m map[K]V, k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m[k] = v
	c.generation++
}

// forget is record's inverse.
func forget[K comparable, V any](c *Cluster, m map[K]V, k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(m, k)
	c.generation++
}

// namespaceLabels returns every known namespace's labels. Callers hold c.mu.
func (c *Cluster) namespaceLabels() map[string]map[string]string {
	out := make(map[string]map[string]string, len(c.namespaces))
	for n, l := range c.namespaces {
		out[n] = l
	}
	return out
}

// volumes adds the claims the pods reference, their bound volumes and storage classes, as far
// as state knows them. A missing claim is not an error here: the solver reports the pod.
// Callers hold c.mu. The objects are state's own copies, which are replaced, never modified.
func (c *Cluster) volumes(in *scheduling.Input) {
	seenPVC := map[types.NamespacedName]bool{}
	seenPV := map[string]bool{}
	seenSC := map[string]bool{}
	addSC := func(name string) {
		if name == "" || seenSC[name] {
			return
		}
		seenSC[name] = true
		if sc, ok := c.storageClasses[name]; ok {
			in.StorageClasses = append(in.StorageClasses, sc)
		}
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
			pvc, ok := c.pvcs[key]
			if !ok {
				if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
					if sc := v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName; sc != nil {
						addSC(*sc)
					}
				}
				continue
			}
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, pvc)
			if pvc.Spec.StorageClassName != nil {
				addSC(*pvc.Spec.StorageClassName)
			}
			if name := pvc.Spec.VolumeName; name != "" && !seenPV[name] {
				seenPV[name] = true
				if pv, ok := c.pvs[name]; ok {
					in.PersistentVolumes = append(in.PersistentVolumes, pv)
				}
			}
		}
	}
}
