package interruption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption/messages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancestatus"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
)

// InstanceStatusInterval is how often EC2's status checks are polled.
const InstanceStatusInterval = time.Minute

// UnauthorizedInstanceStatusMessage is logged, once, when the controller may
// not call ec2:DescribeInstanceStatus; polling then stops until restart.
const UnauthorizedInstanceStatusMessage = "ec2:DescribeInstanceStatus permission is not allowed, update the IAM policy and restart the Karpenter deployment to enable instance status health checks"

// categoryKinds are the message kinds of the status check categories acted on.
var categoryKinds = map[instancestatus.Category]messages.Kind{
	instancestatus.InstanceStatus: messages.InstanceStatusKind,
	instancestatus.SystemStatus:   messages.SystemStatusKind,
	instancestatus.EventStatus:    messages.EventStatusKind,
}

// StatusLister lists the instances EC2 reports unhealthy
// (instancestatus.Provider).
type StatusLister interface {
	List(ctx context.Context) ([]instancestatus.Health, error)
}

// InstanceStatusOptions of the InstanceStatusController; zero values are the
// defaults.
type InstanceStatusOptions struct {
	// Interval between polls (default InstanceStatusInterval). A failed poll
	// is retried sooner: after a backoff doubling from DefaultMinBackoff,
	// capped at Interval.
	Interval time.Duration
}

// InstanceStatusController polls EC2's status checks and scheduled events
// whether or not an interruption queue is configured. Each unhealthy
// instance of one of the cluster's NodeClaims is handled as an interruption
// message of its category's kind would be: events on the NodeClaim and Node,
// and the NodeClaim deleted (with its termination timestamp set to now when
// a status check failed, so the drain does not wait on a broken instance).
// karpenter_interruption_instance_status_unhealthy_total counts each
// instance once per category for as long as EC2 keeps reporting it.
type InstanceStatusController struct {
	handler
	statuses StatusLister
	opts     InstanceStatusOptions

	mu sync.Mutex
	// seen are the (instance, category) pairs counted and still reported.
	seen map[unhealthyKey]bool
}

type unhealthyKey struct {
	instanceID string
	category   instancestatus.Category
}

// NewInstanceStatusController returns the controller for statuses.
func NewInstanceStatusController(kube client.Client, statuses StatusLister, unavailable *instancetype.UnavailableOfferings, recorder record.EventRecorder, clk clock.Clock, opts InstanceStatusOptions) *InstanceStatusController {
	if opts.Interval <= 0 {
		opts.Interval = InstanceStatusInterval
	}
	return &InstanceStatusController{
		handler:  handler{kube: kube, unavailable: unavailable, recorder: recorder, clock: clk},
		statuses: statuses,
		opts:     opts,
		seen:     map[unhealthyKey]bool{},
	}
}

// Register adds the instance-ID indexes to mgr's cache (unless the queue
// controller did) and the controller as a Runnable.
func (c *InstanceStatusController) Register(ctx context.Context, mgr manager.Manager) error {
	if err := indexInstanceIDs(ctx, mgr); err != nil {
		return err
	}
	c.indexed = true
	return mgr.Add(c)
}

// NeedLeaderElection: only the leader acts.
func (c *InstanceStatusController) NeedLeaderElection() bool { return true }

// Start polls every Interval until ctx ends. A failed poll is logged and
// retried with backoff; a refused one (no ec2:DescribeInstanceStatus) ends
// polling.
func (c *InstanceStatusController) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("interruption.instancestatus")
	ctx = log.IntoContext(ctx, logger)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		wait := c.opts.Interval
		if err := c.Reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			if awserr.IsUnauthorized(err) {
				logger.Error(err, UnauthorizedInstanceStatusMessage)
				return nil
			}
			backoff = min(max(2*backoff, min(DefaultMinBackoff, c.opts.Interval)), c.opts.Interval)
			wait = backoff
			logger.Error(err, "polling instance status checks", "retryIn", wait.String())
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
		case <-c.clock.After(wait):
		}
	}
	return nil
}

// Reconcile is one poll: list the unhealthy instances and handle those of
// the cluster's NodeClaims.
func (c *InstanceStatusController) Reconcile(ctx context.Context) error {
	healths, err := c.statuses.List(ctx)
	if err != nil {
		return fmt.Errorf("getting instance statuses: %w", err)
	}
	find := c.finder(ctx)
	current := map[unhealthyKey]bool{}
	var currentMu sync.Mutex
	errs := make([]error, len(healths))
	workqueue.ParallelizeUntil(ctx, Workers, len(healths), func(i int) {
		keys, err := c.handleHealth(ctx, find, healths[i])
		errs[i] = err
		currentMu.Lock()
		for _, k := range keys {
			current[k] = true
		}
		currentMu.Unlock()
	})
	// Forget what is no longer reported (or failed to be handled), so that
	// an instance unhealthy again later is counted again.
	c.mu.Lock()
	for k := range c.seen {
		if !current[k] {
			delete(c.seen, k)
		}
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// handleHealth acts on one unhealthy instance, a message per category (the
// status checks' first, so that a forced termination timestamp is set before
// any deletion), and returns the (instance, category) pairs it handled.
func (c *InstanceStatusController) handleHealth(ctx context.Context, find finder, h instancestatus.Health) ([]unhealthyKey, error) {
	ncs, node, err := find(ctx, h.InstanceID)
	if err != nil {
		return nil, err
	}
	if len(ncs) == 0 {
		return nil, nil // not the cluster's
	}
	var keys []unhealthyKey
	var errs []error
	for _, category := range h.Categories() {
		kind, ok := categoryKinds[category]
		if !ok {
			continue
		}
		msg := messages.Message{Kind: kind, Source: "ec2:DescribeInstanceStatus", Time: h.ImpairedSince, InstanceIDs: []string{h.InstanceID}}
		logger := log.FromContext(ctx).WithValues("messageKind", kind, "instanceID", h.InstanceID)
		var failed bool
		for _, nc := range ncs {
			if err := c.act(log.IntoContext(ctx, logger), msg, nc, node); err != nil {
				errs = append(errs, err)
				failed = true
				continue
			}
			// The copy now shows the deletion, so that the instance's next
			// category does not delete and count it again.
			if deletes(kind) && nc.DeletionTimestamp == nil {
				nc.DeletionTimestamp = &metav1.Time{Time: c.clock.Now()}
			}
		}
		if failed {
			continue
		}
		key := unhealthyKey{instanceID: h.InstanceID, category: category}
		keys = append(keys, key)
		c.mu.Lock()
		counted := c.seen[key]
		c.seen[key] = true
		c.mu.Unlock()
		if !counted {
			logger.Info("detected unhealthy instance owned by cluster", "category", string(category))
			InstanceStatusUnhealthy.WithLabelValues(string(category)).Inc()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return keys, fmt.Errorf("handling instance status of %s: %w", h.InstanceID, err)
	}
	return keys, nil
}
