package tagging_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"golang.org/x/time/rate"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclaim/tagging"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
	"github.com/karpenter-go/karpenter/pkg/test/lagging"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

const cluster = "karpenter-demo"

type fixture struct {
	ctx       context.Context
	aws       *awsemulator.Emulator
	cfg       aws.Config
	instances *instance.Provider
	c         *tagging.Controller
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodeClaimList{})
	em := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(em)
	httpclient.Configure(&cfg)
	instances := instance.NewProvider(ec2.NewFromConfig(cfg), nil, nil, nil, clocktesting.NewFakeClock(time.Now()), instance.Options{ClusterName: cluster})
	return &fixture{ctx: ctx, aws: em, cfg: cfg, instances: instances,
		c: tagging.NewController(e.Client, instances, cluster).WithRate(rate.Inf, 1)}
}

// launch starts a Karpenter instance (tags as CreateFleet writes them, plus
// extra) and returns a NodeClaim naming it, not yet registered.
func (f *fixture) launch(t *testing.T, name string, extra map[string]string) (string, *v1.NodeClaim) {
	t.Helper()
	tags := awstest.KarpenterTags(cluster, "default", "default")
	for k, v := range extra {
		tags[k] = v
	}
	id := awstest.LaunchInstance(f.ctx, t, f.cfg, awstest.Launch{Tags: tags})
	nc := fixtures.NodeClaim(name, fixtures.WithNodeClassRef(fixtures.EC2NodeClassRef("default")),
		fixtures.WithProviderID("aws:///"+f.instance(t, id).Zone+"/"+id))
	return id, nc
}

func (f *fixture) instance(t *testing.T, id string) awsemulator.Instance {
	t.Helper()
	for _, in := range f.aws.Instances() {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("no instance %s", id)
	return awsemulator.Instance{}
}

func expectTags(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag %s = %q, want %q (tags %v)", k, got[k], v, got)
		}
	}
}

// Once registered (status.nodeName set), the instance gets Name,
// karpenter.sh/nodeclaim and eks:eks-cluster-name and the claim
// karpenter.k8s.aws/tagged=true; later reconciles call EC2 no more.
func TestRegisteredNodeClaimIsTagged(t *testing.T) {
	f := setup(t)
	id, nc := f.launch(t, "tag-me", nil)
	ExpectApplied(f.ctx, t, e.Client, nc)

	// Not registered yet: nothing happens.
	ExpectReconciled(f.ctx, t, f.c, nc)
	if tags := f.instance(t, id).Tags; tags[awsv1.TagName] != "" || tags[awsv1.TagNodeClaim] != "" {
		t.Fatalf("an unregistered claim's instance must not be tagged: %v", tags)
	}
	if n := f.aws.Calls("ec2", "CreateTags"); n != 0 {
		t.Fatalf("CreateTags called %d times before registration", n)
	}

	nodeName := f.instance(t, id).PrivateDNSName
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	nc.Status.NodeName = nodeName
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.c, nc)
	expectTags(t, f.instance(t, id).Tags, map[string]string{
		awsv1.TagName: nodeName, awsv1.TagNodeClaim: "tag-me", awsv1.TagEKSClusterName: cluster,
		v1.NodePoolLabelKey: "default", awsv1.TagClusterPrefix + cluster: "owned",
	})
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if nc.Annotations[awsv1.AnnotationInstanceTagged] != "true" {
		t.Fatalf("annotations %v", nc.Annotations)
	}
	if tagging.Taggable(nc) {
		t.Error("a tagged claim is not taggable")
	}
	calls := f.aws.AllCalls()
	ExpectReconciled(f.ctx, t, f.c, nc)
	if after := f.aws.AllCalls(); fmt.Sprint(after) != fmt.Sprint(calls) {
		t.Errorf("a tagged claim must cost no AWS call: %v -> %v", calls, after)
	}
}

// Tags the instance already has (a Name from spec.tags) are kept; only the
// missing ones are written.
func TestExistingTagsAreKept(t *testing.T) {
	f := setup(t)
	id, nc := f.launch(t, "named", map[string]string{awsv1.TagName: "my-name"})
	nc.Status.NodeName = "ip-10-0-0-1.us-west-2.compute.internal"
	ExpectApplied(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.c, nc)
	expectTags(t, f.instance(t, id).Tags, map[string]string{awsv1.TagName: "my-name", awsv1.TagNodeClaim: "named", awsv1.TagEKSClusterName: cluster})
	if n := f.aws.Calls("ec2", "CreateTags"); n != 1 {
		t.Errorf("CreateTags calls %d, want 1", n)
	}
	if ExpectExists(f.ctx, t, e.Client, nc).Annotations[awsv1.AnnotationInstanceTagged] != "true" {
		t.Error("the claim must be marked tagged")
	}
}

// A terminated instance is not tagged and the claim is not marked (garbage
// collection deals with it); claims of other providers, being deleted, or
// with a foreign provider ID are left alone.
func TestUntaggableClaims(t *testing.T) {
	f := setup(t)
	gone, goneClaim := f.launch(t, "gone", nil)
	goneClaim.Status.NodeName = "ip-10-0-0-2.us-west-2.compute.internal"
	if err := f.aws.SetInstanceState(gone, "terminated"); err != nil {
		t.Fatal(err)
	}
	ExpectApplied(f.ctx, t, e.Client, goneClaim)
	ExpectReconciled(f.ctx, t, f.c, goneClaim)
	if ExpectExists(f.ctx, t, e.Client, goneClaim).Annotations[awsv1.AnnotationInstanceTagged] != "" {
		t.Error("a claim whose instance is gone must not be marked tagged")
	}

	_, kwok := f.launch(t, "kwok", nil)
	kwok.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	kwok.Status.NodeName = "kwok-node"
	if tagging.Taggable(kwok) {
		t.Error("a KWOK claim is not the aws provider's to tag")
	}
	_, bad := f.launch(t, "bad-id", nil)
	bad.Status.NodeName = "node"
	bad.Status.ProviderID = "kwok://bad"
	ExpectApplied(f.ctx, t, e.Client, bad)
	ExpectReconciled(f.ctx, t, f.c, bad)
	if ExpectExists(f.ctx, t, e.Client, bad).Annotations[awsv1.AnnotationInstanceTagged] != "" {
		t.Error("a claim with a foreign provider ID must not be marked tagged")
	}
	deleting := bad.DeepCopy()
	deleting.Status.ProviderID = goneClaim.Status.ProviderID
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if tagging.Taggable(deleting) {
		t.Error("a claim being deleted is not taggable")
	}
	if n := f.aws.Calls("ec2", "CreateTags"); n != 0 {
		t.Errorf("CreateTags called %d times", n)
	}
}

// Registered with a manager: registration (the status write) is what
// triggers tagging.
func TestTaggingWithManager(t *testing.T) {
	f := setup(t)
	mgr := env.NewManager(t, e.Config, e.Scheme)
	c := tagging.NewController(mgr.GetClient(), f.instances, cluster).WithRate(rate.Inf, 1)
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(f.ctx, t, mgr)
	id, nc := f.launch(t, "watched", nil)
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	nc.Status.NodeName = f.instance(t, id).PrivateDNSName
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	Eventually(t, 30*time.Second, func() error {
		cur := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
		if cur.Annotations[awsv1.AnnotationInstanceTagged] != "true" {
			return fmt.Errorf("annotations %v", cur.Annotations)
		}
		return nil
	})
	expectTags(t, f.instance(t, id).Tags, map[string]string{awsv1.TagName: nc.Status.NodeName, awsv1.TagNodeClaim: nc.Name})
}

// registered launches an instance, creates its NodeClaim and marks it registered, as the
// lifecycle controller would; it returns the instance and the claim as stored.
func (f *fixture) registered(t *testing.T, name string) (string, *v1.NodeClaim) {
	t.Helper()
	id, nc := f.launch(t, name, nil)
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	nc.Status.NodeName = f.instance(t, id).PrivateDNSName
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	return id, ExpectExists(f.ctx, t, e.Client, nc)
}

// laggingController is a tagging controller reading through a lagging client, so that a
// test can hold its reads of a claim behind the writes and count its patches.
func (f *fixture) laggingController(t *testing.T) (*lagging.Client, *tagging.Controller) {
	t.Helper()
	l := lagging.New(t, e.Config, e.Scheme)
	return l, tagging.NewController(l, f.instances, cluster).WithRate(rate.Inf, 1)
}

// A reconcile that read the claim before another controller annotated it (an informer
// cache a write behind) still marks it tagged in one pass, with one patch, and keeps the
// other controller's annotation: the locked patch it replaced met a 409 and a second pass.
func TestStaleReadMarksTaggedInOnePassAndKeepsOthersAnnotations(t *testing.T) {
	f := setup(t)
	l, c := f.laggingController(t)
	id, nc := f.registered(t, "stale")
	l.HoldClaim(nc)
	other := nc.DeepCopy()
	other.Annotations = map[string]string{"example.com/other": "kept"}
	ExpectApplied(f.ctx, t, e.Client, other)

	res, err := c.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	if err != nil || res.Requeue || res.RequeueAfter != 0 {
		t.Fatalf("reconcile over a stale read = %+v, %v; want done in one pass", res, err)
	}
	if n, _ := l.MetaPatches(); n != 1 {
		t.Errorf("%d NodeClaim patches, want 1", n)
	}
	got := ExpectExists(f.ctx, t, e.Client, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
	if got.Annotations[awsv1.AnnotationInstanceTagged] != "true" || got.Annotations["example.com/other"] != "kept" {
		t.Errorf("annotations %v: want tagged=true and the other controller's annotation kept", got.Annotations)
	}
	expectTags(t, f.instance(t, id).Tags, map[string]string{awsv1.TagNodeClaim: nc.Name})
}

// A claim deleted and created again under the same name while a reconcile held the old
// one is not marked tagged for the old claim's instance: the patch names the old uid.
func TestRecreatedClaimIsNotMarkedForTheOldInstance(t *testing.T) {
	f := setup(t)
	l, c := f.laggingController(t)
	_, old := f.registered(t, "reborn")
	l.HoldClaim(old)
	ExpectDeleted(f.ctx, t, e.Client, old)
	_, fresh := f.launch(t, "reborn", nil)
	ExpectApplied(f.ctx, t, e.Client, fresh)
	fresh = ExpectExists(f.ctx, t, e.Client, fresh)
	if fresh.UID == old.UID {
		t.Fatal("the claim was not created again")
	}

	if _, err := c.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: old.Name}}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := ExpectExists(f.ctx, t, e.Client, fresh)
	if got.Annotations[awsv1.AnnotationInstanceTagged] != "" {
		t.Errorf("the new claim was marked tagged for the old claim's instance: %v", got.Annotations)
	}
}
