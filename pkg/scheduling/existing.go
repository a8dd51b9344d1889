package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Existing nodes: capacity that is already there or already launching.

func (s *solver) addExisting(n *ExistingNode) {
	t := &target{idx: len(s.targets), existing: n}
	t.hostname, t.reqs, t.taints = existingView(n)
	t.reqID = s.intern(t.reqs)
	for _, taint := range t.taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			s.anyPreferNoSchedule = true
		}
	}
	t.avail = s.ri.vec(n.Allocatable)
	if _, ok := n.Allocatable[corev1.ResourcePods]; !ok {
		t.avail[resPods] = math.MaxInt64 / 4
	}
	t.used = make(resVec, len(s.ri.names))
	for _, p := range n.Pods {
		if !occupies(p) {
			continue
		}
		t.used.add(s.ri.vec(podRequests(p)))
		t.used[resPods]++
		t.ports = append(t.ports, podHostPorts(p)...)
		t.bound = append(t.bound, p)
	}
	if !n.Initialized || n.InFlight {
		s.pendingDaemonSets(t)
	}
	s.targets = append(s.targets, t)
}

// existingView is what the solver reads of an existing node besides its capacity and pods: its
// hostname, its labels as requirements (hostname included) and the taints in force. Boot-time
// taints are ignored while the node starts; startup taints once it has finished.
func existingView(n *ExistingNode) (hostname string, reqs Requirements, taints []corev1.Taint) {
	hostname = n.Name
	if h, ok := n.Labels[LabelHostname]; ok {
		hostname = h
	}
	lbls := n.Labels
	if _, ok := lbls[LabelHostname]; !ok {
		lbls = make(map[string]string, len(n.Labels)+1)
		for k, v := range n.Labels {
			lbls[k] = v
		}
		lbls[LabelHostname] = hostname
	}
	for _, taint := range n.Taints {
		if !n.Initialized && IsEphemeralTaint(taint) {
			continue
		}
		taints = append(taints, taint)
	}
	if n.Initialized {
		taints = append(taints, n.StartupTaints...)
	}
	return hostname, FromLabels(lbls), taints
}

// occupies reports whether a pod bound to a node takes room there: finished pods do not.
func occupies(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// pendingDaemonSets reserves, on a node that is still starting, the DaemonSet pods that will
// land on it but are not bound yet: the DaemonSets compatible with the node, minus the
// DaemonSet-owned pods already bound (never below zero).
func (s *solver) pendingDaemonSets(t *target) {
	if len(s.in.DaemonSetPods) == 0 {
		return
	}
	want := make(resVec, len(s.ri.names))
	var ports []hostPort
	for _, ds := range s.pendingDaemons(t.reqs, t.taints) {
		want.add(s.ri.vec(podRequests(ds)))
		want[resPods]++
		ports = append(ports, podHostPorts(ds)...)
	}
	for _, p := range t.bound {
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" {
				want.sub(s.ri.vec(podRequests(p)))
				want[resPods]--
				break
			}
		}
	}
	for i, v := range want {
		if v > 0 {
			t.used[i] += v
		}
	}
	if len(t.bound) == 0 {
		t.ports = append(t.ports, ports...)
	}
}

// pendingDaemons lists the DaemonSets that will run a pod on a starting node with these labels
// and taints.
func (s *solver) pendingDaemons(reqs Requirements, taints []corev1.Taint) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range s.in.DaemonSetPods {
		if ToleratesTaints(ds.Spec.Tolerations, taints, false) == nil && daemonCompatible(ds, reqs, nil) {
			out = append(out, ds)
		}
	}
	return out
}
