package aws_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/controllers"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// dualStackServices gives the package's API server an IPv6 service range
// besides envtest's IPv4 one, so that a kube-dns Service can have an IPv6
// ClusterIP as in an IPv6 EKS cluster.
func dualStackServices(te *envtest.Environment) {
	te.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/24,fd00:10:96::/112")
}

// logLines records what is logged through the context, debug lines too.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) context(ctx context.Context) context.Context {
	return log.IntoContext(ctx, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 1}))
}

func (l *logLines) containing(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// kubeDNS is the kube-system/kube-dns Service with clusterIP.
func kubeDNS(clusterIP string, family corev1.IPFamily) *corev1.Service {
	single := corev1.IPFamilyPolicySingleStack
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP, IPFamilies: []corev1.IPFamily{family}, IPFamilyPolicy: &single,
			Selector: map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// launchThroughTheBundle builds the AWS bundle as cmd/karpenter does (the
// kube-dns look-up happens there), lets its EC2NodeClass controller make a
// class Ready, launches one NodeClaim through the bundle's CloudProvider and
// returns what the instance's bootstrap reads from its user data, and the
// start-up log.
func launchThroughTheBundle(t *testing.T) (*awsemulator.NodeBootstrap, *logLines) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cluster := em.Options().ClusterName
	pointSDKAt(t, em)
	_, provider := parseAWS(t, cluster)
	mgr := env.NewManager(t, e.Config, e.Scheme)
	logs := &logLines{}
	bundle, err := provider.New(logs.context(ctx), cloudprovider.Deps{
		Manager: mgr, KubeClient: mgr.GetClient(), Clock: clock.RealClock{},
		Recorder: mgr.GetEventRecorderFor("karpenter"), //nolint:staticcheck // the controllers take a record.EventRecorder
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.RegisterEach(ctx, mgr, bundle.Controllers...); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)

	disc := map[string]string{"karpenter.sh/discovery": cluster}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: disc}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-" + cluster,
		},
	}
	if err := e.Client.Create(ctx, nc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, func() error {
		got := ExpectExists(ctx, t, e.Client, nc.DeepCopy())
		if !got.StatusConditions().Root().IsTrue() {
			return fmt.Errorf("EC2NodeClass not Ready: %v", got.Status.Conditions)
		}
		nc = got
		return nil
	})
	// The provider reads the class through its own cache, which may not
	// have seen it Ready yet: a launch then waits (NodeClassReadinessUnknown).
	Eventually(t, 30*time.Second, func() error {
		_, err := bundle.CloudProvider.Create(ctx, launchtest.NodeClaim("default-dns01", nc, []string{v1.CapacityTypeOnDemand}, "m5.large"))
		return err
	})
	instances := em.Instances()
	if len(instances) != 1 {
		t.Fatalf("%d instances launched, want 1", len(instances))
	}
	raw, err := base64.StdEncoding.DecodeString(instances[0].UserData)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := awsemulator.ParseUserData(string(raw))
	if err != nil {
		t.Fatalf("user data: %v\n%s", err, raw)
	}
	return nb, logs
}

// TestNodesGetTheKubeDNSClusterIP: the address nodes get as cluster DNS is
// the kube-dns Service's ClusterIP, whatever it is (not the service CIDR's
// .10) and whichever family.
func TestNodesGetTheKubeDNSClusterIP(t *testing.T) {
	for _, tc := range []struct {
		name, ip string
		family   corev1.IPFamily
	}{
		{name: "IPv4", ip: "10.0.0.53", family: corev1.IPv4Protocol},
		{name: "IPv6", ip: "fd00:10:96::35", family: corev1.IPv6Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := kubeDNS(tc.ip, tc.family)
			if err := e.Client.Create(context.Background(), svc); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := e.Client.Delete(context.Background(), svc); client.IgnoreNotFound(err) != nil {
					t.Error(err)
				}
			})
			nb, logs := launchThroughTheBundle(t)
			if nb.DNSClusterIP != tc.ip {
				t.Errorf("cluster DNS in the user data %q, want the kube-dns ClusterIP %s", nb.DNSClusterIP, tc.ip)
			}
			if lines := logs.containing("discovered kube dns"); len(lines) != 1 || !strings.Contains(lines[0], tc.ip) {
				t.Errorf("log lines of the discovery %q, want one naming %s", lines, tc.ip)
			}
			if lines := logs.containing("falls back"); len(lines) != 0 {
				t.Errorf("fallback logged although kube-dns exists: %q", lines)
			}
		})
	}
}

// TestWithoutKubeDNSNodesGetTheFallback: with no kube-dns Service nothing
// fails; one log line names the fallback, and nodes get the service CIDR's
// .10 (the emulated cluster's 10.100.0.0/16).
func TestWithoutKubeDNSNodesGetTheFallback(t *testing.T) {
	if err := e.Client.Delete(context.Background(), kubeDNS("", corev1.IPv4Protocol)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	nb, logs := launchThroughTheBundle(t)
	if nb.DNSClusterIP != "10.100.0.10" {
		t.Errorf("cluster DNS in the user data %q, want the service CIDR's .10, 10.100.0.10", nb.DNSClusterIP)
	}
	lines := logs.containing("falls back")
	if len(lines) != 1 {
		t.Fatalf("log lines naming the fallback %q, want exactly one", lines)
	}
	t.Logf("logged: %s", lines[0])
	for _, want := range []string{"kube-system/kube-dns", "service CIDR's .10", "not found"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("fallback line %q does not say %q", lines[0], want)
		}
	}
}

// TestKubeDNSIPRefusesAServiceWithoutClusterIP: a headless kube-dns gives no
// address (the fallback applies).
func TestKubeDNSIPRefusesAServiceWithoutClusterIP(t *testing.T) {
	ctx := context.Background()
	svc := kubeDNS(corev1.ClusterIPNone, corev1.IPv4Protocol)
	if err := e.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, svc) }()
	if ip, err := aws.KubeDNSIP(ctx, e.Client); err == nil || !strings.Contains(err.Error(), "no cluster IP") {
		t.Fatalf("KubeDNSIP of a headless Service: %v, %v; want an error saying it has no cluster IP", ip, err)
	}
}
