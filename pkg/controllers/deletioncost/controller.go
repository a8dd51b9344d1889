// Package deletioncost writes controller.kubernetes.io/pod-deletion-cost on
// the pods of ReplicaSets (gate PodDeletionCostManagement), as upstream v1.15
// does: when a ReplicaSet scales in, its controller deletes the pods with the
// lowest cost first, so a scale-in empties the nodes disruption would take
// next. Which node gets what is disruption.RankForDeletionCost, computed over
// the same input as a disruption pass; this controller only writes it.
//
// Every minute, when cluster state changed (and at least every ten minutes),
// it ranks the nodes and patches the pods whose annotation differs: the pods
// of nodes going away first (math.MinInt32, all of them), then the ranked
// nodes (-n .. -1) and the annotations of the other nodes removed, at most
// MaxNodesPerCycle nodes of those two a cycle. Each write is a patch with an
// optimistic lock: a pod changed meanwhile is left to the next cycle.
package deletioncost

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/state"
)

const (
	// Period between cycles, and Refresh the longest a cycle is skipped
	// while cluster state does not change.
	Period  = time.Minute
	Refresh = 10 * time.Minute
	// MaxNodesPerCycle bounds the ranked and cleared nodes whose pods a cycle
	// writes (at about 30 pods a node, some 1,500 writes).
	MaxNodesPerCycle = 50
	// writers is how many patches are in flight at once.
	writers = 16
)

// Metrics (upstream's names and labels).
var (
	PodAnnotationWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pod_deletion_cost", Name: "pod_annotation_writes_total",
		Help: "Number of pod-deletion-cost annotation write attempts. Labeled by outcome.",
	}, []string{"result"})
	NodesWithPendingAnnotationWrites = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pod_deletion_cost", Name: "nodes_with_pending_annotation_writes",
		Help: "Number of nodes with at least one pending pod-deletion-cost annotation change enqueued this cycle.",
	}, []string{"nodepool"})
)

// Values of the result label.
const (
	ResultUpdated          = "updated"
	ResultSkippedUnchanged = "skipped_unchanged"
	ResultSkippedNotFound  = "skipped_notfound"
	ResultSkippedConflict  = "skipped_conflict"
	ResultError            = "error"
)

func init() {
	crmetrics.Registry.MustRegister(PodAnnotationWritesTotal, NodesWithPendingAnnotationWrites)
}

// InputFunc gathers a disruption pass's input (disrupter.BuildInput).
type InputFunc func(ctx context.Context) (*disruption.Input, error)

// Controller is a leader-only Runnable.
type Controller struct {
	kube    client.Client
	cluster *state.Cluster
	input   InputFunc
	clock   clock.Clock

	lastGeneration uint64
	lastRun        time.Time
}

// NewController returns the controller.
func NewController(kube client.Client, cluster *state.Cluster, input InputFunc, clk clock.Clock) *Controller {
	return &Controller{kube: kube, cluster: cluster, input: input, clock: clk}
}

// NeedLeaderElection: only the leader writes.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs a cycle every Period until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("pod.deletioncost")
	ctx = log.IntoContext(ctx, logger)
	for {
		if _, err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "pod deletion cost cycle failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(Period):
		}
	}
}

// Reconcile is one cycle; it returns how many pod writes it attempted.
func (c *Controller) Reconcile(ctx context.Context) (int, error) {
	synced, err := c.cluster.Synced(ctx)
	if err != nil || !synced {
		return 0, err
	}
	gen := c.cluster.Generation()
	if gen == c.lastGeneration && c.clock.Since(c.lastRun) < Refresh {
		return 0, nil
	}
	in, err := c.input(ctx)
	if err != nil {
		return 0, err
	}
	r := disruption.RankForDeletionCost(in)
	type write struct {
		pod   *corev1.Pod
		value string // "" removes the annotation
	}
	var writes []write
	pending := map[string]int{}
	// node queues the writes of one node's ReplicaSet pods; it reports
	// whether any pod changes.
	node := func(n *disruption.Node, value string) bool {
		changed := false
		for _, pod := range n.Pods() {
			if !ownedByReplicaSet(pod) || pod.DeletionTimestamp != nil {
				continue
			}
			cur, has := pod.Annotations[corev1.PodDeletionCost]
			if (value == "" && !has) || (value != "" && cur == value) {
				continue
			}
			writes = append(writes, write{pod, value})
			changed = true
		}
		if changed {
			pending[n.NodePool]++
		}
		return changed
	}
	for _, n := range r.GoingAway {
		node(n, strconv.Itoa(math.MinInt32))
	}
	budget := MaxNodesPerCycle
	for i, n := range r.Ranked {
		if budget == 0 {
			break
		}
		if node(n, strconv.Itoa(disruption.DeletionCostRank(i, len(r.Ranked)))) {
			budget--
		}
	}
	for _, n := range r.Cleared {
		if budget == 0 {
			break
		}
		if node(n, "") {
			budget--
		}
	}
	NodesWithPendingAnnotationWrites.Reset()
	for np, k := range pending {
		NodesWithPendingAnnotationWrites.WithLabelValues(np).Set(float64(k))
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, writers)
		mu   sync.Mutex
		errs []error
	)
	for _, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.patch(ctx, w.pod, w.value); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	c.lastGeneration, c.lastRun = gen, c.clock.Now()
	return len(writes), errors.Join(errs...)
}

// patch writes (or, with value "", removes) the pod's annotation with an
// optimistic lock, and counts the outcome.
func (c *Controller) patch(ctx context.Context, pod *corev1.Pod, value string) error {
	updated := pod.DeepCopy()
	if value == "" {
		delete(updated.Annotations, corev1.PodDeletionCost)
	} else {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[corev1.PodDeletionCost] = value
	}
	err := c.kube.Patch(ctx, updated, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		PodAnnotationWritesTotal.WithLabelValues(ResultUpdated).Inc()
	case apierrors.IsNotFound(err):
		PodAnnotationWritesTotal.WithLabelValues(ResultSkippedNotFound).Inc()
	case apierrors.IsConflict(err):
		PodAnnotationWritesTotal.WithLabelValues(ResultSkippedConflict).Inc()
	default:
		PodAnnotationWritesTotal.WithLabelValues(ResultError).Inc()
		return err
	}
	return nil
}

// ownedByReplicaSet: the ReplicaSet controller is the only reader of the
// annotation.
func ownedByReplicaSet(pod *corev1.Pod) bool {
	c := metav1.GetControllerOf(pod)
	return c != nil && c.Kind == "ReplicaSet" && c.APIVersion == "apps/v1"
}
