package disruption

import "fmt"

// Validate re-checks, on a fresh snapshot, a decision taken earlier: every
// candidate must still be one for its method, the budgets must still allow
// them, and the method's own check must pass (a consolidation must still come
// out the same way: delete stays delete; a replacement's instance types stay
// within the decided ones).
func Validate(in *Input, d *Decision) (bool, string) {
	p := NewPass(in)
	var cands []*node
	perPool := map[string]int{}
	for _, c := range d.Candidates {
		n, ok := p.byName[c.Name]
		if !ok {
			return false, fmt.Sprintf("node %s is gone", c.Name)
		}
		if want, why := p.wants(n, d.Method); !want {
			if why != nil {
				return false, why.msg
			}
			return false, fmt.Sprintf("node %s is no longer a candidate for %s", n.Name, d.Method)
		}
		if b := p.block(n, d.Method); b != nil {
			if b.msg == "" {
				return false, fmt.Sprintf("node %s is already being disrupted", n.Name)
			}
			return false, b.msg
		}
		perPool[n.pool.NodePool.Name]++
		if b := p.budget(n, d.Method.Reason()); perPool[n.pool.NodePool.Name] > b.Allowed {
			msg := b.Message
			if msg == "" {
				msg = fmt.Sprintf("nodepool %s: budget allows %d %s disruption(s) now", n.pool.NodePool.Name, b.Allowed, d.Method.Reason())
			}
			return false, msg
		}
		cands = append(cands, n)
	}
	return d.Method.revalidate(&p.pass, cands, d)
}

// ValidateNarrowing is Validate for a delete decision of a method that Narrows
// (multi-node consolidation): candidates that are gone, no longer candidates,
// already being disrupted or beyond what the budgets allow now are dropped
// rather than failing the whole decision, and the rest are simulated afresh. It returns the decision to act
// on (the remaining candidates, at least two, still deleted without a
// replacement) or false and why not. Other decisions are validated as Validate
// does, and returned unchanged when valid.
//
// Why: in a large fleet a multi-node decision holds a budget's worth of nodes
// (200 at 2,000 nodes with 10%) through the validation delay, while the pods of
// the previous command land on some of them; one changed candidate used to
// abandon all 200 and start over a pass and a delay later.
func ValidateNarrowing(in *Input, d *Decision) (*Decision, bool, string) {
	if !d.Method.Narrows() || d.Action() != ActionDelete {
		ok, why := Validate(in, d)
		if !ok {
			return nil, false, why
		}
		return d, true, ""
	}
	p := NewPass(in)
	var cands []*node
	perPool := map[string]int{}
	var dropped []string
	for _, c := range d.Candidates {
		n, ok := p.byName[c.Name]
		if !ok {
			dropped = append(dropped, c.Name)
			continue
		}
		if want, _ := p.wants(n, d.Method); !want || p.block(n, d.Method) != nil {
			dropped = append(dropped, c.Name)
			continue
		}
		pool := n.pool.NodePool.Name
		if perPool[pool] >= p.budget(n, d.Method.Reason()).Allowed {
			dropped = append(dropped, c.Name)
			continue
		}
		perPool[pool]++
		cands = append(cands, n)
	}
	if len(cands) < 2 {
		return nil, false, fmt.Sprintf("%d of %d candidates are no longer valid (%s)", len(dropped), len(d.Candidates), firstNames(dropped))
	}
	again, why := p.consolidate(d.Method, cands, true)
	if again == nil {
		return nil, false, why
	}
	if again.Action() != ActionDelete {
		return nil, false, fmt.Sprintf("the decision changed from delete to %s", again.Action())
	}
	again.Method = d.Method
	return again, true, ""
}

// firstNames lists up to five names, then how many more.
func firstNames(names []string) string {
	if len(names) <= 5 {
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v and %d more", names[:5], len(names)-5)
}
