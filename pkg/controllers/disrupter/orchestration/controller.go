package orchestration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// cleanupRetry: how long the start-up cleanup waits before trying again after an error.
const cleanupRetry = 5 * time.Second

// Register adds the queue's controller and its start-up cleanup to the
// manager. Both run only on the leader.
func (q *Queue) Register(mgr manager.Manager) error {
	q.reader = mgr.GetAPIReader()
	c, err := controller.NewTyped[string](Name, mgr, controller.TypedOptions[string]{
		Reconciler:              q,
		MaxConcurrentReconciles: maxConcurrentReconciles,
		// Errors are retried after 1s, doubling up to 10s.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](minPoll, maxPoll),
		NewQueue: func(name string, rl workqueue.TypedRateLimiter[string]) workqueue.TypedRateLimitingInterface[string] {
			cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: name}
			// Delayed requeues run on the queue's clock, so a fake clock drives them in tests.
			if wt, ok := q.clock.(clock.WithTicker); ok {
				cfg.Clock = wt
			}
			return workqueue.NewTypedRateLimitingQueueWithConfig(rl, cfg)
		},
	})
	if err != nil {
		return err
	}
	// The queue's own source: StartCommand adds commands through it.
	if err := c.Watch(source.TypedFunc[string](q.attach)); err != nil {
		return err
	}
	if err := c.Watch(source.TypedKind[*v1.NodeClaim, string](mgr.GetCache(), &v1.NodeClaim{},
		handler.TypedEnqueueRequestsFromMapFunc[*v1.NodeClaim, string](q.commandOf))); err != nil {
		return err
	}
	return mgr.Add(&orphanCleanup{q: q})
}

// attach hands the controller's work queue to the Queue and adds the commands
// started before the controller ran.
func (q *Queue) attach(_ context.Context, wq workqueue.TypedRateLimitingInterface[string]) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wq = wq
	for id, c := range q.commands {
		if c.phase != starting {
			wq.Add(id)
		}
	}
	return nil
}

// orphanCleanup runs CleanupOrphans once when this replica becomes leader,
// retrying until it succeeds.
type orphanCleanup struct{ q *Queue }

func (o *orphanCleanup) NeedLeaderElection() bool { return true }

func (o *orphanCleanup) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name)
	for {
		err := o.q.CleanupOrphans(ctx)
		if err == nil {
			return nil
		}
		logger.Error(err, "removing leftover disruption taints failed, retrying", "after", cleanupRetry)
		select {
		case <-ctx.Done():
			return nil
		case <-o.q.clock.After(cleanupRetry):
		}
	}
}

// CleanupOrphans removes karpenter.sh/disrupted:NoSchedule taints and
// DisruptionReason conditions that no command in the queue accounts for: a
// restart lost the command that put them there, and nobody would ever delete
// or un-taint those nodes. Nodes and NodeClaims being deleted keep theirs:
// their termination put the taint there and needs it.
func (q *Queue) CleanupOrphans(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name)
	ncs := &v1.NodeClaimList{}
	if err := q.kube.List(ctx, ncs); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := q.kube.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	claimOf := map[string]*v1.NodeClaim{} // by node name and by provider ID
	for i := range ncs.Items {
		nc := &ncs.Items[i]
		if nc.Status.NodeName != "" {
			claimOf["node/"+nc.Status.NodeName] = nc
		}
		if nc.Status.ProviderID != "" {
			claimOf["id/"+nc.Status.ProviderID] = nc
		}
	}
	var errs []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp != nil || !hasDisruptedTaint(n) {
			continue
		}
		nc := claimOf["node/"+n.Name]
		if nc == nil && n.Spec.ProviderID != "" {
			nc = claimOf["id/"+n.Spec.ProviderID]
		}
		removed, err := q.untaintOrphan(ctx, n.Name, nc)
		if err != nil {
			errs = append(errs, err)
		} else if removed {
			logger.Info("removed leftover disrupted taint, the command that put it there was lost", "node", n.Name)
		}
	}
	for i := range ncs.Items {
		nc := &ncs.Items[i]
		// A rebooting NodeClaim's DisruptionReason is the reboot's, not a
		// lost command's: the reboot controller clears it.
		if nc.DeletionTimestamp != nil || nc.StatusConditions().Get(v1.ConditionTypeDisruptionReason) == nil ||
			nc.StatusConditions().Get(v1.ConditionTypeRebooting).IsTrue() {
			continue
		}
		removed, err := q.withoutCommand(nc.Name, func() (bool, error) {
			return q.updateNodeClaimStatus(ctx, nc.Name, clearDisruptionReason)
		})
		if err != nil {
			errs = append(errs, err)
		} else if removed {
			logger.Info("removed leftover DisruptionReason condition, the command that set it was lost", "nodeclaim", nc.Name)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d leftover(s) not cleaned up, first: %w", len(errs), errs[0])
	}
	return nil
}

// untaintOrphan removes the disrupted taint from the node unless its NodeClaim
// is in the queue or being deleted (read fresh: it may have started since the list).
func (q *Queue) untaintOrphan(ctx context.Context, node string, nc *v1.NodeClaim) (bool, error) {
	name := ""
	if nc != nil {
		name = nc.Name
	}
	return q.withoutCommand(name, func() (bool, error) {
		if nc != nil {
			fresh := &v1.NodeClaim{}
			err := q.reader.Get(ctx, types.NamespacedName{Name: nc.Name}, fresh)
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			if err == nil && fresh.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return q.updateNode(ctx, node, removeDisruptedTaint)
	})
}

// withoutCommand runs f unless the NodeClaim is a candidate in the queue,
// holding off StartCommand's reservation meanwhile so that a command cannot
// start between the check and f.
func (q *Queue) withoutCommand(nodeClaim string, f func() (bool, error)) (bool, error) {
	q.startMu.Lock()
	defer q.startMu.Unlock()
	if nodeClaim != "" && q.Has(nodeClaim) {
		return false, nil
	}
	return f()
}
