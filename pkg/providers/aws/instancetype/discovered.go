package instancetype

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/ttlcache"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// DiscoveredCapacityTTL is how long the memory a registered node reported
// stands in for the VM_MEMORY_OVERHEAD_PERCENT estimate (upstream's
// DiscoveredCapacityCacheTTL, 60 days). Every node of the type and AMIs that
// registers with the same or less memory starts the period again.
const DiscoveredCapacityTTL = 60 * 24 * time.Hour

// discoveredCapacity holds the memory capacity registered nodes reported, by
// instance type and the set of AMIs of their EC2NodeClass. It lives in memory
// only, as upstream's: a restarted controller learns it again from the Nodes
// it lists at start.
type discoveredCapacity struct {
	// mu makes the read-compare-write of Observe one step; readers go
	// through the cache's own lock.
	mu     sync.Mutex
	memory *ttlcache.Cache[resource.Quantity]
	// seq changes whenever a type's memory is learnt or lowered, so that the
	// instance types built from the old value are built again.
	seq atomic.Uint64
}

func newDiscoveredCapacity(clk clock.PassiveClock) *discoveredCapacity {
	return &discoveredCapacity{memory: ttlcache.New[resource.Quantity](clk, DiscoveredCapacityTTL)}
}

// UpdateCapacityFromNode records the memory capacity of a registered node of
// an EC2NodeClass, as upstream's UpdateInstanceTypeCapacityFromNode: only when
// the node runs the AMI the class would pick for its type today (a node of an
// older AMI says nothing about new launches), and only when it is no more than
// what is known (the smallest node seen is the one a pod must fit on; an equal
// one renews the entry's TTL). A node that reports no memory is not recorded.
func (p *Provider) UpdateCapacityFromNode(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, nc *awsv1.EC2NodeClass) {
	name := node.Labels[corev1.LabelInstanceTypeStable]
	if name == "" || nodeClaim.Status.ImageID == "" || currentAMI(node.Labels, nc.Status.AMIs) != nodeClaim.Status.ImageID {
		return
	}
	actual, ok := node.Status.Capacity[corev1.ResourceMemory]
	if !ok || actual.Sign() <= 0 {
		return
	}
	d := p.discovered
	key := discoveredKey(name, amiSetHash(nc.Status.AMIs))
	d.mu.Lock()
	defer d.mu.Unlock()
	known, found := d.memory.Get(key)
	if found && actual.Cmp(known) > 0 {
		return
	}
	d.memory.Set(key, actual.DeepCopy())
	if !found || actual.Cmp(known) < 0 {
		d.seq.Add(1)
		log.FromContext(ctx).V(1).Info("updating discovered capacity cache", "memory-capacity", actual.String(), "instance-type", name)
	}
}

// discoveredMemory is the memory learnt for the type under the AMI set.
func (d *discoveredCapacity) discoveredMemory(name string, amiHash uint64) (resource.Quantity, bool) {
	return d.memory.Get(discoveredKey(name, amiHash))
}

// discoveredKey is upstream's key: the instance type and a hash of the
// class's AMIs. The class's name is not part of it, so classes resolving the
// same AMIs share what their nodes taught; a new AMI starts from the estimate.
func discoveredKey(name string, amiHash uint64) string {
	return fmt.Sprintf("%s-%016x", name, amiHash)
}

// amiSetHash hashes status.amis as a set: the order of the AMIs and of their
// requirements and values does not change it.
func amiSetHash(amis []awsv1.AMI) uint64 {
	parts := make([]string, 0, len(amis))
	for _, a := range amis {
		reqs := make([]string, 0, len(a.Requirements))
		for _, r := range a.Requirements {
			values := slices.Clone(r.Values)
			slices.Sort(values)
			reqs = append(reqs, strconv.Quote(r.Key)+" "+string(r.Operator)+" "+strconv.Quote(strings.Join(values, "\x00")))
		}
		slices.Sort(reqs)
		parts = append(parts, strings.Join([]string{strconv.Quote(a.ID), strconv.Quote(a.Name), strconv.FormatBool(a.Deprecated), strings.Join(reqs, ",")}, ";"))
	}
	slices.Sort(parts)
	h := fnv.New64a()
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{'\n'})
	}
	return h.Sum64()
}

// currentAMI is the AMI the class launches a node of these labels with: the
// first of status.amis (newest first, deprecated last) whose requirements
// the labels meet, "" when none does.
func currentAMI(labels map[string]string, amis []awsv1.AMI) string {
	have := scheduling.FromLabels(labels)
	for _, a := range amis {
		if have.Compatible(scheduling.FromNodeSelectorRequirements(a.Requirements...), nil) == nil {
			return a.ID
		}
	}
	return ""
}
