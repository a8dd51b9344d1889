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
