package provisioning

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Launch loops.
//
// A NodeClaim is launched for pods kube-scheduler could not place. When the
// node it becomes cannot hold them after all (the DaemonSets' pods take more
// than the solver counted, new nodes get a taint or label the NodePool does not
// declare, a higher-priority pod preempts them), they stay pending, or are
// replaced by pods just like them, and the next decision launches again: one
// NodeClaim after another for the same pods, for as long as the cause lasts.
// The provisioner notices and stops (loopGuard).
//
// What counts: a NodeClaim launched for pods of a workload (their controller,
// e.g. a ReplicaSet, so that a preempted pod's replacement is the same
// workload; the pod itself when nothing controls it) that became an
// initialized node running nothing but DaemonSet and static pods (and pods on
// their way out), while none of the pods it was launched for runs anywhere,
// counts when the provisioner is about to launch a NodeClaim for a pod of that
// workload once more, if its node has been initialized for LaunchLoopSettle. A NodeClaim on which a pod of the workload ran, or on
// which the solver placed one, never counts: a pod nominated to a new
// NodeClaim and bound there, a scale-up in several steps, a node initialized
// before kube-scheduler got to its pods, pods bound elsewhere are all normal.
//
// After LaunchLoopThreshold such NodeClaims within LaunchLoopWindow, the
// provisioner launches nothing more for the workload's pods (the NodeClaim
// about to be launched included): each gets a Warning event (EventLaunchLoop)
// naming the NodeClaims and what to check, and the stop is counted in
// karpenter_provisioner_launch_loops_total. Launching resumes as soon as a
// pending pod of the workload, the pods the DaemonSets run on new nodes or a
// NodePool change, or after a back-off: LaunchLoopBackoff, doubling with each
// stop of the same workload up to LaunchLoopMaxBackoff.
const (
	LaunchLoopThreshold  = 3
	LaunchLoopWindow     = 30 * time.Minute
	LaunchLoopBackoff    = 5 * time.Minute
	LaunchLoopMaxBackoff = time.Hour
	// LaunchLoopSettle: a NodeClaim counts only once its node has been
	// initialized this long without a pod of the workload, so that
	// kube-scheduler, binding the pods it was launched for, is not mistaken
	// for a loop on a busy cluster (a scale-up of a hundred pods, one per
	// node, saw nodes idle for several seconds after initialization).
	LaunchLoopSettle = 30 * time.Second
)

// EventLaunchLoop is the reason of the Warning event on a pod the provisioner
// stopped launching NodeClaims for (this implementation's own; upstream has no
// such event).
const EventLaunchLoop = "LaunchLoop"

// maxLaunches bounds the NodeClaims remembered at once; past it new launches
// are not watched (they are forgotten once initialized and used anyway).
const maxLaunches = 100000

// claimNodes is what the guard reads of cluster state (state.Cluster).
type claimNodes interface {
	NodeClaimNode(name string) (node string, initialized time.Time, pods []*corev1.Pod, ok bool)
	BoundPod(key types.NamespacedName) *corev1.Pod
}

// plannedPod is a pod a NodeClaim was launched for.
type plannedPod struct {
	key      types.NamespacedName
	uid      types.UID
	workload types.UID
}

// launch is a NodeClaim the provisioner created, while it may still count.
type launch struct {
	claim string
	at    time.Time
	pods  []plannedPod
	// initialized: its node was seen initialized. idle: at the latest look the
	// node ran nothing but DaemonSet and static pods and pods on their way out.
	initialized, idle bool
}

func (l *launch) isFor(w types.UID) bool {
	for i := range l.pods {
		if l.pods[i].workload == w {
			return true
		}
	}
	return false
}

// ranOn: a pod of one of the workloads l was launched for runs among pods.
func (l *launch) ranOn(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && l.isFor(workloadOf(p)) {
			return true
		}
	}
	return false
}

// running: a pod of workload w that l was launched for runs somewhere.
func (l *launch) running(cs claimNodes, w types.UID) bool {
	for _, pp := range l.pods {
		if pp.workload != w {
			continue
		}
		if b := cs.BoundPod(pp.key); b != nil && b.UID == pp.uid && b.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// workloadLoop is what the guard knows of one workload.
type workloadLoop struct {
	// strikes: NodeClaims that counted, oldest first, within LaunchLoopWindow.
	strikes []strike
	// until: launches for the workload are stopped until then (zero: they are not).
	until time.Time
	// holds: stops so far, for the back-off.
	holds int
	// claims named by the stop's events; spec and env: what the stop was
	// decided on (podSpecHash of the pod, envHash of the input).
	claims    []string
	spec, env uint64
	last      time.Time
}

type strike struct {
	claim string
	at    time.Time
}

// loopGuard watches the provisioner's launches for loops (see above).
type loopGuard struct {
	clock     clock.Clock
	mu        sync.Mutex
	launches  map[string]*launch
	workloads map[types.UID]*workloadLoop
}

func newLoopGuard(clk clock.Clock) *loopGuard {
	return &loopGuard{clock: clk, launches: map[string]*launch{}, workloads: map[types.UID]*workloadLoop{}}
}

// workloadOf is the pod's controller, or the pod itself without one.
func workloadOf(p *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID != "" {
		return ref.UID
	}
	return p.UID
}

// launched remembers a NodeClaim created for pods.
func (g *loopGuard) launched(claim string, pods []*corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.launches) >= maxLaunches {
		return
	}
	l := &launch{claim: claim, at: g.clock.Now(), pods: make([]plannedPod, len(pods))}
	for i, p := range pods {
		l.pods[i] = plannedPod{key: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, uid: p.UID, workload: workloadOf(p)}
	}
	g.launches[claim] = l
}

// observe looks at every remembered NodeClaim before a decision: launches whose
// node runs a pod of their workloads are forgotten (they served), as are those
// gone before their node initialized and those older than the window. It
// returns the initialized ones by node name, for judge.
func (g *loopGuard) observe(cs claimNodes) map[string]*launch {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	byNode := map[string]*launch{}
	for name, l := range g.launches {
		if now.Sub(l.at) > LaunchLoopWindow {
			delete(g.launches, name)
			continue
		}
		node, initialized, pods, ok := cs.NodeClaimNode(name)
		if !ok {
			// Gone: judged on what was last seen, if it ever initialized.
			if !l.initialized {
				delete(g.launches, name)
			}
			continue
		}
		if initialized.IsZero() {
			continue
		}
		if l.ranOn(pods) {
			delete(g.launches, name)
			continue
		}
		// kube-scheduler binds to a node once it is initialized; on a busy
		// cluster that takes a while, and a node its pods are still on their
		// way to is no loop.
		if now.Sub(initialized) < LaunchLoopSettle {
			continue
		}
		l.initialized = true
		l.idle = true
		for _, p := range pods {
			if p.DeletionTimestamp == nil && !scheduling.FollowsItsNode(p) {
				l.idle = false
				break
			}
		}
		byNode[node] = l
	}
	for w, wl := range g.workloads {
		if !wl.until.IsZero() && !now.Before(wl.until) {
			wl.resume(now, false)
		}
		wl.strikes = recent(wl.strikes, now)
		if wl.until.IsZero() && len(wl.strikes) == 0 && now.Sub(wl.last) > LaunchLoopWindow {
			delete(g.workloads, w)
		}
	}
	return byNode
}

func recent(strikes []strike, now time.Time) []strike {
	i := 0
	for i < len(strikes) && now.Sub(strikes[i].at) > LaunchLoopWindow {
		i++
	}
	return strikes[i:]
}

// held splits the decision's pods into those to solve and those of workloads
// whose launches are stopped. A stop ends at its time, or when the workload's
// pod, the DaemonSets' pods or the NodePools differ from what it was decided on.
func (g *loopGuard) held(in *scheduling.Input) (solve, held []*corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	stopped := false
	for _, wl := range g.workloads {
		if !wl.until.IsZero() {
			stopped = true
			break
		}
	}
	if !stopped {
		return in.Pods, nil
	}
	now := g.clock.Now()
	env := envHash(in)
	solve = make([]*corev1.Pod, 0, len(in.Pods))
	for _, p := range in.Pods {
		wl := g.workloads[workloadOf(p)]
		if wl == nil || wl.until.IsZero() {
			solve = append(solve, p)
			continue
		}
		switch {
		case !now.Before(wl.until):
			wl.resume(now, false)
		case wl.env != env || wl.spec != podSpecHash(p):
			wl.resume(now, true)
		default:
			held = append(held, p)
			continue
		}
		solve = append(solve, p)
	}
	return solve, held
}

// resume ends a stop. After a change the back-off starts over.
func (wl *workloadLoop) resume(now time.Time, changed bool) {
	wl.until, wl.strikes, wl.claims, wl.last = time.Time{}, nil, nil, now
	if changed {
		wl.holds = 0
	}
}

// judge runs after the solve, before its NodeClaims are created. Launches whose
// node the solver placed a pod of their workloads on served and are forgotten.
// Then, for each workload a new NodeClaim is for, the earlier launches for it
// that count (see above) become strikes; a workload reaching
// LaunchLoopThreshold is stopped. It returns the workloads stopped now.
func (g *loopGuard) judge(cs claimNodes, in *scheduling.Input, res *scheduling.Results, byNode map[string]*launch) map[types.UID]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, pl := range res.ExistingNodes {
		l := byNode[pl.Node.Name]
		if l == nil {
			continue
		}
		for _, p := range pl.Pods {
			if l.isFor(workloadOf(p)) {
				delete(g.launches, l.claim)
				break
			}
		}
	}
	if len(res.NewClaims) == 0 || len(g.launches) == 0 {
		return nil
	}
	var byWorkload map[types.UID][]*launch
	seen := map[types.UID]bool{}
	var stopped map[types.UID]bool
	now := g.clock.Now()
	var env uint64
	for _, c := range res.NewClaims {
		for _, p := range c.Pods {
			w := workloadOf(p)
			if seen[w] {
				continue
			}
			seen[w] = true
			if byWorkload == nil {
				byWorkload = g.byWorkload()
			}
			for _, l := range byWorkload[w] {
				if g.launches[l.claim] != l || !l.initialized || !l.idle || l.running(cs, w) {
					continue
				}
				delete(g.launches, l.claim)
				wl := g.workloads[w]
				if wl == nil {
					wl = &workloadLoop{}
					g.workloads[w] = wl
				}
				wl.strikes = append(wl.strikes, strike{claim: l.claim, at: now})
				wl.last = now
			}
			wl := g.workloads[w]
			if wl == nil || !wl.until.IsZero() || len(wl.strikes) < LaunchLoopThreshold {
				continue
			}
			if env == 0 {
				env = envHash(in)
			}
			backoff := LaunchLoopBackoff << min(wl.holds, 10)
			if backoff > LaunchLoopMaxBackoff {
				backoff = LaunchLoopMaxBackoff
			}
			wl.until = now.Add(backoff)
			wl.holds++
			wl.spec, wl.env = podSpecHash(p), env
			wl.claims = wl.claims[:0]
			for _, s := range wl.strikes {
				wl.claims = append(wl.claims, s.claim)
			}
			sort.Strings(wl.claims)
			LaunchLoops.Inc()
			if stopped == nil {
				stopped = map[types.UID]bool{}
			}
			stopped[w] = true
		}
	}
	return stopped
}

func (g *loopGuard) byWorkload() map[types.UID][]*launch {
	out := map[types.UID][]*launch{}
	for _, l := range g.launches {
		for i := range l.pods {
			w := l.pods[i].workload
			if n := len(out[w]); n == 0 || out[w][n-1] != l {
				out[w] = append(out[w], l)
			}
		}
	}
	return out
}

// message is the Warning event for a pod of a stopped workload, "" when its
// workload is not stopped. It stays the same during a stop (the recorder
// dedupes it).
func (g *loopGuard) message(p *corev1.Pod) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	wl := g.workloads[workloadOf(p)]
	if wl == nil || wl.until.IsZero() {
		return ""
	}
	whose := "this pod"
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == workloadOf(p) {
		whose = "pods of its " + ref.Kind + " " + ref.Name
	}
	return fmt.Sprintf("Stopped launching NodeClaims for this pod until %s: %d NodeClaims launched for %s (%s) became nodes "+
		"without them while they stayed pending or were replaced (a launch loop). Check what new nodes run besides the pod: "+
		"the DaemonSets' pods as admitted (their requests include the LimitRange defaults of their namespaces), "+
		"preemption of the pod by higher-priority pods such as DaemonSet pods, and taints or labels nodes get after they start. "+
		"Launching resumes when the pod, a DaemonSet or a NodePool changes",
		wl.until.UTC().Format(time.RFC3339), len(wl.claims), whose, strings.Join(wl.claims, ", "))
}

// podSpecHash fingerprints what of a pod decides where it fits.
func podSpecHash(p *corev1.Pod) uint64 {
	type container struct {
		Resources     corev1.ResourceRequirements
		Ports         []corev1.ContainerPort
		RestartPolicy *corev1.ContainerRestartPolicy
	}
	s := &p.Spec
	fp := struct {
		Containers, InitContainers []container
		Overhead                   corev1.ResourceList
		NodeSelector               map[string]string
		Affinity                   *corev1.Affinity
		Tolerations                []corev1.Toleration
		Spread                     []corev1.TopologySpreadConstraint
		Priority                   *int32
		Resources                  *corev1.ResourceRequirements
	}{Overhead: s.Overhead, NodeSelector: s.NodeSelector, Affinity: s.Affinity, Tolerations: s.Tolerations,
		Spread: s.TopologySpreadConstraints, Priority: s.Priority, Resources: s.Resources}
	for _, c := range s.Containers {
		fp.Containers = append(fp.Containers, container{Resources: c.Resources, Ports: c.Ports})
	}
	for _, c := range s.InitContainers {
		fp.InitContainers = append(fp.InitContainers, container{Resources: c.Resources, Ports: c.Ports, RestartPolicy: c.RestartPolicy})
	}
	h := fnv.New64a()
	_ = json.NewEncoder(h).Encode(fp)
	return h.Sum64()
}

// envHash fingerprints what besides the pod decides what a new node can hold:
// the pods the DaemonSets run on new nodes and the NodePools' templates.
func envHash(in *scheduling.Input) uint64 {
	h := fnv.New64a()
	w := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	for _, ds := range in.DaemonSetPods {
		name := ds.Name
		if ref := metav1.GetControllerOfNoCopy(ds); ref != nil {
			name = ref.Name
		}
		w(ds.Namespace + "/" + name)
		w(fmt.Sprint(podSpecHash(ds)))
	}
	for _, np := range in.NodePools {
		w(np.Name)
		w(fmt.Sprint(np.Weight))
		w(np.Requirements.String())
		w(scheduling.FromLabels(np.Labels).String())
		_ = json.NewEncoder(h).Encode([][]corev1.Taint{np.Taints, np.StartupTaints})
	}
	for _, u := range in.UnavailableNodePools {
		w("unavailable " + u.NodePool.Name)
	}
	sum := h.Sum64()
	if sum == 0 {
		sum = 1
	}
	return sum
}
