package kwok

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

const (
	// ProviderName is what Name returns.
	ProviderName = "kwok"
	// ProviderIDPrefix starts the providerID of every simulated node.
	ProviderIDPrefix = "kwok://"
	// NodeClaimLabelKey tags every simulated node with the NodeClaim it was
	// launched for; List selects on it.
	NodeClaimLabelKey = kwokv1alpha1.Group + "/nodeclaim"
	// FakeNodeKey (label and annotation, value "fake") hands the node to the
	// KWOK controller, which fakes its kubelet.
	FakeNodeKey   = "kwok.x-k8s.io/node"
	FakeNodeValue = "fake"
	// InstancePriceLabelKey carries the hourly price of the offering launched,
	// read by tools such as eks-node-viewer and by the demo's cost view.
	InstancePriceLabelKey = "eks-node-viewer/instance-price"
	// KwokPartitionLabelKey puts every simulated node in a KWOK controller
	// partition (a large cluster can split its nodes between several KWOK
	// controllers by this label); there is one, KwokPartitionValue.
	KwokPartitionLabelKey = "kwok-partition"
	KwokPartitionValue    = "a"
)

// kubeletBetaLabels are the deprecated os and arch labels a kubelet puts on its
// Node next to the stable ones, by the stable label they copy. A Node created
// without them gets them from kube-controller-manager's node lifecycle
// controller, one PATCH per node (a thousand at 1,000 nodes, racing
// registration's own node patch into conflicts), so the simulated kubelet
// sets them at creation as a real one does. They are the Node's, not the
// instance's: the NodeClaim view leaves them out.
var kubeletBetaLabels = map[string]string{
	"beta.kubernetes.io/os":   corev1.LabelOSStable,
	"beta.kubernetes.io/arch": corev1.LabelArchStable,
}

// NodeClassLabelKey is the label naming a node's KWOKNodeClass.
var NodeClassLabelKey = v1.NodeClassLabelKey(schema.GroupKind{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass"})

// CloudProvider simulates a cloud whose instances are Node objects.
type CloudProvider struct {
	kubeClient    client.Client
	clock         clock.Clock
	instanceTypes []*scheduling.InstanceType
	byName        map[string]*scheduling.InstanceType
	// allocatable per instance type name, computed once.
	allocatable map[string]corev1.ResourceList
	// ctx outlives single calls: delayed Node writes run under it.
	ctx context.Context

	// overlays, with the NodeOverlay gate, are applied to the instance
	// types a launch chooses from (nil: none).
	overlays cloudprovider.InstanceTypeOverlay

	mu sync.Mutex
	// pending holds launches whose Node has not been written yet, by NodeClaim name.
	pending map[string]*pendingLaunch
	rand    *rand.Rand
}

type pendingLaunch struct {
	// node is never modified after the launch was accepted.
	node   *corev1.Node
	since  time.Time
	cancel chan struct{}
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider for the given catalog. Delayed Node writes stop
// when ctx is done.
func New(ctx context.Context, kubeClient client.Client, clk clock.Clock, catalog []InstanceTypeOptions) *CloudProvider {
	cp := &CloudProvider{
		kubeClient:  kubeClient,
		clock:       clk,
		byName:      map[string]*scheduling.InstanceType{},
		allocatable: map[string]corev1.ResourceList{},
		ctx:         ctx,
		pending:     map[string]*pendingLaunch{},
		rand:        rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6b776f6b)),
	}
	for _, o := range catalog {
		it := toSchedulingInstanceType(o)
		cp.instanceTypes = append(cp.instanceTypes, it)
		cp.byName[it.Name] = it
		cp.allocatable[it.Name] = it.Allocatable()
	}
	return cp
}

// Name is "kwok".
func (c *CloudProvider) Name() string { return ProviderName }

// GetSupportedNodeClasses returns KWOKNodeClass.
func (c *CloudProvider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&kwokv1alpha1.KWOKNodeClass{}}
}

// UnhealthyCondition is the simulated fault KWOK's repair policies act on
// (upstream's name): a node carrying KWOKUnhealthy=True is replaced quickly.
const UnhealthyCondition corev1.NodeConditionType = "KWOKUnhealthy"

// RebootRequiredCondition is the simulated reboot-clearable fault (upstream's
// name): a node carrying KWOKRebootRequired=True is rebooted in place. It is a
// condition type of its own, not a KWOKUnhealthy reason, because the most
// disruptive eligible action wins and KWOKUnhealthy's replaces.
const RebootRequiredCondition corev1.NodeConditionType = "KWOKRebootRequired"

// RepairPolicies (upstream's KWOK policies): a node whose Ready is False or
// Unknown for 10 minutes is replaced without a drain; KWOKUnhealthy=True for
// 30 seconds, with a 45-second drain bound; KWOKRebootRequired=True for 30
// seconds is rebooted after a drain of at most a minute. Ready=False is the
// fallback.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	forceful, drain, rebootDrain := time.Duration(0), 45*time.Second, time.Minute
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute,
			TerminationGracePeriod: &forceful, Action: cloudprovider.ReplaceNode},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, ReasonRegex: ".*", TolerationDuration: 10 * time.Minute,
			TerminationGracePeriod: &forceful, Action: cloudprovider.ReplaceNode},
		{ConditionType: UnhealthyCondition, ConditionStatus: corev1.ConditionTrue, ReasonRegex: ".*", TolerationDuration: 30 * time.Second,
			TerminationGracePeriod: &drain, Action: cloudprovider.ReplaceNode},
		{ConditionType: RebootRequiredCondition, ConditionStatus: corev1.ConditionTrue, ReasonRegex: ".*", TolerationDuration: 30 * time.Second,
			TerminationGracePeriod: &rebootDrain, Action: cloudprovider.RebootNode},
	}
}

// Reboot simulates an in-place restart as upstream's KWOK does: there is no
// instance, so the Node only gets a new boot ID (derived from operationID, so
// a retried request for the same reboot changes nothing more), which is what
// the reboot controller takes as proof of a new boot. The simulated kubelet
// stays Ready throughout, and the fault condition stays until cleared.
func (c *CloudProvider) Reboot(ctx context.Context, nc *v1.NodeClaim, operationID string) error {
	if nc.Status.NodeName == "" {
		return fmt.Errorf("rebooting nodeclaim %s: its node is not registered", nc.Name)
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("rebooting node %s: %w", nc.Status.NodeName, err))
		}
		return fmt.Errorf("rebooting node %s: %w", nc.Status.NodeName, err)
	}
	stored := node.DeepCopy()
	node.Status.NodeInfo.BootID = "kwok-" + operationID
	if err := c.kubeClient.Status().Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("rebooting node %s: %w", node.Name, err)
	}
	return nil
}

// IsDrifted: simulated nodes never drift from their NodeClass.
func (c *CloudProvider) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// GetInstanceTypes returns the whole catalog whatever the NodePool; the solver
// filters by requirements. The returned objects are shared and must not be
// modified.
func (c *CloudProvider) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return c.instanceTypes, nil
}

// Create launches the cheapest available offering compatible with the
// NodeClaim's requirements and resource requests. See the package
// documentation for why it is idempotent.
func (c *CloudProvider) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	nodeClass, err := c.resolveNodeClass(ctx, nc)
	if err != nil {
		return nil, err
	}
	if existing, err := c.existing(ctx, nc.Name); err != nil || existing != nil {
		return existing, err
	}

	reqs := requirementsOf(nc)
	its := c.instanceTypes
	if pool := nc.Labels[v1.NodePoolLabelKey]; c.overlays != nil && pool != "" {
		if its, err = c.overlays.ApplyAll(pool, its); err != nil {
			return nil, fmt.Errorf("applying nodeoverlays: %w", err)
		}
	}
	it, offering, err := c.cheapest(its, reqs, nc.Spec.Resources.Requests)
	if err != nil {
		return nil, err
	}
	node := c.node(nc, nodeClass, reqs, it, offering)
	delay := nodeClass.Spec.NodeRegistrationDelay.Duration
	if delay <= 0 {
		// Nothing to wait for: write now, so the caller sees the Node at once.
		if err := c.kubeClient.Create(ctx, node); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// A concurrent Create for the same NodeClaim won: report its
				// instance, or ask to be retried while a cached client has not
				// seen it yet.
				existing, err := c.existing(ctx, nc.Name)
				if err == nil && existing == nil {
					err = fmt.Errorf("node %s exists but is not readable yet", nc.Name)
				}
				return existing, err
			}
			// The instance runs but its Node was not written: like a kubelet
			// that cannot join, the launch stands (a refused Node stays out,
			// any other error is retried in the background) and lifecycle
			// deletes the NodeClaim if no Node registers within the
			// registration timeout.
			log.FromContext(ctx).Error(err, "failed creating node from nodeclaim", "NodeClaim", nc.Name, "Node", node.Name)
			if refused(err) {
				c.keepUnregistered(nc, node)
			} else {
				c.launchLater(nc, node, 0)
			}
		}
	} else {
		c.launchLater(nc, node, delay)
	}
	return toNodeClaim(node, c.clock.Now()), nil
}

// resolveNodeClass returns the KWOKNodeClass the NodeClaim references, or a
// NodeClassNotReadyError when it is missing, being deleted or Ready=False (the
// NodeClaim is then deleted). A NodeClass whose Ready condition is not known
// yet launches, as upstream's KWOK provider does.
func (c *CloudProvider) resolveNodeClass(ctx context.Context, nc *v1.NodeClaim) (*kwokv1alpha1.KWOKNodeClass, error) {
	ref := nc.Spec.NodeClassRef
	if ref == nil {
		return nil, cloudprovider.NewCreateError(errors.New("nodeClassRef is not set"), "NodeClassRefMissing", "the NodeClaim has no nodeClassRef")
	}
	if ref.Group != kwokv1alpha1.Group || ref.Kind != "KWOKNodeClass" {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("unsupported NodeClass %s/%s", ref.Group, ref.Kind),
			"UnsupportedNodeClass", fmt.Sprintf("the kwok provider launches KWOKNodeClass only, not %s.%s", ref.Kind, ref.Group))
	}
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q not found", ref.Name))
		}
		return nil, err
	}
	if !nodeClass.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q is being deleted", ref.Name))
	}
	if ready := nodeClass.StatusConditions().Root(); ready.IsFalse() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q is not ready: %s", ref.Name, ready.Message))
	}
	return nodeClass, nil
}

// existing returns the instance already launched for the NodeClaim, pending
// or written, or nil.
func (c *CloudProvider) existing(ctx context.Context, name string) (*v1.NodeClaim, error) {
	c.mu.Lock()
	p, ok := c.pending[name]
	c.mu.Unlock()
	if ok {
		return toNodeClaim(p.node, p.since), nil
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if node.Labels[NodeClaimLabelKey] != name || !node.DeletionTimestamp.IsZero() {
		// A Node of that name that is not ours, or one on its way out: we
		// cannot launch under that name.
		return nil, cloudprovider.NewCreateError(fmt.Errorf("node %s exists and is not a live instance of this NodeClaim", name),
			"NodeNameTaken", fmt.Sprintf("node %s already exists", name))
	}
	return toNodeClaim(node, node.CreationTimestamp.Time), nil
}

func requirementsOf(nc *v1.NodeClaim) scheduling.Requirements {
	reqs := make([]scheduling.Requirement, 0, len(nc.Spec.Requirements))
	for _, r := range nc.Spec.Requirements {
		req := scheduling.NewRequirement(r.Key, r.Operator, r.Values...)
		req.MinValues = r.MinValues
		reqs = append(reqs, req)
	}
	return scheduling.NewRequirements(reqs...)
}

// cheapest picks the lowest-priced available offering, over all compatible
// instance types that can allocate the requested resources; ties are broken at
// random so that equal-priced zones share the load.
func (c *CloudProvider) cheapest(its []*scheduling.InstanceType, reqs scheduling.Requirements, requests corev1.ResourceList) (*scheduling.InstanceType, scheduling.Offering, error) {
	type choice struct {
		it *scheduling.InstanceType
		o  scheduling.Offering
	}
	var best []choice
	for _, it := range its {
		// The NodeClaim usually lists its candidate types; checking the name
		// first skips the full comparison (which formats an error) for the rest.
		if !reqs.Has(corev1.LabelInstanceTypeStable, it.Name) {
			continue
		}
		if err := reqs.Intersects(it.Requirements); err != nil {
			continue
		}
		if !fits(requests, c.allocatableOf(it)) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !reqs.Has(corev1.LabelTopologyZone, o.Zone) || !reqs.Has(v1.CapacityTypeLabelKey, o.CapacityType) {
				continue
			}
			if o.Requirements.Len() > 0 && reqs.Intersects(o.Requirements) != nil {
				continue
			}
			switch {
			case len(best) == 0 || o.Price < best[0].o.Price:
				best = append(best[:0], choice{it, o})
			case o.Price == best[0].o.Price:
				best = append(best, choice{it, o})
			}
		}
	}
	if len(best) == 0 {
		return nil, scheduling.Offering{}, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no available offering matches requirements %s", reqs))
	}
	c.mu.Lock()
	pick := best[c.rand.IntN(len(best))]
	c.mu.Unlock()
	return pick.it, pick.o, nil
}

// allocatableOf is the instance type's allocatable: computed once per type,
// or anew for a type a NodeOverlay added capacity to.
func (c *CloudProvider) allocatableOf(it *scheduling.InstanceType) corev1.ResourceList {
	if it.CapacityOverlaid {
		return it.Allocatable()
	}
	return c.allocatable[it.Name]
}

// SetInstanceTypeOverlay makes Create choose among the instance types of the
// NodeClaim's NodePool as the NodeOverlays change them: the cheapest by the
// overlaid prices, and a node carrying the extended resources an overlay
// added (as the device plugin it stands for would report them).
func (c *CloudProvider) SetInstanceTypeOverlay(o cloudprovider.InstanceTypeOverlay) { c.overlays = o }

var _ cloudprovider.OverlayAware = &CloudProvider{}

func fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		a, ok := allocatable[name]
		if !ok || a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// node builds the Node that is the instance.
func (c *CloudProvider) node(nc *v1.NodeClaim, nodeClass *kwokv1alpha1.KWOKNodeClass, reqs scheduling.Requirements, it *scheduling.InstanceType, o scheduling.Offering) *corev1.Node {
	labels := map[string]string{}
	// Single-valued requirements of the claim (e.g. a pinned zone or a custom
	// label the pods asked for) become labels, then the instance type's and the
	// offering's, then the claim's own labels, then ours.
	for _, r := range reqs.All() {
		if r.Operator() == corev1.NodeSelectorOpIn {
			if v, ok := r.Single(); ok {
				labels[r.Key] = v
			}
		}
	}
	for _, r := range it.Requirements.All() {
		if v, ok := r.Single(); ok && r.Operator() == corev1.NodeSelectorOpIn {
			labels[r.Key] = v
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	labels[corev1.LabelInstanceTypeStable] = it.Name
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[v1.CapacityTypeLabelKey] = o.CapacityType
	labels[corev1.LabelHostname] = nc.Name
	labels[NodeClaimLabelKey] = nc.Name
	labels[NodeClassLabelKey] = nodeClass.Name
	labels[FakeNodeKey] = FakeNodeValue
	labels[InstancePriceLabelKey] = fmt.Sprintf("%.6f", o.Price)
	labels[KwokPartitionLabelKey] = KwokPartitionValue
	if nc.Labels[v1.NodePoolLabelKey] != "" {
		labels[v1.NodePoolLabelKey] = nc.Labels[v1.NodePoolLabelKey]
	}
	// Registration sets these once Karpenter has seen the node; a fresh
	// instance does not carry them even if the claim asked for them.
	delete(labels, v1.NodeRegisteredLabelKey)
	delete(labels, v1.NodeInitializedLabelKey)
	for beta, stable := range kubeletBetaLabels {
		if v, ok := labels[stable]; ok {
			labels[beta] = v
		}
	}

	annotations := map[string]string{FakeNodeKey: FakeNodeValue}
	for k, v := range nc.Annotations {
		annotations[k] = v
	}

	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint}
	taints = append(taints, nc.Spec.Taints...)
	taints = append(taints, nc.Spec.StartupTaints...)

	capacity := it.Capacity.DeepCopy()
	allocatable := c.allocatableOf(it).DeepCopy()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        nc.Name,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{
			ProviderID: ProviderIDPrefix + nc.Name,
			Taints:     taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       corev1.NodePending,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels[corev1.LabelArchStable],
				OperatingSystem: labels[corev1.LabelOSStable],
			},
		},
	}
}

// launchLater writes the Node after delay on the provider's clock (at once
// when delay is not positive), unless the launch is cancelled (Delete) or the
// NodeClaim went away meanwhile. A launch whose Node could not be written
// stays pending (see writeNode).
func (c *CloudProvider) launchLater(nc *v1.NodeClaim, node *corev1.Node, delay time.Duration) {
	p := c.addPending(nc, node)
	var timer clock.Timer
	if delay > 0 {
		timer = c.clock.NewTimer(delay)
	}
	go func() {
		keep := false
		defer func() {
			if keep {
				return
			}
			c.mu.Lock()
			if c.pending[nc.Name] == p {
				delete(c.pending, nc.Name)
			}
			c.mu.Unlock()
		}()
		if timer != nil {
			select {
			case <-timer.C():
			case <-p.cancel:
				timer.Stop()
				return
			case <-c.ctx.Done():
				timer.Stop()
				return
			}
		}
		keep = c.writeNode(nc.Name, node, p.cancel)
	}()
}

// keepUnregistered records a launch whose Node will never be written: the
// instance is reported by Get and List, so it is not collected as vanished,
// until Delete terminates it.
func (c *CloudProvider) keepUnregistered(nc *v1.NodeClaim, node *corev1.Node) {
	c.addPending(nc, node)
}

func (c *CloudProvider) addPending(nc *v1.NodeClaim, node *corev1.Node) *pendingLaunch {
	p := &pendingLaunch{node: node, since: c.clock.Now(), cancel: make(chan struct{})}
	c.mu.Lock()
	c.pending[nc.Name] = p
	c.mu.Unlock()
	return p
}

// refused reports whether the API server rejected a Node for good (admission
// denied it, or it is invalid): writing it again cannot succeed.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// writeNode creates the Node, retrying transient API errors with a short
// backoff, as long as its NodeClaim still wants it. It returns true when it
// gave up while the NodeClaim still wanted the Node: the instance keeps
// running without one, and the NodeClaim's registration timeout replaces it.
func (c *CloudProvider) writeNode(claimName string, node *corev1.Node, cancel <-chan struct{}) bool {
	logger := log.FromContext(c.ctx).WithValues("NodeClaim", claimName, "Node", node.Name)
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		claim := &v1.NodeClaim{}
		err := c.kubeClient.Get(c.ctx, types.NamespacedName{Name: claimName}, claim)
		switch {
		case apierrors.IsNotFound(err):
			return false
		case err == nil && !claim.DeletionTimestamp.IsZero():
			return false
		case err == nil:
			err = c.kubeClient.Create(c.ctx, node.DeepCopy())
			if err == nil || apierrors.IsAlreadyExists(err) {
				return false
			}
			if refused(err) {
				logger.Error(err, "failed creating node from nodeclaim")
				return true
			}
		}
		if attempt >= 10 {
			// Give up: the NodeClaim is not registered within its timeout
			// and is replaced (Delete then drops the launch).
			logger.Error(err, "giving up writing simulated node")
			return true
		}
		select {
		case <-time.After(backoff):
		case <-cancel:
			return false
		case <-c.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// Delete removes the instance. Deleting the Node object is the simulated
// instance's termination, so once the Node is deleted (or on its way out
// behind finalizers) the instance is gone and Delete answers NodeClaimNotFound.
func (c *CloudProvider) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	name := nc.Name
	if id := nc.Status.ProviderID; id != "" {
		n, err := nameFromProviderID(id)
		if err != nil {
			return cloudprovider.NewNodeClaimNotFoundError(err)
		}
		name = n
	}
	c.mu.Lock()
	p, pendingFound := c.pending[name]
	if pendingFound {
		close(p.cancel)
		delete(c.pending, name)
	}
	c.mu.Unlock()

	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", name))
		}
		return err
	}
	if node.Labels[NodeClaimLabelKey] == "" {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s is not a kwok instance", name))
	}
	if node.DeletionTimestamp.IsZero() {
		if err := c.kubeClient.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", name, err)
		}
	}
	return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s terminated", name))
}

// Get returns the instance with the provider ID, pending or written.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	name, err := nameFromProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	c.mu.Lock()
	p, ok := c.pending[name]
	c.mu.Unlock()
	if ok {
		return toNodeClaim(p.node, p.since), nil
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", name))
		}
		return nil, err
	}
	if node.Labels[NodeClaimLabelKey] == "" || node.Spec.ProviderID != providerID || !node.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", name))
	}
	return toNodeClaim(node, node.CreationTimestamp.Time), nil
}

// List returns every live instance: written Nodes carrying the NodeClaim
// label, and launches still waiting for their registration delay.
func (c *CloudProvider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes, client.HasLabels{NodeClaimLabelKey}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*v1.NodeClaim
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !n.DeletionTimestamp.IsZero() || !strings.HasPrefix(n.Spec.ProviderID, ProviderIDPrefix) {
			continue
		}
		seen[n.Name] = true
		out = append(out, toNodeClaim(n, n.CreationTimestamp.Time))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, p := range c.pending {
		if !seen[name] {
			out = append(out, toNodeClaim(p.node, p.since))
		}
	}
	return out, nil
}

// toNodeClaim is the NodeClaim view of an instance: named after the NodeClaim
// it was launched for, with its labels, provider ID and resources, created at
// created (a pending launch's creation time is when it was accepted).
func toNodeClaim(node *corev1.Node, created time.Time) *v1.NodeClaim {
	labels := map[string]string{}
	for k, v := range node.Labels {
		if _, kubelet := kubeletBetaLabels[k]; !kubelet {
			labels[k] = v
		}
	}
	annotations := map[string]string{}
	for k, v := range node.Annotations {
		annotations[k] = v
	}
	name := node.Labels[NodeClaimLabelKey]
	if name == "" {
		name = node.Name
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Labels:            labels,
			Annotations:       annotations,
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: node.Labels[NodeClassLabelKey]},
		},
		Status: v1.NodeClaimStatus{
			ProviderID:  node.Spec.ProviderID,
			Capacity:    copyResources(node.Status.Capacity),
			Allocatable: copyResources(node.Status.Allocatable),
		},
	}
}

func copyResources(in corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range in {
		out[k] = v.DeepCopy()
	}
	return out
}

func nameFromProviderID(id string) (string, error) {
	if !strings.HasPrefix(id, ProviderIDPrefix) || len(id) == len(ProviderIDPrefix) {
		return "", fmt.Errorf("providerID %q is not a kwok providerID", id)
	}
	return strings.TrimPrefix(id, ProviderIDPrefix), nil
}
