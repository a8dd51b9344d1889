package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// The tests' clients log nothing; without a logger controller-runtime prints a
// warning with a stack trace on first use.
func init() { ctrllog.SetLogger(logr.Discard()) }

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// karpenterBinary builds cmd/karpenter once per test binary.
func karpenterBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := kit.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "karpenter-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "karpenter")
		buildErr = kit.Build(root, binary)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// provisioningEnv is a local cluster with the CRDs and a running Karpenter.
type provisioningEnv struct {
	*localcluster.Cluster
	ctx       context.Context
	mu        sync.Mutex // karpenter and started: a supervisor may restart it
	karpenter *kit.Process
	started   int // Karpenter processes started so far
	// env is added to every Karpenter process's environment (e.g. FEATURE_GATES).
	env []string
}

func startProvisioning(t testing.TB, env ...string) *provisioningEnv {
	t.Helper()
	bin := karpenterBinary(t)
	c := localcluster.Start(t)
	e := &provisioningEnv{Cluster: c, ctx: context.Background(), env: env}
	if err := kit.InstallCRDs(e.ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	e.startKarpenter(t, bin)
	return e
}

func (e *provisioningEnv) startKarpenter(t testing.TB, bin string) {
	t.Helper()
	e.startReplica(t, bin, "karpenter-0")
}

// startReplica starts a Karpenter process as the pod named pod (POD_NAME, its
// leader identity): starting the same pod again after a crash is a container
// restart, which takes its own Lease back at once; another name is another
// replica.
func (e *provisioningEnv) startReplica(t testing.TB, bin, pod string) {
	t.Helper()
	p, err := e.launch(bin, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if err := p.Ready(e.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// launch starts a Karpenter process and makes it e.karpenter, without
// waiting for it.
func (e *provisioningEnv) launch(bin, pod string) (*kit.Process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// One log per process: karpenter.log, then karpenter-2.log, ... (a
	// restart, a second replica), so each can be read on its own.
	e.started++
	logName := "karpenter.log"
	if e.started > 1 {
		logName = fmt.Sprintf("karpenter-%d.log", e.started)
	}
	p, err := kit.Start(bin, e.Kubeconfig, filepath.Join(e.StateDir, logName), append([]string{"POD_NAME=" + pod}, e.env...)...)
	if err != nil {
		return nil, err
	}
	e.karpenter = p
	return p, nil
}

// current is the Karpenter process started last.
func (e *provisioningEnv) current() *kit.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.karpenter
}

func (e *provisioningEnv) apply(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := e.Client.Create(e.ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func (e *provisioningEnv) counts(t testing.TB) *kit.Counts {
	t.Helper()
	c, err := kit.Count(e.ctx, e.Client, "default")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRunning polls until n pods of the namespace run.
func (e *provisioningEnv) waitRunning(t testing.TB, n int, timeout time.Duration) *kit.Counts {
	t.Helper()
	var last *kit.Counts
	if err := poll(e.ctx, timeout, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		if err != nil {
			return false, err
		}
		last = c
		return c.Pods == n && c.Running == n, nil
	}); err != nil {
		t.Fatalf("%d pods not Running within %s (last: pods %d pending %d running %d, nodeclaims %v, nodes %d); karpenter log: %s",
			n, timeout, last.Pods, last.Pending, last.Running, last.NodeClaims, last.Nodes, e.karpenter.LogPath)
	}
	return last
}

// expectNoNewNodeClaims observes the cluster for window (several batch windows and
// a pod re-trigger period) and fails if a NodeClaim appears.
func (e *provisioningEnv) expectNoNewNodeClaims(t testing.TB, want int, window time.Duration) {
	t.Helper()
	err := poll(e.ctx, window, func() (bool, error) {
		l := &v1.NodeClaimList{}
		if err := e.Client.List(e.ctx, l); err != nil {
			return false, err
		}
		if len(l.Items) != want {
			return false, fmt.Errorf("%d nodeclaims, want %d", len(l.Items), want)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
}

// expectNodesMatchNodeClaims: every Node is backed by exactly one NodeClaim with its
// provider ID and every NodeClaim by exactly one Node — nothing leaked, nothing
// launched twice.
func (e *provisioningEnv) expectNodesMatchNodeClaims(t testing.TB) ([]v1.NodeClaim, []corev1.Node) {
	t.Helper()
	ncs := &v1.NodeClaimList{}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(e.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.List(e.ctx, nodes); err != nil {
		t.Fatal(err)
	}
	claims := map[string]string{}
	for _, nc := range ncs.Items {
		if nc.Status.ProviderID == "" {
			t.Errorf("nodeclaim %s never launched", nc.Name)
			continue
		}
		if other, dup := claims[nc.Status.ProviderID]; dup {
			t.Errorf("nodeclaims %s and %s share provider ID %s", nc.Name, other, nc.Status.ProviderID)
		}
		claims[nc.Status.ProviderID] = nc.Name
	}
	seen := map[string]bool{}
	for _, n := range nodes.Items {
		if _, ok := claims[n.Spec.ProviderID]; !ok {
			t.Errorf("node %s (%s) has no nodeclaim: leaked", n.Name, n.Spec.ProviderID)
		}
		seen[n.Spec.ProviderID] = true
	}
	for pid, name := range claims {
		if !seen[pid] {
			t.Errorf("nodeclaim %s has no node", name)
		}
	}
	return ncs.Items, nodes.Items
}
