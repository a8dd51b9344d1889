package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Existing nodes: capacity that is already there or already launching.

func (s *solver) addExisting(n *ExistingNode) {
	t := &target{idx: len(s.targets), existing: n, hostname: n.Name}
	if h, ok := n.Labels[LabelHostname]; ok {
		t.hostname = h
	}
	lbls := n.Labels
	if _, ok := lbls[LabelHostname]; !ok {
		lbls = make(map[string]string, len(n.Labels)+1)
		for k, v := range n.Labels {
			lbls[k] = v
		}
		lbls[LabelHostname] = t.hostname
	}
	t.reqs = FromLabels(lbls)
	t.reqID = s.intern(t.reqs)
	for _, taint := range n.Taints {
		if !n.Initialized && IsEphemeralTaint(taint) {
			continue
		}
		t.taints = append(t.taints, taint)
	}
	if n.Initialized {
		t.taints = append(t.taints, n.StartupTaints...)
	}
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
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
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

// pendingDaemonSets reserves, on a node that is still starting, the DaemonSet pods that will
// land on it but are not bound yet: the DaemonSets compatible with the node, minus the
// DaemonSet-owned pods already bound (never below zero).
func (s *solver) pendingDaemonSets(t *target) {
	if len(s.in.DaemonSetPods) == 0 {
		return
	}
	want := make(resVec, len(s.ri.names))
	var ports []hostPort
	for _, ds := range s.in.DaemonSetPods {
		if ToleratesTaints(ds.Spec.Tolerations, t.taints, false) != nil || !daemonCompatible(ds, t.reqs, nil) {
			continue
		}
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
