package eviction

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Backoff of a pod whose eviction was refused: BaseDelay after the first
// refusal, doubling with each further one, never more than MaxDelay.
const (
	BaseDelay = 100 * time.Millisecond
	MaxDelay  = 10 * time.Second
)

// EventInterval is how often, at most, a pod that keeps being refused is
// reported on its Node, so that a PDB blocking for an hour does not flood the
// Node's events.
const EventInterval = time.Minute

// DefaultWorkers is how many evictions run at once.
const DefaultWorkers = 20

// Event reasons, as upstream Karpenter emits them.
const (
	ReasonEvicted        = "Evicted"
	ReasonFailedDraining = "FailedDraining"
)

// multiplePDBsMessage is what the API server answers (with a 500) when more
// than one PodDisruptionBudget selects the pod being evicted.
const multiplePDBsMessage = "more than one PodDisruptionBudget"

// Queue evicts the pods added to it, retrying refused evictions with backoff
// until they succeed or the pod is gone. It is safe for concurrent use. Start
// runs it under a manager; tests call EvictDue on a fake clock instead.
type Queue struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   record.EventRecorder
	// Workers bounds the evictions in flight during one EvictDue.
	Workers int

	mu    sync.Mutex
	items map[types.UID]*item
	wake  chan struct{}
}

type item struct {
	pod  types.NamespacedName
	uid  types.UID
	node *corev1.Node // name and UID only, for events
	// reason labels karpenter_pods_drained_total once the pod is evicted.
	reason string

	failures  int
	next      time.Time
	inFlight  bool
	blocked   string // why the last attempt was refused; "" before any refusal
	lastEvent time.Time
}

// NewQueue returns an empty queue. recorder may be nil.
func NewQueue(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder) *Queue {
	return &Queue{
		kubeClient: kubeClient,
		clock:      clk,
		recorder:   recorder,
		Workers:    DefaultWorkers,
		items:      map[types.UID]*item{},
		wake:       make(chan struct{}, 1),
	}
}

// Add queues pods of node for eviction, due at once. A pod already queued
// keeps its place and backoff. reason labels karpenter_pods_drained_total.
func (q *Queue) Add(node *corev1.Node, reason string, pods ...*corev1.Pod) {
	q.mu.Lock()
	added := false
	for _, p := range pods {
		if _, ok := q.items[p.UID]; ok {
			continue
		}
		q.items[p.UID] = &item{
			pod:    client.ObjectKeyFromObject(p),
			uid:    p.UID,
			node:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID}},
			reason: reason,
			next:   q.clock.Now(),
		}
		added = true
	}
	QueueDepth.Set(float64(len(q.items)))
	q.mu.Unlock()
	if added {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// Remove drops the pod from the queue, e.g. once it was deleted directly.
func (q *Queue) Remove(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.items, pod.UID)
	QueueDepth.Set(float64(len(q.items)))
}

// Has reports whether the pod waits in the queue.
func (q *Queue) Has(pod *corev1.Pod) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.items[pod.UID]
	return ok
}

// Blocked returns why the last eviction of the pod was refused, or "" when it
// was not refused (or is not queued).
func (q *Queue) Blocked(pod *corev1.Pod) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.items[pod.UID]; ok {
		return it.blocked
	}
	return ""
}

// Len is the number of queued pods.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// EvictDue attempts every queued pod whose backoff has elapsed on the queue's
// clock. It returns how long until the next pod is due, and false when no pod
// is left waiting.
func (q *Queue) EvictDue(ctx context.Context) (time.Duration, bool) {
	now := q.clock.Now()
	q.mu.Lock()
	var due []*item
	for _, it := range q.items {
		if !it.inFlight && !it.next.After(now) {
			it.inFlight = true
			due = append(due, it)
		}
	}
	q.mu.Unlock()

	workers := q.Workers
	if workers < 1 {
		workers = 1
	}
	workqueue.ParallelizeUntil(ctx, workers, len(due), func(i int) { q.evict(ctx, due[i]) })

	q.mu.Lock()
	defer q.mu.Unlock()
	// Items cut short by a cancelled context are due again.
	for _, it := range due {
		it.inFlight = false
	}
	QueueDepth.Set(float64(len(q.items)))
	var next time.Time
	for _, it := range q.items {
		if next.IsZero() || it.next.Before(next) {
			next = it.next
		}
	}
	if next.IsZero() {
		return 0, false
	}
	if wait := next.Sub(q.clock.Now()); wait > 0 {
		return wait, true
	}
	return 0, true
}

// Start evicts due pods until ctx ends, sleeping on the queue's clock until
// the next pod is due or a pod is added.
func (q *Queue) Start(ctx context.Context) error {
	for {
		wait, pending := q.EvictDue(ctx)
		var fire <-chan time.Time
		var timer clock.Timer
		if pending {
			if wait <= 0 {
				// Due again at once (e.g. added while evictions ran); yield
				// through the loop without a timer.
				wait = time.Millisecond
			}
			timer = q.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-q.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// NeedLeaderElection: only the leader drains nodes.
func (q *Queue) NeedLeaderElection() bool { return true }

// evict makes one eviction request for it and records the outcome.
func (q *Queue) evict(ctx context.Context, it *item) {
	if why, err := q.pdbShortfall(ctx, it); err != nil || why != "" {
		if err != nil {
			why = fmt.Sprintf("evicting pod %s: checking its PodDisruptionBudgets: %v", it.pod, err)
		}
		q.refused(it, why)
		return
	}
	eviction := &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: it.pod.Name, Namespace: it.pod.Namespace},
		// The UID precondition keeps a pod recreated under the same name (a
		// StatefulSet's) from being evicted in place of the one we queued.
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &it.uid}},
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: it.pod.Name, Namespace: it.pod.Namespace, UID: it.uid}}
	err := q.kubeClient.SubResource("eviction").Create(ctx, target, eviction)
	EvictionRequestsTotal.WithLabelValues(responseCode(err)).Inc()
	switch {
	case err == nil:
		q.forget(it)
		PodsDrainedTotal.WithLabelValues(it.reason).Inc()
		q.event(target, corev1.EventTypeNormal, ReasonEvicted, "Evicted pod")
		log.FromContext(ctx).V(1).Info("evicted pod", "Pod", it.pod.String(), "Node", it.node.Name)
		return
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or replaced by another pod of the same name: nothing left to
		// evict. A replacement on this node is queued by the next drain pass.
		q.forget(it)
		return
	case ctx.Err() != nil:
		return
	}
	if apierrors.IsTooManyRequests(err) {
		if done, derr := q.completeGrantedEviction(ctx, it); derr == nil && done {
			return
		} else if derr != nil {
			log.FromContext(ctx).Error(derr, "completing an eviction the PodDisruptionBudget already granted", "Pod", it.pod.String())
		}
	}
	why := refusal(it.pod, err)
	if !apierrors.IsTooManyRequests(err) && !isMultiplePDBs(err) {
		log.FromContext(ctx).Error(err, "evicting pod", "Pod", it.pod.String(), "Node", it.node.Name)
	}
	q.refused(it, why)
}

// refused backs the pod off after a refusal and reports why on its Node (at
// most once per EventInterval).
func (q *Queue) refused(it *item, why string) {
	q.mu.Lock()
	it.failures++
	it.next = q.clock.Now().Add(Backoff(it.failures))
	it.blocked = why
	report := it.lastEvent.IsZero() || q.clock.Since(it.lastEvent) >= EventInterval
	if report {
		it.lastEvent = q.clock.Now()
	}
	q.mu.Unlock()
	if report {
		q.event(it.node, corev1.EventTypeWarning, ReasonFailedDraining, "Failed to drain node, "+why)
	}
}

// pdbShortfall checks, before the Eviction API is asked, that evicting the
// pod leaves every PodDisruptionBudget selecting it with enough healthy pods.
// The API server decides from the budget's status, which the disruption
// controller of kube-controller-manager keeps and which can lag the pods (for
// seconds after an API server restart, or under load): it may still allow a
// disruption that a pod just evicted, or a replacement not Ready yet, has
// used up. Karpenter's own view of the pods is counted the way that
// controller counts them: a pod is healthy when it is Ready and not
// terminating, and evicting a healthy pod must leave at least the budget's
// status.desiredHealthy of the others healthy. Only a budget whose status
// allows a disruption is checked (one that allows none, the API server
// refuses with its own answer); evicting a pod that is not healthy takes
// nothing from a budget and is left to the API server, as are budgets whose
// status was never computed (desiredHealthy 0). It returns why the eviction
// must wait, or "".
func (q *Queue) pdbShortfall(ctx context.Context, it *item) (string, error) {
	pod := &corev1.Pod{}
	if err := q.kubeClient.Get(ctx, it.pod, pod); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if pod.UID != it.uid || !healthy(pod) {
		return "", nil
	}
	budgets, err := q.budgetsOver(ctx, pod)
	if err != nil {
		return "", err
	}
	for _, b := range budgets {
		pdb := b.pdb
		if pdb.Status.DesiredHealthy <= 0 || pdb.Status.DisruptionsAllowed <= 0 {
			continue // never computed, or the API server refuses anyway (429)
		}
		pods := &corev1.PodList{}
		if err := q.kubeClient.List(ctx, pods, client.InNamespace(pod.Namespace), client.MatchingLabelsSelector{Selector: b.selector}); err != nil {
			return "", err
		}
		others := 0
		for j := range pods.Items {
			if o := &pods.Items[j]; o.UID != pod.UID && healthy(o) {
				others++
			}
		}
		if others < int(pdb.Status.DesiredHealthy) {
			return fmt.Sprintf("evicting pod %s would leave %d healthy pods selected by PodDisruptionBudget %s, below the %d it requires (its status has not caught up with the pods yet)",
				it.pod, others, pdb.Name, pdb.Status.DesiredHealthy), nil
		}
	}
	return "", nil
}

// budget is a PodDisruptionBudget and its parsed selector.
type budget struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

// budgetsOver lists the PodDisruptionBudgets of the pod's namespace whose
// selector selects it (an empty or unparseable selector selects nothing).
func (q *Queue) budgetsOver(ctx context.Context, pod *corev1.Pod) ([]budget, error) {
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := q.kubeClient.List(ctx, pdbs, client.InNamespace(pod.Namespace)); err != nil {
		return nil, err
	}
	var out []budget
	for i := range pdbs.Items {
		pdb := &pdbs.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, budget{pdb, sel})
	}
	return out, nil
}

// healthy is a pod a PodDisruptionBudget counts as healthy: Ready and not
// terminating.
func healthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// GrantedEvictionTimeout is how long the disruption controller of
// kube-controller-manager keeps a pod in a PodDisruptionBudget's
// status.disruptedPods (its DeletionTimeout) when the pod is not deleted.
const GrantedEvictionTimeout = 2 * time.Minute

// completeGrantedEviction finishes an eviction the API server granted but
// never carried out. The eviction handler charges the PodDisruptionBudget
// (status.disruptedPods) before it deletes the pod; when the caller dies in
// between (a controller killed mid-request cancels it), the pod keeps running
// while the budget stays spent on it for GrantedEvictionTimeout, and every
// other eviction is refused meanwhile. The budget already counts this pod as
// gone, so deleting it (with its own grace period, as an eviction would) takes
// no disruption the PDB did not allow. It returns true when it deleted the pod.
func (q *Queue) completeGrantedEviction(ctx context.Context, it *item) (bool, error) {
	pod := &corev1.Pod{}
	if err := q.kubeClient.Get(ctx, it.pod, pod); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if pod.UID != it.uid || pod.DeletionTimestamp != nil {
		return false, nil
	}
	budgets, err := q.budgetsOver(ctx, pod)
	if err != nil || len(budgets) == 0 {
		return false, err
	}
	now := q.clock.Now()
	for _, b := range budgets {
		at, ok := b.pdb.Status.DisruptedPods[pod.Name]
		if !ok || now.Sub(at.Time) >= GrantedEvictionTimeout {
			return false, nil // a budget over the pod has not granted it
		}
	}
	if err := q.kubeClient.Delete(ctx, pod, client.Preconditions{UID: &it.uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			q.forget(it)
			return true, nil
		}
		return false, err
	}
	q.forget(it)
	PodsDrainedTotal.WithLabelValues(it.reason).Inc()
	q.event(pod, corev1.EventTypeNormal, ReasonEvicted, "Evicted pod (completing an eviction its PodDisruptionBudget had granted)")
	log.FromContext(ctx).Info("completed a granted eviction", "Pod", it.pod.String(), "Node", it.node.Name)
	return true, nil
}

func (q *Queue) forget(it *item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.items, it.uid)
}

func (q *Queue) event(obj runtime.Object, eventType, reason, message string) {
	if q.recorder != nil {
		q.recorder.Event(obj, eventType, reason, message)
	}
}

// Backoff is the wait after the n-th consecutive refusal (n >= 1).
func Backoff(n int) time.Duration {
	d := BaseDelay
	for i := 1; i < n && d < MaxDelay; i++ {
		d *= 2
	}
	if d > MaxDelay {
		d = MaxDelay
	}
	return d
}

// refusal explains a refused eviction in words a user can act on.
func refusal(pod types.NamespacedName, err error) string {
	switch {
	case apierrors.IsTooManyRequests(err):
		detail := err.Error()
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					detail = c.Message
				}
			}
		}
		return fmt.Sprintf("evicting pod %s violates a PodDisruptionBudget (%s)", pod, detail)
	case isMultiplePDBs(err):
		return fmt.Sprintf("pod %s is selected by more than one PodDisruptionBudget, which the Eviction API does not support", pod)
	}
	return fmt.Sprintf("evicting pod %s: %v", pod, err)
}

func isMultiplePDBs(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), multiplePDBsMessage)
}

// responseCode is the HTTP status of the Eviction API's answer ("200" for a
// successful eviction, like upstream), or "error" when none was received.
func responseCode(err error) string {
	if err == nil {
		return "200"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "error"
}
