package legacy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// ReplacementsAnnotation lists, on a Machine being replaced, the NodeClaims
// created for its pods; the Machine is deleted once they are Initialized.
const ReplacementsAnnotation = "karpenter.sh/legacy-replacements"

// ReasonReplacementBlocked: a drifted Machine's pods fit no NodePool.
const ReasonReplacementBlocked = "ReplacementBlocked"

// ReplacementTimeout is how long replacements may take to initialize before
// the attempt is abandoned (the replacements are deleted, the node untainted)
// and tried again.
const ReplacementTimeout = 10 * time.Minute

// Replacer replaces drifted Machines with NodePool capacity, replacement
// first, within the successor NodePool's Drifted budget (see the package
// documentation).
type Replacer struct {
	kube     client.Client
	prov     *provisioning.Provisioner
	cluster  *state.Cluster
	clock    clock.Clock
	recorder record.EventRecorder
	// Period between passes.
	Period time.Duration
}

// NewReplacer returns the replacer. recorder may be nil.
func NewReplacer(kube client.Client, prov *provisioning.Provisioner, cluster *state.Cluster, clk clock.Clock, recorder record.EventRecorder) *Replacer {
	return &Replacer{kube: kube, prov: prov, cluster: cluster, clock: clk, recorder: recorder, Period: 2 * time.Second}
}

// NeedLeaderElection: only the leader launches.
func (r *Replacer) NeedLeaderElection() bool { return true }

// Start runs passes until ctx ends.
func (r *Replacer) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("legacy.replacer"))
	for {
		if err := r.Reconcile(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "legacy replacement pass")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(r.Period):
		}
	}
}

// Reconcile runs one pass: replacements in progress move on, then drifted
// Machines start within their budgets.
func (r *Replacer) Reconcile(ctx context.Context) error {
	machines := &v1alpha5.MachineList{}
	if err := r.kube.List(ctx, machines); err != nil {
		return err
	}
	if len(machines.Items) == 0 {
		return nil
	}
	pools := &v1.NodePoolList{}
	if err := r.kube.List(ctx, pools); err != nil {
		return err
	}
	claims := &v1.NodeClaimList{}
	if err := r.kube.List(ctx, claims); err != nil {
		return err
	}
	claimByName := map[string]*v1.NodeClaim{}
	for i := range claims.Items {
		claimByName[claims.Items[i].Name] = &claims.Items[i]
	}
	var errs []error
	// disrupting counts, per successor NodePool, its legacy nodes going away.
	disrupting := map[string]int{}
	total := map[string]int{}
	var drifted []*v1alpha5.Machine
	for i := range machines.Items {
		m := &machines.Items[i]
		np := Successor(m.Labels[v1alpha5.ProvisionerNameLabelKey], pools.Items)
		if np == nil {
			continue
		}
		total[np.Name]++
		switch {
		case m.DeletionTimestamp != nil:
			disrupting[np.Name]++
		case m.Annotations[ReplacementsAnnotation] != "":
			disrupting[np.Name]++
			if err := r.progress(ctx, m, claimByName); err != nil {
				errs = append(errs, err)
			}
		case isTrue(m, ConditionDrifted):
			drifted = append(drifted, m)
		}
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		name := nc.Labels[v1.NodePoolLabelKey]
		total[name]++
		if nc.DeletionTimestamp != nil || nc.StatusConditions().IsTrue(v1.ConditionTypeDisruptionReason) {
			disrupting[name]++
		}
	}
	// Oldest first, as a rolling upgrade would.
	sort.SliceStable(drifted, func(i, j int) bool {
		return drifted[i].CreationTimestamp.Before(&drifted[j].CreationTimestamp)
	})
	for _, m := range drifted {
		np := Successor(m.Labels[v1alpha5.ProvisionerNameLabelKey], pools.Items)
		limit, _, err := disruption.BudgetLimit(np, v1.DisruptionReasonDrifted, total[np.Name], r.clock.Now())
		if err != nil {
			errs = append(errs, fmt.Errorf("nodepool %s: %w", np.Name, err))
			continue
		}
		if limit >= 0 && disrupting[np.Name] >= limit {
			continue
		}
		started, err := r.start(ctx, m, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("machine %s: %w", m.Name, err))
			continue
		}
		if started {
			disrupting[np.Name]++
		}
	}
	return errors.Join(errs...)
}

// start begins replacing a drifted Machine: its node is tainted, its pods
// solved against the NodePools alone and the replacement NodeClaims created.
// A Machine with nothing to move is deleted at once.
func (r *Replacer) start(ctx context.Context, m *v1alpha5.Machine, np *v1.NodePool) (bool, error) {
	logger := log.FromContext(ctx).WithValues("Machine", m.Name)
	node, err := NodeOf(ctx, r.kube, m)
	if err != nil {
		return false, err
	}
	var pods []*corev1.Pod
	if node != nil {
		all, err := termination.PodsOnNode(ctx, r.kube, node.Name)
		if err != nil {
			return false, err
		}
		now := r.clock.Now()
		for _, p := range all {
			if termination.HoldsDrain(p, now) && !scheduling.OwnedByDaemonSet(p) && !termination.IsTerminating(p) {
				pods = append(pods, p)
			}
		}
	}
	if len(pods) == 0 {
		logger.Info("deleting drifted machine, no pods to move")
		r.event(m, corev1.EventTypeNormal, "DisruptionTerminating", "Deleting drifted machine: no pods to move")
		return true, client.IgnoreNotFound(r.kube.Delete(ctx, m))
	}
	in, _, err := r.prov.SolverInput(ctx, pods)
	if err != nil {
		return false, err
	}
	// Legacy capacity is never a destination: every legacy node is about to go.
	kept := in.ExistingNodes[:0]
	for _, en := range in.ExistingNodes {
		if en.Labels[v1alpha5.ProvisionerNameLabelKey] == "" && en.Name != node.Name {
			kept = append(kept, en)
		}
	}
	in.ExistingNodes = kept
	res := scheduling.Solve(in)
	if len(res.PodErrors) > 0 {
		var why []string
		for p, perr := range res.PodErrors {
			why = append(why, fmt.Sprintf("%s/%s: %v", p.Namespace, p.Name, perr))
		}
		sort.Strings(why)
		msg := fmt.Sprintf("%d pod(s) fit no NodePool, the machine keeps running (run karpenter-convert report for selectors of karpenter.sh/provisioner-name): %s",
			len(why), strings.Join(why, "; "))
		r.event(m, corev1.EventTypeWarning, ReasonReplacementBlocked, msg)
		return false, r.blocked(ctx, m, msg)
	}
	if err := taintDisrupted(ctx, r.kube, node, true); err != nil {
		return false, err
	}
	poolByName := map[string]*v1.NodePool{}
	for _, p := range r.cluster.NodePools() {
		poolByName[p.Name] = p
	}
	var names []string
	for _, c := range res.NewClaims {
		pool, ok := poolByName[c.NodePool.Name]
		if !ok {
			continue
		}
		nc := provisioning.NewNodeClaim(pool, c)
		if err := r.kube.Create(ctx, nc); err != nil {
			return false, fmt.Errorf("creating replacement nodeclaim: %w", err)
		}
		r.cluster.UpdateNodeClaim(nc)
		r.cluster.Nominate(nc.Name)
		metrics.NodeClaimsCreatedTotal.WithLabelValues(disruption.MetricReason(v1.DisruptionReasonDrifted), pool.Name, strconv.FormatBool(c.MinValuesRelaxed)).Inc()
		names = append(names, nc.Name)
	}
	if len(names) == 0 {
		// The pods fit NodePool capacity that exists: go straight to the drain.
		logger.Info("deleting drifted machine, its pods fit existing nodepool capacity", "nodepool", np.Name)
		r.event(m, corev1.EventTypeNormal, "DisruptionTerminating", "Deleting drifted machine: its pods fit existing NodePool capacity")
		return true, client.IgnoreNotFound(r.kube.Delete(ctx, m))
	}
	stored := m.DeepCopy()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[ReplacementsAnnotation] = strings.Join(names, ",")
	if err := r.kube.Patch(ctx, m, client.MergeFrom(stored)); err != nil {
		return false, err
	}
	logger.Info("replacing drifted machine", "nodepool", np.Name, "replacements", names, "pods", len(pods))
	r.event(m, corev1.EventTypeNormal, "DisruptionLaunching", fmt.Sprintf("Launching NodeClaim(s) %s of NodePool %s for the %d pod(s) of drifted machine", strings.Join(names, ", "), np.Name, len(pods)))
	return true, nil
}

// progress moves a replacement on: once every replacement is Initialized
// the Machine is deleted (and drained by the Terminator); a replacement
// that vanished or a timeout abandons the attempt.
func (r *Replacer) progress(ctx context.Context, m *v1alpha5.Machine, claims map[string]*v1.NodeClaim) error {
	names := strings.Split(m.Annotations[ReplacementsAnnotation], ",")
	ready := true
	var gone []string
	oldest := r.clock.Now()
	for _, n := range names {
		nc, ok := claims[n]
		if !ok || nc.DeletionTimestamp != nil {
			gone = append(gone, n)
			continue
		}
		if nc.CreationTimestamp.Time.Before(oldest) {
			oldest = nc.CreationTimestamp.Time
		}
		r.cluster.Nominate(n)
		if !nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
			ready = false
		}
	}
	if len(gone) > 0 || (!ready && r.clock.Since(oldest) > ReplacementTimeout) {
		msg := fmt.Sprintf("replacement NodeClaim(s) %s went away", strings.Join(gone, ", "))
		if len(gone) == 0 {
			msg = fmt.Sprintf("replacements %s not initialized within %s", strings.Join(names, ", "), ReplacementTimeout)
		}
		r.event(m, corev1.EventTypeWarning, "DisruptionFailed", "Abandoned replacement: "+msg)
		for _, n := range names {
			if nc, ok := claims[n]; ok && nc.DeletionTimestamp == nil {
				if err := r.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
		if node, err := NodeOf(ctx, r.kube, m); err != nil {
			return err
		} else if node != nil {
			if err := taintDisrupted(ctx, r.kube, node, false); err != nil {
				return err
			}
		}
		stored := m.DeepCopy()
		delete(m.Annotations, ReplacementsAnnotation)
		return client.IgnoreNotFound(r.kube.Patch(ctx, m, client.MergeFrom(stored)))
	}
	if !ready {
		return nil
	}
	log.FromContext(ctx).Info("replacements initialized, deleting drifted machine", "Machine", m.Name, "replacements", names)
	r.event(m, corev1.EventTypeNormal, "DisruptionTerminating", fmt.Sprintf("Deleting drifted machine: replacements %s are initialized", strings.Join(names, ", ")))
	return client.IgnoreNotFound(r.kube.Delete(ctx, m))
}

// blocked records on MachineDrifted why the replacement cannot start.
func (r *Replacer) blocked(ctx context.Context, m *v1alpha5.Machine, msg string) error {
	stored := m.DeepCopy()
	if !setCondition(m, v1alpha5.Condition{Type: ConditionDrifted, Status: corev1.ConditionTrue, Reason: ReasonReplacementBlocked, Message: msg}, metav1.NewTime(r.clock.Now())) {
		return nil
	}
	err := r.kube.Status().Patch(ctx, m, client.MergeFrom(stored))
	if apierrors.IsConflict(err) {
		return nil
	}
	return client.IgnoreNotFound(err)
}

func (r *Replacer) event(o client.Object, kind, reason, msg string) {
	if r.recorder != nil {
		r.recorder.Event(o, kind, reason, msg)
	}
}

// taintDisrupted adds (or removes) karpenter.sh/disrupted:NoSchedule, so
// that no pod is scheduled onto a node about to be drained.
func taintDisrupted(ctx context.Context, kube client.Client, node *corev1.Node, add bool) error {
	fresh := &corev1.Node{}
	if err := kube.Get(ctx, types.NamespacedName{Name: node.Name}, fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	stored := fresh.DeepCopy()
	var taints []corev1.Taint
	has := false
	for _, t := range fresh.Spec.Taints {
		if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
			has = true
			if !add {
				continue
			}
		}
		taints = append(taints, t)
	}
	if add == has {
		return nil
	}
	if add {
		taints = append(taints, v1.DisruptedNoScheduleTaint)
	}
	fresh.Spec.Taints = taints
	return client.IgnoreNotFound(kube.Patch(ctx, fresh, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})))
}
