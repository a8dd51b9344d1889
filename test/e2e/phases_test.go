package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// phase is one step of provisioning as the cluster recorded it: the first and
// the last object that reached it, and how many did.
type phase struct {
	name        string
	first, last time.Time
	n           int
	source      string // where the timestamps come from
}

func (p *phase) add(t time.Time) {
	if t.IsZero() {
		return
	}
	p.n++
	if p.first.IsZero() || t.Before(p.first) {
		p.first = t
	}
	if t.After(p.last) {
		p.last = t
	}
}

// batch is one provisioning decision as Karpenter logged it.
type batch struct {
	opened, closed, solved, created time.Time
	triggers, retries, pods, claims int
	untried                         int // pods kube-scheduler had not tried yet
	reason                          string
	solve, create                   time.Duration
	// syncWait and prepare: from the window's close to the solve, the wait
	// for cluster state and all of it (pod list and solver input included).
	syncWait, prepare time.Duration
	// apiWait is the longest a create of this batch waited on its API call
	// (the log's api-duration): the API server's and the connection's time,
	// not Karpenter's.
	apiWait time.Duration
	// slowest names the create that waited apiWait and slowestStart is when
	// its API call began.
	slowest      string
	slowestStart time.Time
}

// own is the part of close -> created that was not spent waiting on the
// slowest create's API call: the pod list, the wait for cluster state, the
// solve and building the NodeClaims.
func (b batch) own() time.Duration {
	return max(0, b.created.Sub(b.closed)-b.apiWait)
}

// phases is the breakdown of one benchmark run.
type phases struct {
	origin  time.Time // the first pod's creationTimestamp
	rows    []*phase
	batches []batch
	// audit: the API server's own time for each NodeClaim create, by name,
	// when the cluster keeps an audit log (nil otherwise).
	audit map[string]serverTime
}

// collectPhases reads the timestamps the cluster keeps about the pods in
// namespace and the NodeClaims and nodes (API timestamps: whole seconds;
// scheduler events: microseconds), and Karpenter's log lines written since
// since (nanoseconds), into a breakdown per phase.
func collectPhases(ctx context.Context, c client.Client, namespace, logPath string, since time.Time) (*phases, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	claims := &v1.NodeClaimList{}
	if err := c.List(ctx, claims); err != nil {
		return nil, err
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, err
	}
	batches, err := readBatches(logPath, since)
	if err != nil {
		return nil, err
	}

	podCreated := &phase{name: "pods created (ReplicaSet controller)", source: "pod creationTimestamp"}
	unschedulable := &phase{name: "pods marked unschedulable (kube-scheduler)", source: "FailedScheduling event"}
	bound := &phase{name: "pods bound (kube-scheduler)", source: "Scheduled event"}
	running := &phase{name: "pods Running (KWOK)", source: "pod Ready condition"}
	owned := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		owned[p.Name] = true
		podCreated.add(p.CreationTimestamp.Time)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				running.add(cond.LastTransitionTime.Time)
			}
		}
	}
	// The scheduler reports each attempt as an event; the first of each kind
	// per pod is when the pod reached that state.
	firstEvent := map[string]map[string]time.Time{"FailedScheduling": {}, "Scheduled": {}}
	for i := range events.Items {
		ev := &events.Items[i]
		byPod, ok := firstEvent[ev.Reason]
		if !ok || ev.InvolvedObject.Kind != "Pod" || !owned[ev.InvolvedObject.Name] || !fromScheduler(ev) {
			continue
		}
		t := eventTime(ev)
		if cur, ok := byPod[ev.InvolvedObject.Name]; !ok || t.Before(cur) {
			byPod[ev.InvolvedObject.Name] = t
		}
	}
	for _, t := range firstEvent["FailedScheduling"] {
		unschedulable.add(t)
	}
	for _, t := range firstEvent["Scheduled"] {
		bound.add(t)
	}

	claimCreated := &phase{name: "NodeClaims created (API)", source: "NodeClaim creationTimestamp"}
	launched := &phase{name: "instances launched", source: "NodeClaim Launched condition"}
	registered := &phase{name: "NodeClaims registered", source: "NodeClaim Registered condition"}
	initialized := &phase{name: "NodeClaims initialized", source: "NodeClaim Initialized condition"}
	for i := range claims.Items {
		nc := &claims.Items[i]
		claimCreated.add(nc.CreationTimestamp.Time)
		for _, cond := range nc.Status.Conditions {
			if cond.Status != metav1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case v1.ConditionTypeLaunched:
				launched.add(cond.LastTransitionTime.Time)
			case v1.ConditionTypeRegistered:
				registered.add(cond.LastTransitionTime.Time)
			case v1.ConditionTypeInitialized:
				initialized.add(cond.LastTransitionTime.Time)
			}
		}
	}
	nodeCreated := &phase{name: "nodes created", source: "Node creationTimestamp"}
	nodeReady := &phase{name: "nodes Ready (KWOK)", source: "Node Ready condition"}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		nodeCreated.add(n.CreationTimestamp.Time)
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				nodeReady.add(cond.LastTransitionTime.Time)
			}
		}
	}

	windows := &phase{name: "batch windows open -> closed", source: "Karpenter log"}
	solved := &phase{name: "solves done", source: "Karpenter log"}
	createdLog := &phase{name: "NodeClaims created (Karpenter)", source: "Karpenter log"}
	for _, b := range batches {
		if b.opened.IsZero() {
			continue
		}
		windows.add(b.opened)
		windows.add(b.closed)
		windows.n--
		solved.add(b.solved)
		if !b.created.IsZero() {
			createdLog.first, createdLog.last = minTime(createdLog.first, b.created), maxTime(createdLog.last, b.created)
			createdLog.n += b.claims
		}
	}
	// Batches that solved nothing new are not shown as windows.
	out := &phases{origin: podCreated.first, batches: batches, rows: []*phase{
		podCreated, unschedulable, windows, solved, createdLog, claimCreated, launched, nodeCreated,
		registered, nodeReady, initialized, bound, running,
	}}
	return out, nil
}

func fromScheduler(ev *corev1.Event) bool {
	return ev.ReportingController == "default-scheduler" || ev.Source.Component == "default-scheduler"
}

// eventTime is when the event (first) happened: events.k8s.io events carry
// eventTime (microseconds), core ones firstTimestamp (seconds).
func eventTime(ev *corev1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// readBatches parses Karpenter's JSON log from since on: "batch window
// closed" opens a batch, "computed new nodeclaim(s)" and "created
// nodeclaim(s)" complete it.
func readBatches(path string, since time.Time) ([]batch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return parseBatches(f, since)
}

func parseBatches(r io.Reader, since time.Time) ([]batch, error) {
	var out []batch
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), "nodeclaim") && !strings.Contains(string(line), "batch window closed") {
			continue
		}
		var l struct {
			Time       time.Time `json:"time"`
			Message    string    `json:"message"`
			Opened     time.Time `json:"opened"`
			Closed     time.Time `json:"closed"`
			Triggers   int       `json:"triggers"`
			Retries    int       `json:"retries"`
			Reason     string    `json:"reason"`
			Pods       int       `json:"pods"`
			NodeClaims int       `json:"nodeclaims"`
			Untried    int       `json:"awaiting-scheduler"`
			Duration   string    `json:"duration"`
			APIWait    string    `json:"api-duration"`
			NodeClaim  string    `json:"nodeclaim"`
			APIStart   time.Time `json:"api-start"`
			SyncWait   string    `json:"sync-wait"`
			Prepare    string    `json:"prepare"`
		}
		if err := json.Unmarshal(line, &l); err != nil || l.Time.Before(since) {
			continue
		}
		d, _ := time.ParseDuration(l.Duration)
		switch l.Message {
		case "batch window closed":
			out = append(out, batch{opened: l.Opened, closed: l.Closed, triggers: l.Triggers, retries: l.Retries, reason: l.Reason})
		case "computed new nodeclaim(s) to fit pod(s)":
			if len(out) > 0 {
				out[len(out)-1].solved, out[len(out)-1].solve, out[len(out)-1].pods = l.Time, d, l.Pods
				out[len(out)-1].untried = l.Untried
				out[len(out)-1].syncWait, _ = time.ParseDuration(l.SyncWait)
				out[len(out)-1].prepare, _ = time.ParseDuration(l.Prepare)
			}
		case "created nodeclaim":
			if w, err := time.ParseDuration(l.APIWait); err == nil && len(out) > 0 && w >= out[len(out)-1].apiWait {
				b := &out[len(out)-1]
				b.apiWait, b.slowest, b.slowestStart = w, l.NodeClaim, l.APIStart
				if b.slowestStart.IsZero() { // a log from before api-start was logged
					b.slowestStart = l.Time.Add(-w)
				}
			}
		case "created nodeclaim(s)":
			if len(out) > 0 {
				out[len(out)-1].created, out[len(out)-1].create, out[len(out)-1].claims = l.Time, d, l.NodeClaims
			}
		}
	}
	return out, sc.Err()
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// karpenterShare is the longest time from a batch window closing to the last
// NodeClaim of that batch being created.
func (p *phases) karpenterShare() time.Duration {
	var worst time.Duration
	for _, b := range p.batches {
		if b.claims > 0 && b.created.Sub(b.closed) > worst {
			worst = b.created.Sub(b.closed)
		}
	}
	return worst
}

// karpenterOwnShare is karpenterShare less the time the worst batch's
// slowest create waited on the API server: the largest own() of a batch.
func (p *phases) karpenterOwnShare() time.Duration {
	var worst time.Duration
	for _, b := range p.batches {
		if b.claims > 0 {
			worst = max(worst, b.own())
		}
	}
	return worst
}

// String renders the breakdown as a table: seconds since the first pod was
// created. API timestamps have whole seconds, so their rows are ±1 s.
func (p *phases) String() string {
	var sb strings.Builder
	sec := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.2f", t.Sub(p.origin).Seconds())
	}
	fmt.Fprintf(&sb, "%-44s %6s %7s %7s  %s\n", "phase", "count", "first", "last", "from")
	for _, r := range p.rows {
		fmt.Fprintf(&sb, "%-44s %6d %7s %7s  %s\n", r.name, r.n, sec(r.first), sec(r.last), r.source)
	}
	bs := append([]batch(nil), p.batches...)
	sort.Slice(bs, func(i, j int) bool { return bs[i].opened.Before(bs[j].opened) })
	fmt.Fprintf(&sb, "%-6s %7s %7s %6s %8s %7s %5s %7s %8s %8s %8s %6s %8s %8s %8s %8s\n", "batch", "opened", "closed", "reason", "triggers", "retries", "pods", "untried", "sync", "prepare", "solve", "claims", "create", "api-wait", "close->created", "own")
	var splits []string
	for i, b := range bs {
		share, own := "-", "-"
		if b.claims > 0 {
			share = b.created.Sub(b.closed).Round(time.Millisecond).String()
			own = b.own().Round(time.Millisecond).String()
		}
		fmt.Fprintf(&sb, "%-6d %7s %7s %6s %8d %7d %5d %7d %8s %8s %8s %6d %8s %8s %8s %8s\n", i+1, sec(b.opened), sec(b.closed), b.reason, b.triggers, b.retries, b.pods,
			b.untried, b.syncWait.Round(time.Millisecond), b.prepare.Round(time.Millisecond), b.solve.Round(time.Millisecond), b.claims, b.create.Round(time.Millisecond), b.apiWait.Round(time.Millisecond), share, own)
		if st, ok := p.audit[b.slowest]; ok && b.claims > 0 {
			to, in, back := createSplit(b.slowestStart, b.slowestStart.Add(b.apiWait), st)
			line := fmt.Sprintf("batch %d: slowest create (%s) waited %s = %s before the API server received it + %s at the API server + %s back",
				i+1, b.slowest, b.apiWait.Round(time.Millisecond), to.Round(time.Millisecond), in.Round(time.Millisecond), back.Round(time.Millisecond))
			if steps := latencySteps(st.latency); steps != "" {
				line += " (server's breakdown: " + steps + ")"
			}
			splits = append(splits, line)
		}
	}
	for _, l := range splits {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

// row is the phase named name (an empty one if there is none).
func (p *phases) row(name string) *phase {
	for _, r := range p.rows {
		if r.name == name {
			return r
		}
	}
	return &phase{name: name}
}
