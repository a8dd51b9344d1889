package interruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption/messages"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
)

// Workers is how many messages of a batch are handled at once (a batch is at
// most sqs.MaxMessages).
const Workers = 10

// Retry backoff after a failed pass (queue missing, no permission, API server
// unreachable): doubling from MinBackoff up to MaxBackoff, reset by a pass
// that succeeds.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// Field index names on the manager's cache: the EC2 instance ID of a
// NodeClaim's status.providerID and of a Node's spec.providerID.
const (
	NodeClaimInstanceIDIndex = "karpenter.k8s.aws/interruption.nodeclaim.instance-id"
	NodeInstanceIDIndex      = "karpenter.k8s.aws/interruption.node.instance-id"
)

// Options of the Controller; zero values are the defaults.
type Options struct {
	MinBackoff, MaxBackoff time.Duration
}

// Controller drains the interruption queue. See the package documentation.
type Controller struct {
	handler
	queue *sqs.Provider
	opts  Options
}

// handler acts on messages: what the queue controller and the instance status
// controller share.
type handler struct {
	kube        client.Client
	unavailable *instancetype.UnavailableOfferings
	recorder    record.EventRecorder
	clock       clock.Clock
	// indexed: the instance-ID indexes are on kube's cache (Register added
	// them), so lookups select by index instead of listing.
	indexed bool
}

// NewController returns the controller for queue. unavailable is the
// instance type provider's unavailable-offerings cache, which spot
// interruptions add to.
func NewController(kube client.Client, queue *sqs.Provider, unavailable *instancetype.UnavailableOfferings, recorder record.EventRecorder, clk clock.Clock, opts Options) *Controller {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	return &Controller{handler: handler{kube: kube, unavailable: unavailable, recorder: recorder, clock: clk}, queue: queue, opts: opts}
}

// Register adds the instance-ID indexes to mgr's cache and the controller as
// a Runnable. kube must be mgr's cached client for the indexes to serve it.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	if err := indexInstanceIDs(ctx, mgr); err != nil {
		return err
	}
	c.indexed = true
	return mgr.Add(c)
}

// indexed are the managers whose caches have the instance-ID indexes: both
// controllers need them, and a cache refuses an index added twice.
var indexed = struct {
	sync.Mutex
	managers map[manager.Manager]bool
}{managers: map[manager.Manager]bool{}}

// indexInstanceIDs adds the instance-ID indexes to mgr's cache, once.
func indexInstanceIDs(ctx context.Context, mgr manager.Manager) error {
	indexed.Lock()
	defer indexed.Unlock()
	if indexed.managers[mgr] {
		return nil
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1.NodeClaim{}, NodeClaimInstanceIDIndex, func(o client.Object) []string {
		return nonEmpty(InstanceID(o.(*v1.NodeClaim).Status.ProviderID))
	}); err != nil {
		return fmt.Errorf("indexing NodeClaims by instance ID: %w", err)
	}
	if err := idx.IndexField(ctx, &corev1.Node{}, NodeInstanceIDIndex, func(o client.Object) []string {
		return nonEmpty(InstanceID(o.(*corev1.Node).Spec.ProviderID))
	}); err != nil {
		return fmt.Errorf("indexing Nodes by instance ID: %w", err)
	}
	indexed.managers[mgr] = true
	return nil
}

// NeedLeaderElection: only the leader acts on messages (two replicas would
// each receive a share of them anyway).
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls the queue until ctx ends. A failed pass is logged and retried
// with backoff; it never ends the loop.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("interruption").WithValues("queue", c.queue.Name())
	ctx = log.IntoContext(ctx, logger)
	logger.Info("watching interruption queue")
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if _, err := c.Reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			backoff = min(max(2*backoff, c.opts.MinBackoff), c.opts.MaxBackoff)
			logger.Error(err, "handling interruption queue", "retryIn", backoff.String())
			select {
			case <-ctx.Done():
			case <-c.clock.After(backoff):
			}
			continue
		}
		backoff = 0
	}
	return nil
}

// Reconcile is one pass: receive a batch (waiting up to the long-poll time
// when the queue is empty), handle its messages in parallel and delete the
// handled ones. It returns how many messages it received.
func (c *Controller) Reconcile(ctx context.Context) (int, error) {
	msgs, err := c.queue.Receive(ctx)
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	find := c.finder(ctx)
	errs := make([]error, len(msgs))
	workqueue.ParallelizeUntil(ctx, Workers, len(msgs), func(i int) { errs[i] = c.handle(ctx, find, msgs[i]) })
	return len(msgs), errors.Join(errs...)
}

// handle acts on one message and deletes it, unless acting failed (then it
// comes back after its visibility timeout).
func (c *Controller) handle(ctx context.Context, find finder, m sqs.Message) error {
	logger := log.FromContext(ctx).WithValues("messageID", m.ID)
	msg, err := messages.Parse(m.Body)
	if err != nil {
		// Retrying would not make it parse: drop it, loudly.
		logger.Error(err, "deleting unparsable interruption message")
		ReceivedMessages.WithLabelValues(MessageTypeUnparsable).Inc()
		return c.delete(ctx, m, msg)
	}
	ReceivedMessages.WithLabelValues(string(msg.Kind)).Inc()
	logger = logger.WithValues("messageKind", msg.Kind)
	var errs []error
	for _, id := range msg.InstanceIDs {
		ncs, node, err := find(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, nc := range ncs {
			if err := c.act(log.IntoContext(ctx, logger), msg, nc, node); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handling %s message %s: %w", msg.Kind, m.ID, err)
	}
	return c.delete(ctx, m, msg)
}

func (c *Controller) delete(ctx context.Context, m sqs.Message, msg messages.Message) error {
	sent := m.SentTime
	if sent.IsZero() {
		sent = msg.Time
	}
	if err := c.queue.Delete(ctx, m); err != nil {
		return err
	}
	DeletedMessages.Inc()
	if !sent.IsZero() {
		MessageQueueDuration.Observe(max(c.clock.Since(sent).Seconds(), 0))
	}
	return nil
}

// act applies the message to one of the cluster's NodeClaims: an event on it
// and its Node, the spot offering marked unavailable on a spot interruption,
// and the NodeClaim deleted when the instance is going away.
func (c *handler) act(ctx context.Context, msg messages.Message, nc *v1.NodeClaim, node *corev1.Node) error {
	n, ok := noticeFor(msg)
	if !ok {
		return nil
	}
	publish(c.recorder, nc, node, n)
	if msg.Kind == messages.SpotInterruptionKind && c.unavailable != nil {
		it, zone := nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone]
		if it != "" && zone != "" {
			c.unavailable.MarkUnavailable(v1.CapacityTypeSpot, it, zone)
		}
	}
	if forceful(msg.Kind) {
		if err := c.annotateTerminationTimestamp(ctx, nc); err != nil {
			return err
		}
	}
	if !deletes(msg.Kind) || nc.DeletionTimestamp != nil {
		return nil
	}
	if err := c.kube.Delete(ctx, nc); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
	}
	log.FromContext(ctx).Info("deleting nodeclaim on interruption message", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
	publish(c.recorder, nc, node, notice{corev1.EventTypeWarning, ReasonTerminatingOnInterruption, fmt.Sprintf("Interruption (%s) triggered termination", msg.Kind)})
	metrics.CountDisrupted(nc, string(msg.Kind), "", 0)
	return nil
}

// deletes: the kinds after which the instance goes away, so the node is
// drained and its NodeClaim deleted (upstream's CordonAndDrain, and its
// ForcefulTermination for failed status checks).
func deletes(k messages.Kind) bool {
	switch k {
	case messages.SpotInterruptionKind, messages.ScheduledChangeKind, messages.InstanceStoppedKind,
		messages.InstanceTerminatedKind, messages.CapacityReservationInterruptionKind,
		messages.InstanceStatusKind, messages.SystemStatusKind, messages.EventStatusKind:
		return true
	}
	return false
}

// forceful: the kinds whose instance is already broken, so the drain need not
// wait for pod disruption budgets or volume detachment: the NodeClaim's
// termination timestamp is set to now before it is deleted.
func forceful(k messages.Kind) bool {
	return k == messages.InstanceStatusKind || k == messages.SystemStatusKind
}

// annotateTerminationTimestamp sets karpenter.sh/nodeclaim-termination-timestamp
// to now, unless the NodeClaim already has one.
func (c *handler) annotateTerminationTimestamp(ctx context.Context, nc *v1.NodeClaim) error {
	if _, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = c.clock.Now().UTC().Format(time.RFC3339)
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the termination timestamp of nodeclaim %s: %w", nc.Name, err))
	}
	return nil
}

// finder returns the NodeClaims and the Node of an instance.
type finder func(ctx context.Context, instanceID string) ([]*v1.NodeClaim, *corev1.Node, error)

// finder selects through the cache indexes when Register added them, and
// otherwise lists NodeClaims and Nodes once for the whole batch.
func (c *handler) finder(ctx context.Context) finder {
	if c.indexed {
		return c.findIndexed
	}
	var claims map[string][]*v1.NodeClaim
	var nodes map[string]*corev1.Node
	var listErr error
	ncList, nodeList := &v1.NodeClaimList{}, &corev1.NodeList{}
	if err := c.kube.List(ctx, ncList); err != nil {
		listErr = fmt.Errorf("listing nodeclaims: %w", err)
	} else if err := c.kube.List(ctx, nodeList); err != nil {
		listErr = fmt.Errorf("listing nodes: %w", err)
	} else {
		claims, nodes = map[string][]*v1.NodeClaim{}, map[string]*corev1.Node{}
		for i := range ncList.Items {
			if id := InstanceID(ncList.Items[i].Status.ProviderID); id != "" {
				claims[id] = append(claims[id], &ncList.Items[i])
			}
		}
		for i := range nodeList.Items {
			if id := InstanceID(nodeList.Items[i].Spec.ProviderID); id != "" {
				nodes[id] = &nodeList.Items[i]
			}
		}
	}
	return func(_ context.Context, id string) ([]*v1.NodeClaim, *corev1.Node, error) {
		return claims[id], nodes[id], listErr
	}
}

func (c *handler) findIndexed(ctx context.Context, id string) ([]*v1.NodeClaim, *corev1.Node, error) {
	ncList := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, ncList, client.MatchingFields{NodeClaimInstanceIDIndex: id}); err != nil {
		return nil, nil, fmt.Errorf("looking up nodeclaims of instance %s: %w", id, err)
	}
	if len(ncList.Items) == 0 {
		return nil, nil, nil // not ours
	}
	nodeList := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodeList, client.MatchingFields{NodeInstanceIDIndex: id}); err != nil {
		return nil, nil, fmt.Errorf("looking up the node of instance %s: %w", id, err)
	}
	ncs := make([]*v1.NodeClaim, len(ncList.Items))
	for i := range ncList.Items {
		ncs[i] = &ncList.Items[i]
	}
	var node *corev1.Node
	if len(nodeList.Items) > 0 {
		node = &nodeList.Items[0]
	}
	return ncs, node, nil
}

// InstanceID is the EC2 instance ID of an AWS provider ID
// (aws:///<zone>/<instance id>), or "" for any other provider ID.
func InstanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
