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

// Liveness deletes NodeClaims that never launch or never register.
type Liveness struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
}

// Reconcile deletes the NodeClaim past its timeout, or asks to be called again
// when the timeout would be reached.
func (l *Liveness) Reconcile(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, bool, error) {
	conds := conditions(nc, l.clock)
	if conds.Get(v1.ConditionTypeRegistered).IsTrue() {
		return reconcile.Result{}, false, nil
	}
	timeout, what := RegistrationTimeout, "registration"
	if !conds.Get(v1.ConditionTypeLaunched).IsTrue() {
		timeout, what = LaunchTimeout, "launch"
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
	l.recorder.Eventf(nc, corev1.EventTypeWarning, ReasonLivenessTimeout, "NodeClaim %s did not complete %s within %s, deleting", nc.Name, what, timeout)
	metrics.CountDisrupted(nc, metrics.ReasonLiveness, "", 0)
	log.FromContext(ctx).Info("deleted nodeclaim: "+what+" timed out", "NodeClaim", nc.Name, "timeout", timeout.String())
	return reconcile.Result{}, true, nil
}
