package lifecycle

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Upstream's timeouts, counted from the NodeClaim's creation.
var (
	// LaunchTimeout: a NodeClaim not Launched by then is deleted.
	LaunchTimeout = 5 * time.Minute
	// RegistrationTimeout: a NodeClaim whose Node has not registered by then
	// is deleted (its instance with it), and its pods are provisioned again.
	RegistrationTimeout = 15 * time.Minute
)

// Liveness deletes NodeClaims that never launch or never register, counting
// them in karpenter_nodeclaims_disrupted_total with reason launch_timeout or
// registration_timeout. Like upstream it emits no event: the deletion itself
// and the NodePool's NodeRegistrationHealthy condition tell.
type Liveness struct {
	kubeClient client.Client
	clock      clock.Clock
}

// Reconcile deletes the NodeClaim past its timeout, or asks to be called again
// when the timeout would be reached.
func (l *Liveness) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	conds := conditions(nc, l.clock)
	if conds.Get(v1.ConditionTypeRegistered).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	timeout, what, reason := RegistrationTimeout, "registration", metrics.ReasonRegistrationTimeout
	if !conds.Get(v1.ConditionTypeLaunched).IsTrue() {
		timeout, what, reason = LaunchTimeout, "launch", metrics.ReasonLaunchTimeout
	}
	if left := timeout - l.clock.Since(nc.CreationTimestamp.Time); left > 0 {
		return reconcile.Result{RequeueAfter: left}, false, nil
	}
	if err := l.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, false, err
	}
	if what == "registration" {
		setNodeRegistrationHealthy(ctx, l.kubeClient, l.clock, nodePoolOf(nc), false,
			fmt.Sprintf("NodeClaim %s launched but its node did not register within %s", nc.Name, timeout))
	}
	metrics.CountDisrupted(nc, reason, "", 0)
	log.FromContext(ctx).Info("deleted nodeclaim: "+what+" timed out", "NodeClaim", nc.Name, "timeout", timeout.String(), "reason", reason)
	return reconcile.Result{}, true, nil
}
