package disrupter

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// ConditionTypeDisruptionBlocked is the NodeClaim condition saying why a node
// that a disruption method wants is not being disrupted: True, with the
// reason's code (PodDisruptionBudget, DoNotDisrupt, DisruptionBudget,
// Unconsolidatable, ...) and the explanation as message. It is removed when
// nothing holds the node back any more (no method wants it, or it is being
// disrupted, when the queue's DisruptionReason condition takes over).
// Upstream has no such condition; the type is new and collides with none of
// upstream's.
const ConditionTypeDisruptionBlocked = "DisruptionBlocked"

// Event reasons (upstream's).
const (
	// EventDisruptionBlocked: a rule or a budget keeps the node.
	EventDisruptionBlocked = "DisruptionBlocked"
	// EventNodeRepairBlocked (a warning): node repair is stopped in the
	// node's NodePool, too many of its nodes are unhealthy.
	EventNodeRepairBlocked = "NodeRepairBlocked"
	// EventUnconsolidatable: consolidation found nothing better for the node.
	EventUnconsolidatable = "Unconsolidatable"
)

// conditionWriters bounds the status writes a pass makes at once.
const conditionWriters = 10

// maxMessage is the NodeClaim CRD's limit on a condition message.
const maxMessage = 32768

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage-3], "") + "..."
}

// explain publishes what the pass found: an event on the Node and NodeClaim of
// every node a method wanted but left alone, the DisruptionBlocked condition
// on those NodeClaims, an event on each NodePool whose budget allows nothing.
// Events are deduplicated by the recorder; conditions are written only when
// they change. Stale conditions are removed only after a pass that looked at
// every node (no decision, no timeout), so a node a shortened pass did not
// reach keeps its last explanation.
func (c *Controller) explain(ctx context.Context, s *snapshot, res *disruption.Result) {
	for _, b := range res.Budgets {
		if b.Allowed == 0 && b.Message != "" {
			if np, ok := s.nodePools[b.NodePool]; ok {
				c.recorder.Eventf(np, corev1.EventTypeNormal, EventDisruptionBlocked, "%s", b.Message)
			}
		}
	}
	want := map[string]condition{}
	for _, e := range res.Explanations {
		if e.Node.NodeClaim == nil {
			continue
		}
		want[e.Node.NodeClaim.Name] = condition{code: e.Code, message: truncate(conditionMessage(e, res.Budgets))}
		if e.Code == disruption.CodeBudget {
			// The NodePool's event above says it, once; upstream has no
			// per-node event for a budget either.
			continue
		}
		reason, kind := EventUnconsolidatable, corev1.EventTypeNormal
		if e.Blocking() {
			reason = EventDisruptionBlocked
		}
		if e.Code == disruption.CodeNodeRepairBlocked {
			// Upstream's warning, on the NodePool too.
			reason, kind = EventNodeRepairBlocked, corev1.EventTypeWarning
			if np, ok := s.nodePools[e.Node.NodePool]; ok {
				c.recorder.Eventf(np, kind, reason, "%s", e.Message)
			}
		}
		if e.Node.Node != nil {
			c.recorder.Eventf(e.Node.Node, kind, reason, "%s", e.Message)
		}
		c.recorder.Eventf(e.Node.NodeClaim, kind, reason, "%s", e.Message)
	}
	chosen := map[string]bool{}
	if d := res.Decision; d != nil {
		for _, n := range d.Candidates {
			if n.NodeClaim != nil {
				chosen[n.NodeClaim.Name] = true
			}
		}
	}
	complete := res.Decision == nil && len(res.TimedOut) == 0
	type write struct {
		nc   *v1.NodeClaim
		cond *condition // nil: remove the condition
	}
	var writes []write
	for _, n := range s.in.Nodes {
		nc := n.NodeClaim
		if nc == nil || nc.DeletionTimestamp != nil {
			continue
		}
		cur := nc.StatusConditions().Get(ConditionTypeDisruptionBlocked)
		if w, ok := want[nc.Name]; ok && !chosen[nc.Name] {
			if cur == nil || !cur.IsTrue() || cur.Reason != string(w.code) || cur.Message != w.message {
				writes = append(writes, write{nc, &w})
			}
			continue
		}
		if cur != nil && (chosen[nc.Name] || complete) {
			writes = append(writes, write{nc, nil})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, conditionWriters)
	for _, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func(w write) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.writeCondition(ctx, w.nc.Name, w.cond); err != nil {
				log.FromContext(ctx).Error(err, "recording why a node is not disrupted", "nodeclaim", w.nc.Name)
			}
		}(w)
	}
	wg.Wait()
}

// condition is what the DisruptionBlocked condition of a NodeClaim says.
type condition struct {
	code    disruption.Code
	message string
}

// conditionMessage is the condition's message for e. A budget's explanation
// counts the pool's nodes already disrupting, a number that changes with nearly
// every pass while a fleet consolidates: written as is, every node the budget
// held (all the pool's other candidates, thousands in a large fleet) had its
// NodeClaim status rewritten each pass, one write per node per pass at the
// API server's costliest kind of request. The condition names the budget that
// holds the node; the counts are in the NodePool's event.
func conditionMessage(e *disruption.Explanation, budgets []disruption.BudgetStatus) string {
	if e.Code != disruption.CodeBudget || e.Method == nil {
		return e.Message
	}
	for _, b := range budgets {
		if b.NodePool == e.Node.NodePool && b.Reason == e.Method.Reason() && b.Limit > 0 {
			return fmt.Sprintf("nodepool %s: every %s disruption its budget allows is taken by nodes already disrupting", b.NodePool, b.Reason)
		}
	}
	return e.Message
}

// writeCondition sets (or, for a nil cond, removes) the condition on the
// NodeClaim as stored now. A conflict is left for the next pass.
func (c *Controller) writeCondition(ctx context.Context, name string, w *condition) error {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	stored := nc.DeepCopy()
	cs := nc.StatusConditions()
	cs.Now = c.clock.Now
	changed := false
	if w == nil {
		changed = cs.Clear(ConditionTypeDisruptionBlocked)
	} else {
		changed = cs.Set(status.Condition{Type: ConditionTypeDisruptionBlocked, Status: metav1.ConditionTrue, Reason: string(w.code), Message: w.message})
	}
	if !changed {
		return nil
	}
	err := c.kube.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}), client.FieldOwner(ownedconditions.ExplainManager))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
