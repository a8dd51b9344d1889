package scheduling_test

// An independent checker of Solve's output. It deliberately shares no code with the solver:
// it evaluates node selectors, taints, resources, host ports and pod (anti-)affinity directly
// on concrete label maps, the way the kube-scheduler would on the nodes that get launched, and
// it only uses the solver's exported model types to read the input and the result.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

type cNode struct {
	name        string
	labels      map[string]string
	taints      []corev1.Taint
	allocatable map[corev1.ResourceName]int64
	pods        []*corev1.Pod
	claim       *scheduling.NewClaim
}

func milli(q resource.Quantity) int64 { return q.MilliValue() }

func cPodRequests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		for n, q := range c.Resources.Requests {
			out[n] += milli(q)
		}
	}
	for _, c := range p.Spec.InitContainers {
		for n, q := range c.Resources.Requests {
			if milli(q) > out[n] {
				out[n] = milli(q)
			}
		}
	}
	// Pod-level requests (cpu, memory, hugepages) stand for the containers'.
	if p.Spec.Resources != nil {
		for n, q := range p.Spec.Resources.Requests {
			if n == corev1.ResourceCPU || n == corev1.ResourceMemory || strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) {
				out[n] = milli(q)
			}
		}
	}
	out[corev1.ResourcePods] += 1000
	return out
}

func cMatchExpr(lbls map[string]string, e corev1.NodeSelectorRequirement) bool {
	v, ok := lbls[e.Key]
	in := func() bool {
		for _, x := range e.Values {
			if x == v {
				return true
			}
		}
		return false
	}
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && in()
	case corev1.NodeSelectorOpNotIn:
		return !ok || !in()
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok {
			return false
		}
		a, err1 := strconv.ParseInt(v, 10, 64)
		b, err2 := strconv.ParseInt(e.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if e.Operator == corev1.NodeSelectorOpGt {
			return a > b
		}
		return a < b
	}
	return false
}

func cMatchTerm(lbls map[string]string, t corev1.NodeSelectorTerm) bool {
	for _, e := range t.MatchExpressions {
		if !cMatchExpr(lbls, e) {
			return false
		}
	}
	return true
}

// cVolumeZones returns, per volume of the pod, the zones it can be reached from (nil: any).
func cVolumeZones(in *scheduling.Input, p *corev1.Pod) [][]string {
	var out [][]string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		for _, c := range in.PersistentVolumeClaims {
			if c.Namespace != p.Namespace || c.Name != v.PersistentVolumeClaim.ClaimName {
				continue
			}
			if c.Spec.VolumeName != "" {
				for _, pv := range in.PersistentVolumes {
					if pv.Name == c.Spec.VolumeName && pv.Spec.NodeAffinity != nil {
						for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
							for _, e := range t.MatchExpressions {
								if e.Key == scheduling.LabelZone {
									out = append(out, e.Values)
								}
							}
						}
					}
				}
			} else if c.Spec.StorageClassName != nil {
				for _, sc := range in.StorageClasses {
					if sc.Name == *c.Spec.StorageClassName {
						for _, t := range sc.AllowedTopologies {
							for _, e := range t.MatchLabelExpressions {
								if e.Key == scheduling.LabelZone {
									out = append(out, e.Values)
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// cPodFitsLabels: node selector and required node affinity (any term).
func cPodFitsLabels(p *corev1.Pod, lbls map[string]string) error {
	for k, v := range p.Spec.NodeSelector {
		if lbls[k] != v {
			return fmt.Errorf("nodeSelector %s=%s, node has %q", k, v, lbls[k])
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if cMatchTerm(lbls, t) {
				return nil
			}
		}
		return fmt.Errorf("no required node affinity term matches %v", lbls)
	}
	return nil
}

func cTolerates(p *corev1.Pod, taints []corev1.Taint) error {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for _, tol := range p.Spec.Tolerations {
			keyOK := tol.Key == "" || tol.Key == t.Key
			effOK := tol.Effect == "" || tol.Effect == t.Effect
			valOK := tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value
			if tol.Key == "" && tol.Operator != corev1.TolerationOpExists {
				keyOK = false
			}
			if keyOK && effOK && valOK {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("taint %s not tolerated", t.Key)
		}
	}
	return nil
}

func cHostPorts(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				proto := port.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				ip := port.HostIP
				if ip == "" {
					ip = "0.0.0.0"
				}
				out = append(out, fmt.Sprintf("%s/%d/%s", proto, port.HostPort, ip))
			}
		}
	}
	return out
}

// cClaimLabels are the labels of the node a claim becomes when launched as instance type it in
// its cheapest compatible offering; ok=false if no offering matches the claim's requirements.
func cClaimLabels(c *scheduling.NewClaim, it *scheduling.InstanceType) (map[string]string, float64, bool) {
	reqs := c.Requirements.NodeSelectorRequirements()
	lbls := map[string]string{}
	for k, v := range c.NodePool.Labels {
		lbls[k] = v
	}
	for _, r := range it.Requirements.NodeSelectorRequirements() {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			lbls[r.Key] = r.Values[0]
		}
	}
	for _, r := range reqs {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			lbls[r.Key] = r.Values[0]
		}
	}
	lbls[scheduling.LabelInstanceType] = it.Name
	lbls[scheduling.LabelNodePool] = c.NodePool.Name
	lbls[scheduling.LabelHostname] = c.Hostname
	best, found := 0.0, false
	var bz, bc string
	for _, o := range it.Offerings {
		if !o.Available {
			continue
		}
		trial := map[string]string{}
		for k, v := range lbls {
			trial[k] = v
		}
		trial[scheduling.LabelZone] = o.Zone
		trial[scheduling.LabelCapacityType] = o.CapacityType
		ok := true
		for _, r := range reqs {
			if r.Key == scheduling.LabelInstanceType || r.Key == scheduling.LabelHostname {
				continue
			}
			if _, defined := trial[r.Key]; !defined && (r.Operator == corev1.NodeSelectorOpExists || r.Operator == corev1.NodeSelectorOpIn) {
				continue // a label the cloud provider would add; not modelled here
			}
			if !cMatchExpr(trial, r) {
				ok = false
			}
		}
		if ok && (!found || o.Price < best) {
			best, found, bz, bc = o.Price, true, o.Zone, o.CapacityType
		}
	}
	lbls[scheduling.LabelZone] = bz
	lbls[scheduling.LabelCapacityType] = bc
	return lbls, best, found
}

// cClaimsDevices: the pod claims devices through Dynamic Resource Allocation.
func cClaimsDevices(p *corev1.Pod) bool {
	n := len(p.Spec.ResourceClaims)
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		n += len(c.Resources.Claims)
	}
	return n > 0
}

// cDaemons are the DaemonSet pods that count: those claiming devices do not unless the
// solver simulates Dynamic Resource Allocation requests.
func cDaemons(in *scheduling.Input) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range in.DaemonSetPods {
		if in.Options.SimulateDRARequests || !cClaimsDevices(ds) {
			out = append(out, ds)
		}
	}
	return out
}

func cDaemonOverhead(in *scheduling.Input, np *scheduling.NodePool, lbls map[string]string) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, ds := range cDaemons(in) {
		if cTolerates(ds, np.Taints) != nil || cPodFitsLabels(ds, lbls) != nil {
			continue
		}
		for n, v := range cPodRequests(ds) {
			out[n] += v
		}
	}
	return out
}

// check verifies every hard constraint of every placement in res and returns all violations.
// spreadUniverse lists, per topology key, the domains a spread constraint ranges over.
func check(in *scheduling.Input, res *scheduling.Results) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	placed := map[*corev1.Pod]int{}
	var nodes []*cNode
	for _, n := range in.ExistingNodes {
		cn := &cNode{name: n.Name, labels: map[string]string{}, allocatable: map[corev1.ResourceName]int64{}}
		for k, v := range n.Labels {
			cn.labels[k] = v
		}
		if _, ok := cn.labels[scheduling.LabelHostname]; !ok {
			cn.labels[scheduling.LabelHostname] = n.Name
		}
		for _, t := range n.Taints {
			if !n.Initialized && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable || t.Key == "karpenter.sh/unregistered") {
				continue
			}
			cn.taints = append(cn.taints, t)
		}
		if n.Initialized {
			cn.taints = append(cn.taints, n.StartupTaints...)
		}
		for r, q := range n.Allocatable {
			cn.allocatable[r] = milli(q)
		}
		cn.pods = append(cn.pods, n.Pods...)
		nodes = append(nodes, cn)
	}
	byNode := map[*scheduling.ExistingNode]*cNode{}
	for i, n := range in.ExistingNodes {
		byNode[n] = nodes[i]
	}
	newPods := map[*corev1.Pod]bool{}
	for _, pl := range res.ExistingNodes {
		cn := byNode[pl.Node]
		for _, p := range pl.Pods {
			placed[p]++
			newPods[p] = true
			cn.pods = append(cn.pods, p)
			if err := cTolerates(p, cn.taints); err != nil {
				fail("pod %s on node %s: %v", p.Name, cn.name, err)
			}
		}
	}
	limitsUsed := map[string]map[corev1.ResourceName]int64{}
	claimsPerPool := map[string]int64{}
	for _, c := range res.NewClaims {
		claimsPerPool[c.NodePool.Name]++
		if len(c.InstanceTypes) == 0 {
			fail("claim %s has no instance types", c.Hostname)
			continue
		}
		maxInst := in.Options.MaxInstanceTypes
		if maxInst == 0 {
			maxInst = scheduling.DefaultMaxInstanceTypes
		}
		if len(c.InstanceTypes) > maxInst && !hasMinValues(c) {
			fail("claim %s lists %d instance types, max %d", c.Hostname, len(c.InstanceTypes), maxInst)
		}
		req := map[corev1.ResourceName]int64{}
		for _, p := range c.Pods {
			placed[p]++
			newPods[p] = true
			for n, v := range cPodRequests(p) {
				req[n] += v
			}
		}
		var primary map[string]string
		prevPrice := -1.0
		maxCap := map[corev1.ResourceName]int64{}
		for i, it := range c.InstanceTypes {
			lbls, price, ok := cClaimLabels(c, it)
			if !ok {
				fail("claim %s: instance type %s has no available offering compatible with %v", c.Hostname, it.Name, c.Requirements)
				continue
			}
			if price < prevPrice {
				fail("claim %s: instance types not ordered by price", c.Hostname)
			}
			prevPrice = price
			if i == 0 {
				primary = lbls
				if price != c.Price {
					fail("claim %s: price %v, cheapest offering %v", c.Hostname, c.Price, price)
				}
			}
			for r, q := range it.Capacity {
				if milli(q) > maxCap[r] {
					maxCap[r] = milli(q)
				}
			}
			ds := cDaemonOverhead(in, c.NodePool, lbls)
			for r, v := range req {
				alloc := it.Capacity[r]
				a := milli(alloc)
				if o, ok := it.Overhead[r]; ok {
					a -= milli(o)
				}
				if v+ds[r] > a {
					fail("claim %s: %s overcommitted on %s: %d+%d > %d", c.Hostname, r, it.Name, v, ds[r], a)
				}
			}
			for _, p := range c.Pods {
				if err := cPodFitsLabels(p, lbls); err != nil {
					fail("pod %s on claim %s as %s: %v", p.Name, c.Hostname, it.Name, err)
				}
				for _, zones := range cVolumeZones(in, p) {
					if !contains(zones, lbls[scheduling.LabelZone]) {
						fail("pod %s on claim %s in zone %s cannot reach its volume in %v", p.Name, c.Hostname, lbls[scheduling.LabelZone], zones)
					}
				}
			}
		}
		if primary == nil {
			continue
		}
		for _, p := range c.Pods {
			if err := cTolerates(p, c.NodePool.Taints); err != nil {
				fail("pod %s on claim %s: %v", p.Name, c.Hostname, err)
			}
		}
		if limitsUsed[c.NodePool.Name] == nil {
			limitsUsed[c.NodePool.Name] = map[corev1.ResourceName]int64{}
		}
		for r, v := range maxCap {
			limitsUsed[c.NodePool.Name][r] += v
		}
		cn := &cNode{name: c.Hostname, labels: primary, claim: c, pods: c.Pods, allocatable: map[corev1.ResourceName]int64{}}
		nodes = append(nodes, cn)
	}
	for _, np := range in.NodePools {
		if np.Remaining == nil {
			continue
		}
		for r, q := range np.Remaining {
			if r == "nodes" {
				if claimsPerPool[np.Name] > q.Value() {
					fail("nodepool %s: %d claims exceed nodes limit %d", np.Name, claimsPerPool[np.Name], q.Value())
				}
				continue
			}
			if limitsUsed[np.Name][r] > milli(q) {
				fail("nodepool %s: %s limit %d exceeded (%d)", np.Name, r, milli(q), limitsUsed[np.Name][r])
			}
		}
	}
	for _, p := range in.Pods {
		_, hasErr := res.PodErrors[p]
		switch {
		case placed[p] > 1:
			fail("pod %s placed %d times", p.Name, placed[p])
		case placed[p] == 1 && hasErr:
			fail("pod %s placed and reported unschedulable", p.Name)
		case placed[p] == 0 && !hasErr:
			fail("pod %s neither placed nor reported", p.Name)
		case placed[p] > 0 && !in.Options.SimulateDRARequests && cClaimsDevices(p):
			fail("pod %s claims devices through Dynamic Resource Allocation and was placed", p.Name)
		}
	}
	// Per-node checks on existing nodes: resources, labels, ports.
	for _, cn := range nodes {
		if cn.claim == nil {
			used := map[corev1.ResourceName]int64{}
			anyNew := false
			for _, p := range cn.pods {
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				anyNew = anyNew || newPods[p]
				for r, v := range cPodRequests(p) {
					used[r] += v
				}
				if newPods[p] {
					if err := cPodFitsLabels(p, cn.labels); err != nil {
						fail("pod %s on node %s: %v", p.Name, cn.name, err)
					}
					for _, zones := range cVolumeZones(in, p) {
						if !contains(zones, cn.labels[scheduling.LabelZone]) {
							fail("pod %s on node %s cannot reach its volume in %v", p.Name, cn.name, zones)
						}
					}
				}
			}
			for r, v := range used {
				a, ok := cn.allocatable[r]
				if !ok && r == corev1.ResourcePods {
					continue
				}
				if v > a && anyNew {
					fail("node %s: %s overcommitted %d > %d", cn.name, r, v, a)
				}
			}
		}
		// A claim may become any of its instance types: the daemons of each (those that would
		// run on a node of that type) bind their ports beside the pods'.
		views := [][]*corev1.Pod{nil}
		if cn.claim != nil {
			views = views[:0]
			for _, it := range cn.claim.InstanceTypes {
				lbls, _, ok := cClaimLabels(cn.claim, it)
				if !ok {
					continue
				}
				var daemons []*corev1.Pod
				for _, ds := range cDaemons(in) {
					if cTolerates(ds, cn.claim.NodePool.Taints) == nil && cPodFitsLabels(ds, lbls) == nil {
						daemons = append(daemons, ds)
					}
				}
				views = append(views, daemons)
			}
		}
		for _, daemons := range views {
			var ports []string
			for _, ds := range daemons {
				ports = append(ports, cHostPorts(ds)...)
			}
			for _, p := range cn.pods {
				for _, hp := range cHostPorts(p) {
					for _, o := range ports {
						a, b := strings.SplitN(hp, "/", 3), strings.SplitN(o, "/", 3)
						if a[0] == b[0] && a[1] == b[1] && (a[2] == b[2] || a[2] == "0.0.0.0" || b[2] == "0.0.0.0") {
							fail("node %s: host port %s conflicts with %s", cn.name, hp, o)
						}
					}
					ports = append(ports, hp)
				}
			}
		}
	}
	errs = append(errs, checkTopology(in, nodes, newPods)...)
	errs = append(errs, checkReservations(in, res)...)
	return errs
}

// checkReservations: no reservation has more new claims that may launch into it than free slots.
func checkReservations(in *scheduling.Input, res *scheduling.Results) []string {
	free := map[string]int{}
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType != scheduling.CapacityTypeReserved || o.ReservationID == "" {
					continue
				}
				if n, ok := free[o.ReservationID]; !ok || o.ReservationCapacity < n {
					free[o.ReservationID] = o.ReservationCapacity
				}
			}
		}
	}
	if len(free) == 0 {
		return nil
	}
	used := map[string]int{}
	for _, c := range res.NewClaims {
		ids := map[string]bool{}
		for _, it := range c.InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType == scheduling.CapacityTypeReserved && o.ReservationID != "" && o.Launchable() &&
					c.Requirements.Has(scheduling.LabelZone, o.Zone) && c.Requirements.Has(scheduling.LabelCapacityType, o.CapacityType) &&
					(o.Requirements.Len() == 0 || c.Requirements.Intersects(o.Requirements) == nil) {
					ids[o.ReservationID] = true
				}
			}
		}
		for id := range ids {
			used[id]++
		}
	}
	var errs []string
	for id, n := range used {
		if n > free[id] {
			errs = append(errs, fmt.Sprintf("reservation %s: %d new claims may launch into it, %d free slots", id, n, free[id]))
		}
	}
	return errs
}

func hasMinValues(c *scheduling.NewClaim) bool {
	for _, r := range c.Requirements.All() {
		if r.MinValues != nil {
			return true
		}
	}
	return false
}

// checkTopology verifies required pod (anti-)affinity and DoNotSchedule spread constraints on
// the final state. The generators only create spread constraints whose selector matches
// exactly the pods carrying that constraint, and no pre-existing pods in conflict, so that the
// final state must itself satisfy them.
func checkTopology(in *scheduling.Input, nodes []*cNode, newPods map[*corev1.Pod]bool) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	type loc struct {
		pod  *corev1.Pod
		node *cNode
	}
	var all []loc
	for _, n := range nodes {
		for _, p := range n.pods {
			all = append(all, loc{p, n})
		}
	}
	sel := func(ls *metav1.LabelSelector) labels.Selector {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			panic(err)
		}
		return s
	}
	nsOK := func(owner *corev1.Pod, term corev1.PodAffinityTerm, other *corev1.Pod) bool {
		if term.NamespaceSelector != nil {
			s := sel(term.NamespaceSelector)
			if s.Empty() {
				return true
			}
			if s.Matches(labels.Set(in.Namespaces[other.Namespace])) {
				return true
			}
		}
		for _, n := range term.Namespaces {
			if n == other.Namespace {
				return true
			}
		}
		return term.NamespaceSelector == nil && len(term.Namespaces) == 0 && other.Namespace == owner.Namespace
	}
	for _, l := range all {
		p := l.pod
		if !newPods[p] || p.Spec.Affinity == nil {
			continue
		}
		if pa := p.Spec.Affinity.PodAntiAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				s := sel(term.LabelSelector)
				d, ok := l.node.labels[term.TopologyKey]
				if !ok {
					continue
				}
				for _, o := range all {
					if o.pod == p || o.node.labels[term.TopologyKey] != d {
						continue
					}
					if _, ok := o.node.labels[term.TopologyKey]; !ok {
						continue
					}
					if s.Matches(labels.Set(o.pod.Labels)) && nsOK(p, term, o.pod) {
						fail("anti-affinity: pod %s and %s share %s=%s", p.Name, o.pod.Name, term.TopologyKey, d)
					}
				}
			}
		}
		if pa := p.Spec.Affinity.PodAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				s := sel(term.LabelSelector)
				d, ok := l.node.labels[term.TopologyKey]
				if !ok {
					fail("affinity: pod %s on node without %s", p.Name, term.TopologyKey)
					continue
				}
				domains := map[string]bool{}
				found := false
				for _, o := range all {
					if s.Matches(labels.Set(o.pod.Labels)) && nsOK(p, term, o.pod) {
						domains[o.node.labels[term.TopologyKey]] = true
						if o.pod != p && o.node.labels[term.TopologyKey] == d {
							found = true
						}
					}
				}
				self := s.Matches(labels.Set(p.Labels)) && nsOK(p, term, p)
				if !found && !(self && len(domains) == 1) {
					fail("affinity: pod %s in %s=%s has no matching pod there", p.Name, term.TopologyKey, d)
				}
				if self && len(domains) > 1 && !anyExistingMatch(in, s) {
					fail("affinity: self-affine pods of %s spread over %d domains of %s", s, len(domains), term.TopologyKey)
				}
			}
		}
	}
	// Inverse anti-affinity of bound pods against new pods.
	for _, l := range all {
		if newPods[l.pod] || l.pod.Spec.Affinity == nil || l.pod.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for _, term := range l.pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			s := sel(term.LabelSelector)
			d, ok := l.node.labels[term.TopologyKey]
			if !ok {
				continue
			}
			for _, o := range all {
				if newPods[o.pod] && o.node.labels[term.TopologyKey] == d && s.Matches(labels.Set(o.pod.Labels)) && nsOK(l.pod, term, o.pod) {
					fail("inverse anti-affinity: new pod %s next to %s in %s=%s", o.pod.Name, l.pod.Name, term.TopologyKey, d)
				}
			}
		}
	}
	// Spread: per distinct (namespace, key, selector incl. matchLabelKeys) with DoNotSchedule.
	// Only groups in which every matching pod carries the same constraint are checked on the
	// final state: a pod without the constraint may legally land anywhere.
	type sk struct{ ns, key, sel string }
	seen := map[sk]bool{}
	spreadSel := func(p *corev1.Pod, c corev1.TopologySpreadConstraint) labels.Selector {
		s := sel(c.LabelSelector)
		for _, k := range c.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, "=", []string{v})
				s = s.Add(*r)
			}
		}
		return s
	}
	for _, p := range in.Pods {
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule || c.MinDomains != nil {
				continue
			}
			s := spreadSel(p, c)
			k := sk{p.Namespace, c.TopologyKey, s.String()}
			if seen[k] {
				continue
			}
			seen[k] = true
			counts := map[string]int{}
			homogeneous := true
			for _, l := range all {
				if l.pod.Namespace == p.Namespace && s.Matches(labels.Set(l.pod.Labels)) {
					same := false
					for _, oc := range l.pod.Spec.TopologySpreadConstraints {
						if oc.TopologyKey == c.TopologyKey && oc.WhenUnsatisfiable == c.WhenUnsatisfiable && oc.MaxSkew == c.MaxSkew && spreadSel(l.pod, oc).String() == s.String() {
							same = true
						}
					}
					homogeneous = homogeneous && same && newPods[l.pod]
					if d, ok := l.node.labels[c.TopologyKey]; ok {
						counts[d]++
					}
				}
			}
			if !homogeneous {
				continue
			}
			if c.TopologyKey == scheduling.LabelHostname {
				for d, n := range counts {
					if n > int(c.MaxSkew) {
						fail("spread %s on %s: %d pods on %s, maxSkew %d", s, c.TopologyKey, n, d, c.MaxSkew)
					}
				}
				continue
			}
			universe := spreadUniverse(in, p, c)
			min, max := -1, 0
			for _, d := range universe {
				if min < 0 || counts[d] < min {
					min = counts[d]
				}
				if counts[d] > max {
					max = counts[d]
				}
			}
			for d, n := range counts {
				if !contains(universe, d) {
					fail("spread %s: pods in domain %s outside %v", s, d, universe)
				}
				if n > max {
					max = n
				}
			}
			if min >= 0 && max-min > int(c.MaxSkew) {
				fail("spread %s on %s: skew %d > %d (%v over %v)", s, c.TopologyKey, max-min, c.MaxSkew, counts, universe)
			}
		}
	}
	return errs
}

func anyExistingMatch(in *scheduling.Input, s labels.Selector) bool {
	for _, n := range in.ExistingNodes {
		for _, p := range n.Pods {
			if s.Matches(labels.Set(p.Labels)) {
				return true
			}
		}
	}
	return false
}

// spreadUniverse: the values of the key that pools (whose requirements admit them and, with
// nodeTaintsPolicy Honor, whose taints the pod tolerates) or existing nodes can have; with
// nodeAffinityPolicy Honor (the default) only values the pod's node selector admits.
func spreadUniverse(in *scheduling.Input, p *corev1.Pod, c corev1.TopologySpreadConstraint) []string {
	key := c.TopologyKey
	honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	set := map[string]bool{}
	for _, n := range in.ExistingNodes {
		if v, ok := n.Labels[key]; ok && (!honorAffinity || cPodFitsLabels(p, n.Labels) == nil) && (!honorTaints || cTolerates(p, n.Taints) == nil) {
			set[v] = true
		}
	}
	for _, np := range in.NodePools {
		if honorTaints && cTolerates(p, np.Taints) != nil {
			continue
		}
		poolReqs := np.Requirements.NodeSelectorRequirements()
		admits := func(lbls map[string]string) bool {
			for _, r := range poolReqs {
				if _, def := lbls[r.Key]; def && !cMatchExpr(lbls, r) {
					return false
				}
			}
			return !honorAffinity || cPodFitsLabelsPartial(p, lbls)
		}
		for _, it := range np.InstanceTypes {
			itLabels := map[string]string{}
			for _, r := range it.Requirements.NodeSelectorRequirements() {
				if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
					itLabels[r.Key] = r.Values[0]
				}
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				lbls := map[string]string{scheduling.LabelZone: o.Zone, scheduling.LabelCapacityType: o.CapacityType}
				for k, v := range itLabels {
					lbls[k] = v
				}
				switch key {
				case scheduling.LabelZone, scheduling.LabelCapacityType:
					if admits(lbls) {
						set[lbls[key]] = true
					}
				default:
					var vals []string
					if v, ok := itLabels[key]; ok {
						vals = []string{v}
					}
					for _, r := range poolReqs {
						if r.Key == key && r.Operator == corev1.NodeSelectorOpIn {
							vals = append(vals, r.Values...)
						}
					}
					for _, v := range vals {
						trial := map[string]string{key: v}
						for k, x := range lbls {
							trial[k] = x
						}
						if admits(trial) {
							set[v] = true
						}
					}
				}
			}
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// cPodFitsLabelsPartial evaluates only the pod's expressions on keys present in lbls.
func cPodFitsLabelsPartial(p *corev1.Pod, lbls map[string]string) bool {
	for k, v := range p.Spec.NodeSelector {
		if x, ok := lbls[k]; ok && x != v {
			return false
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			ok := true
			for _, e := range t.MatchExpressions {
				if _, def := lbls[e.Key]; def && !cMatchExpr(lbls, e) {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
