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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.namespaces[ns.Name] = lbls
	c.generation++
}

// DeleteNamespace forgets a namespace.
func (c *Cluster) DeleteNamespace(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.namespaces, name)
	c.generation++
}

// UpdatePersistentVolumeClaim records a PersistentVolumeClaim.
func (c *Cluster) UpdatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pvcs[client.ObjectKeyFromObject(pvc)] = pvc.DeepCopy()
	c.generation++
}

// DeletePersistentVolumeClaim forgets a PersistentVolumeClaim.
func (c *Cluster) DeletePersistentVolumeClaim(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pvcs, key)
	c.generation++
}

// UpdatePersistentVolume records a PersistentVolume.
func (c *Cluster) UpdatePersistentVolume(pv *corev1.PersistentVolume) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pvs[pv.Name] = pv.DeepCopy()
	c.generation++
}

// DeletePersistentVolume forgets a PersistentVolume.
func (c *Cluster) DeletePersistentVolume(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pvs, name)
	c.generation++
}

// UpdateStorageClass records a StorageClass.
func (c *Cluster) UpdateStorageClass(sc *storagev1.StorageClass) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storageClasses[sc.Name] = sc.DeepCopy()
	c.generation++
}

// DeleteStorageClass forgets a StorageClass.
func (c *Cluster) DeleteStorageClass(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.storageClasses, name)
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
