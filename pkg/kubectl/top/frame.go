package top

import "time"

// Frame is everything one screen shows, already grouped and sorted.
type Frame struct {
	// Now is the time the frame was taken; ages are measured from it.
	Now time.Time
	// Cluster names what is being watched (the kubeconfig context or server).
	Cluster string
	// Pools in display order; the group of nodes that no NodePool owns last.
	Pools []Pool
	// PendingPods counts pods not bound to a node yet.
	PendingPods int
	// Syncing is true until every watch delivered its initial list.
	Syncing bool
	// Warning is shown in the title (a watch error).
	Warning string
}

// Pool is a NodePool and its nodes (or the nodes without a NodePool).
type Pool struct {
	Name string
	// Unmanaged is the group of nodes no NodePool owns.
	Unmanaged bool
	// Gone: nodes carry this NodePool's label but the NodePool does not exist.
	Gone bool
	// CPULimit (millicores) and MemLimit (bytes) are spec.limits; 0 when unset.
	CPULimit, MemLimit int64
	Nodes              []Node
}

// Node is one row: a Node, or a NodeClaim that has no Node yet.
type Node struct {
	Name         string
	InstanceType string
	CapacityType string
	Zone         string
	// State is Ready, NotReady, Cordoned, Deleting or Launching (a NodeClaim
	// without its Node yet).
	State   string
	Created time.Time
	// CPUReq and CPUAlloc in millicores, MemReq and MemAlloc in bytes: the sum
	// of the requests of the pods bound to the node that still run, and the
	// node's allocatable.
	CPUReq, CPUAlloc int64
	MemReq, MemAlloc int64
	Pods             int
	// Price is $/h when PriceKnown.
	Price      float64
	PriceKnown bool
}

// Totals sum a set of rows.
type Totals struct {
	Nodes            int
	CPUReq, CPUAlloc int64
	MemReq, MemAlloc int64
	Pods             int
	Price            float64
	// Unpriced counts rows whose price is unknown (the total is then a lower bound).
	Unpriced int
}

func (t *Totals) add(n *Node) {
	t.Nodes++
	t.CPUReq += n.CPUReq
	t.CPUAlloc += n.CPUAlloc
	t.MemReq += n.MemReq
	t.MemAlloc += n.MemAlloc
	t.Pods += n.Pods
	if n.PriceKnown {
		t.Price += n.Price
	} else {
		t.Unpriced++
	}
}

// Totals of the pool's rows.
func (p *Pool) Totals() Totals {
	var t Totals
	for i := range p.Nodes {
		t.add(&p.Nodes[i])
	}
	return t
}

// Totals of every row in the frame.
func (f *Frame) Totals() Totals {
	var t Totals
	for i := range f.Pools {
		for j := range f.Pools[i].Nodes {
			t.add(&f.Pools[i].Nodes[j])
		}
	}
	return t
}
