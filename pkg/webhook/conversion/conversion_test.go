package conversion_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/webhook/conversion"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

// startWebhook runs the webhook on a loopback port with a fresh certificate
// and points the CRDs at it; it undoes both when the test ends.
func startWebhook(t *testing.T) client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cert, err := conversion.GenerateCertificate(nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- (&conversion.Server{Listener: l, Certificate: cert}).Serve(ctx) }()
	t.Cleanup(func() {
		if err := conversion.DisableConversion(context.Background(), testEnv.Client); err != nil {
			t.Error(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if err := conversion.EnableConversion(ctx, testEnv.Client, conversion.ClientConfig{URL: "https://" + l.Addr().String()}, cert.CAPEM); err != nil {
		t.Fatal(err)
	}
	// The CRD change takes effect asynchronously; a fresh client per attempt
	// rediscovers the newly served version.
	var c client.Client
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		fresh, err := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme})
		if err != nil {
			return false, err
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("karpenter.sh/v1beta1")
		list.SetKind("NodePoolList")
		if err := fresh.List(ctx, list); err != nil {
			return false, nil
		}
		c = fresh
		return true, nil
	})
	if err != nil {
		t.Fatalf("v1beta1 never became served: %v", err)
	}
	return c
}

func manifest(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../../apis/karpenter/testdata/v1beta1/" + name)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestV1beta1NodePoolThroughWebhook applies v1beta1 NodePools (from the
// seeds) through the running webhook and reads them back as the right v1
// objects, and as the same v1beta1 objects.
func TestV1beta1NodePoolThroughWebhook(t *testing.T) {
	c := startWebhook(t)
	ctx := context.Background()

	t.Run("seed003 with kubelet and expireAfter", func(t *testing.T) {
		in := manifest(t, "seed003-nodepool.yaml")
		if err := c.Create(ctx, in.DeepCopy()); err != nil {
			t.Fatalf("create v1beta1: %v", err)
		}
		np := &v1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, np); err != nil {
			t.Fatal(err)
		}
		s := np.Spec
		if got := s.Template.Spec.ExpireAfter.String(); got != "1440h" {
			t.Errorf("v1 template expireAfter = %s, want 1440h", got)
		}
		if got := *s.Template.Spec.NodeClassRef; got != (v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}) {
			t.Errorf("v1 nodeClassRef = %+v", got)
		}
		if s.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized || s.Disruption.ConsolidateAfter.String() != "0s" {
			t.Errorf("v1 disruption = %+v, want WhenEmptyOrUnderutilized after 0s", s.Disruption)
		}
		if len(s.Disruption.Budgets) != 1 || s.Disruption.Budgets[0].Nodes != "10%" {
			t.Errorf("v1 budgets = %+v, want the default", s.Disruption.Budgets)
		}
		var kubelet map[string]interface{}
		if err := json.Unmarshal([]byte(np.Annotations[v1.KubeletCompatibilityAnnotationKey]), &kubelet); err != nil {
			t.Fatalf("kubelet annotation: %v (%v)", err, np.Annotations)
		}
		if !reflect.DeepEqual(kubelet, map[string]interface{}{"clusterDNS": []interface{}{"10.0.0.10"}, "maxPods": float64(234)}) {
			t.Errorf("kubelet annotation = %v", kubelet)
		}
		if _, ok := np.Annotations[v1.NodeClassReferenceAnnotationKey]; ok {
			t.Errorf("nodeClassRef annotation written for a fully specified reference")
		}
		if np.Spec.Template.ObjectMeta.Labels["intent"] != "default" || len(s.Template.Spec.Requirements) != 2 {
			t.Errorf("template lost labels or requirements: %+v", s.Template)
		}
		// Read back in v1beta1: what the user applied, plus v1beta1 defaults.
		back := &unstructured.Unstructured{}
		back.SetAPIVersion("karpenter.sh/v1beta1")
		back.SetKind("NodePool")
		if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, back); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]interface{}{
			"spec.disruption.expireAfter":                "1440h",
			"spec.disruption.consolidationPolicy":        "WhenUnderutilized",
			"spec.template.spec.nodeClassRef.apiVersion": "karpenter.k8s.aws/v1beta1",
			"spec.template.spec.kubelet.maxPods":         int64(234),
			"spec.template.metadata.labels.ami-family":   "AL2023",
			"spec.template.spec.requirements.0.values.0": "m7i.xlarge",
		} {
			if got := lookup(back.Object, path); !reflect.DeepEqual(got, want) {
				t.Errorf("v1beta1 %s = %#v, want %#v", path, got, want)
			}
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(back.Object, "spec", "disruption", "consolidateAfter"); found {
			t.Errorf("v1beta1 read back has consolidateAfter with WhenUnderutilized")
		}
		if anns := back.GetAnnotations(); len(anns) != 0 {
			t.Errorf("v1beta1 read back carries compatibility annotations: %v", anns)
		}
	})

	t.Run("seed004 name-only reference and WhenEmpty", func(t *testing.T) {
		in := manifest(t, "seed004-nodepool.yaml")
		if err := c.Create(ctx, in.DeepCopy()); err != nil {
			t.Fatalf("create v1beta1: %v", err)
		}
		np := &v1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, np); err != nil {
			t.Fatal(err)
		}
		if got := *np.Spec.Template.Spec.NodeClassRef; got != (v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}) {
			t.Errorf("v1 nodeClassRef = %+v", got)
		}
		if np.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmpty || np.Spec.Disruption.ConsolidateAfter.String() != "30s" {
			t.Errorf("v1 disruption = %+v", np.Spec.Disruption)
		}
		if got := np.Spec.Template.Spec.ExpireAfter.String(); got != "720h" {
			t.Errorf("v1 expireAfter = %s, want the v1beta1 default 720h", got)
		}
		back := &unstructured.Unstructured{}
		back.SetAPIVersion("karpenter.sh/v1beta1")
		back.SetKind("NodePool")
		if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, back); err != nil {
			t.Fatal(err)
		}
		ref, _, _ := unstructured.NestedMap(back.Object, "spec", "template", "spec", "nodeClassRef")
		if !reflect.DeepEqual(ref, map[string]interface{}{"name": "default"}) {
			t.Errorf("v1beta1 nodeClassRef read back as %v, want the original name-only reference", ref)
		}
	})

	t.Run("v1 object read as v1beta1 keeps v1-only fields", func(t *testing.T) {
		np := &v1.NodePool{}
		np.Name = "v1-native"
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("10m")
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
		if err := c.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
		beta := &unstructured.Unstructured{}
		beta.SetAPIVersion("karpenter.sh/v1beta1")
		beta.SetKind("NodePool")
		if err := c.Get(ctx, client.ObjectKey{Name: np.Name}, beta); err != nil {
			t.Fatal(err)
		}
		if got := lookup(beta.Object, "spec.disruption.consolidationPolicy"); got != "WhenUnderutilized" {
			t.Errorf("v1beta1 policy = %v", got)
		}
		if got := lookup(beta.Object, "spec.template.spec.nodeClassRef.apiVersion"); got != "karpenter.kwok.sh/v1alpha1" {
			t.Errorf("v1beta1 nodeClassRef.apiVersion = %v", got)
		}
		// A v1beta1 client writes the object back; the v1-only fields survive.
		if err := unstructured.SetNestedField(beta.Object, int64(7), "spec", "weight"); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(ctx, beta); err != nil {
			t.Fatalf("v1beta1 update: %v", err)
		}
		after := &v1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Name: np.Name}, after); err != nil {
			t.Fatal(err)
		}
		if after.Spec.Weight == nil || *after.Spec.Weight != 7 {
			t.Errorf("weight written through v1beta1 = %v", after.Spec.Weight)
		}
		if after.Spec.Template.Spec.TerminationGracePeriod == nil || after.Spec.Template.Spec.TerminationGracePeriod.Duration != time.Hour {
			t.Errorf("terminationGracePeriod lost through a v1beta1 write: %v", after.Spec.Template.Spec.TerminationGracePeriod)
		}
		if after.Spec.Disruption.ConsolidateAfter.String() != "10m" {
			t.Errorf("consolidateAfter lost through a v1beta1 write: %s", after.Spec.Disruption.ConsolidateAfter)
		}
		if got := after.Spec.Disruption.Budgets; len(got) != 1 || !reflect.DeepEqual(got[0].Reasons, []v1.DisruptionReason{v1.DisruptionReasonDrifted}) {
			t.Errorf("budget reasons lost through a v1beta1 write: %+v", got)
		}
		if _, ok := after.Annotations[v1.V1OnlyFieldsAnnotationKey]; ok {
			t.Errorf("v1 object stores the v1beta1-only annotation")
		}
	})
}

// TestV1beta1NodeClaimThroughWebhook applies the seed's v1beta1 NodeClaim and
// reads it back as v1.
func TestV1beta1NodeClaimThroughWebhook(t *testing.T) {
	c := startWebhook(t)
	ctx := context.Background()
	in := manifest(t, "seed002-nodeclaim.yaml")
	if err := c.Create(ctx, in.DeepCopy()); err != nil {
		t.Fatalf("create v1beta1: %v", err)
	}
	nodeClaim := &v1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, nodeClaim); err != nil {
		t.Fatal(err)
	}
	if got := *nodeClaim.Spec.NodeClassRef; got != (v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}) {
		t.Errorf("v1 nodeClassRef = %+v", got)
	}
	if nodeClaim.Spec.ExpireAfter.String() != "720h" {
		t.Errorf("v1 expireAfter = %s", nodeClaim.Spec.ExpireAfter)
	}
	if nodeClaim.Spec.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("requests = %v", nodeClaim.Spec.Resources.Requests)
	}
	var kubelet map[string]interface{}
	if err := json.Unmarshal([]byte(nodeClaim.Annotations[v1.KubeletCompatibilityAnnotationKey]), &kubelet); err != nil {
		t.Fatalf("kubelet annotation: %v", err)
	}
	if kubelet["maxPods"] != float64(20) || kubelet["podsPerCore"] != float64(2) {
		t.Errorf("kubelet annotation = %v", kubelet)
	}
}

// TestDisabledWebhookServesV1Only: without the webhook, v1beta1 is not served
// and v1 works.
func TestDisabledWebhookServesV1Only(t *testing.T) {
	ctx := context.Background()
	if err := conversion.DisableConversion(ctx, testEnv.Client); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: "nodepools.karpenter.sh"}, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Served != (v.Name == "v1") {
			t.Errorf("version %s served=%v with the webhook disabled", v.Name, v.Served)
		}
	}
	fresh, err := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	in := manifest(t, "seed004-nodepool.yaml")
	in.SetName("no-webhook")
	if err := fresh.Create(ctx, in); err == nil {
		t.Errorf("v1beta1 NodePool accepted without the webhook")
	}
	np := &v1.NodePool{}
	np.Name = "v1-without-webhook"
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	if err := fresh.Create(ctx, np); err != nil {
		t.Fatalf("v1 NodePool rejected without the webhook: %v", err)
	}
}

func lookup(obj map[string]interface{}, path string) interface{} {
	var cur interface{} = obj
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '.' {
			continue
		}
		key := path[start:i]
		start = i + 1
		switch c := cur.(type) {
		case map[string]interface{}:
			cur = c[key]
		case []interface{}:
			var idx int
			if _, err := fmt.Sscan(key, &idx); err != nil || idx >= len(c) {
				return nil
			}
			cur = c[idx]
		default:
			return nil
		}
	}
	return cur
}
