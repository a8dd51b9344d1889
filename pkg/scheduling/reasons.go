package scheduling

import (
	"fmt"
	"sort"
)

// MaxPodReasons bounds the per-NodePool reasons of a pod error: an event naming
// every pool of a large cluster buries the one that matters.
const MaxPodReasons = 5

// Relevance of a NodePool to a pod, most relevant first.
const (
	// relevanceSelected: the pod requires karpenter.sh/nodepool and allows this pool.
	relevanceSelected = iota
	// relevanceCompatible: the pool's requirements and labels admit the pod.
	relevanceCompatible
	// relevanceOther: the pool's requirements or labels rule the pod out.
	relevanceOther
)

type poolReason struct {
	relevance int
	msg       string
}

// relevance ranks a pool for a pod with requirements pod; pool holds the pool's
// requirements including its name (poolRequirements); undefinedOK says which
// keys a pool may lack (well-known labels every node gets).
func relevance(pod, pool Requirements, name string, undefinedOK func(string) bool) int {
	if r, ok := pod.Get(LabelNodePool); ok && r.Has(name) {
		return relevanceSelected
	}
	if pool.Compatible(pod, undefinedOK) == nil {
		return relevanceCompatible
	}
	return relevanceOther
}

// orderReasons puts the reasons of the pools a pod selects first, then those of
// pools it could use, then the rest (each group in pool order), keeping the
// first MaxPodReasons and counting the others.
func orderReasons(rs []poolReason) []string {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].relevance < rs[j].relevance })
	out := make([]string, 0, min(len(rs), MaxPodReasons+1))
	for i, r := range rs {
		if i == MaxPodReasons {
			out = append(out, fmt.Sprintf("and %d more nodepool(s)", len(rs)-MaxPodReasons))
			break
		}
		out = append(out, r.msg)
	}
	return out
}
