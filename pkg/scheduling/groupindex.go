package scheduling

import corev1 "k8s.io/api/core/v1"

// groupIndex finds the topology groups whose selector counts a pod without testing every group:
// a workload with many constraints has many groups, and every pod asks which of them count it.
// Groups whose selector is a conjunction of key=value pairs (matchLabels) are filed under their
// first pair; a pod looks up its own value of each filed key and tests only the groups found
// there, plus the few groups with other selectors.
type groupIndex struct {
	keys []string                           // first keys of filed groups, distinct
	byKV map[string]map[string][]*topoGroup // key -> value -> groups, in id order
	rest []*topoGroup                       // groups not filed, in id order
}

// add files a new group (groups are added in id order).
func (x *groupIndex) add(g *topoGroup) {
	if !g.eqOnly || len(g.eq) == 0 {
		x.rest = append(x.rest, g)
		return
	}
	if x.byKV == nil {
		x.byKV = map[string]map[string][]*topoGroup{}
	}
	k, v := g.eq[0][0], g.eq[0][1]
	vals, ok := x.byKV[k]
	if !ok {
		vals = map[string][]*topoGroup{}
		x.byKV[k] = vals
		x.keys = append(x.keys, k)
	}
	vals[v] = append(vals[v], g)
}

// appendMatching appends to out the groups (all groups filed so far) that count pod, in id order.
func (x *groupIndex) appendMatching(out []*topoGroup, pod *corev1.Pod) []*topoGroup {
	start := len(out)
	for _, k := range x.keys {
		v, ok := pod.Labels[k]
		if !ok {
			continue
		}
		// Filed under (k, v): their first pair matches already.
		for _, g := range x.byKV[k][v] {
			if g.matchesFrom(pod, 1) {
				out = append(out, g)
			}
		}
	}
	for _, g := range x.rest {
		if g.matches(pod) {
			out = append(out, g)
		}
	}
	// Back to id order (the lists are short): callers count and pin in group order.
	for i := start + 1; i < len(out); i++ {
		for j := i; j > start && out[j].id < out[j-1].id; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
