package disrupter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// rebootHistory remembers, per NodeClaim, when repair requested its reboots
// within disruption.RebootHistoryWindow (in memory, as upstream's: a restart
// forgets them).
type rebootHistory struct {
	mu sync.Mutex
	at map[types.UID][]time.Time
}

// record notes a reboot requested at now.
func (h *rebootHistory) record(uid types.UID, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at[uid] = append(h.prune(uid, now), now)
}

// recent counts each NodeClaim's reboots within the window before now.
func (h *rebootHistory) recent(now time.Time) map[types.UID]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[types.UID]int{}
	for uid := range h.at {
		if n := len(h.prune(uid, now)); n > 0 {
			out[uid] = n
		}
	}
	return out
}

func (h *rebootHistory) prune(uid types.UID, now time.Time) []time.Time {
	var kept []time.Time
	for _, t := range h.at[uid] {
		if now.Sub(t) < disruption.RebootHistoryWindow {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		delete(h.at, uid)
	} else {
		h.at[uid] = kept
	}
	return kept
}

// reboot requests the reboot a repair decision asks for: the NodeClaim gets
// the drain bound (karpenter.sh/reboot-termination-grace-period), the
// DisruptionReason condition (Unhealthy, which the drain's evictions are
// counted under) and Rebooting True with reason RebootRequested; the reboot
// controller does the rest. Nothing happens if the NodeClaim is already
// rebooting or being deleted; both writes are conditional on what was read,
// so two passes cannot request one reboot twice.
func (c *Controller) reboot(ctx context.Context, d *disruption.Decision) (bool, error) {
	cand := d.Candidates[0]
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: cand.NodeClaim.Name}, nc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if nc.UID != cand.NodeClaim.UID || nc.DeletionTimestamp != nil || nc.StatusConditions().Get(v1.ConditionTypeRebooting).IsTrue() {
		return false, nil
	}
	bound := d.Repair.TerminationGracePeriod
	if bound == nil && nc.Spec.TerminationGracePeriod != nil {
		bound = &nc.Spec.TerminationGracePeriod.Duration
	}
	stored := nc.DeepCopy()
	if bound != nil {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[v1.RebootTerminationGracePeriodAnnotationKey] = bound.String()
	} else {
		// An earlier reboot's bound does not apply to this one.
		delete(nc.Annotations, v1.RebootTerminationGracePeriodAnnotationKey)
	}
	if !equality.Semantic.DeepEqual(stored.Annotations, nc.Annotations) {
		if err := c.kube.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, conflictIsNoop(err)
		}
	}
	stored = nc.DeepCopy()
	conds := nc.StatusConditions()
	conds.Now = c.clock.Now
	reason := string(d.Method.Reason())
	conds.SetTrueWithReason(v1.ConditionTypeDisruptionReason, reason, reason)
	conds.SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonRequested,
		fmt.Sprintf("rebooting for %s=%s (reason %q)", d.Repair.Condition, d.Repair.Status, d.Repair.Reason))
	if err := c.kube.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, conflictIsNoop(err)
	}
	c.reboots.record(nc.UID, c.clock.Now())
	// State sees the reboot before its watch does: the next pass must not
	// pick the node again.
	c.cluster.UpdateNodeClaim(nc)
	DecisionsTotal.WithLabelValues(string(d.Action()), disruption.MetricReason(d.Method.Reason()), d.Method.ConsolidationType()).Inc()
	if np := nc.Labels[v1.NodePoolLabelKey]; np != "" {
		DecisionsByNodePoolTotal.WithLabelValues(np, string(d.Action()), disruption.MetricReason(d.Method.Reason()), d.Method.ConsolidationType()).Inc()
	}
	log.FromContext(ctx).Info("requested node reboot", "nodeclaim", nc.Name, "node", cand.Name, "explanation", d.Explanation)
	return true, nil
}

// conflictIsNoop: a conflict means the NodeClaim changed since it was read;
// the next pass decides again.
func conflictIsNoop(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
