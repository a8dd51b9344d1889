package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
	"github.com/karpenter-go/karpenter/pkg/test/upstream"
)

// One object of each of the five kinds upstream's CRD chart installs, as an
// upstream user has them.
var upgradeObjects = []string{`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidationPolicy: Balanced}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}
`, `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`, `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-abcde}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`, `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-dev
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: dev}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: dev}}]
  kubelet: {maxPods: 110, shutdownGracePeriod: 30s}
  cpuOptions: {nestedVirtualization: enabled}
`, `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: discount}
spec:
  priceAdjustment: "-10%"
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
`, `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: spare, namespace: default}
spec:
  podTemplateRef: {name: buffer-pods}
  replicas: 3
`}

// TestUpgradeFromUpstreamsCRDChartLosesNothing: upstream v1.15.2's
// karpenter-crd chart is installed with helm, one object of each of its five
// kinds is created, the release is upgraded to our chart and rolled back to
// upstream's. After each step every CRD and every object is still there with
// the same spec, and after the upgrade our typed client reads each of them.
func TestUpgradeFromUpstreamsCRDChartLosesNothing(t *testing.T) {
	ctx := context.Background()
	api := env.StartT(t, env.WithCRDs())
	kubeconfig := writeKubeconfig(t, api)
	modDir, err := upstream.Dir(e.Root, "github.com/aws/karpenter-provider-aws", "v1.15.2", "charts/karpenter-crd")
	if err != nil {
		t.Fatal(err)
	}
	helmIn := func(args ...string) {
		t.Helper()
		out, err := runHelm(t, append(args, "--kubeconfig", kubeconfig, "--namespace", "karpenter", "--wait", "--timeout", "2m")...)
		if err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	helmIn("install", "karpenter-crd", modDir, "--create-namespace")
	waitCRDsEstablished(t, api)

	var want []*unstructured.Unstructured
	for _, doc := range upgradeObjects {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := api.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s under upstream's CRDs: %v", u.GetKind(), u.GetName(), err)
		}
		want = append(want, u)
	}
	expectAll := func(step string) {
		t.Helper()
		waitCRDsEstablished(t, api)
		for _, w := range want {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(w.GroupVersionKind())
			if err := api.Client.Get(ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()}, got); err != nil {
				t.Fatalf("%s: %s %s: %v", step, w.GetKind(), w.GetName(), err)
			}
			if !reflect.DeepEqual(got.Object["spec"], w.Object["spec"]) {
				t.Errorf("%s: %s %s spec changed:\n%v\nwas\n%v", step, w.GetKind(), w.GetName(), got.Object["spec"], w.Object["spec"])
			}
		}
	}
	expectAll("under upstream's chart")

	helmIn("upgrade", "karpenter-crd", chartDir("karpenter-crd"))
	expectAll("after the upgrade to ours")
	for _, obj := range []client.Object{&v1.NodePool{}, &v1.NodeClaim{}, &awsv1.EC2NodeClass{}, &v1alpha1.NodeOverlay{}, &autoscalingv1beta1.CapacityBuffer{}} {
		list := &unstructured.UnstructuredList{}
		gvk, err := api.Client.GroupVersionKindFor(obj)
		if err != nil {
			t.Fatal(err)
		}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := api.Client.List(ctx, list); err != nil || len(list.Items) == 0 {
			t.Fatalf("after the upgrade: listing %s: %d items, %v", gvk.Kind, len(list.Items), err)
		}
		typed := obj.DeepCopyObject().(client.Object)
		item := list.Items[0]
		if err := api.Client.Get(ctx, types.NamespacedName{Namespace: item.GetNamespace(), Name: item.GetName()}, typed); err != nil {
			t.Errorf("after the upgrade: our types cannot read %s %s: %v", gvk.Kind, item.GetName(), err)
		}
	}
	np := &v1.NodePool{}
	if err := api.Client.Get(ctx, types.NamespacedName{Name: "static"}, np); err != nil || np.Spec.Replicas == nil || *np.Spec.Replicas != 2 {
		t.Errorf("after the upgrade: static NodePool %+v, %v", np.Spec.Replicas, err)
	}

	helmIn("rollback", "karpenter-crd", "1")
	expectAll("after the rollback to upstream's chart")
}

// upstreamCRDs are the five CRDs of upstream's karpenter-crd chart.
var upstreamCRDs = []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws",
	"nodeoverlays.karpenter.sh", "capacitybuffers.autoscaling.x-k8s.io"}

// waitCRDsEstablished fails unless the five CRDs serve their kinds.
func waitCRDsEstablished(t *testing.T, api *env.Environment) {
	t.Helper()
	if err := waitEstablished(context.Background(), api.Client, upstreamCRDs...); err != nil {
		t.Fatalf("upstream's five CRDs not established: %v", err)
	}
}

// writeKubeconfig writes a kubeconfig for the environment's admin client.
func writeKubeconfig(t *testing.T, api *env.Environment) string {
	t.Helper()
	cfg := api.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCRDsOfUpstreamsCrdsDirectoryTakenOverByOurCRDChart: CRDs that helm
// installed from the crds/ directory of upstream's karpenter chart belong to
// no release, so `helm upgrade --install karpenter-crd` with our chart is
// refused until they carry the release's ownership label and annotations;
// with the kubectl label and annotate commands docs/install.md gives, the
// install takes them over and the objects under them keep their specs.
func TestCRDsOfUpstreamsCrdsDirectoryTakenOverByOurCRDChart(t *testing.T) {
	ctx := context.Background()
	api := env.StartT(t, env.WithCRDs())
	kubeconfig := writeKubeconfig(t, api)
	modDir, err := upstream.Dir(e.Root, upstream.AWSProviderModule, upstream.AWSProviderVersion, "charts/karpenter-crd")
	if err != nil {
		t.Fatal(err)
	}
	// What helm does with a chart's crds/ directory: create each CRD as it
	// is, outside any release.
	out, err := runHelm(t, "template", "karpenter-crd", modDir, "--namespace", "karpenter")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	crds, err := helm.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := api.Client.Create(ctx, crd); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.GetName(), err)
		}
	}
	waitCRDsEstablished(t, api)
	var want []*unstructured.Unstructured
	for _, doc := range upgradeObjects {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := api.Client.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		want = append(want, u)
	}

	install := []string{"upgrade", "--install", "karpenter-crd", chartDir("karpenter-crd"), "--kubeconfig", kubeconfig,
		"--namespace", "karpenter", "--create-namespace", "--wait", "--timeout", "2m"}
	if out, err := runHelm(t, install...); err == nil || !strings.Contains(err.Error(), "invalid ownership metadata") {
		t.Fatalf("helm took over CRDs of no release without their ownership metadata, or failed otherwise: %v\n%s", err, out)
	}
	for _, name := range upstreamCRDs {
		api.Kubectl(t, "label", "crd", name, "app.kubernetes.io/managed-by=Helm", "--overwrite")
		api.Kubectl(t, "annotate", "crd", name, "meta.helm.sh/release-name=karpenter-crd", "meta.helm.sh/release-namespace=karpenter", "--overwrite")
	}
	if out, err := runHelm(t, install...); err != nil {
		t.Fatalf("helm upgrade --install after the CRDs were handed to the release: %v\n%s", err, out)
	}
	waitCRDsEstablished(t, api)
	for _, w := range want {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(w.GroupVersionKind())
		if err := api.Client.Get(ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: w.GetName()}, got); err != nil {
			t.Fatalf("after the take-over: %s %s: %v", w.GetKind(), w.GetName(), err)
		}
		if !reflect.DeepEqual(got.Object["spec"], w.Object["spec"]) {
			t.Errorf("after the take-over: %s %s spec changed:\n%v\nwas\n%v", w.GetKind(), w.GetName(), got.Object["spec"], w.Object["spec"])
		}
	}
	// The release now owns the five CRDs: its manifest lists each.
	manifest, err := runHelm(t, "get", "manifest", "karpenter-crd", "--kubeconfig", kubeconfig, "--namespace", "karpenter")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range upstreamCRDs {
		if !strings.Contains(manifest, "name: "+name+"\n") {
			t.Errorf("the karpenter-crd release does not own CRD %s", name)
		}
	}
}
