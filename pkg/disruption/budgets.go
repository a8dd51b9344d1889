package disruption

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// BudgetLimit is the number of a NodePool's nodes that may be disrupting for
// reason at now, given total nodes: the minimum over the active budgets whose
// reasons include it (a budget without reasons applies to all), a percentage
// rounded up. -1 means no budget applies. A budget whose schedule does not
// parse allows nothing (an error says why). until is when the limit's
// scheduled window closes; zero when an unscheduled budget sets the limit.
func BudgetLimit(np *v1.NodePool, reason v1.DisruptionReason, total int, now time.Time) (limit int, until time.Time, err error) {
	limit = -1
	open := false // a budget setting the current minimum has no end
	for i := range np.Spec.Disruption.Budgets {
		b := &np.Spec.Disruption.Budgets[i]
		if len(b.Reasons) > 0 && !containsReason(b.Reasons, reason) {
			continue
		}
		var end time.Time
		if b.Schedule != nil {
			sched, perr := ParseSchedule(*b.Schedule)
			if perr != nil {
				return 0, time.Time{}, fmt.Errorf("budget schedule %q is invalid: %v", *b.Schedule, perr)
			}
			if b.Duration == nil {
				return 0, time.Time{}, fmt.Errorf("budget schedule %q has no duration", *b.Schedule)
			}
			active, e := sched.ActiveWindow(now, b.Duration.Duration)
			if !active {
				continue
			}
			end = e
		}
		v, perr := budgetNodes(b.Nodes, total)
		if perr != nil {
			return 0, time.Time{}, perr
		}
		switch {
		case limit == -1 || v < limit:
			limit, until, open = v, end, end.IsZero()
		case v == limit:
			if end.IsZero() {
				open = true
			} else if end.After(until) {
				until = end
			}
		}
	}
	if open {
		until = time.Time{}
	}
	return limit, until, nil
}

// budgetNodes resolves "5" or "20%" (rounded up) against total.
func budgetNodes(s string, total int) (int, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("budget nodes %q is not a percentage", s)
		}
		return int(math.Ceil(float64(total) * float64(pct) / 100)), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q is not a count or percentage", s)
	}
	return n, nil
}

func containsReason(rs []v1.DisruptionReason, r v1.DisruptionReason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// budgets computes every NodePool's BudgetStatus per reason. A pool's total is
// its managed, initialized (or rebooting) nodes whose instance is not already
// terminating; those NotReady, being deleted, rebooting or held by a
// disruption command consume the budget, except that NotReady nodes do not
// consume the Unhealthy budget (as upstream's): being NotReady is what repair acts on, so counting them would
// let a wave of unhealthy nodes take the budget that repairs them.
func budgets(in *Input) map[string]map[v1.DisruptionReason]*BudgetStatus {
	total := map[string]int{}
	disrupting := map[string]int{}
	inFlight := map[string]int{}
	for _, n := range in.Nodes {
		if n.NodeClaim == nil || n.NodePool == "" {
			continue
		}
		// A rebooting node is uninitialized once its reboot is issued, but it
		// is a node of the pool being disrupted until the reboot ends.
		rebooting := n.NodeClaim.StatusConditions().Get(v1.ConditionTypeRebooting).IsTrue()
		if !n.Initialized && !rebooting {
			continue
		}
		if n.NodeClaim.StatusConditions().Get(v1.ConditionTypeInstanceTerminating).IsTrue() {
			continue
		}
		total[n.NodePool]++
		if n.Deleting || n.MarkedForDeletion || rebooting {
			inFlight[n.NodePool]++
			disrupting[n.NodePool]++
		} else if !nodeReady(n.Node) {
			disrupting[n.NodePool]++
		}
	}
	out := map[string]map[v1.DisruptionReason]*BudgetStatus{}
	for _, p := range in.NodePools {
		np := p.NodePool
		m := map[v1.DisruptionReason]*BudgetStatus{}
		for _, reason := range Reasons {
			st := &BudgetStatus{NodePool: np.Name, Reason: reason, Disrupting: disrupting[np.Name]}
			if reason == v1.DisruptionReasonUnhealthy {
				st.Disrupting = inFlight[np.Name]
			}
			limit, until, err := BudgetLimit(np, reason, total[np.Name], in.Now)
			st.Limit = limit
			switch {
			case err != nil:
				st.Allowed = 0
				st.Message = fmt.Sprintf("nodepool %s: %v, allowing 0 %s disruptions", np.Name, err, reason)
			case limit == -1:
				st.Allowed = math.MaxInt32
			default:
				st.Allowed = max(0, limit-st.Disrupting)
				if st.Allowed == 0 {
					if limit == 0 {
						st.Message = fmt.Sprintf("nodepool %s: budget allows 0 %s disruptions", np.Name, reason)
						if !until.IsZero() {
							st.Message += " until " + formatUntil(until, in.Now)
						}
					} else {
						st.Message = fmt.Sprintf("nodepool %s: budget allows %d %s disruption(s) and %d node(s) are already disrupting", np.Name, limit, reason, st.Disrupting)
					}
				}
			}
			m[reason] = st
		}
		out[np.Name] = m
	}
	return out
}

func formatUntil(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

func nodeReady(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// neverFiresHorizon ends the five years in which a valid schedule must fire at
// least once (February 29 fires every four years); fixed so validation does
// not depend on the day it runs.
var neverFiresHorizon = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// ValidateBudget checks one budget with the parsers BudgetLimit uses, so that
// a budget the disruption controller would fail closed on (and so never let a
// node of its NodePool be disrupted) is reported when the NodePool is
// validated instead of silently blocking disruption. The error names the field
// relative to the budget ("schedule", "nodes", "duration").
func ValidateBudget(b v1.Budget) error {
	var errs []string
	if _, err := budgetNodes(b.Nodes, 0); err != nil {
		errs = append(errs, fmt.Sprintf("nodes %q: must be a count such as 5 or a percentage from 0%% to 100%% such as 10%%", b.Nodes))
	}
	if b.Schedule != nil {
		if sched, err := ParseSchedule(*b.Schedule); err != nil {
			errs = append(errs, fmt.Sprintf("schedule: %v", err))
		} else if _, ok := sched.Prev(neverFiresHorizon, neverFiresHorizon.AddDate(-5, 0, 0)); !ok {
			errs = append(errs, fmt.Sprintf("schedule %q never fires (no such date), so this budget would never be active", *b.Schedule))
		}
	}
	switch {
	case b.Schedule != nil && b.Duration == nil:
		errs = append(errs, "schedule is set without duration: both or neither must be set")
	case b.Schedule == nil && b.Duration != nil:
		errs = append(errs, "duration is set without schedule: both or neither must be set")
	case b.Duration != nil && b.Duration.Duration <= 0:
		errs = append(errs, fmt.Sprintf("duration %s: must be longer than zero", b.Duration.Duration))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}
