package state

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Cluster is the in-memory cluster state. All methods are safe for concurrent use.
type Cluster struct {
	kube  client.Reader
	clock clock.Clock
	// PodTimes records the provisioner's decisions about pending pods for the
	// pod latency metrics (see podtiming.go).
	PodTimes *PodSchedulingTimes

	mu         sync.RWMutex
	nodes      map[string]*corev1.Node         // by name
	nodeClaims map[string]*v1.NodeClaim        // by name
	podNode    map[types.NamespacedName]string // bound pod -> node name
	podsByNode map[string]map[types.NamespacedName]*corev1.Pod
	daemonSets map[types.NamespacedName]*appsv1.DaemonSet
	// daemonPods: per DaemonSet, the newest pod it controls that state has
	// seen, bound or not; DaemonSetPods sizes the daemon overhead with it (see
	// daemonpods.go). daemonPodOf maps each of those pods back to its
	// DaemonSet, so that the pod's deletion is found without a scan. One entry
	// per DaemonSet: state never indexes every pod of every DaemonSet.
	daemonPods  map[types.NamespacedName]*daemonExample
	daemonPodOf map[types.NamespacedName]types.NamespacedName
	// builtDaemonPods memoizes DaemonSetPods' pod per DaemonSet, so that
	// decisions see the same pods while nothing changed (the solver's cache of
	// prepared NodePools is keyed by them). Guarded by dsMu, taken under mu's
	// read lock; under mu's write lock nobody else holds it.
	dsMu            sync.Mutex
	builtDaemonPods map[types.NamespacedName]*builtDaemonPod
	nodePools       map[string]*v1.NodePool
	// namespaces (their labels), PVCs, PVs and StorageClasses: what snapshots
	// need besides capacity (see volumes.go).
	namespaces     map[string]map[string]string
	pvcs           map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs            map[string]*corev1.PersistentVolume
	storageClasses map[string]*storagev1.StorageClass
	// nominations: node or NodeClaim name -> until when a pod was nominated to it.
	nominations map[string]time.Time
	// marked: NodeClaims the disruption queue is about to delete (their
	// replacements exist), by name. See MarkForDeletion.
	marked map[string]bool
	// bufferPods: CapacityBuffer virtual pods kept on nodes (bufferpods.go).
	bufferPods map[string][]*corev1.Pod
	// generation increases on every change, so callers can tell whether anything moved.
	generation uint64
	// unsyncedSince: when ExportMetrics first found state out of sync (zero
	// while in sync).
	unsyncedSince time.Time
}

// NewCluster returns an empty state. kube is the (cached) reader Synced compares
// against; nothing else reads it.
func NewCluster(clk clock.Clock, kube client.Reader) *Cluster {
	return &Cluster{
		kube:       kube,
		clock:      clk,
		PodTimes:   NewPodSchedulingTimes(clk),
		nodes:      map[string]*corev1.Node{},
		nodeClaims: map[string]*v1.NodeClaim{},
		podNode:    map[types.NamespacedName]string{},
		podsByNode: map[string]map[types.NamespacedName]*corev1.Pod{},
		daemonSets: map[types.NamespacedName]*appsv1.DaemonSet{},
		nodePools:  map[string]*v1.NodePool{},

		daemonPods:      map[types.NamespacedName]*daemonExample{},
		daemonPodOf:     map[types.NamespacedName]types.NamespacedName{},
		builtDaemonPods: map[types.NamespacedName]*builtDaemonPod{},

		namespaces:     map[string]map[string]string{},
		pvcs:           map[types.NamespacedName]*corev1.PersistentVolumeClaim{},
		pvs:            map[string]*corev1.PersistentVolume{},
		storageClasses: map[string]*storagev1.StorageClass{},
		nominations:    map[string]time.Time{},
		marked:         map[string]bool{},
	}
}

// Generation increases whenever the state changes.
func (c *Cluster) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.generation
}

// UpdateNode records a copy of a Node.
func (c *Cluster) UpdateNode(n *corev1.Node) { c.UpdateNodeShared(n.DeepCopy()) }

// UpdateNodeShared records the Node itself, not a copy: the informer's cached object, which
// nobody modifies (see package informer). At 100,000 nodes a copy each would double what the
// cache holds.
func (c *Cluster) UpdateNodeShared(n *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[n.Name] = n
	c.generation++
}

// DeleteNode forgets a Node.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	c.generation++
}

// UpdateNodeClaim records a NodeClaim. An older copy (lower resourceVersion seen
// through a slower path) does not overwrite a newer one: the provisioner records
// claims it created directly, and the watch may deliver them later.
func (c *Cluster) UpdateNodeClaim(nc *v1.NodeClaim) { c.updateNodeClaim(nc, true) }

// UpdateNodeClaimShared is UpdateNodeClaim keeping the object itself (the informer's cached
// object, which nobody modifies) rather than a copy.
func (c *Cluster) UpdateNodeClaimShared(nc *v1.NodeClaim) { c.updateNodeClaim(nc, false) }

func (c *Cluster) updateNodeClaim(nc *v1.NodeClaim, copyIt bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.nodeClaims[nc.Name]; ok && cur.UID == nc.UID && olderVersion(nc.ResourceVersion, cur.ResourceVersion) {
		return
	}
	if copyIt {
		nc = nc.DeepCopy()
	}
	c.nodeClaims[nc.Name] = nc
	c.generation++
}

// DeleteNodeClaim forgets a NodeClaim.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodeClaims, name)
	delete(c.nominations, name)
	delete(c.marked, name)
	c.generation++
}

// MarkForDeletion records that the NodeClaims with these names are going away
// although the API server does not show it yet: the disruption queue marks its
// candidates once their replacements exist. Marked capacity is left out of
// provisioning snapshots and its pods are provisioned for (onto the
// replacements), exactly as for capacity being deleted. The mark lasts until
// UnmarkForDeletion or until the NodeClaim is forgotten.
func (c *Cluster) MarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		c.marked[n] = true
	}
	c.generation++
}

// UnmarkForDeletion undoes MarkForDeletion (a disruption that failed).
func (c *Cluster) UnmarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		delete(c.marked, n)
	}
	c.generation++
}

// olderVersion compares resourceVersions numerically when both are numbers (etcd's
// are); anything else is treated as not older so updates are never lost.
func olderVersion(a, b string) bool {
	x, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return false
	}
	y, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return false
	}
	return x < y
}

// UpdatePod records a pod's binding. Only bound, non-terminal pods occupy a node;
// anything else is forgotten. A pod controlled by a DaemonSet, bound or not, may
// also become its DaemonSet's example (see DaemonSetPods).
func (c *Cluster) UpdatePod(p *corev1.Pod) { c.updatePod(p, true) }

// UpdatePodShared is UpdatePod keeping the object itself (the informer's cached object, which
// nobody modifies) rather than a copy: a million pods are held once, not twice.
func (c *Cluster) UpdatePodShared(p *corev1.Pod) { c.updatePod(p, false) }

func (c *Cluster) updatePod(p *corev1.Pod, copyIt bool) {
	key := client.ObjectKeyFromObject(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unbind(key)
	bound := p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	ds, controlled := controllingDaemonSet(p)
	if copyIt && (bound || controlled) {
		p = p.DeepCopy()
	}
	c.trackDaemonPod(key, p, ds, controlled)
	if !bound {
		c.generation++
		return
	}
	m := c.podsByNode[p.Spec.NodeName]
	if m == nil {
		m = map[types.NamespacedName]*corev1.Pod{}
		c.podsByNode[p.Spec.NodeName] = m
	}
	m[key] = p
	c.podNode[key] = p.Spec.NodeName
	c.generation++
}

// DeletePod forgets a pod.
func (c *Cluster) DeletePod(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unbind(key)
	c.forgetDaemonPod(key)
	c.generation++
}

func (c *Cluster) unbind(key types.NamespacedName) {
	if node, ok := c.podNode[key]; ok {
		delete(c.podsByNode[node], key)
		if len(c.podsByNode[node]) == 0 {
			delete(c.podsByNode, node)
		}
		delete(c.podNode, key)
	}
}

// UpdateDaemonSet records a DaemonSet.
func (c *Cluster) UpdateDaemonSet(ds *appsv1.DaemonSet) {
	record(c, c.daemonSets, client.ObjectKeyFromObject(ds), ds.DeepCopy())
}

// DeleteDaemonSet forgets a DaemonSet and its example pod.
func (c *Cluster) DeleteDaemonSet(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.daemonSets, key)
	if ex, ok := c.daemonPods[key]; ok {
		if c.daemonPodOf[ex.key] == key {
			delete(c.daemonPodOf, ex.key)
		}
		delete(c.daemonPods, key)
	}
	delete(c.builtDaemonPods, key)
	c.generation++
}

// UpdateNodePool records a NodePool.
func (c *Cluster) UpdateNodePool(np *v1.NodePool) { record(c, c.nodePools, np.Name, np.DeepCopy()) }

// DeleteNodePool forgets a NodePool.
func (c *Cluster) DeleteNodePool(name string) { forget(c, c.nodePools, name) }

// NodePools returns copies of the known NodePools sorted by name.
func (c *Cluster) NodePools() []*v1.NodePool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*v1.NodePool, 0, len(c.nodePools))
	for _, np := range c.nodePools {
		out = append(out, np.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NominationWindow is how long a nomination protects a node: upstream's
// max(2×BATCH_MAX_DURATION, 10s) with the default batch duration.
const NominationWindow = 20 * time.Second

// Nominate records that the provisioner expects pods to land on the node or NodeClaim
// with this name; disruption leaves nominated nodes alone for NominationWindow.
func (c *Cluster) Nominate(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominations[name] = c.clock.Now().Add(NominationWindow)
}

// IsNominated reports whether a nomination of the node or NodeClaim is still active.
func (c *Cluster) IsNominated(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	until, ok := c.nominations[name]
	return ok && c.clock.Now().Before(until)
}

// Synced reports whether every NodeClaim and Node in the API cache is known here.
// Decisions on an unsynced view would, for instance, miss a NodeClaim created just
// before a restart and launch its capacity a second time.
//
// The lists read the cache's objects in place (UnsafeDisableDeepCopy; only names
// and provider IDs are read): every batch, disruption pass and metrics export
// asks, and copying every NodeClaim and Node each time was 4% of Karpenter's CPU
// in a 1,000-node fleet, growing with the fleet times how often it is asked.
func (c *Cluster) Synced(ctx context.Context) (bool, error) {
	ncs := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, ncs, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodes: %w", err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := range ncs.Items {
		cur, ok := c.nodeClaims[ncs.Items[i].Name]
		if !ok {
			return false, nil
		}
		// A claim the cache shows launched but the state does not would be
		// mistaken for capacity without a provider ID.
		if ncs.Items[i].Status.ProviderID != "" && cur.Status.ProviderID == "" {
			return false, nil
		}
	}
	for i := range nodes.Items {
		if _, ok := c.nodes[nodes.Items[i].Name]; !ok {
			return false, nil
		}
	}
	return true, nil
}
