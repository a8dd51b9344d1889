package disrupter

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// snapshot is the pure core's input plus the API objects the controller acts on.
type snapshot struct {
	in        *disruption.Input
	nodePools map[string]*v1.NodePool
}

// snapshot gathers everything a pass decides over: cluster state's nodes and
// pods, the provisioner's pending pods and solver input (the same NodePools,
// instance types and options provisioning uses), every NodePool with its
// instance types for pricing, and the PodDisruptionBudgets.
func (c *Controller) snapshot(ctx context.Context) (*snapshot, error) {
	pending, err := c.provisioner.PendingPods(ctx)
	if err != nil {
		return nil, err
	}
	sched, _, err := c.provisioner.SolverInput(ctx, pending)
	if err != nil {
		return nil, err
	}
	sched.Cache = c.cache
	existing := make(map[string]*scheduling.ExistingNode, len(sched.ExistingNodes))
	for _, e := range sched.ExistingNodes {
		existing[e.Name] = e
	}
	in := &disruption.Input{
		Now:        c.clock.Now(),
		Scheduling: sched,
		Options:    disruption.Options{SpotToSpotConsolidation: c.opts.SpotToSpotConsolidation, MaxSimulationWork: c.opts.MaxSimulationWork},
	}
	s := &snapshot{in: in, nodePools: map[string]*v1.NodePool{}}
	for _, np := range c.cluster.NodePools() {
		s.nodePools[np.Name] = np
		its, err := c.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			// Its nodes cannot be priced, so they will not be consolidated; other
			// methods still apply.
			log.FromContext(ctx).Error(err, "getting instance types for pricing", "nodepool", np.Name)
		}
		in.NodePools = append(in.NodePools, &disruption.NodePool{NodePool: np, InstanceTypes: its})
	}
	for _, sn := range c.cluster.Nodes() {
		n := &disruption.Node{
			Name:        sn.Name(),
			Node:        sn.Node,
			NodeClaim:   sn.NodeClaim,
			Existing:    existing[sn.Name()],
			NodePool:    sn.NodePool(),
			Initialized: sn.Initialized(),
			Deleting:    (sn.Node != nil && sn.Node.DeletionTimestamp != nil) || (sn.NodeClaim != nil && sn.NodeClaim.DeletionTimestamp != nil),
			Nominated:   c.cluster.IsNominated(sn.Name()),
		}
		n.MarkedForDeletion = sn.MarkedForDeletion()
		if sn.NodeClaim != nil {
			n.MarkedForDeletion = n.MarkedForDeletion || c.queue.Has(sn.NodeClaim.Name)
			n.Nominated = n.Nominated || c.cluster.IsNominated(sn.NodeClaim.Name)
		}
		in.Nodes = append(in.Nodes, n)
	}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := c.kube.List(ctx, pdbs); err != nil {
		return nil, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	for i := range pdbs.Items {
		in.PDBs = append(in.PDBs, &pdbs.Items[i])
	}
	return s, nil
}
