package orchestration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Name of the queue's controller.
const Name = "disruption.queue"

// Timing (upstream's figures).
const (
	// A command waits at least MinTimeout and at most MaxTimeout for its
	// replacements; in between TimeoutPerCommand for every command in flight.
	MinTimeout        = 10 * time.Minute
	MaxTimeout        = time.Hour
	TimeoutPerCommand = 80 * time.Millisecond
	// While waiting a command is re-checked with this backoff; changes of its
	// NodeClaims wake it earlier.
	minPoll = time.Second
	maxPoll = 10 * time.Second
	// maxConcurrentReconciles commands are checked at the same time.
	maxConcurrentReconciles = 100
	// parallelWrites bounds the API writes one command makes at once.
	parallelWrites = 10
)

type phase int

const (
	// starting: StartCommand is still tainting and creating; the controller leaves it alone.
	starting phase = iota
	// waiting: for every replacement to be Initialized.
	waiting
	// failing: the command failed; the controller retries the rollback until it is complete.
	failing
)

// command is a Command in flight with what the queue did for it.
type command struct {
	*Command
	id         string
	candidates []string
	phase      phase
	// nodes: candidate NodeClaim name -> its Node (name and UID), absent without one.
	nodes map[string]*corev1.Node
	// created: replacement name -> UID, once the API server accepted it.
	created map[string]types.UID
	// startedAt: when StartCommand finished.
	startedAt time.Time
	polls     int
	announced bool
	// deleted: candidates whose deletion was requested.
	deleted map[string]bool
	// failure says why the command is rolled back.
	failure string
}

// Queue carries out disruption commands (see the package documentation).
type Queue struct {
	kube client.Client
	// reader reads past the informer cache (the manager's API reader once
	// registered), where a cache lagging behind would give a wrong answer: a
	// replacement just created is not "gone", and a write needs the current
	// resourceVersion.
	reader   client.Reader
	cluster  *state.Cluster
	recorder record.EventRecorder
	clock    clock.Clock

	// startMu orders StartCommand's reservation of its candidates against the
	// start-up cleanup's check-then-untaint, so the cleanup never strips the
	// taint of a command that is just starting.
	startMu sync.Mutex

	mu           sync.Mutex
	commands     map[string]*command
	candidates   map[string]string // candidate NodeClaim name -> command id
	replacements map[string]string // replacement NodeClaim name -> command id
	wq           workqueue.TypedRateLimitingInterface[string]
}

// NewQueue returns an empty queue. recorder may be nil.
func NewQueue(kube client.Client, cluster *state.Cluster, recorder record.EventRecorder, clk clock.Clock) *Queue {
	if recorder == nil {
		recorder = nopRecorder{}
	}
	return &Queue{
		kube: kube, reader: kube, cluster: cluster, recorder: recorder, clock: clk,
		commands:     map[string]*command{},
		candidates:   map[string]string{},
		replacements: map[string]string{},
	}
}

// Has reports whether the NodeClaim is a candidate of a command in flight:
// from the start of StartCommand until its deletion was requested or the
// command was rolled back.
func (q *Queue) Has(nodeClaimName string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.candidates[nodeClaimName]
	return ok
}

// Len is the number of commands in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.commands)
}

// Timeout is how long a command started now may wait for its replacements:
// clamp(TimeoutPerCommand × commands in flight, MinTimeout, MaxTimeout).
func (q *Queue) Timeout() time.Duration {
	d := time.Duration(q.Len()) * TimeoutPerCommand
	return min(max(d, MinTimeout), MaxTimeout)
}

// StartCommand taints every candidate's Node karpenter.sh/disrupted:NoSchedule,
// sets the candidates' DisruptionReason condition, creates the replacements
// (on return cmd.Replacements hold the created objects), records them in
// cluster state and nominates them, marks the candidates for deletion in
// cluster state, and enqueues the command. It validates nothing: the caller
// decided. On an error part-way it rolls back what it did and returns the
// error; if the rollback fails too, the queue keeps retrying it and Has stays
// true until it is complete.
func (q *Queue) StartCommand(ctx context.Context, cmd *Command) error {
	if len(cmd.Candidates) == 0 {
		return errors.New("disruption command has no candidates")
	}
	if cmd.Method == nil {
		return errors.New("disruption command has no Method")
	}
	c := &command{
		Command:    cmd,
		id:         cmd.Candidates[0].Name,
		candidates: cmd.CandidateNames(),
		nodes:      map[string]*corev1.Node{},
		created:    map[string]types.UID{},
		deleted:    map[string]bool{},
	}
	if err := q.reserve(c); err != nil {
		return err
	}
	if err := q.start(ctx, c); err != nil {
		q.recordAll(c, corev1.EventTypeWarning, EventDisruptionFailed, "Disruption abandoned before it started: %s", err)
		q.setFailing(c, err.Error())
		if rerr := q.rollback(ctx, c); rerr != nil {
			q.enqueue(c.id)
			return errors.Join(err, fmt.Errorf("rolling back (will be retried): %w", rerr))
		}
		return err
	}
	q.cluster.MarkForDeletion(c.candidates...)
	if len(c.created) > 0 {
		q.recordAll(c, corev1.EventTypeNormal, EventDisruptionLaunching, "Launching replacement NodeClaim(s) %s: %s/%s: %s",
			strings.Join(c.replacementNames(), ", "), c.Method.Reason(), c.Decision, c.Explanation)
	}
	log.FromContext(ctx).Info("disrupting nodeclaim(s)", "command", c.id, "method", c.Method.String(), "reason", c.Method.Reason(), "decision", c.Decision,
		"candidates", c.candidates, "replacements", c.replacementNames(), "explanation", c.Explanation)
	q.mu.Lock()
	c.phase = waiting
	c.startedAt = q.clock.Now()
	q.mu.Unlock()
	q.enqueue(c.id)
	return nil
}

// reserve registers the command so that Has answers true for its candidates
// from now on, refusing candidates that are already in flight.
func (q *Queue) reserve(c *command) error {
	q.startMu.Lock()
	defer q.startMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range c.candidates {
		if id, ok := q.candidates[name]; ok {
			return fmt.Errorf("nodeclaim %s is already being disrupted (command %s)", name, id)
		}
	}
	if _, ok := q.commands[c.id]; ok {
		return fmt.Errorf("a disruption command %s is already in flight", c.id)
	}
	q.commands[c.id] = c
	for _, name := range c.candidates {
		q.candidates[name] = c.id
	}
	return nil
}

// start does StartCommand's writes: taint and condition first, so no pod lands
// on a candidate after the decision, then the replacements.
func (q *Queue) start(ctx context.Context, c *command) error {
	nodes := make([]*corev1.Node, len(c.Candidates))
	err := parallel(len(c.Candidates), func(i int) error {
		nc := c.Candidates[i]
		name, err := q.nodeNameOf(ctx, nc)
		if err != nil {
			return err
		}
		if name != "" {
			_, err := q.updateNode(ctx, name, func(n *corev1.Node) bool {
				nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID}}
				return addDisruptedTaint(n)
			})
			if err != nil {
				return fmt.Errorf("tainting node %s: %w", name, err)
			}
		}
		_, err = q.updateNodeClaimStatus(ctx, nc.Name, q.setDisruptionReason(c.Command))
		return err
	})
	q.mu.Lock()
	for i, nc := range c.Candidates {
		if nodes[i] != nil {
			c.nodes[nc.Name] = nodes[i]
		}
	}
	q.mu.Unlock()
	if err != nil {
		return err
	}
	for _, r := range c.Replacements {
		if err := q.kube.Create(ctx, r); err != nil {
			return fmt.Errorf("creating replacement nodeclaim for nodepool %s: %w", r.Labels[v1.NodePoolLabelKey], err)
		}
		q.mu.Lock()
		c.created[r.Name] = r.UID
		q.replacements[r.Name] = c.id
		q.mu.Unlock()
		// Visible to the provisioner at once, so it does not launch the same
		// capacity again for the pods that are to move.
		q.cluster.UpdateNodeClaim(r)
		q.cluster.Nominate(r.Name)
		relaxed := r.Annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] == "true"
		metrics.NodeClaimsCreatedTotal.WithLabelValues(disruption.MetricReason(c.Method.Reason()), r.Labels[v1.NodePoolLabelKey], fmt.Sprint(relaxed)).Inc()
	}
	return nil
}

// Reconcile checks one command: deletes its candidates once every replacement
// is Initialized, rolls it back when a replacement is gone or the command
// timed out, and otherwise asks to be checked again.
func (q *Queue) Reconcile(ctx context.Context, id string) (reconcile.Result, error) {
	q.mu.Lock()
	c := q.commands[id]
	ph := phase(-1)
	if c != nil {
		ph = c.phase
	}
	q.mu.Unlock()
	switch ph {
	case waiting:
	case failing:
		return reconcile.Result{}, q.rollback(ctx, c)
	default: // unknown, or StartCommand still running (it enqueues when done)
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("command", id))

	var pending []string
	for _, name := range c.replacementNames() {
		nc, why, err := q.replacement(ctx, name, c.created[name])
		if err != nil {
			return reconcile.Result{}, err
		}
		if why != "" {
			return reconcile.Result{}, q.fail(ctx, c, why)
		}
		if !isInitialized(nc) {
			pending = append(pending, name)
		}
	}
	if len(pending) == 0 {
		return reconcile.Result{}, q.deleteCandidates(ctx, c)
	}

	timeout := q.Timeout()
	elapsed := q.clock.Since(c.startedAt)
	if elapsed >= timeout {
		return reconcile.Result{}, q.fail(ctx, c, fmt.Sprintf("replacement NodeClaim(s) %s not initialized within %s", strings.Join(pending, ", "), timeout))
	}
	if !c.announced {
		c.announced = true
		q.recordAll(c, corev1.EventTypeNormal, EventDisruptionWaitingReadiness,
			"Waiting on readiness to continue disruption: replacement NodeClaim(s) %s not initialized yet", strings.Join(pending, ", "))
	}
	delay := maxPoll
	if c.polls < 4 {
		delay = minPoll << c.polls
	}
	c.polls++
	return reconcile.Result{RequeueAfter: min(delay, timeout-elapsed)}, nil
}

// replacement reads a replacement. why is non-empty when it will never take
// over the candidates' pods: it is gone, or being deleted.
func (q *Queue) replacement(ctx context.Context, name string, uid types.UID) (*v1.NodeClaim, string, error) {
	nc := &v1.NodeClaim{}
	err := q.kube.Get(ctx, types.NamespacedName{Name: name}, nc)
	if apierrors.IsNotFound(err) {
		// The cache may not show a NodeClaim created a moment ago; only the API
		// server can say it is gone.
		err = q.reader.Get(ctx, types.NamespacedName{Name: name}, nc)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("replacement NodeClaim %s was deleted before it initialized", name), nil
	case err != nil:
		return nil, "", fmt.Errorf("getting replacement nodeclaim %s: %w", name, err)
	case nc.UID != uid:
		return nil, fmt.Sprintf("replacement NodeClaim %s was deleted before it initialized", name), nil
	case nc.DeletionTimestamp != nil:
		return nil, fmt.Sprintf("replacement NodeClaim %s is being deleted", name), nil
	}
	return nc, "", nil
}

// deleteCandidates requests the candidates' deletion; their termination
// finalizer drains them. The marks in cluster state stay until the NodeClaims
// are gone, so their pods stay provisioned for in between. The deletes go
// out parallelWrites at a time, as start's writes do: one after another, a
// command of 200 nodes held its budget for 200 round trips to a busy API
// server (tens of seconds in a 2,000-node fleet) before the first drain.
func (q *Queue) deleteCandidates(ctx context.Context, c *command) error {
	var mu sync.Mutex // guards c.deleted
	done := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return c.deleted[name]
	}
	markDeleted := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		c.deleted[name] = true
	}
	err := parallel(len(c.Candidates), func(i int) error {
		nc := c.Candidates[i]
		if done(nc.Name) {
			return nil
		}
		// One deleted by someone else meanwhile (e.g. expired) is not ours to count.
		cur := &v1.NodeClaim{}
		if err := q.kube.Get(ctx, types.NamespacedName{Name: nc.Name}, cur); err == nil && cur.UID == nc.UID && cur.DeletionTimestamp != nil {
			markDeleted(nc.Name)
			return nil
		}
		if c.Repair != nil && c.Repair.TerminationGracePeriod != nil {
			// Stamped after the replacements are up, right before the
			// delete, so their launch does not eat into the drain.
			if err := q.boundDrain(ctx, nc, *c.Repair.TerminationGracePeriod); err != nil {
				return err
			}
		}
		var opts []client.DeleteOption
		if nc.UID != "" {
			opts = append(opts, client.Preconditions{UID: &nc.UID})
		}
		err := q.kube.Delete(ctx, nc.DeepCopy(), opts...)
		// NotFound or a UID conflict: the candidate is gone already.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
		}
		markDeleted(nc.Name)
		if err != nil {
			return nil
		}
		m := c.Metrics[nc.Name]
		metrics.CountDisrupted(nc, disruption.MetricReason(c.Method.Reason()), m.ConsolidationPolicy, m.ReschedulablePods)
		if r := c.Repair; r != nil {
			mode := metrics.TerminationMode(nc)
			if r.TerminationGracePeriod != nil {
				mode = metrics.TerminationModeEventual
				if *r.TerminationGracePeriod <= 0 {
					mode = metrics.TerminationModeForceful
				}
			}
			CountUnhealthyDisrupted(nc, r.Condition, mode)
		}
		q.record(c, nc, corev1.EventTypeNormal, EventDisruptionTerminating, fmt.Sprintf("Disrupting node: %s/%s: %s", c.Method.Reason(), c.Decision, c.Explanation))
		return nil
	})
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("deleted disrupted nodeclaim(s)", "candidates", c.candidates, "reason", c.Method.Reason(), "decision", c.Decision)
	q.remove(c)
	return nil
}

// boundDrain sets the NodeClaim's termination timestamp to now plus bound,
// unless one already set is sooner: the drain of a repaired node waits for
// blocking pods no longer than its repair policy allows (0: not at all).
func (q *Queue) boundDrain(ctx context.Context, nc *v1.NodeClaim, bound time.Duration) error {
	deadline := q.clock.Now().Add(bound).UTC().Truncate(time.Second)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &v1.NodeClaim{}
		if err := q.kube.Get(ctx, types.NamespacedName{Name: nc.Name}, cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if nc.UID != "" && cur.UID != nc.UID {
			return nil
		}
		if v, ok := cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
			if t, err := time.Parse(time.RFC3339, v); err == nil && !t.After(deadline) {
				return nil
			}
		}
		stored := cur.DeepCopy()
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = deadline.Format(time.RFC3339)
		if err := q.kube.Patch(ctx, cur, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("bounding the drain of nodeclaim %s: %w", nc.Name, err)
		}
		return nil
	})
}

// fail switches the command to rolling back and starts doing so.
func (q *Queue) fail(ctx context.Context, c *command, why string) error {
	q.setFailing(c, why)
	log.FromContext(ctx).Info("disruption failed, rolling back", "reason", why, "candidates", c.candidates)
	return q.rollback(ctx, c)
}

func (q *Queue) setFailing(c *command, why string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c.phase = failing
	c.failure = why
}

// rollback undoes a command: candidates un-tainted and their DisruptionReason
// cleared (except those being deleted anyway), replacements that never
// initialized deleted, candidates unmarked. Initialized replacements stay: they
// are usable capacity, and consolidation removes them if they stay empty. The
// command leaves the queue only once all of that succeeded.
func (q *Queue) rollback(ctx context.Context, c *command) error {
	err := parallel(len(c.candidates), func(i int) error {
		name := c.candidates[i]
		nc := &v1.NodeClaim{}
		if err := q.reader.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("getting nodeclaim %s: %w", name, err)
		}
		if nc.DeletionTimestamp != nil {
			// Deleted by someone else meanwhile: its termination needs the taint.
			return nil
		}
		q.mu.Lock()
		node := c.nodes[name]
		q.mu.Unlock()
		if node != nil {
			if _, err := q.updateNode(ctx, node.Name, removeDisruptedTaint); err != nil {
				return fmt.Errorf("removing the disrupted taint: %w", err)
			}
		}
		_, err := q.updateNodeClaimStatus(ctx, name, clearDisruptionReason)
		return err
	})
	errs := []error{err}
	for _, name := range c.replacementNames() {
		r := &v1.NodeClaim{}
		if err := q.reader.Get(ctx, types.NamespacedName{Name: name}, r); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("getting replacement nodeclaim %s: %w", name, err))
			}
			continue
		}
		if r.UID != c.created[name] || r.DeletionTimestamp != nil || isInitialized(r) {
			continue
		}
		uid := r.UID
		if err := q.kube.Delete(ctx, r, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting replacement nodeclaim %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	q.cluster.UnmarkForDeletion(c.candidates...)
	if !c.startedAt.IsZero() {
		// StartCommand's own errors went to its caller (and were recorded there).
		QueueFailuresTotal.WithLabelValues(string(c.Decision), disruption.MetricReason(c.Method.Reason()), c.Method.ConsolidationType()).Inc()
		q.recordAll(c, corev1.EventTypeWarning, EventDisruptionFailed, "Disruption abandoned, %s; the node is no longer tainted and keeps its pods", c.failure)
	}
	log.FromContext(ctx).Info("rolled back disruption", "reason", c.failure, "candidates", c.candidates)
	q.remove(c)
	return nil
}

// remove forgets a finished command.
func (q *Queue) remove(c *command) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.commands[c.id] == c {
		delete(q.commands, c.id)
	}
	for _, name := range c.candidates {
		if q.candidates[name] == c.id {
			delete(q.candidates, name)
		}
	}
	for name := range c.created {
		if q.replacements[name] == c.id {
			delete(q.replacements, name)
		}
	}
}

func (q *Queue) enqueue(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.wq != nil {
		q.wq.Add(id)
	}
}

// commandOf maps a NodeClaim to the command it is a candidate or replacement
// of, so that its changes (Initialized, deleted) wake that command.
func (q *Queue) commandOf(_ context.Context, nc *v1.NodeClaim) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id, ok := q.replacements[nc.Name]; ok {
		return []string{id}
	}
	if id, ok := q.candidates[nc.Name]; ok {
		return []string{id}
	}
	return nil
}

func (c *command) replacementNames() []string {
	out := make([]string, 0, len(c.created))
	for name := range c.created {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// recordAll records an event on every candidate NodeClaim and its Node.
func (q *Queue) recordAll(c *command, eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, nc := range c.Candidates {
		q.record(c, nc, eventType, reason, msg)
	}
}

func (q *Queue) record(c *command, nc *v1.NodeClaim, eventType, reason, msg string) {
	q.recorder.Event(nc, eventType, reason, msg)
	q.mu.Lock()
	node := c.nodes[nc.Name]
	q.mu.Unlock()
	if node != nil {
		q.recorder.Event(node, eventType, reason, msg)
	}
}

// parallel runs f(0..n-1) with at most parallelWrites at once and joins the errors.
func parallel(n int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, parallelWrites)
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nopRecorder drops events when no recorder is wired.
type nopRecorder struct{}

func (nopRecorder) Event(runtime.Object, string, string, string)          {}
func (nopRecorder) Eventf(runtime.Object, string, string, string, ...any) {}
func (nopRecorder) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}
