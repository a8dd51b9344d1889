package lifecycle

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"
	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Name of the lifecycle controller.
const Name = "nodeclaim.lifecycle"

// step is one stage of the lifecycle. It mutates the NodeClaim in memory;
// Controller writes the result back. A step that deletes the NodeClaim
// reports it through deleted so later steps and the write-back are skipped.
type step interface {
	Reconcile(ctx context.Context, nc *v1.NodeClaim) (res reconcile.Result, deleted bool, err error)
}

// Controller runs launch, registration, initialization and liveness for
// NodeClaims, and Finalize for deleting ones.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock

	Launch         *Launch
	Registration   *Registration
	Initialization *Initialization
	Liveness       *Liveness
	Terminator     *Terminator

	// registered holds the UIDs of the NodeClaims whose registration was
	// counted (NodesCreatedTotal), until they are finalized.
	registered sync.Map
	// applied holds, per NodeClaim UID, the status lifecycle last applied
	// (lastApplied, see writeStatus and readOwnWrites), until the NodeClaim
	// is finalized.
	applied sync.Map
	// uids maps a NodeClaim's name to the UID the maps above (and the launch
	// cache) know it by: a reconcile of a NodeClaim that is gone has only its
	// name, and one that vanished without lifecycle seeing its finalizer go
	// (another actor removed the finalizer, a forced delete) must still be
	// forgotten, or every such NodeClaim leaks its entries.
	uids sync.Map
}

// NewController wires the lifecycle steps. recorder may be nil.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) *Controller {
	if recorder == nil {
		recorder = nopRecorder{}
	}
	return &Controller{
		kubeClient:     kubeClient,
		clock:          clk,
		Launch:         &Launch{kubeClient: kubeClient, cloudProvider: cloudProvider, clock: clk, recorder: recorder, cache: newLaunchCache()},
		Registration:   &Registration{kubeClient: kubeClient, clock: clk, recorder: recorder},
		Initialization: &Initialization{kubeClient: kubeClient, clock: clk},
		Liveness:       &Liveness{kubeClient: kubeClient, clock: clk},
		Terminator:     &Terminator{kubeClient: kubeClient, cloudProvider: cloudProvider, clock: clk, recorder: recorder},
	}
}

// Reconcile advances one NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = instrumented.WithController(ctx, Name)
	nc := &v1.NodeClaim{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			if uid, ok := c.uids.LoadAndDelete(req.Name); ok {
				c.forget(uid.(types.UID))
			}
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A NodeClaim recreated under the same name is another UID: the old one's
	// entries go now, since no reconcile will name it again.
	if old, loaded := c.uids.Swap(nc.Name, nc.UID); loaded && old.(types.UID) != nc.UID {
		c.forget(old.(types.UID))
	}
	if !nc.DeletionTimestamp.IsZero() {
		res, err := c.Terminator.Finalize(ctx, nc)
		if err == nil && !hasFinalizer(nc) {
			c.forget(nc.UID)
			c.uids.CompareAndDelete(nc.Name, nc.UID)
		}
		return res, err
	}
	// The finalizer goes on before anything is launched, so that an instance
	// never exists for a NodeClaim that could vanish without cleaning it up.
	if !hasFinalizer(nc) {
		stored := nc.DeepCopy()
		nc.Finalizers = append(nc.Finalizers, v1.TerminationFinalizer)
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return conflictIsRequeue(client.IgnoreNotFound(err))
		}
	}

	c.readOwnWrites(nc)
	stored := nc.DeepCopy()
	conditions(nc, c.clock).InitializeConditions()
	ctx = withPass(ctx)

	var results []reconcile.Result
	var errs []error
	for _, s := range []step{c.Launch, c.Registration, c.Initialization, c.Liveness} {
		res, deleted, err := s.Reconcile(ctx, nc)
		if deleted {
			return reconcile.Result{}, nil
		}
		results = append(results, res)
		errs = append(errs, err)
	}

	// Labels and annotations (from launch) first, then status: if the status
	// write is lost the next pass repeats the steps, which are idempotent.
	if !equality.Semantic.DeepEqual(stored.ObjectMeta, nc.ObjectMeta) {
		// The patch carries metadata only: the status changed in memory goes
		// by its own apply below (the API server would drop it from a write
		// of the main resource anyway, after decoding and diffing it).
		meta := &v1.NodeClaim{ObjectMeta: *nc.ObjectMeta.DeepCopy()}
		base := &v1.NodeClaim{ObjectMeta: *stored.ObjectMeta.DeepCopy()}
		if err := c.kubeClient.Patch(ctx, meta, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return conflictIsRequeue(client.IgnoreNotFound(err))
		}
		nc.ObjectMeta = meta.ObjectMeta
		stored.ResourceVersion = nc.ResourceVersion
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		if err := c.writeStatus(ctx, stored, nc); err != nil {
			return conflictIsRequeue(client.IgnoreNotFound(err))
		}
		// Counted once the Registered transition is stored, and once per
		// NodeClaim: the writes are unconditional, so a pass that read a copy
		// older than its own last write registers the node again.
		if !stored.StatusConditions().IsTrue(v1.ConditionTypeRegistered) && nc.StatusConditions().IsTrue(v1.ConditionTypeRegistered) {
			if _, counted := c.registered.LoadOrStore(nc.UID, struct{}{}); !counted {
				metrics.NodesCreatedTotal.WithLabelValues(nodePoolOf(nc), nc.Labels[corev1.LabelTopologyZone]).Inc()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return soonest(results...), nil
}

// forget drops what lifecycle remembers about the NodeClaim with uid.
func (c *Controller) forget(uid types.UID) {
	c.Launch.cache.forget(uid)
	c.registered.Delete(uid)
	c.applied.Delete(uid)
}

// ownedConditions are the NodeClaim conditions lifecycle writes: the steps'
// and the Ready they roll up into.
var ownedConditions = []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, status.ConditionReady}

// writeStatus stores what the steps changed in nc's status since stored was
// read, in one server-side apply as lifecycle's field manager and without an
// optimistic lock (see ownedconditions: candidacy and others write other
// conditions of the same NodeClaim meanwhile): the conditions lifecycle owns
// and the status fields it alone writes (provider ID, image, node name,
// capacity, allocatable).
//
// Lifecycle owns those fields once it applied them, so an apply that left
// one out would remove it. nc may be read from a cache older than lifecycle's
// own last write (a Node event can come first), so each field it once applied
// is sent again from memory when nc lacks it. After a restart the memory is
// empty, but every read then comes from a cache listed after the last write.
func (c *Controller) writeStatus(ctx context.Context, stored, nc *v1.NodeClaim) error {
	f := fieldsOf(nc)
	var prev lastApplied
	if v, ok := c.applied.Load(nc.UID); ok {
		prev = v.(lastApplied)
		f = f.or(prev.fields)
	}
	if equality.Semantic.DeepEqual(f, fieldsOf(stored)) && equality.Semantic.DeepEqual(owned(stored), owned(nc)) {
		return nil
	}
	if err := ownedconditions.ApplyWithFields(ctx, c.kubeClient, nc, ownedconditions.LifecycleManager, f.apply(), ownedConditions...); err != nil {
		// The write may or may not have landed: the next read decides the
		// conditions (the fields are still ours either way).
		c.applied.Store(nc.UID, lastApplied{fields: prev.fields})
		return err
	}
	c.applied.Store(nc.UID, lastApplied{fields: f, conditions: owned(nc)})
	return nil
}

// lastApplied is what lifecycle last applied to a NodeClaim's status, as the
// API server stored it.
type lastApplied struct {
	fields statusFields
	// conditions are lifecycle's own conditions as stored by the last apply;
	// nil when the outcome of the last apply is unknown.
	conditions []status.Condition
}

// readOwnWrites brings a NodeClaim read from the informer cache up to
// lifecycle's own last status write. Lifecycle is the only writer of its
// conditions and status fields, so what it last applied is their current
// value; but the cache may deliver an older copy first (an event of another
// controller's write, or of lifecycle's own metadata patch, committed before
// that apply). A pass working from that copy would redo the steps from an
// earlier state: set conditions it already set with a new lastTransitionTime,
// or regress them, and write again. Measured on the 1,000-pod benchmark this
// was one lifecycle status write in four.
func (c *Controller) readOwnWrites(nc *v1.NodeClaim) {
	v, ok := c.applied.Load(nc.UID)
	if !ok {
		return
	}
	last := v.(lastApplied)
	f := fieldsOf(nc).or(last.fields)
	nc.Status.ProviderID, nc.Status.ImageID, nc.Status.NodeName = f.ProviderID, f.ImageID, f.NodeName
	nc.Status.Capacity, nc.Status.Allocatable = f.Capacity, f.Allocatable
	remembered := last.conditions
	if c := nc.StatusConditions().Get(v1.ConditionTypeInitialized); c != nil && c.Reason == v1.RebootReasonRebooting {
		// The one write of lifecycle's conditions by another controller: a
		// reboot makes Initialized (and so Ready) Unknown after lifecycle's
		// last write, so the copy read knows better than memory.
		remembered = slices.DeleteFunc(slices.Clone(remembered), func(c status.Condition) bool {
			return c.Type == v1.ConditionTypeInitialized || c.Type == status.ConditionReady
		})
	}
	ownedconditions.Overlay(nc, remembered)
}

// statusFields are the NodeClaim status fields lifecycle writes besides its
// conditions.
type statusFields struct {
	ProviderID, ImageID, NodeName string
	Capacity, Allocatable         corev1.ResourceList
}

func fieldsOf(nc *v1.NodeClaim) statusFields {
	return statusFields{ProviderID: nc.Status.ProviderID, ImageID: nc.Status.ImageID, NodeName: nc.Status.NodeName,
		Capacity: nc.Status.Capacity, Allocatable: nc.Status.Allocatable}
}

// or fills the fields f lacks from prev.
func (f statusFields) or(prev statusFields) statusFields {
	if f.ProviderID == "" {
		f.ProviderID = prev.ProviderID
	}
	if f.ImageID == "" {
		f.ImageID = prev.ImageID
	}
	if f.NodeName == "" {
		f.NodeName = prev.NodeName
	}
	if len(f.Capacity) == 0 {
		f.Capacity = prev.Capacity
	}
	if len(f.Allocatable) == 0 {
		f.Allocatable = prev.Allocatable
	}
	return f
}

// apply is f as status JSON fields, the empty ones left out.
func (f statusFields) apply() map[string]any {
	out := map[string]any{}
	for k, v := range map[string]string{"providerID": f.ProviderID, "imageID": f.ImageID, "nodeName": f.NodeName} {
		if v != "" {
			out[k] = v
		}
	}
	if len(f.Capacity) > 0 {
		out["capacity"] = f.Capacity
	}
	if len(f.Allocatable) > 0 {
		out["allocatable"] = f.Allocatable
	}
	return out
}

func owned(nc *v1.NodeClaim) []status.Condition {
	return ownedconditions.Of(nc, ownedConditions...)
}

// Register adds the controller and its Node-side trigger to the manager.
// Deleted Nodes are finalized by pkg/controllers/node/termination.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	for _, index := range []func(context.Context, client.FieldIndexer) error{IndexNodeProviderID, IndexNodeClaimProviderID} {
		if err := index(ctx, mgr.GetFieldIndexer()); err != nil {
			// Another controller may have registered the same index already;
			// lookups work either way (they fall back to filtering a list).
			mgr.GetLogger().V(1).Info("field index not added", "error", err.Error())
		}
	}
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeToNodeClaims)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 50}).
		Complete(c)
}

// nodeToNodeClaims maps a Node event to the NodeClaim with the same provider ID.
func (c *Controller) nodeToNodeClaims(ctx context.Context, o client.Object) []reconcile.Request {
	return NodeToNodeClaims(ctx, c.kubeClient, o)
}

// NodeToNodeClaims maps a Node to its NodeClaim: the one its owner reference
// names, else those with the Node's provider ID (controllers that watch Nodes
// for their NodeClaims share it).
func NodeToNodeClaims(ctx context.Context, kubeClient client.Client, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	// Registered nodes name their NodeClaim in an owner reference.
	for _, ref := range node.OwnerReferences {
		if ref.Kind == "NodeClaim" && ref.APIVersion == v1.SchemeGroupVersion.String() {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
	}
	if node.Spec.ProviderID == "" {
		return nil
	}
	return nodeClaimsForProviderID(ctx, kubeClient, node.Spec.ProviderID)
}

func nodeClaimsForProviderID(ctx context.Context, c client.Client, providerID string) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingFields{NodeClaimProviderIDIndex: providerID}); err != nil {
		if err := c.List(ctx, list); err != nil {
			return nil
		}
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == providerID {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// conditions returns the NodeClaim's condition accessor stamping transitions
// with clk, so that tests on a fake clock see fake times.
func conditions(nc *v1.NodeClaim, clk clock.PassiveClock) status.ConditionSet {
	cs := nc.StatusConditions()
	cs.Now = clk.Now
	return cs
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == v1.TerminationFinalizer {
			return true
		}
	}
	return false
}

func removeFinalizer(o client.Object) { controllerutil.RemoveFinalizer(o, v1.TerminationFinalizer) }

// conflictIsRequeue turns an optimistic-lock conflict into an immediate,
// quiet retry: someone else wrote the object and we start over from it.
func conflictIsRequeue(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}

// soonest combines step results: the shortest positive RequeueAfter wins.
func soonest(results ...reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}
