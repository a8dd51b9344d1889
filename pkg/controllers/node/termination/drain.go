package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination/eviction"
	"github.com/karpenter-go/karpenter/pkg/donotdisrupt"
	"github.com/karpenter-go/karpenter/pkg/events"
)

// PodNodeNameIndex is the field index of pods by spec.nodeName (see package
// podindex). A cached client needs it registered (Register does); a direct
// client sends it to the API server as a field selector, which pods support.
const PodNodeNameIndex = podindex.NodeName

// ReasonDisrupted is the event on a pod deleted, bypassing its PDB and
// do-not-disrupt annotation, because its node's terminationGracePeriod ends.
const ReasonDisrupted = "Disrupted"

// deadlineSlack tolerates the difference between the API server's clock
// (deletion timestamps) and ours when deciding whether a terminating pod's
// deletion already ends by the deadline.
const deadlineSlack = 5 * time.Second

// maxListed bounds how many waiting pods a drain message names.
const maxListed = 5

// Drainer taints a terminating node and evicts its pods.
type Drainer struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
	publisher  events.Publisher
	queue      *eviction.Queue
}

// doNotDisrupt is HasDoNotDisrupt, telling the pod in upstream's events what a
// duration or an invalid value of karpenter.sh/do-not-disrupt means for it.
func (d *Drainer) doNotDisrupt(p *corev1.Pod, now time.Time) bool {
	if p.Annotations[DoNotEvictAnnotationKey] == "true" {
		return true
	}
	return donotdisrupt.Active(p, now, d.publisher)
}

// DrainStatus is what is left on a node after a drain pass.
type DrainStatus struct {
	// Waiting is how many pods still hold the drain; 0 means drained.
	Waiting int
	// Message explains, for users, what the node waits for.
	Message string
	// Blocked is how many of the waiting pods are held by something that
	// is not progress: a PodDisruptionBudget or another eviction refusal,
	// or karpenter.sh/do-not-disrupt.
	Blocked int
}

// Drained reports whether no pod holds the node any more.
func (s DrainStatus) Drained() bool { return s.Waiting == 0 }

// Taint puts karpenter.sh/disrupted:NoSchedule on the node, so that nothing
// new is scheduled there while it drains, and labels it to be excluded from
// external load balancers, so that traffic moves away before the instance
// stops. A taint with the same key but another value or effect is replaced.
func (d *Drainer) Taint(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	var taints []corev1.Taint
	present := false
	for _, t := range node.Spec.Taints {
		if t.Key != v1.DisruptedTaintKey {
			taints = append(taints, t)
			continue
		}
		if v1.IsDisruptingTaint(t) && t.Effect == v1.DisruptedNoScheduleTaint.Effect && !present {
			present = true
			taints = append(taints, t)
		}
	}
	if !present {
		taints = append(taints, v1.DisruptedNoScheduleTaint)
	}
	node.Spec.Taints = taints
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[corev1.LabelNodeExcludeBalancers] = "karpenter"
	if equality.Semantic.DeepEqual(stored.Spec.Taints, node.Spec.Taints) && equality.Semantic.DeepEqual(stored.Labels, node.Labels) {
		return nil
	}
	// The optimistic lock keeps a concurrent taint change (the node's own
	// kubelet, another controller) from being overwritten by our list.
	if err := d.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	log.FromContext(ctx).Info("tainted node", "taint", v1.DisruptedTaintKey+":"+string(v1.DisruptedNoScheduleTaint.Effect))
	return nil
}

// Drain makes one pass over the node's pods:
//
//   - once the NodeClaim's termination deadline is near, a pod whose own
//     terminationGracePeriodSeconds would end past the deadline is deleted
//     directly, its grace period clamped to the time left (at least 1s),
//     bypassing PDBs and karpenter.sh/do-not-disrupt;
//   - the first tier that still has pods holding the drain has its
//     evictable pods queued for eviction (pods with an active do-not-disrupt
//     annotation are not: the node waits for them until the deadline);
//   - it reports how many pods are still waiting, and why.
//
// deadline is nil when the NodeClaim has no terminationGracePeriod.
func (d *Drainer) Drain(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim, deadline *time.Time) (DrainStatus, error) {
	pods, err := PodsOnNode(ctx, d.kubeClient, node.Name)
	if err != nil {
		return DrainStatus{}, fmt.Errorf("listing pods on node %s: %w", node.Name, err)
	}
	now := d.clock.Now()
	var holding []*corev1.Pod
	for _, p := range pods {
		if HoldsDrain(p, now) {
			holding = append(holding, p)
		}
	}
	if len(holding) == 0 {
		return DrainStatus{}, nil
	}
	if deadline != nil {
		if err := d.deleteBeforeDeadline(ctx, holding, *deadline, now); err != nil {
			return DrainStatus{}, err
		}
	}

	var tiers [tierCount][]*corev1.Pod
	for _, p := range holding {
		tiers[TierOf(p)] = append(tiers[TierOf(p)], p)
	}
	current := TierWorkload
	for current < tierCount && len(tiers[current]) == 0 {
		current++
	}
	var evict []*corev1.Pod
	for _, p := range tiers[current] {
		if !IsTerminating(p) && !d.doNotDisrupt(p, now) {
			evict = append(evict, p)
		}
	}
	d.queue.Add(node, drainReason(nc), evict...)
	blocked := 0
	for _, p := range tiers[current] {
		if !IsTerminating(p) && (HasDoNotDisrupt(p, now) || d.queue.Blocked(p) != "") {
			blocked++
		}
	}
	return DrainStatus{Waiting: len(holding), Message: d.explain(holding, current, deadline, now), Blocked: blocked}, nil
}

// deleteBeforeDeadline deletes the pods that would otherwise still run when
// the node's terminationGracePeriod ends.
func (d *Drainer) deleteBeforeDeadline(ctx context.Context, pods []*corev1.Pod, deadline, now time.Time) error {
	for _, p := range pods {
		grace := podGracePeriod(p)
		if IsTerminating(p) {
			// Evicted earlier with a grace period reaching past the deadline:
			// shorten it (the API server only ever shortens a grace period).
			limit := deadline
			if now.After(limit) {
				limit = now
			}
			if !p.DeletionTimestamp.After(limit.Add(deadlineSlack)) {
				continue
			}
		} else if now.Before(deadline.Add(-grace)) {
			continue
		}
		left := deadline.Sub(now)
		if left > grace {
			left = grace
		}
		seconds := int64(left / time.Second)
		if seconds < 1 {
			seconds = 1
		}
		uid := p.UID
		err := d.kubeClient.Delete(ctx, p, &client.DeleteOptions{
			GracePeriodSeconds: &seconds,
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting pod %s/%s before the termination deadline: %w", p.Namespace, p.Name, err)
		}
		// Deleted, not evicted: the queue must not count it as drained.
		d.queue.Remove(p)
		if d.recorder != nil {
			d.recorder.Eventf(p, corev1.EventTypeNormal, ReasonDisrupted,
				"Deleting the pod to accommodate the terminationTime %s of the node. The pod was granted %d seconds of grace-period of its %d terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
				deadline.UTC().Format(time.RFC3339), seconds, int64(grace/time.Second))
		}
		log.FromContext(ctx).Info("deleting pod before the node's termination deadline", "Pod", client.ObjectKeyFromObject(p).String(), "gracePeriodSeconds", seconds, "deadline", deadline.UTC().Format(time.RFC3339))
	}
	return nil
}

// explain names the pods the node waits for and why.
func (d *Drainer) explain(holding []*corev1.Pod, current Tier, deadline *time.Time, now time.Time) string {
	var parts []string
	for _, p := range holding {
		if len(parts) == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(holding)-maxListed))
			break
		}
		name := p.Namespace + "/" + p.Name
		var why string
		switch {
		case IsTerminating(p):
			why = "terminating"
		case TierOf(p) != current:
			why = fmt.Sprintf("waiting for %s to leave first", current)
		case HasDoNotDisrupt(p, now) && deadline != nil:
			why = fmt.Sprintf("has %s, deleted at %s", v1.DoNotDisruptAnnotationKey, deadline.UTC().Format(time.RFC3339))
		case HasDoNotDisrupt(p, now):
			why = fmt.Sprintf("has %s and the NodeClaim has no terminationGracePeriod", v1.DoNotDisruptAnnotationKey)
		case d.queue.Blocked(p) != "":
			why = d.queue.Blocked(p)
		default:
			why = "eviction requested"
		}
		parts = append(parts, name+" ("+why+")")
	}
	noun := "pods are"
	if len(holding) == 1 {
		noun = "pod is"
	}
	return fmt.Sprintf("%d %s waiting to be evicted: %s", len(holding), noun, strings.Join(parts, ", "))
}

// PodsOnNode lists the pods bound to the node.
func PodsOnNode(ctx context.Context, c client.Client, nodeName string) ([]*corev1.Pod, error) {
	return podindex.OnNode(ctx, c, nodeName)
}

// drainReason labels karpenter_pods_drained_total: the reason Karpenter chose
// to disrupt the node, or ReasonForceful when it was deleted from outside.
func drainReason(nc *v1.NodeClaim) string {
	if nc != nil {
		if c := nc.StatusConditions().Get(v1.ConditionTypeDisruptionReason); c.IsTrue() && c.Reason != "" {
			return c.Reason
		}
	}
	return eviction.ReasonForceful
}

// podGracePeriod is the pod's terminationGracePeriodSeconds (30s, the API's
// default, when unset).
func podGracePeriod(p *corev1.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return 30 * time.Second
	}
	return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
}
