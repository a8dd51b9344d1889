package interruption_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/interruption"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	awssqs "github.com/karpenter-go/karpenter/pkg/providers/aws/sqs"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

// logs keeps every log line: the manager hands its runnables a context of
// its own, so the controller logs through the global logger.
var logs = &logSink{}

func TestMain(m *testing.M) {
	log.SetLogger(logs.logger())
	env.Main(m, &e)
}

const queueName = "karpenter-interruptions"

type fixture struct {
	ctx         context.Context
	aws         *awsemulator.Emulator
	kube        client.Client // the manager's cached client
	unavailable *instancetype.UnavailableOfferings
	logs        *logSink
}

// setup cleans the API server, starts an emulator (with the queue unless
// noQueue) and runs the controller in a manager, as the operator does.
func setup(t testing.TB, noQueue bool) *fixture {
	t.Helper()
	logs.reset()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{}, &corev1.NodeList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	if !noQueue {
		if _, err := em.CreateQueue(queueName); err != nil {
			t.Fatal(err)
		}
	}
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	mgr := env.NewManager(t, e.Config, e.Scheme)
	unavailable := instancetype.NewUnavailableOfferings(clock.RealClock{})
	c := interruption.NewController(mgr.GetClient(), awssqs.NewProvider(sqs.NewFromConfig(cfg), queueName), unavailable,
		mgr.GetEventRecorderFor("karpenter"), clock.RealClock{}, //nolint:staticcheck // the controllers take a record.EventRecorder
		interruption.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err := c.Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	return &fixture{ctx: ctx, aws: em, kube: mgr.GetClient(), unavailable: unavailable, logs: logs}
}

// logSink keeps the controller's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (s *logSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = nil
}

func (s *logSink) contains(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

type instance struct {
	name, id, instanceType, zone, capacityType string
}

func (i instance) providerID() string { return "aws:///" + i.zone + "/" + i.id }

// launched applies a launched NodeClaim (finalizer held, so its deletion is
// observable) and its registered Node, and waits until the controller's
// cache sees both.
func (f *fixture) launched(t testing.TB, in instance) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	labels := fixtures.WithLabels(map[string]string{
		v1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: in.instanceType,
		corev1.LabelTopologyZone: in.zone, v1.CapacityTypeLabelKey: in.capacityType,
	})
	providerID := fixtures.WithProviderID(in.providerID())
	nc := fixtures.NodeClaim(in.name, labels, providerID, fixtures.WithFinalizers(v1.TerminationFinalizer),
		fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef("default")), fixtures.WithNodeName(in.name))
	node := fixtures.Node(in.name, labels, providerID)
	ExpectApplied(f.ctx, t, e.Client, nc, node)
	Eventually(t, 30*time.Second, func() error {
		ncs, nodes := &v1.NodeClaimList{}, &corev1.NodeList{}
		if err := f.kube.List(f.ctx, ncs, client.MatchingFields{interruption.NodeClaimInstanceIDIndex: in.id}); err != nil {
			return err
		}
		if err := f.kube.List(f.ctx, nodes, client.MatchingFields{interruption.NodeInstanceIDIndex: in.id}); err != nil {
			return err
		}
		if len(ncs.Items) != 1 || len(nodes.Items) != 1 {
			return fmt.Errorf("cache has %d nodeclaims and %d nodes of %s", len(ncs.Items), len(nodes.Items), in.id)
		}
		return nil
	})
	return nc, node
}

func (f *fixture) send(t testing.TB, body string) {
	t.Helper()
	if _, err := f.aws.SendQueueMessage(queueName, body); err != nil {
		t.Fatal(err)
	}
}

// expectQueueEmpty waits until every message was deleted.
func (f *fixture) expectQueueEmpty(t testing.TB) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		if visible, inFlight := f.aws.QueueDepth(queueName); visible+inFlight > 0 {
			return fmt.Errorf("queue holds %d visible and %d in-flight messages", visible, inFlight)
		}
		return nil
	})
}

func expectEvent(t testing.TB, obj client.Object, reason string) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		list, err := e.KubeClient.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + obj.GetName() + ",involvedObject.uid=" + string(obj.GetUID()) + ",reason=" + reason,
		})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("no %s event on %s", reason, obj.GetName())
		}
		return nil
	})
}

func expectDeleting(t testing.TB, ctx context.Context, nc *v1.NodeClaim) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		cur := ExpectExists(ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
		if cur.DeletionTimestamp == nil {
			return fmt.Errorf("nodeclaim %s is not being deleted", nc.Name)
		}
		return nil
	})
}

func expectNotDeleting(t testing.TB, ctx context.Context, nc *v1.NodeClaim) {
	t.Helper()
	if cur := ExpectExists(ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}); cur.DeletionTimestamp != nil {
		t.Fatalf("nodeclaim %s was deleted", nc.Name)
	}
}

// counters is a snapshot of the interruption metrics.
type counters struct {
	received map[string]float64
	deleted  float64
	observed uint64
}

var kinds = []string{"spot_interrupted", "rebalance_recommendation", "scheduled_change", "instance_stopped",
	"instance_terminated", "capacity_reservation_interrupted", "no_op", interruption.MessageTypeUnparsable}

func snapshot(t testing.TB) counters {
	c := counters{received: map[string]float64{}, deleted: testutil.ToFloat64(interruption.DeletedMessages)}
	for _, k := range kinds {
		c.received[k] = testutil.ToFloat64(interruption.ReceivedMessages.WithLabelValues(k))
	}
	c.observed = histogramCount(t)
	return c
}

func histogramCount(t testing.TB) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := interruption.MessageQueueDuration.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// expectCounted checks the metric deltas since before: received by kind,
// deleted, and one queue-duration observation per deleted message.
func expectCounted(t testing.TB, before counters, received map[string]float64, deleted float64) {
	t.Helper()
	after := snapshot(t)
	for _, k := range kinds {
		if got := after.received[k] - before.received[k]; got != received[k] {
			t.Errorf("received_messages_total{message_type=%q} grew by %v, want %v", k, got, received[k])
		}
	}
	if got := after.deleted - before.deleted; got != deleted {
		t.Errorf("deleted_messages_total grew by %v, want %v", got, deleted)
	}
	if got := after.observed - before.observed; float64(got) != deleted {
		t.Errorf("message_queue_duration_seconds observed %d times, want %v", got, deleted)
	}
}

func disrupted(nc *v1.NodeClaim, reason string) float64 {
	return testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(reason, nc.Labels[v1.NodePoolLabelKey],
		nc.Labels[v1.CapacityTypeLabelKey], "", metrics.TerminationMode(nc)))
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
