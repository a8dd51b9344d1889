package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// timeline polls the cluster a few times a second and logs each change of
// its summary (NodeClaims by state, nodes, Ready nodes, pods bound and
// Running) with the time since start, so that a slow recovery shows which
// step waited.
type timeline struct {
	t     testing.TB
	e     *provisioningEnv
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	lines []string
}

func startTimeline(t testing.TB, e *provisioningEnv) *timeline {
	tl := &timeline{t: t, e: e, start: time.Now(), stop: make(chan struct{})}
	tl.done.Add(1)
	go func() {
		defer tl.done.Done()
		last := ""
		for {
			if c, err := kit.Count(e.ctx, e.Client, "default"); err == nil {
				s := fmt.Sprintf("nodeclaims %v, nodes %d (ready %d), pods %d (pending %d, running %d)",
					c.NodeClaims, c.Nodes, c.ReadyNodes, c.Pods, c.Pending, c.Running)
				if s != last {
					tl.mark(s)
					last = s
				}
			}
			select {
			case <-tl.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return tl
}

// mark records an event (also the test's own: "API back").
func (tl *timeline) mark(s string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, fmt.Sprintf("%6.1fs %s", time.Since(tl.start).Seconds(), s))
}

// Log stops the timeline and logs it.
func (tl *timeline) Log() {
	close(tl.stop)
	tl.done.Wait()
	tl.t.Logf("timeline:\n%s", strings.Join(tl.lines, "\n"))
}

// TestChaosAPIServerRestartDuringProvisioning: the API server is restarted
// while instances launch (NodeClaims launched, no Node yet). Every pod runs,
// nothing leaks, and the test logs "API back → pods Running", the figure
// issue 19 asks for, with a timeline of what happened in between.
func TestChaosAPIServerRestartDuringProvisioning(t *testing.T) {
	t.Parallel()
	apiOutageDuringProvisioning(t, func(e *provisioningEnv, tl *timeline) {
		if err := e.Restart(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server restarted (process running)")
	})
}

// TestChaosAPIServerPauseDuringProvisioning: the same with the API server
// frozen (SIGSTOP) for 5 s: connections hang instead of being refused.
func TestChaosAPIServerPauseDuringProvisioning(t *testing.T) {
	t.Parallel()
	apiOutageDuringProvisioning(t, func(e *provisioningEnv, tl *timeline) {
		if err := e.Pause(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server paused")
		time.Sleep(5 * time.Second) // the outage itself: nothing to poll for
		if err := e.Resume(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		tl.mark("API server resumed")
	})
}

func apiOutageDuringProvisioning(t *testing.T, outage func(*provisioningEnv, *timeline)) {
	e := startProvisioning(t)
	const replicas = 12
	e.apply(t, kit.DefaultNodeClass(5*time.Second), kit.DefaultNodePool("default", "default", 4),
		kit.Deployment("default", "app", replicas, "1", "1Gi", false))
	e.waitLaunchedNoNode(t)
	tl := startTimeline(t, e)
	outage(e, tl)
	back, err := e.WaitAPI(e.ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tl.mark("API server ready")
	e.restartIfExited(t, tl)
	c := e.waitRunning(t, replicas, 3*time.Minute)
	recovery := time.Since(back)
	tl.mark("all pods Running")
	tl.Log()
	e.expectNodesMatchNodeClaims(t)
	t.Logf("API back → %d pods Running: %.1fs (%d nodes)", replicas, recovery.Seconds(), c.Nodes)
}

// restartIfExited plays the kubelet: a Karpenter that exited (it does when
// it cannot renew its leader lease for 10 s) is started again.
func (e *provisioningEnv) restartIfExited(t testing.TB, tl *timeline) {
	t.Helper()
	if !e.karpenter.Exited() {
		return
	}
	tl.mark("karpenter had exited (leader lease lost): restarting it")
	e.startKarpenter(t, karpenterBinary(t))
	tl.mark("karpenter ready again")
}

// waitLaunchedNoNode waits until NodeClaims exist and all are launched while
// no Node registered yet: the middle of provisioning.
func (e *provisioningEnv) waitLaunchedNoNode(t testing.TB) {
	t.Helper()
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		ncs := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, ncs); err != nil {
			return false, err
		}
		for _, nc := range ncs.Items {
			if nc.Status.ProviderID == "" {
				return false, nil
			}
		}
		return len(ncs.Items) > 0, nil
	}); err != nil {
		t.Fatal("no nodeclaim launched")
	}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Fatalf("nodes already registered (%d): not mid-provisioning", len(nodes.Items))
	}
}
