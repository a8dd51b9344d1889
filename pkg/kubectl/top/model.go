package top

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// PriceFunc prices a node from its labels (and provider ID); false when it cannot.
type PriceFunc func(*corev1.Node) (float64, bool)

// Model is the fleet as the watches last reported it. Each event updates it in
// O(1) (a pod's requests are added to or taken from its node's running sums),
// so a burst of pod events costs little; Frame does the grouping and sorting
// once per redraw. Safe for concurrent use: informers call the setters from
// their own goroutines while the redraw loop calls Frame.
type Model struct {
	mu      sync.Mutex
	price   PriceFunc
	nodes   map[string]*nodeEntry  // by Node name
	claims  map[string]*claimEntry // by NodeClaim name
	pools   map[string]*poolEntry  // by NodePool name
	pods    map[string]podEntry    // by namespace/name
	usage   map[string]*usage      // by Node name, from pods
	byPID   map[string]string      // provider ID -> Node name
	pending int
	syncing bool
	cluster string
}

type nodeEntry struct {
	row        Node
	pool       string
	providerID string
}

type claimEntry struct {
	row                  Node
	pool                 string
	nodeName, providerID string
}

type poolEntry struct{ cpuLimit, memLimit int64 }

type podEntry struct {
	node     string // bound and not finished: counted on this node
	pending  bool   // not bound yet
	cpu, mem int64
}

type usage struct {
	cpu, mem int64
	pods     int
}

// NewModel prices nodes with price (nil: no prices).
func NewModel(price PriceFunc) *Model {
	if price == nil {
		price = func(*corev1.Node) (float64, bool) { return 0, false }
	}
	return &Model{
		price: price, nodes: map[string]*nodeEntry{}, claims: map[string]*claimEntry{}, pools: map[string]*poolEntry{},
		pods: map[string]podEntry{}, usage: map[string]*usage{}, byPID: map[string]string{}, syncing: true,
	}
}

// SetCluster names the cluster in the title.
func (m *Model) SetCluster(name string) { m.mu.Lock(); m.cluster = name; m.mu.Unlock() }

// SetSynced records that every watch delivered its initial list.
func (m *Model) SetSynced() { m.mu.Lock(); m.syncing = false; m.mu.Unlock() }

func milli(l corev1.ResourceList, name corev1.ResourceName) int64 {
	if q, ok := l[name]; ok {
		return q.MilliValue()
	}
	return 0
}

func value(l corev1.ResourceList, name corev1.ResourceName) int64 {
	if q, ok := l[name]; ok {
		return q.Value()
	}
	return 0
}

func nodeState(n *corev1.Node) string {
	if n.DeletionTimestamp != nil {
		return "Deleting"
	}
	for _, t := range n.Spec.Taints {
		if v1.IsDisruptingTaint(t) {
			return "Disrupting"
		}
	}
	if n.Spec.Unschedulable {
		return "Cordoned"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return "Ready"
		}
	}
	return "NotReady"
}

// UpsertNode records a Node as added or changed.
func (m *Model) UpsertNode(n *corev1.Node) {
	e := &nodeEntry{pool: n.Labels[v1.NodePoolLabelKey], providerID: n.Spec.ProviderID, row: Node{
		Name:         n.Name,
		InstanceType: n.Labels[corev1.LabelInstanceTypeStable],
		CapacityType: n.Labels[v1.CapacityTypeLabelKey],
		Zone:         n.Labels[corev1.LabelTopologyZone],
		State:        nodeState(n),
		Created:      n.CreationTimestamp.Time,
		CPUAlloc:     milli(n.Status.Allocatable, corev1.ResourceCPU),
		MemAlloc:     value(n.Status.Allocatable, corev1.ResourceMemory),
	}}
	e.row.Price, e.row.PriceKnown = m.price(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.nodes[n.Name]; ok && old.providerID != "" && old.providerID != e.providerID {
		delete(m.byPID, old.providerID)
	}
	if e.providerID != "" {
		m.byPID[e.providerID] = n.Name
	}
	m.nodes[n.Name] = e
}

// DeleteNode forgets a Node.
func (m *Model) DeleteNode(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.nodes[name]; ok && old.providerID != "" && m.byPID[old.providerID] == name {
		delete(m.byPID, old.providerID)
	}
	delete(m.nodes, name)
}

// UpsertNodeClaim records a NodeClaim; it has its own row only until its Node exists.
func (m *Model) UpsertNodeClaim(nc *v1.NodeClaim) {
	state := "Launching"
	if nc.Status.ProviderID != "" {
		state = "Registering"
	}
	if nc.DeletionTimestamp != nil {
		state = "Deleting"
	}
	e := &claimEntry{pool: nc.Labels[v1.NodePoolLabelKey], nodeName: nc.Status.NodeName, providerID: nc.Status.ProviderID, row: Node{
		Name:         nc.Name,
		InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
		CapacityType: nc.Labels[v1.CapacityTypeLabelKey],
		Zone:         nc.Labels[corev1.LabelTopologyZone],
		State:        state,
		Created:      nc.CreationTimestamp.Time,
		CPUAlloc:     milli(nc.Status.Allocatable, corev1.ResourceCPU),
		MemAlloc:     value(nc.Status.Allocatable, corev1.ResourceMemory),
	}}
	// The price of the node it will become.
	as := &corev1.Node{}
	as.Labels, as.Spec.ProviderID = nc.Labels, nc.Status.ProviderID
	e.row.Price, e.row.PriceKnown = m.price(as)
	m.mu.Lock()
	m.claims[nc.Name] = e
	m.mu.Unlock()
}

// DeleteNodeClaim forgets a NodeClaim.
func (m *Model) DeleteNodeClaim(name string) { m.mu.Lock(); delete(m.claims, name); m.mu.Unlock() }

// UpsertNodePool records a NodePool and its limits.
func (m *Model) UpsertNodePool(np *v1.NodePool) {
	l := corev1.ResourceList(np.Spec.Limits)
	e := &poolEntry{cpuLimit: milli(l, corev1.ResourceCPU), memLimit: value(l, corev1.ResourceMemory)}
	m.mu.Lock()
	m.pools[np.Name] = e
	m.mu.Unlock()
}

// DeleteNodePool forgets a NodePool (its nodes stay, marked as gone).
func (m *Model) DeleteNodePool(name string) { m.mu.Lock(); delete(m.pools, name); m.mu.Unlock() }

// UpsertPod records a pod: a bound pod that has not finished counts against
// its node; an unbound one is pending.
func (m *Model) UpsertPod(p *corev1.Pod) {
	e := podEntry{}
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	switch {
	case finished:
	case p.Spec.NodeName != "":
		req := scheduling.PodRequests(p)
		e.node, e.cpu, e.mem = p.Spec.NodeName, milli(req, corev1.ResourceCPU), value(req, corev1.ResourceMemory)
	case p.DeletionTimestamp == nil:
		e.pending = true
	}
	key := p.Namespace + "/" + p.Name
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetPod(key)
	if e.node == "" && !e.pending {
		return
	}
	m.pods[key] = e
	if e.pending {
		m.pending++
		return
	}
	u := m.usage[e.node]
	if u == nil {
		u = &usage{}
		m.usage[e.node] = u
	}
	u.cpu += e.cpu
	u.mem += e.mem
	u.pods++
}

// DeletePod forgets the pod namespace/name.
func (m *Model) DeletePod(key string) {
	m.mu.Lock()
	m.forgetPod(key)
	m.mu.Unlock()
}

func (m *Model) forgetPod(key string) {
	old, ok := m.pods[key]
	if !ok {
		return
	}
	delete(m.pods, key)
	if old.pending {
		m.pending--
		return
	}
	if u := m.usage[old.node]; u != nil {
		u.cpu -= old.cpu
		u.mem -= old.mem
		u.pods--
		if u.pods == 0 {
			delete(m.usage, old.node)
		}
	}
}

// Frame snapshots the model: NodePools by name (the nodes of none last),
// nodes oldest first, and a row for each NodeClaim whose Node is not there.
func (m *Model) Frame(now time.Time) *Frame {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := &Frame{Now: now, Cluster: m.cluster, PendingPods: m.pending, Syncing: m.syncing}
	byPool := map[string]*Pool{}
	pool := func(name string) *Pool {
		if p, ok := byPool[name]; ok {
			return p
		}
		p := &Pool{Name: name, Unmanaged: name == ""}
		if e, ok := m.pools[name]; ok {
			p.CPULimit, p.MemLimit = e.cpuLimit, e.memLimit
		} else if name != "" {
			p.Gone = true
		}
		byPool[name] = p
		return p
	}
	for name := range m.pools {
		pool(name)
	}
	for name, e := range m.nodes {
		row := e.row
		if u := m.usage[name]; u != nil {
			row.CPUReq, row.MemReq, row.Pods = u.cpu, u.mem, u.pods
		}
		p := pool(e.pool)
		p.Nodes = append(p.Nodes, row)
	}
	for _, e := range m.claims {
		if _, ok := m.nodes[e.nodeName]; ok && e.nodeName != "" {
			continue
		}
		if _, ok := m.byPID[e.providerID]; ok && e.providerID != "" {
			continue
		}
		p := pool(e.pool)
		p.Nodes = append(p.Nodes, e.row)
	}
	f.Pools = make([]Pool, 0, len(byPool))
	for _, p := range byPool {
		sort.Slice(p.Nodes, func(i, j int) bool {
			a, b := &p.Nodes[i], &p.Nodes[j]
			if !a.Created.Equal(b.Created) {
				return a.Created.Before(b.Created)
			}
			return a.Name < b.Name
		})
		f.Pools = append(f.Pools, *p)
	}
	sort.Slice(f.Pools, func(i, j int) bool {
		a, b := &f.Pools[i], &f.Pools[j]
		if a.Unmanaged != b.Unmanaged {
			return b.Unmanaged
		}
		return a.Name < b.Name
	})
	return f
}
