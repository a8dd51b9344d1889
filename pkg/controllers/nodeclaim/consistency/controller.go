// Package consistency is upstream's nodeclaim.consistency controller: every
// scan period it checks that a launched NodeClaim's Node is what the NodeClaim
// promised, records a FailedConsistencyCheck warning on the NodeClaim for each
// issue found, and keeps the NodeClaim's ConsistentStateFound condition: True
// once a check finds nothing, False (ConsistencyCheckFailed) while one does.
//
// The one check, as upstream's, is the node's shape: an initialized Node whose
// capacity of a requested resource is below 90% of the NodeClaim's status
// capacity.
package consistency

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"
	"github.com/karpenter-go/karpenter/pkg/events"
)

// Name of the controller (upstream's).
const Name = "nodeclaim.consistency"

// ScanPeriod is how often a NodeClaim is checked (upstream's 10 minutes).
const ScanPeriod = 10 * time.Minute

// EventFailedConsistencyCheck is the reason of the warning recorded on a
// NodeClaim for each issue a check finds.
const EventFailedConsistencyCheck = "FailedConsistencyCheck"

// Manager is the field manager the controller applies its condition as.
const Manager = "karpenter-nodeclaim-consistency"

// Reason and message of ConsistentStateFound=False (upstream's).
const (
	ReasonConsistencyCheckFailed  = "ConsistencyCheckFailed"
	MessageConsistencyCheckFailed = "Consistency Check Failed"
)

// Issue is one inconsistency, in words.
type Issue string

// Check finds the issues of a NodeClaim and its Node.
type Check func(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) []Issue

// Controller runs the checks.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	publisher     events.Publisher
	checks        []Check

	mu          sync.Mutex
	lastScanned map[types.UID]time.Time
	pruned      time.Time
}

// NewController returns the consistency controller. recorder may be nil.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk, publisher: events.NewPublisher(recorder, clk),
		checks: []Check{NodeShape}, lastScanned: map[types.UID]time.Time{}}
}

// Reconcile checks a launched NodeClaim at most once per ScanPeriod.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.Status.ProviderID == "" || !c.managed(nc) {
		return reconcile.Result{}, nil
	}
	if wait, ok := c.scanned(nc.UID); ok {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	node, err := c.node(ctx, nc)
	if err != nil || node == nil {
		// No Node yet, or several: registration is the lifecycle controller's.
		return reconcile.Result{}, nil
	}
	var issues []Issue
	for _, check := range c.checks {
		issues = append(issues, check(ctx, node, nc)...)
	}
	for _, issue := range issues {
		log.FromContext(ctx).Info("failed consistency check", "NodeClaim", nc.Name, "Node", node.Name, "issue", string(issue))
		c.publisher.Publish(FailedConsistencyCheckEvent(nc, string(issue)))
	}
	cs := nc.StatusConditions()
	cs.Now = c.clock.Now
	changed := false
	switch {
	case len(issues) > 0:
		changed = cs.SetFalse(v1.ConditionTypeConsistentStateFound, ReasonConsistencyCheckFailed, MessageConsistencyCheckFailed)
	case !cs.IsTrue(v1.ConditionTypeConsistentStateFound):
		changed = cs.SetTrue(v1.ConditionTypeConsistentStateFound)
	}
	if changed {
		if err := ownedconditions.Apply(ctx, c.kubeClient, nc, Manager, v1.ConditionTypeConsistentStateFound); err != nil {
			c.forget(nc.UID)
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{RequeueAfter: ScanPeriod}, nil
}

// FailedConsistencyCheckEvent is upstream's warning for one issue,
// deduplicated per NodeClaim and issue.
func FailedConsistencyCheckEvent(nc *v1.NodeClaim, issue string) events.Event {
	return events.Event{InvolvedObject: nc, Type: corev1.EventTypeWarning, Reason: EventFailedConsistencyCheck, Message: issue,
		DedupeValues: []string{string(nc.UID), issue}}
}

// NodeShape reports each resource the NodeClaim requested of which the
// initialized Node has less than 90% of the capacity the NodeClaim expected.
// Deleting and uninitialized NodeClaims have no issue.
func NodeShape(_ context.Context, node *corev1.Node, nc *v1.NodeClaim) []Issue {
	if !nc.DeletionTimestamp.IsZero() || !nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
		return nil
	}
	var issues []Issue
	for name, requested := range nc.Spec.Resources.Requests {
		expected := nc.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		actual := node.Status.Capacity[name]
		pct := actual.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if pct < 0.90 {
			issues = append(issues, Issue(fmt.Sprintf("expected %s of resource %s, but found %s (%0.1f%% of expected)",
				expected.String(), name, actual.String(), pct*100)))
		}
	}
	return issues
}

// scanned reports how long until the NodeClaim is due, when it was checked
// within ScanPeriod; otherwise it marks it checked now.
func (c *Controller) scanned(uid types.UID) (time.Duration, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.lastScanned[uid]; ok {
		if wait := ScanPeriod - now.Sub(last); wait > 0 {
			return wait, true
		}
	}
	if now.Sub(c.pruned) >= ScanPeriod {
		for k, last := range c.lastScanned {
			if now.Sub(last) >= ScanPeriod {
				delete(c.lastScanned, k)
			}
		}
		c.pruned = now
	}
	c.lastScanned[uid] = now
	return 0, false
}

func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.lastScanned, uid)
}

// managed: the NodeClaim's NodeClass is one of the provider's kinds.
func (c *Controller) managed(nc *v1.NodeClaim) bool {
	ref := nc.Spec.NodeClassRef
	if ref == nil {
		return false
	}
	for _, proto := range c.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(proto, c.kubeClient.Scheme())
		if err == nil && gvk.Group == ref.Group && gvk.Kind == ref.Kind {
			return true
		}
	}
	return false
}

// node returns the single Node with the NodeClaim's provider ID, or nil.
func (c *Controller) node(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	list := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, list, client.MatchingFields{lifecycle.ProviderIDIndex: nc.Status.ProviderID}); err != nil {
		// Without the index (a direct API client), filter a full list.
		if err := c.kubeClient.List(ctx, list); err != nil {
			return nil, err
		}
	}
	var found *corev1.Node
	for i := range list.Items {
		if list.Items[i].Spec.ProviderID != nc.Status.ProviderID {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("several nodes have providerID %s", nc.Status.ProviderID)
		}
		found = &list.Items[i]
	}
	return found, nil
}

// Register adds the controller to the manager: NodeClaims, and Nodes mapped
// to the NodeClaim of their provider ID.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeToNodeClaims)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

func (c *Controller) nodeToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	return lifecycle.NodeToNodeClaims(ctx, c.kubeClient, o)
}
