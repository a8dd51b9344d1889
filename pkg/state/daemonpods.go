package state

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Daemon overhead is sized with a real pod of each DaemonSet when one exists,
// as upstream does: the pods the DaemonSet controller creates pass admission,
// which may change them (a LimitRange's default requests, a mutating webhook's
// sidecar), while the DaemonSet's template does not. A DaemonSet whose
// template requests nothing in a namespace whose LimitRange defaults cpu to 2
// runs pods of 2 cpu: sized by its template, every new node would be 2 cpu
// short of what its pods and the DaemonSet's pod need.
//
// State keeps, per DaemonSet, the newest pod it controls (by creation time)
// among those the pod feed delivers, bound or pending: one pod per DaemonSet,
// updated as pods come and go, so a decision never scans pods. When that pod
// is deleted it stays the example until another pod of the DaemonSet is seen
// (all of a DaemonSet's pods are alike; the next event of any of them takes
// over). Without any pod the template is used.

// daemonExample is the pod a DaemonSet's overhead is sized with.
type daemonExample struct {
	pod   *corev1.Pod          // state's own: read, never modify
	key   types.NamespacedName // the pod's
	owner types.UID            // the controlling DaemonSet's uid
	// gone: the pod was deleted (or left the DaemonSet); any other pod of the
	// DaemonSet seen next replaces it.
	gone bool
}

// builtDaemonPod is DaemonSetPods' pod for one DaemonSet and what it was built from.
type builtDaemonPod struct {
	ds      *appsv1.DaemonSet
	example *corev1.Pod // nil: built from the template
	pod     *corev1.Pod
}

// current reports whether b still stands for ds with this example: same
// example, and the same DaemonSet object or the same generation of it (status
// updates, which replace the stored object, do not rebuild the pod).
func (b *builtDaemonPod) current(ds *appsv1.DaemonSet, example *corev1.Pod) bool {
	if b == nil || b.example != example {
		return false
	}
	return b.ds == ds || (ds.Generation != 0 && b.ds.UID == ds.UID && b.ds.Generation == ds.Generation)
}

// daemonOwner is the DaemonSet controlling a pod.
type daemonOwner struct {
	key types.NamespacedName
	uid types.UID
}

// controllingDaemonSet returns the apps DaemonSet that controls p, if any.
func controllingDaemonSet(p *corev1.Pod) (daemonOwner, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != "DaemonSet" {
		return daemonOwner{}, false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != appsv1.GroupName {
		return daemonOwner{}, false
	}
	return daemonOwner{key: types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}, uid: ref.UID}, true
}

// trackDaemonPod makes p (stored under key) its DaemonSet's example when it is
// newer than the current one, or is the current one, or the current one is
// gone. Callers hold c.mu for writing.
func (c *Cluster) trackDaemonPod(key types.NamespacedName, p *corev1.Pod, ds daemonOwner, controlled bool) {
	if prev, ok := c.daemonPodOf[key]; ok && (!controlled || prev != ds.key) {
		c.forgetDaemonPod(key)
	}
	if !controlled {
		return
	}
	cur := c.daemonPods[ds.key]
	if cur != nil && !c.replaces(cur, key, p, ds) {
		return
	}
	if cur != nil && cur.key != key && c.daemonPodOf[cur.key] == ds.key {
		delete(c.daemonPodOf, cur.key)
	}
	c.daemonPods[ds.key] = &daemonExample{pod: p, key: key, owner: ds.uid}
	c.daemonPodOf[key] = ds.key
}

// replaces reports whether p, a pod of the DaemonSet ds, takes over from cur.
func (c *Cluster) replaces(cur *daemonExample, key types.NamespacedName, p *corev1.Pod, ds daemonOwner) bool {
	if cur.key == key || cur.gone {
		return true
	}
	if cur.owner != ds.uid {
		// Pods of two DaemonSets of one name (one deleted, one created):
		// those of the DaemonSet state knows win.
		if live, ok := c.daemonSets[ds.key]; ok {
			return live.UID == ds.uid
		}
	}
	return p.CreationTimestamp.After(cur.pod.CreationTimestamp.Time)
}

// forgetDaemonPod notes that the pod stored under key was deleted or no longer
// belongs to its DaemonSet. An example of a DaemonSet state knows stays, as
// gone, until another pod of the DaemonSet replaces it; otherwise it is
// dropped. Callers hold c.mu for writing.
func (c *Cluster) forgetDaemonPod(key types.NamespacedName) {
	ds, ok := c.daemonPodOf[key]
	if !ok {
		return
	}
	delete(c.daemonPodOf, key)
	ex := c.daemonPods[ds]
	if ex == nil || ex.key != key {
		return
	}
	if _, live := c.daemonSets[ds]; !live {
		delete(c.daemonPods, ds)
		return
	}
	c.daemonPods[ds] = &daemonExample{pod: ex.pod, key: ex.key, owner: ex.owner, gone: true}
}

// DaemonSetPods returns, per DaemonSet in namespace/name order, the pod it
// would run on a new node: a copy of the newest pod it controls (its requests
// as admitted), with the template's required node affinity in place of the
// one the DaemonSet controller pinned it to its node with (or none when the
// template has none) and no node name; without any pod, a pod built from the
// template. While nothing changes, calls return the same pods: read them,
// never modify.
func (c *Cluster) DaemonSetPods() []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]types.NamespacedName, 0, len(c.daemonSets))
	for k := range c.daemonSets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].Name < keys[j].Name
	})
	c.dsMu.Lock()
	defer c.dsMu.Unlock()
	out := make([]*corev1.Pod, 0, len(keys))
	for _, k := range keys {
		ds := c.daemonSets[k]
		var example *corev1.Pod
		if ex := c.daemonPods[k]; ex != nil && ex.owner == ds.UID {
			example = ex.pod
		}
		b := c.builtDaemonPods[k]
		if !b.current(ds, example) {
			b = &builtDaemonPod{ds: ds, example: example, pod: daemonSetPod(ds, example)}
			c.builtDaemonPods[k] = b
		}
		out = append(out, b.pod)
	}
	return out
}

// daemonSetPod is the pod ds would run on a new node, from its example pod or,
// without one, from its template.
func daemonSetPod(ds *appsv1.DaemonSet, example *corev1.Pod) *corev1.Pod {
	if example == nil {
		p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
		p.Namespace, p.Name = ds.Namespace, ds.Name
		return p
	}
	p := &corev1.Pod{ObjectMeta: *example.ObjectMeta.DeepCopy(), Spec: *example.Spec.DeepCopy()}
	p.Spec.NodeName = ""
	templateNodeAffinity(p, ds.Spec.Template.Spec.Affinity)
	return p
}

// templateNodeAffinity gives p, a copy of a DaemonSet's pod, the template's
// required node affinity back: the DaemonSet controller replaced it with a
// term selecting the pod's node by name. Without one in the template, p's is
// cleared. Preferred node affinity and pod (anti-)affinity stay as admitted.
func templateNodeAffinity(p *corev1.Pod, tmpl *corev1.Affinity) {
	var required *corev1.NodeSelector
	if tmpl != nil && tmpl.NodeAffinity != nil {
		required = tmpl.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if required != nil {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required.DeepCopy()
		return
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	if len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		a.NodeAffinity = nil
	}
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		p.Spec.Affinity = nil
	}
}
