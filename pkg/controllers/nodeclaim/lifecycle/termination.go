package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/instance"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// InstanceDeletePoll is how often Finalize checks on an instance whose
// deletion the cloud provider accepted but has not finished.
const InstanceDeletePoll = instance.Poll

// NodeDeletePoll is how often Finalize looks again at a Node it is waiting
// for, besides the Node events that bring it back sooner.
const NodeDeletePoll = 10 * time.Second

// ReasonTerminationGracePeriodExpiring is the event on a NodeClaim whose
// termination has a deadline.
const ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"

// Terminator finalizes deleted NodeClaims. Draining belongs to the Node: the
// Node's own finalizer (pkg/controllers/node/termination) drains it and
// deletes the instance, so the NodeClaim only
//
//  1. records its termination deadline: the annotation
//     karpenter.sh/nodeclaim-termination-timestamp = deletionTimestamp +
//     spec.terminationGracePeriod, which the Node's drain honours;
//  2. deletes its Node and waits for it to go;
//  3. makes sure the instance is gone (it may never have registered a Node);
//  4. then removes its finalizer.
type Terminator struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      record.EventRecorder
}

// Finalize makes progress on a deleting NodeClaim and removes its finalizer
// once its Node and instance are gone.
func (t *Terminator) Finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !hasFinalizer(nc) {
		return reconcile.Result{}, nil
	}
	if err := t.annotateDeadline(ctx, nc); err != nil {
		return conflictIsRequeue(client.IgnoreNotFound(err))
	}
	// A NodeClaim without a provider ID has not recorded a launch. If an
	// instance was created anyway (a crash between Create and the status
	// write), it carries the NodeClaim's name and garbage collection removes it
	// once the NodeClaim is gone.
	if nc.Status.ProviderID != "" {
		nodes, err := nodesForProviderID(ctx, t.kubeClient, nc.Status.ProviderID)
		if err != nil {
			return reconcile.Result{}, err
		}
		if len(nodes) > 0 {
			for _, node := range nodes {
				if node.DeletionTimestamp.IsZero() {
					if err := t.kubeClient.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
						return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
					}
				}
			}
			// The Node's finalizer drains it; its removal brings us back.
			return reconcile.Result{RequeueAfter: NodeDeletePoll}, nil
		}
		terminated, err := instance.EnsureTerminated(ctx, t.kubeClient, t.cloudProvider, t.clock, nc, true)
		if err != nil {
			return conflictIsRequeue(client.IgnoreNotFound(err))
		}
		if !terminated {
			return reconcile.Result{RequeueAfter: InstanceDeletePoll}, nil
		}
	}
	stored := nc.DeepCopy()
	removeFinalizer(nc)
	if err := t.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return conflictIsRequeue(client.IgnoreNotFound(err))
	}
	metrics.NodeClaimsTerminatedTotal.WithLabelValues(nodePoolOf(nc), nc.Labels[v1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
	if nc.DeletionTimestamp != nil {
		metrics.NodeClaimTerminationDuration.WithLabelValues(nodePoolOf(nc)).Observe(max(0, t.clock.Since(nc.DeletionTimestamp.Time).Seconds()))
	}
	if c := nc.StatusConditions().Get(v1.ConditionTypeInstanceTerminating); c.IsTrue() {
		metrics.InstanceTerminationDuration.WithLabelValues(nodePoolOf(nc)).Observe(t.clock.Since(c.LastTransitionTime.Time).Seconds())
	}
	log.FromContext(ctx).V(1).Info("finalized nodeclaim", "NodeClaim", nc.Name)
	return reconcile.Result{}, nil
}

// annotateDeadline records when the node's drain stops waiting for PDBs and
// do-not-disrupt pods. It is written once: deletionTimestamp does not change.
func (t *Terminator) annotateDeadline(ctx context.Context, nc *v1.NodeClaim) error {
	if nc.Spec.TerminationGracePeriod == nil || nc.DeletionTimestamp == nil {
		return nil
	}
	if _, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	deadline := nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration).UTC().Format(time.RFC3339)
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline
	if err := t.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	if t.recorder != nil {
		t.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonTerminationGracePeriodExpiring, "All pods will be deleted by %s", deadline)
	}
	return nil
}
