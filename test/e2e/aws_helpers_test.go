package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// The AWS end-to-end suite: the local cluster, the AWS emulator in this process
// (instances that reach running join the cluster as KWOK-run Nodes built from their
// user data) enforcing the shipped controller policy (docs/aws/controller-policy.json),
// and Karpenter as a process on the aws provider reaching the emulator through the
// SDK's standard environment. Any call the policy denies fails the test, naming the
// action and the resource.

const awsCluster = "karpenter-demo"

type awsOptions struct {
	kubernetesVersion string        // EKS version the emulator reports (default 1.34)
	bootDelay         time.Duration // pending -> running (default 1s)
	// interceptor, when set, sits between Karpenter and the emulator (see awsProxy).
	interceptor func(e *awsEnv, action string, form url.Values) (drop bool)
	// seed, when set, runs once the cluster and the emulator are up, before
	// Karpenter starts (what an earlier install left behind).
	seed func(t testing.TB, e *awsEnv)
}

// awsEnv is a provisioningEnv on the aws provider.
type awsEnv struct {
	*provisioningEnv
	emu   *awsemulator.Emulator
	queue string
	bin   string
	kenv  []string // Karpenter's extra environment
	opts  awsOptions
}

func startAWS(t testing.TB, opts awsOptions) *awsEnv {
	t.Helper()
	if opts.kubernetesVersion == "" {
		opts.kubernetesVersion = "1.34"
	}
	if opts.bootDelay == 0 {
		opts.bootDelay = time.Second
	}
	bin := karpenterBinary(t)
	c := localcluster.Start(t)
	e := &awsEnv{provisioningEnv: &provisioningEnv{Cluster: c, ctx: context.Background()}, bin: bin, queue: awsCluster, opts: opts}
	if err := kit.InstallCRDs(e.ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	e.emu = awsemulator.StartForTest(t, awsemulator.Options{
		ClusterName: awsCluster, KubernetesVersion: opts.kubernetesVersion, BootDelay: opts.bootDelay, Kubeconfig: c.Kubeconfig,
	})
	if _, err := e.emu.CreateQueue(e.queue); err != nil {
		t.Fatal(err)
	}
	e.emu.SetEventQueue(e.queue)
	e.enforceShippedPolicy(t)

	endpoint := e.emu.Endpoint()
	if opts.interceptor != nil {
		endpoint = e.proxy(t)
	}
	for _, kv := range e.emu.Env() {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL=") {
			kv = "AWS_ENDPOINT_URL=" + endpoint
		}
		e.kenv = append(e.kenv, kv)
	}
	e.kenv = append(e.kenv, "CLOUD_PROVIDER=aws", "CLUSTER_NAME="+awsCluster, "INTERRUPTION_QUEUE="+e.queue,
		// One pod name for every start: a restart after a crash is a container restart
		// that takes its own Lease back at once instead of waiting out the dead one's.
		"POD_NAME=karpenter-0",
		// The process must not pick up a developer's AWS profile or SSO settings.
		"AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	if opts.seed != nil {
		opts.seed(t, e)
	}
	e.startKarpenterAWS(t)
	return e
}

// enforceShippedPolicy makes the emulator enforce docs/aws/controller-policy.json and
// fails the test at its end for every call it denied.
func (e *awsEnv) enforceShippedPolicy(t testing.TB) {
	t.Helper()
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "aws", "controller-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.emu.SetPolicy(e.emu.RenderPolicy(string(doc), map[string]string{"INTERRUPTION_QUEUE": e.queue})); err != nil {
		t.Fatalf("shipped policy: %v", err)
	}
	t.Cleanup(func() {
		for _, d := range e.emu.Denials() {
			t.Errorf("the shipped IAM policy denied %s %s: %s on %s (%s)", d.Service, d.Action, d.Permission, d.Resource, d.Reason)
		}
		for _, r := range e.emu.RegistrationErrors() {
			t.Logf("emulator: instance could not join: %+v", r)
		}
	})
}

// startKarpenterAWS starts Karpenter with the emulator's environment and waits until it is ready.
// A process that exits before it is ready is started again, as the kubelet would: under
// four parallel local clusters the API server can answer a Lease renewal too late, and
// Karpenter then exits by design (it must not act without the Lease).
func (e *awsEnv) startKarpenterAWS(t testing.TB) {
	t.Helper()
	const starts = 3
	for i := 1; ; i++ {
		p, err := kit.Start(e.bin, e.Kubeconfig, filepath.Join(e.StateDir, "karpenter.log"), e.kenv...)
		if err != nil {
			t.Fatal(err)
		}
		e.karpenter = p
		t.Cleanup(func() {
			if err := p.Stop(30 * time.Second); err != nil {
				t.Error(err)
			}
		})
		err = p.Ready(e.ctx, 2*time.Minute)
		if err == nil {
			return
		}
		if !p.Exited() || i == starts {
			t.Fatal(err)
		}
		t.Logf("start %d of %d: %v; starting it again", i, starts, err)
	}
}

// proxy serves the emulator through an interceptor that sees every request's EC2/IAM
// action and may drop its answer (the caller then gets a connection error). SigV4
// stays valid: the Host header is passed on unchanged.
func (e *awsEnv) proxy(t testing.TB) string {
	t.Helper()
	target := e.emu.Endpoint()
	client := awsemulator.HTTPClient()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		req.Host = r.Host
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		form, _ := url.ParseQuery(string(body))
		if e.opts.interceptor(e, form.Get("Action"), form) {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ec2NodeClass selects the emulator's discovery-tagged subnets and security groups and
// the node role.
func ec2NodeClass(name, alias string) *awsv1.EC2NodeClass {
	sel := map[string]string{"karpenter.sh/discovery": awsCluster}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: sel}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: sel}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: alias}},
			Role:                       "KarpenterNodeRole-" + awsCluster,
			Tags:                       map[string]string{"team": "e2e"},
		},
	}
}

// awsNodePool launches linux instances of at most maxCPU vCPUs (spot or on-demand,
// either architecture) from the EC2NodeClass nodeClass; it never consolidates.
func awsNodePool(name, nodeClass string, maxCPU int) *v1.NodePool {
	np := kit.DefaultNodePool(name, nodeClass, maxCPU)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
		{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{fmt.Sprint(maxCPU + 1)}},
	}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass}
	return np
}

// waitNodeClassReady waits for the EC2NodeClass's Ready condition, failing with its
// conditions when it does not come.
func (e *awsEnv) waitNodeClassReady(t testing.TB, name string) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := poll(e.ctx, 2*time.Minute, func() (bool, error) {
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return false, client404(err)
		}
		return nc.StatusConditions().IsTrue(status.ConditionReady), nil
	}); err != nil {
		t.Fatalf("EC2NodeClass %s not Ready: %+v (karpenter log %s)", name, nc.Status.Conditions, e.karpenter.LogPath)
	}
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// liveInstances are the emulator's instances that are not terminated (or shutting down).
func (e *awsEnv) liveInstances() []awsemulator.Instance {
	var out []awsemulator.Instance
	for _, in := range e.emu.Instances() {
		if in.State == "pending" || in.State == "running" {
			out = append(out, in)
		}
	}
	return out
}

// expectInstancesMatchNodeClaims: every live instance of the cluster has exactly one
// NodeClaim with its provider ID and every launched NodeClaim one live instance.
func (e *awsEnv) expectInstancesMatchNodeClaims(t testing.TB) {
	t.Helper()
	if msg := e.instanceMismatch(); msg != "" {
		t.Fatal(msg)
	}
}

func (e *awsEnv) instanceMismatch() string {
	ncs := &v1.NodeClaimList{}
	if err := e.Client.List(e.ctx, ncs); err != nil {
		return err.Error()
	}
	claims := map[string]string{}
	for _, nc := range ncs.Items {
		if nc.Status.ProviderID != "" && nc.DeletionTimestamp == nil {
			claims[nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]] = nc.Name
		}
	}
	var problems []string
	live := map[string]bool{}
	for _, in := range e.liveInstances() {
		live[in.ID] = true
		if _, ok := claims[in.ID]; !ok {
			problems = append(problems, fmt.Sprintf("instance %s (%s, %s) has no NodeClaim", in.ID, in.InstanceType, in.State))
		}
	}
	for id, name := range claims {
		if !live[id] {
			problems = append(problems, fmt.Sprintf("NodeClaim %s's instance %s is not running", name, id))
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "; ")
}

// nodeOfPods is the set of nodes the pods of app run on.
func (e *awsEnv) nodesOf(t testing.TB, app string) map[string]bool {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.Client.List(e.ctx, pods); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		if p.Labels["app"] == app && p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = true
		}
	}
	return out
}

// instanceOfNode is the emulator instance a node runs on.
func (e *awsEnv) instanceOfNode(t testing.TB, node string) awsemulator.Instance {
	t.Helper()
	n := &corev1.Node{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	id := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]
	for _, in := range e.emu.Instances() {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("node %s (%s) has no emulator instance", node, n.Spec.ProviderID)
	return awsemulator.Instance{}
}

// onceFlag is a sync.Once that says whether it fired.
type onceFlag struct {
	mu    sync.Mutex
	fired bool
}

func (o *onceFlag) fire() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fired {
		return false
	}
	o.fired = true
	return true
}
