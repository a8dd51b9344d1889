package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// countingProxy stands between kubectl-karpenter and the apiserver and
// counts every request by HTTP method, so the test sees exactly what the
// plugin sent, whatever the other components of the cluster do meanwhile.
type countingProxy struct {
	mu     sync.Mutex
	counts map[string]int
	writes []string
	addr   string
}

func startCountingProxy(t *testing.T, cfg *rest.Config) *countingProxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{counts: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = rt
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts[r.Method]++
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			p.writes = append(p.writes, r.Method+" "+r.URL.Path)
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// kubeconfig for the proxy (plain HTTP on loopback; the proxy holds the credentials).
func (p *countingProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://%s"}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
current-context: proxy
users: [{name: proxy, user: {}}]
`, p.addr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *countingProxy) snapshot() (map[string]int, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := map[string]int{}
	for k, v := range p.counts {
		c[k] = v
	}
	return c, append([]string(nil), p.writes...)
}

var (
	pluginOnce sync.Once
	pluginBin  string
	pluginErr  error
)

func kubectlKarpenterBinary(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		root, err := kit.RepoRoot()
		if err != nil {
			pluginErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kubectl-karpenter-e2e-")
		if err != nil {
			pluginErr = err
			return
		}
		pluginBin = filepath.Join(dir, "kubectl-karpenter")
		cmd := exec.Command("go", "build", "-o", pluginBin, "./cmd/kubectl-karpenter")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = fmt.Errorf("building kubectl-karpenter: %v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginBin
}

func runPlugin(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectlKarpenterBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// kubectl karpenter plan and why on a live cluster with Karpenter running:
// the plan for a Deployment scaled in memory predicts the NodeClaims the
// controller then creates when the Deployment is scaled for real, `why`
// explains a pod no instance type fits and a node Karpenter launched, and
// through all of it the plugin sends the apiserver no write at all.
func TestKubectlPlanPredictsScaleUpWithoutWriting(t *testing.T) {
	t.Parallel()
	e := startProvisioning(t)
	ctx := e.ctx
	np := kit.DefaultNodePool("default", "default", 16)
	e.apply(t, kit.DefaultNodeClass(0), np, kit.Deployment("default", "web", 0, "1", "1Gi", false),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	if err := kit.NodeClassReady(ctx, e.Client, "default", time.Minute); err != nil {
		t.Fatal(err)
	}
	huge := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "other"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{
			Name: "app", Image: "registry.invalid/huge:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}},
		}}},
	}
	e.apply(t, huge)
	proxy := startCountingProxy(t, e.Config)
	kubeconfig := proxy.kubeconfig(t)

	// The plan, with the Deployment scaled to 20 in memory only.
	out, stderr, err := runPlugin(t, "plan", "--kubeconfig", kubeconfig, "--scale", "deploy/web=20", "-o", "json")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan output: %v\n%s", err, out)
	}
	planned := map[string]int{}
	pods := 0
	for _, l := range p.Launches {
		planned[l.NodePool]++
		pods += len(l.Pods)
	}
	if pods != 20 || len(p.Launches) == 0 {
		t.Fatalf("plan launches %d nodeclaims for %d pods, want 20 pods: %s", len(p.Launches), pods, out)
	}
	if len(p.Pending) != 1 || p.Pending[0].Pod != "other/huge" {
		t.Errorf("pending = %+v, want other/huge", p.Pending)
	}
	t.Logf("plan: %d nodeclaims %v, $%.4f/h -> $%.4f/h", len(p.Launches), launchTypes(p.Launches), p.CostPerHourBefore, p.CostPerHourAfter)
	// The table form too.
	table, stderr, err := runPlugin(t, "plan", "--kubeconfig", kubeconfig, "--scale", "deploy/web=20")
	if err != nil || !strings.Contains(table, "Launch (") || !strings.Contains(table, "other/huge") {
		t.Fatalf("plan table: %v %s\n%s", err, stderr, table)
	}

	// why pod/huge: the pool's reason and the closest instance type.
	why, stderr, err := runPlugin(t, "why", "pod/huge", "-n", "other", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("why pod: %v\n%s", err, stderr)
	}
	for _, want := range []string{"would stay pending", "closest is", "lacks cpu"} {
		if !strings.Contains(why, want) {
			t.Errorf("why pod/huge does not say %q:\n%s", want, why)
		}
	}

	// Nothing was written, and the plugin did talk to the cluster.
	counts, writes := proxy.snapshot()
	if len(writes) > 0 || counts[http.MethodGet] == 0 {
		t.Fatalf("requests through the proxy: %v, writes %v", counts, writes)
	}
	if err := e.Client.List(ctx, &v1.NodeClaimList{}); err != nil {
		t.Fatal(err)
	}
	if c := e.counts(t); c.NodeClaimsAll != 0 {
		t.Fatalf("nodeclaims exist after planning only: %+v", c)
	}

	// Now for real: the controller launches what the plan said.
	d := kit.Deployment("default", "web", 20, "1", "1Gi", false)
	if err := e.Client.Patch(ctx, d, client.Merge); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, 20, 4*time.Minute)
	ncs := &v1.NodeClaimList{}
	if err := e.Client.List(ctx, ncs); err != nil {
		t.Fatal(err)
	}
	real := map[string]int{}
	var realTypes []string
	for _, nc := range ncs.Items {
		real[nc.Labels[v1.NodePoolLabelKey]]++
		realTypes = append(realTypes, nc.Labels[corev1.LabelInstanceTypeStable])
	}
	sort.Strings(realTypes)
	t.Logf("controller: %d nodeclaims %v", len(ncs.Items), realTypes)
	if fmt.Sprint(real) != fmt.Sprint(planned) {
		t.Errorf("controller launched %v nodeclaims per pool, the plan said %v", real, planned)
	}

	// why node/NAME on a node the controller launched.
	nodes := &corev1.NodeList{}
	if err := e.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v %d", err, len(nodes.Items))
	}
	n := nodes.Items[0]
	why, stderr, err = runPlugin(t, "why", "node/"+n.Name, "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("why node: %v\n%s", err, stderr)
	}
	for _, want := range []string{"Disruption:", "consolidateAfter: Never", "Instance type:", n.Labels[corev1.LabelInstanceTypeStable]} {
		if !strings.Contains(why, want) {
			t.Errorf("why node/%s does not say %q:\n%s", n.Name, want, why)
		}
	}
	counts, writes = proxy.snapshot()
	if len(writes) > 0 {
		t.Fatalf("kubectl-karpenter wrote to the cluster: %v (requests %v)", writes, counts)
	}
	t.Logf("requests kubectl-karpenter sent: %v", counts)
}

func launchTypes(ls []plan.Launch) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.InstanceType
	}
	sort.Strings(out)
	return out
}

// An unreachable cluster fails within seconds, naming the address tried.
func TestKubectlPlanUnreachableClusterFailsFast(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: x}}]
`, addr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := kubectlKarpenterBinary(t)
	for _, args := range [][]string{{"plan"}, {"why", "pod/x"}} {
		// Generous for a loaded machine; the plugin itself gives up after 5 s.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", path)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "https://"+addr) {
			t.Errorf("%v: err %v, output %q: want a failure naming https://%s", args, err, out, addr)
		}
	}
}
