package capacityreservation

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Interval is the pause between passes (upstream's minute).
const Interval = time.Minute

// loop runs pass every Interval while the manager runs and this replica
// leads.
type loop struct {
	name  string
	clock clock.Clock
	pass  func(ctx context.Context) error
}

// Start runs passes until ctx is done. It implements manager.Runnable.
func (l *loop) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(l.name)
	ctx = log.IntoContext(ctx, logger)
	for {
		if err := l.pass(ctx); err != nil {
			logger.Error(err, "pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.clock.After(Interval):
		}
	}
}

// NeedLeaderElection: only the leader deletes or relabels anything.
func (l *loop) NeedLeaderElection() bool { return true }

// Register adds the loop to the manager.
func (l *loop) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(l) }
