package disrupter

import (
	"context"
	"fmt"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// snapshot is the pure core's input plus the API objects the controller acts on.
type snapshot struct {
	in        *disruption.Input
	nodePools map[string]*v1.NodePool
}

// snapshot gathers everything a pass decides over (see BuildInput).
func (c *Controller) snapshot(ctx context.Context) (*snapshot, error) {
	in, pools, err := BuildInput(ctx, InputSources{
		Kube: c.kube, Cluster: c.cluster, Provisioner: c.provisioner, CloudProvider: c.cloudProvider,
		InQueue: c.queue.Has, Cache: c.cache, Now: c.clock.Now(), Events: c.publisher,
		Options: disruption.Options{SpotToSpotConsolidation: c.opts.SpotToSpotConsolidation, MaxSimulationWork: c.opts.MaxSimulationWork,
			PodDeletionCostManagement: c.opts.PodDeletionCostManagement, TerminateFirstDrift: c.opts.TerminateFirstDrift, NodeRepair: c.opts.NodeRepair,
			TerminateFirstRepair: c.opts.TerminateFirstRepair, DisableRepackConsolidation: c.opts.DisableRepackConsolidation},
	})
	if err != nil {
		return nil, err
	}
	in.RecentReboots = c.reboots.recent(c.clock.Now())
	return &snapshot{in: in, nodePools: pools}, nil
}

// InputSources are what a disruption pass's input is gathered from. The
// controller passes its own; kubectl-karpenter passes a snapshot's, so that a
// plan decides over exactly what the controller would.
type InputSources struct {
	Kube          client.Reader
	Cluster       *state.Cluster
	Provisioner   *provisioning.Provisioner
	CloudProvider cloudprovider.CloudProvider
	// InQueue reports whether the orchestration queue holds the NodeClaim
	// (nil: nothing is queued).
	InQueue func(nodeClaim string) bool
	Cache   *scheduling.Cache
	Now     time.Time
	Options disruption.Options
	// Events receives the pass's events on pods (see disruption.Input.Events);
	// nil for a plan.
	Events events.Publisher
}

// BuildInput gathers everything a pass decides over: cluster state's nodes and
// pods, the provisioner's pending pods and solver input (the same NodePools,
// instance types and options provisioning uses), every NodePool with its
// instance types for pricing, and the PodDisruptionBudgets. It also returns
// the NodePools by name.
func BuildInput(ctx context.Context, src InputSources) (*disruption.Input, map[string]*v1.NodePool, error) {
	pending, err := src.Provisioner.PendingPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	sched, _, err := src.Provisioner.SolverInput(ctx, pending)
	if err != nil {
		return nil, nil, err
	}
	// The pods a simulation moves are scheduled again: they get the default
	// topology spread constraints as the pending ones did.
	src.Provisioner.DefaultSpread().ApplyToNodes(ctx, sched.ExistingNodes)
	sched.Cache = src.Cache
	existing := make(map[string]*scheduling.ExistingNode, len(sched.ExistingNodes))
	for _, e := range sched.ExistingNodes {
		existing[e.Name] = e
	}
	in := &disruption.Input{Now: src.Now, Scheduling: sched, Options: src.Options, Events: src.Events}
	if src.Options.NodeRepair {
		in.RepairPolicies = src.CloudProvider.RepairPolicies()
	}
	pools := map[string]*v1.NodePool{}
	for _, np := range src.Cluster.NodePools() {
		pools[np.Name] = np
		its, err := src.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			// Its nodes cannot be priced, so they will not be consolidated; other
			// methods still apply.
			if cloudprovider.IsUnevaluatedNodePoolError(err) {
				log.FromContext(ctx).V(1).Info("skipping, node overlays are not applied yet", "nodepool", np.Name)
			} else {
				log.FromContext(ctx).Error(err, "getting instance types for pricing", "nodepool", np.Name)
			}
		} else if np.Spec.Replicas != nil {
			// What a static pool's drifted node is replaced with.
			if claim := provisioning.StaticClaimOf(np, its); claim != nil {
				if in.StaticClaims == nil {
					in.StaticClaims = map[string]*scheduling.NewClaim{}
				}
				in.StaticClaims[np.Name] = claim
			}
		}
		in.NodePools = append(in.NodePools, &disruption.NodePool{NodePool: np, InstanceTypes: its})
	}
	for _, sn := range src.Cluster.Nodes() {
		e := existing[sn.Name()]
		if buffered := src.Cluster.BufferPods(sn); e != nil && len(buffered) > 0 {
			// The room CapacityBuffers keep on the node counts as taken: their
			// virtual pods are the node's pods for the pass (a copy: the
			// slice is cluster state's).
			e.Pods = append(e.Pods[:len(e.Pods):len(e.Pods)], buffered...)
		}
		n := &disruption.Node{
			Name:        sn.Name(),
			Node:        sn.Node,
			NodeClaim:   sn.NodeClaim,
			Existing:    e,
			NodePool:    sn.NodePool(),
			Initialized: sn.Initialized(),
			Deleting:    (sn.Node != nil && sn.Node.DeletionTimestamp != nil) || (sn.NodeClaim != nil && sn.NodeClaim.DeletionTimestamp != nil),
			Nominated:   src.Cluster.IsNominated(sn.Name()),
		}
		n.MarkedForDeletion = sn.MarkedForDeletion()
		if sn.NodeClaim != nil {
			n.MarkedForDeletion = n.MarkedForDeletion || (src.InQueue != nil && src.InQueue(sn.NodeClaim.Name))
			n.Nominated = n.Nominated || src.Cluster.IsNominated(sn.NodeClaim.Name)
		}
		in.Nodes = append(in.Nodes, n)
	}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := src.Kube.List(ctx, pdbs); err != nil {
		return nil, nil, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	for i := range pdbs.Items {
		in.PDBs = append(in.PDBs, &pdbs.Items[i])
	}
	return in, pools, nil
}
