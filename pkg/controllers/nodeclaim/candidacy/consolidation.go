package candidacy

import (
	"fmt"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Reasons of a False Consolidatable condition.
const (
	ReasonConsolidationDisabled      = "ConsolidationDisabled"
	ReasonConsolidateAfterNotElapsed = "ConsolidateAfterNotElapsed"
)

// Consolidation computes the Consolidatable condition.
type Consolidation struct {
	clock clock.Clock
}

// Reconcile sets Consolidatable on nc (in memory) and returns when to look
// again: the instant consolidateAfter elapses, or never.
func (c *Consolidation) Reconcile(np *v1.NodePool, nc *v1.NodeClaim) reconcile.Result {
	conds := conditions(nc, c.clock)
	initialized := conds.Get(v1.ConditionTypeInitialized)
	if !initialized.IsTrue() {
		// Nothing runs on the node yet; Initialized says why.
		conds.Clear(v1.ConditionTypeConsolidatable)
		return reconcile.Result{}
	}
	after := np.Spec.Disruption.ConsolidateAfter
	if after.IsNever() {
		conds.SetFalse(v1.ConditionTypeConsolidatable, ReasonConsolidationDisabled,
			fmt.Sprintf("NodePool %q has consolidateAfter: Never", np.Name))
		return reconcile.Result{}
	}
	if *after.Duration == 0 {
		// Nothing to wait for, from whichever time. (Deciding it from the
		// last pod event would flip the condition to False and back on every
		// pod event: the podevents controller rounds the time up to the next
		// second, so for up to a second it lies ahead.)
		conds.SetTrueWithReason(v1.ConditionTypeConsolidatable, v1.ConditionTypeConsolidatable,
			fmt.Sprintf("NodePool %q consolidateAfter is 0s", np.Name))
		return reconcile.Result{}
	}
	// Until a pod event is seen, the clock starts when the node could first
	// take pods: its initialization.
	since, what := initialized.LastTransitionTime.Time, "the NodeClaim was initialized"
	if !nc.Status.LastPodEventTime.IsZero() {
		since, what = nc.Status.LastPodEventTime.Time, "the last pod event (status.lastPodEventTime)"
	}
	at := since.Add(*after.Duration)
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		conds.SetFalse(v1.ConditionTypeConsolidatable, ReasonConsolidateAfterNotElapsed,
			fmt.Sprintf("NodePool %q consolidateAfter (%s) has not elapsed since %s", np.Name, after, what))
		return reconcile.Result{RequeueAfter: wait}
	}
	conds.SetTrueWithReason(v1.ConditionTypeConsolidatable, v1.ConditionTypeConsolidatable,
		fmt.Sprintf("NodePool %q consolidateAfter (%s) elapsed since %s", np.Name, after, what))
	return reconcile.Result{}
}
