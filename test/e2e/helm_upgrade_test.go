package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/test/chartrun"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
	"github.com/karpenter-go/karpenter/pkg/test/upstream"
)

// eksValues is a typical values file of an EKS install of upstream's chart:
// the controller's IAM role through IRSA, the cluster's name, the
// interruption queue, two alpha feature gates and the controller's resources.
const eksValues = `serviceAccount:
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/KarpenterController-` + awsCluster + `
settings:
  clusterName: ` + awsCluster + `
  interruptionQueue: ` + awsCluster + `
  featureGates:
    spotToSpotConsolidation: true
    nodeOverlay: true
controller:
  resources:
    requests: {cpu: "1", memory: 1Gi}
    limits: {cpu: "1", memory: 1Gi}
`

// upgradeFleet is what a user of upstream v1.15.2 has in the cluster: two
// EC2NodeClasses, a NodePool on each, a NodeClaim of each pool, a
// NodeOverlay and a CapacityBuffer, written as upstream's CRDs accept them.
var upgradeFleet = []string{`
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-` + awsCluster + `
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: ` + awsCluster + `}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: ` + awsCluster + `}}]
  tags: {team: platform}
  metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
  blockDeviceMappings:
  - deviceName: /dev/xvda
    ebs: {volumeSize: 50Gi, volumeType: gp3, encrypted: true, deleteOnTermination: true}
  kubelet: {maxPods: 110}
`, `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: bottlerocket}
spec:
  role: KarpenterNodeRole-` + awsCluster + `
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: ` + awsCluster + `}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: ` + awsCluster + `}}]
  associatePublicIPAddress: false
  detailedMonitoring: true
`, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  weight: 10
  limits: {cpu: "100"}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5m
    budgets: [{nodes: 10%}]
  template:
    metadata:
      labels: {team: platform}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
`, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1h
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: bottlerocket}
      taints: [{key: spot, value: "true", effect: NoSchedule}]
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["9"]}
`, `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: discount}
spec:
  weight: 5
  priceAdjustment: "-10%"
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
`, `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-upgrade
  labels: {karpenter.sh/nodepool: default, team: platform}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  expireAfter: 720h
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
  resources:
    requests: {cpu: "1", memory: 1Gi}
`, `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: spot-upgrade
  labels: {karpenter.sh/nodepool: spot}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: bottlerocket}
  taints: [{key: spot, value: "true", effect: NoSchedule}]
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [spot]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["9"]}
`, `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: spare, namespace: default}
spec:
  podTemplateRef: {name: buffer-pods}
  replicas: 2
`}

// The five CRDs of upstream v1.15.2's karpenter-crd chart.
var upstreamCRDNames = []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws",
	"nodeoverlays.karpenter.sh", "capacitybuffers.autoscaling.x-k8s.io"}

// TestHelmUpgradeFromUpstreamV1152: a cluster installed with upstream
// v1.15.2's own charts (karpenter-crd, then karpenter with a typical EKS
// values file) and holding EC2NodeClasses, NodePools, NodeClaims, a
// NodeOverlay and a CapacityBuffer is upgraded with `helm upgrade` to our
// two charts and the same values file, CRD chart first. Every CRD and every object keeps its spec,
// field by field; the Deployment helm upgraded runs our image with the
// values' settings and IRSA annotation; our controller, started as a pod of
// that live Deployment (its environment and ServiceAccount token) against
// the AWS emulator under the shipped IAM policy, reconciles the objects: the
// EC2NodeClasses and NodePools become Ready and the NodeClaims are launched;
// the NodeOverlay (its gate on in the values) is validated, and the
// CapacityBuffer (its gate off) gets the controller's Warning event saying
// it is not acted on. Then `helm rollback`
// returns both releases to upstream's charts and again nothing is lost.
func TestHelmUpgradeFromUpstreamV1152(t *testing.T) {
	t.Parallel()
	start := time.Now()
	bin := karpenterBinary(t)
	upCRDChart, err := upstream.Dir(kitRoot(t), upstream.AWSProviderModule, upstream.AWSProviderVersion, "charts/karpenter-crd")
	if err != nil {
		t.Fatal(err)
	}
	upChart, err := upstream.Dir(kitRoot(t), upstream.AWSProviderModule, upstream.AWSProviderVersion, "charts/karpenter")
	if err != nil {
		t.Fatal(err)
	}
	ourCRDChart, err := helm.Chart("karpenter-crd")
	if err != nil {
		t.Fatal(err)
	}
	ourChart, err := helm.Chart("karpenter")
	if err != nil {
		t.Fatal(err)
	}
	c := localcluster.Start(t)
	e := &awsEnv{provisioningEnv: &provisioningEnv{Cluster: c, ctx: context.Background()}, bin: bin, queue: awsCluster}
	e.emu = awsemulator.StartForTest(t, awsemulator.Options{ClusterName: awsCluster, KubernetesVersion: "1.34", BootDelay: time.Second, Kubeconfig: c.Kubeconfig})
	if _, err := e.emu.CreateQueue(e.queue); err != nil {
		t.Fatal(err)
	}
	e.emu.SetEventQueue(e.queue)
	e.enforceShippedPolicy(t)

	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(eksValues), 0o644); err != nil {
		t.Fatal(err)
	}
	const ns = "kube-system"
	helmRun := func(args ...string) string {
		t.Helper()
		out, err := helm.Run(append(args, "--kubeconfig", c.Kubeconfig, "--namespace", ns)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	step := func(msg string) { t.Logf("[%5.1fs] %s", time.Since(start).Seconds(), msg) }

	step("helm install upstream v1.15.2's karpenter-crd and karpenter charts")
	helmRun("install", "karpenter-crd", upCRDChart)
	e.waitCRDs(t, "under upstream's CRD chart")
	helmRun("install", "karpenter", upChart, "-f", values)
	want := make([]*unstructured.Unstructured, 0, len(upgradeFleet))
	for _, doc := range upgradeFleet {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := e.Client.Create(e.ctx, u); err != nil {
			t.Fatalf("creating %s %s under upstream's CRDs: %v", u.GetKind(), u.GetName(), err)
		}
		want = append(want, u)
	}
	// The specs as upstream's CRDs stored them (with their defaults).
	for i, w := range want {
		want[i] = e.getObject(t, "under upstream's charts", w)
	}
	upImage := e.expectRelease(t, "under upstream's charts", "public.ecr.aws/karpenter/controller:")
	expectCharts := func(step, crdChart, chart string, revision int) {
		t.Helper()
		var releases []struct {
			Name, Chart, Status string
			Revision            any
		}
		if err := json.Unmarshal([]byte(helmRun("list", "-o", "json")), &releases); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"karpenter-crd": chartID(t, crdChart), "karpenter": chartID(t, chart)}
		for _, r := range releases {
			if w, ok := want[r.Name]; ok {
				delete(want, r.Name)
				if r.Chart != w || r.Status != "deployed" || fmt.Sprint(r.Revision) != fmt.Sprint(revision) {
					t.Errorf("%s: release %s is %s, %s, revision %v; want %s, deployed, revision %d", step, r.Name, r.Chart, r.Status, r.Revision, w, revision)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("%s: releases missing: %v", step, want)
		}
	}
	expectCharts("under upstream's charts", upCRDChart, upChart, 1)

	step("helm upgrade karpenter-crd, then karpenter, to our charts with the same values file")
	helmRun("upgrade", "karpenter-crd", ourCRDChart)
	e.waitCRDs(t, "after the upgrade to our CRD chart")
	e.expectFleet(t, "after the upgrade to our CRD chart", want)
	helmRun("upgrade", "karpenter", ourChart, "-f", values)
	e.expectFleet(t, "after the upgrade to our charts", want)
	e.expectRelease(t, "after the upgrade to our charts", "ghcr.io/karpenter-go/karpenter/controller:")
	expectCharts("after the upgrade to our charts", ourCRDChart, ourChart, 2)

	step("our controller as a pod of the upgraded Deployment, on the AWS emulator")
	deploy := &appsv1.Deployment{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: "karpenter"}, deploy); err != nil {
		t.Fatal(err)
	}
	awsEnvVars := append(e.emu.Env(), "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	p, err := chartrun.Start(e.ctx, e.Client, c.Kubeconfig, e.StateDir, bin, deploy, "karpenter-upgraded-0", awsEnvVars...)
	if err != nil {
		t.Fatal(err)
	}
	e.karpenter = p
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := p.Stop(30 * time.Second); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	if err := p.Ready(e.ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "bottlerocket"} {
		e.waitNodeClassReady(t, name)
	}
	for _, name := range []string{"default", "spot"} {
		e.waitReady(t, &v1.NodePool{}, name)
	}
	// The values file turns the NodeOverlay gate on: our overlay controller
	// validates the overlay. The CapacityBuffer gate is off: the buffer is
	// kept, and the controller says so on it (a Warning event) instead of
	// ignoring it.
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		o := &v1alpha1.NodeOverlay{}
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: "discount"}, o); err != nil {
			return false, err
		}
		return o.StatusConditions().Get(v1alpha1.ConditionTypeValidationSucceeded).IsTrue(), nil
	}); err != nil {
		t.Errorf("NodeOverlay discount not validated by our controller (log %s)", p.LogPath)
	}
	unreported := map[string]bool{"CapacityBuffer/spare": true}
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		events := &corev1.EventList{}
		if err := e.Client.List(e.ctx, events); err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.Type == corev1.EventTypeWarning && ev.Reason == operator.ReasonStoredNotActedOn {
				delete(unreported, ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name)
			}
		}
		return len(unreported) == 0, nil
	}); err != nil {
		t.Errorf("no %s Warning event on %v: objects our controller does not act on went unreported (log %s)", operator.ReasonStoredNotActedOn, unreported, p.LogPath)
	}
	for _, name := range []string{"default-upgrade", "spot-upgrade"} {
		claim := &v1.NodeClaim{}
		if err := poll(e.ctx, time.Minute, func() (bool, error) {
			if err := e.Client.Get(e.ctx, types.NamespacedName{Name: name}, claim); err != nil {
				return false, err
			}
			return claim.StatusConditions().IsTrue(v1.ConditionTypeLaunched) && claim.Status.ProviderID != "", nil
		}); err != nil {
			t.Fatalf("our controller did not launch NodeClaim %s, made under upstream's charts: %+v (log %s)", name, claim.Status, p.LogPath)
		}
		it, capacity := claim.Labels[corev1.LabelInstanceTypeStable], claim.Labels[v1.CapacityTypeLabelKey]
		if name == "default-upgrade" && (it != "m5.large" && it != "m5.xlarge" || capacity != v1.CapacityTypeOnDemand) {
			t.Errorf("NodeClaim %s launched as %s %s, outside its requirements", name, capacity, it)
		}
		if name == "spot-upgrade" && capacity != v1.CapacityTypeSpot {
			t.Errorf("NodeClaim %s launched as %s %s, outside its requirements", name, capacity, it)
		}
	}
	e.expectInstancesMatchNodeClaims(t)
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := forbiddenLines(string(b)); len(lines) > 0 {
		t.Errorf("%d requests refused under the upgraded chart's RBAC, first: %s", len(lines), lines[0])
	}
	e.expectFleet(t, "after our controller reconciled", want)
	stop()

	step("helm rollback karpenter, then karpenter-crd, to upstream's charts")
	helmRun("rollback", "karpenter", "1")
	helmRun("rollback", "karpenter-crd", "1")
	e.waitCRDs(t, "after the rollback to upstream's CRD chart")
	e.expectFleet(t, "after the rollback to upstream's charts", want)
	if got := e.expectRelease(t, "after the rollback to upstream's charts", "public.ecr.aws/karpenter/controller:"); got != upImage {
		t.Errorf("after the rollback the Deployment runs %s, not upstream's %s again", got, upImage)
	}
	expectCharts("after the rollback to upstream's charts", upCRDChart, upChart, 3)
	step("done")
}

// chartID is a chart directory's name-version, as `helm list` shows it.
func chartID(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Name, Version string }
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	return chart.Name + "-" + chart.Version
}

func kitRoot(t testing.TB) string {
	t.Helper()
	root, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// waitCRDs waits until upstream's five CRDs are Established.
func (e *awsEnv) waitCRDs(t testing.TB, step string) {
	t.Helper()
	var missing []string
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		missing = missing[:0]
		for _, name := range upstreamCRDNames {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := e.Client.Get(e.ctx, types.NamespacedName{Name: name}, crd); err != nil {
				missing = append(missing, name+": "+err.Error())
				continue
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				established = established || (m["type"] == "Established" && m["status"] == "True")
			}
			if !established {
				missing = append(missing, name+": not Established")
			}
		}
		return len(missing) == 0, nil
	}); err != nil {
		t.Fatalf("%s: CRDs %v", step, missing)
	}
}

// getObject reads the object w names, failing the test when it is gone.
func (e *awsEnv) getObject(t testing.TB, step string, w *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(w.GroupVersionKind())
	if err := e.Client.Get(e.ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()}, got); err != nil {
		t.Fatalf("%s: %s %s: %v", step, w.GetKind(), w.GetName(), err)
	}
	return got
}

// expectFleet: every object of want is there with the same spec (every
// field, with its path when it differs) and keeps its labels (a launched
// NodeClaim gains the instance's).
func (e *awsEnv) expectFleet(t testing.TB, step string, want []*unstructured.Unstructured) {
	t.Helper()
	for _, w := range want {
		got := e.getObject(t, step, w)
		for _, d := range fieldDiff(w.GetKind()+" "+w.GetName()+" spec", w.Object["spec"], got.Object["spec"]) {
			t.Errorf("%s: %s", step, d)
		}
		for k, v := range w.GetLabels() {
			if got.GetLabels()[k] != v {
				t.Errorf("%s: %s %s label %s is %q, was %q", step, w.GetKind(), w.GetName(), k, got.GetLabels()[k], v)
			}
		}
	}
}

// fieldDiff lists every leaf path where got differs from want.
func fieldDiff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		var out []string
		for k := range keys {
			out = append(out, fieldDiff(path+"."+k, wm[k], gm[k])...)
		}
		sort.Strings(out)
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		var out []string
		for i := range wl {
			out = append(out, fieldDiff(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	return []string{fmt.Sprintf("%s is %s, was %s", path, g, w)}
}

// expectRelease checks the karpenter release's Deployment and ServiceAccount
// as helm left them: the controller image starts with imagePrefix, the
// values' settings reach its environment, and the IRSA role annotation is on
// the ServiceAccount. It returns the image.
func (e *awsEnv) expectRelease(t testing.TB, step, imagePrefix string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Namespace: "kube-system", Name: "karpenter"}, d); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if !strings.HasPrefix(ctr.Image, imagePrefix) {
		t.Errorf("%s: the Deployment runs %s, not %s...", step, ctr.Image, imagePrefix)
	}
	env, _ := chartrun.ContainerEnv(chartrun.Pod(d, "karpenter-0"), ctr)
	for _, want := range []string{"CLUSTER_NAME=" + awsCluster, "INTERRUPTION_QUEUE=" + awsCluster, "CPU_REQUESTS=1000", "MEMORY_LIMIT=1073741824"} {
		if !containsString(env, want) {
			t.Errorf("%s: the Deployment's environment lacks %s", step, want)
		}
	}
	gates := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "FEATURE_GATES="); ok {
			gates = v
		}
	}
	for _, g := range []string{"SpotToSpotConsolidation=true", "NodeOverlay=true"} {
		if !strings.Contains(gates, g) {
			t.Errorf("%s: FEATURE_GATES=%q lacks %s", step, gates, g)
		}
	}
	sa := &corev1.ServiceAccount{}
	if err := e.Client.Get(e.ctx, types.NamespacedName{Namespace: "kube-system", Name: chartrun.ServiceAccount(chartrun.Pod(d, "x"))}, sa); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if arn := sa.Annotations["eks.amazonaws.com/role-arn"]; !strings.HasSuffix(arn, ":role/KarpenterController-"+awsCluster) {
		t.Errorf("%s: ServiceAccount %s role-arn annotation %q", step, sa.Name, arn)
	}
	return ctr.Image
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitReady waits for the Ready condition of a NodePool.
func (e *awsEnv) waitReady(t testing.TB, obj interface {
	client.Object
	StatusConditions() status.ConditionSet
}, name string) {
	t.Helper()
	if err := poll(e.ctx, time.Minute, func() (bool, error) {
		if err := e.Client.Get(e.ctx, types.NamespacedName{Name: name}, obj); err != nil {
			return false, err
		}
		return obj.StatusConditions().IsTrue(status.ConditionReady), nil
	}); err != nil {
		t.Fatalf("%T %s not Ready under our controller: %v (log %s)", obj, name, err, e.karpenter.LogPath)
	}
}
