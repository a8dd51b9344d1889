package provisioning

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// plans remembers which NodeClaim each pod was launched for, until the pod is
// bound or its NodeClaim's node is initialized.
//
// Why: the next decision re-solves every pending pod, and cluster state
// models a NodeClaim that has not launched yet with allocatable equal to its
// requests (exactly the pods planned there). Packed again in another order, a
// few pods no longer fit and get NodeClaims of their own, before kube-scheduler
// bound anything: a third of the NodeClaims of a 1,000-pod scale-up on the
// local cluster were such. A pod whose NodeClaim is still coming is therefore
// put in the solver's input as one of that NodeClaim's pods: it keeps its room,
// and nothing else is placed in it.
type plans struct {
	mu     sync.Mutex
	claims map[types.UID]string // pod -> NodeClaim name
}

func newPlans() *plans { return &plans{claims: map[types.UID]string{}} }

// record notes that pods were launched for the NodeClaim named claim.
func (p *plans) record(claim string, pods []*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range pods {
		p.claims[pod.UID] = claim
	}
}

// apply moves each pod of in.Pods whose planned NodeClaim is in the input and
// not initialized onto that NodeClaim's pods, and returns the pods left to
// solve and the NodeClaims that kept pods. Plans of pods no longer pending, or
// whose NodeClaim is gone or initialized, are forgotten.
func (p *plans) apply(in *scheduling.Input) ([]*corev1.Pod, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.claims) == 0 {
		return in.Pods, nil
	}
	waiting := map[string]*scheduling.ExistingNode{}
	for _, n := range in.ExistingNodes {
		if !n.Initialized {
			waiting[n.Name] = n
		}
	}
	kept := map[types.UID]string{}
	keptOn := map[string]bool{}
	out := make([]*corev1.Pod, 0, len(in.Pods))
	for _, pod := range in.Pods {
		name, ok := p.claims[pod.UID]
		n := waiting[name]
		if !ok || n == nil {
			out = append(out, pod)
			continue
		}
		if _, seen := kept[pod.UID]; seen {
			continue
		}
		kept[pod.UID] = name
		keptOn[name] = true
		// A copy: the slice may be cluster state's own.
		n.Pods = append(n.Pods[:len(n.Pods):len(n.Pods)], pod)
	}
	p.claims = kept
	claims := make([]string, 0, len(keptOn))
	for name := range keptOn {
		claims = append(claims, name)
	}
	sort.Strings(claims)
	return out, claims
}

// claimOf is the NodeClaim a pod was launched for, "" for none.
func (p *plans) claimOf(uid types.UID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claims[uid]
}
