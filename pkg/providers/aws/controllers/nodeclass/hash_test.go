package nodeclass_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func hashAnnotations(hash, version string) map[string]string {
	return map[string]string{v1.AnnotationEC2NodeClassHash: hash, v1.AnnotationEC2NodeClassHashVersion: version}
}

func expectHash(t *testing.T, what string, annotations map[string]string, hash, version string) {
	t.Helper()
	if annotations[v1.AnnotationEC2NodeClassHash] != hash || annotations[v1.AnnotationEC2NodeClassHashVersion] != version {
		t.Errorf("%s: hash %q version %q, want %q %q", what, annotations[v1.AnnotationEC2NodeClassHash],
			annotations[v1.AnnotationEC2NodeClassHashVersion], hash, version)
	}
}

func expectStaticDrift(t *testing.T, claim *karpv1.NodeClaim, nc *v1.EC2NodeClass, want cloudprovider.DriftReason) {
	t.Helper()
	if got := aws.StaticDrift(claim, nc); got != want {
		t.Errorf("NodeClaim %s static drift %q, want %q (claim %v, class %v)", claim.Name, got, want, claim.Annotations, nc.Annotations)
	}
}

// A class gets its hash; a spec change moves it, and a NodeClaim launched
// before the change (carrying the old hash, same version) is NodeClassDrift.
func TestHashStampedAndSpecChangeDrifts(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &karpv1.NodeClaimList{}, &v1.EC2NodeClassList{})
	c := nodeclass.NewHashController(e.Client)
	nc := newNodeClass("hashed")
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, c, nc)
	nc = ExpectExists(ctx, t, e.Client, nc)
	first := nc.Hash()
	if first == "" {
		t.Fatal("EC2NodeClass.Hash() is empty")
	}
	expectHash(t, "class", nc.Annotations, first, v1.EC2NodeClassHashVersion)

	claim := nodeClaim("launched-before", nc.Name)
	claim.Annotations = hashAnnotations(first, v1.EC2NodeClassHashVersion)
	ExpectApplied(ctx, t, e.Client, claim)
	expectStaticDrift(t, claim, nc, "")

	nc.Spec.UserData = ptr.To("#!/bin/bash\necho changed\n")
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, c, nc)
	nc = ExpectExists(ctx, t, e.Client, nc)
	if nc.Hash() == first {
		t.Fatal("changing spec.userData must change the hash")
	}
	expectHash(t, "class after the change", nc.Annotations, nc.Hash(), v1.EC2NodeClassHashVersion)
	// The claim is not touched (same version): it drifts.
	claim = ExpectExists(ctx, t, e.Client, claim)
	expectHash(t, "claim after the change", claim.Annotations, first, v1.EC2NodeClassHashVersion)
	expectStaticDrift(t, claim, nc, aws.NodeClassDrift)

	// Removing our annotation by hand puts it back.
	delete(nc.Annotations, v1.AnnotationEC2NodeClassHash)
	ExpectApplied(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, c, nc)
	expectHash(t, "class re-stamped", ExpectExists(ctx, t, e.Client, nc).Annotations, nc.Hash(), v1.EC2NodeClassHashVersion)
}

// upstreamVersions are the hash versions upstream Karpenter has written
// (v1.0: v3, v1.1: v4, v1.14: v5, HEAD: v6).
var upstreamVersions = []string{"v1", "v2", "v3", "v4", "v5", "v6"}

// Our Hash() is not upstream's hashstructure, so sharing a version with any
// upstream release would make a cluster switching from it drift every node.
func TestHashVersionIsNoneOfUpstreams(t *testing.T) {
	for _, v := range upstreamVersions {
		if v1.EC2NodeClassHashVersion == v {
			t.Fatalf("EC2NodeClassHashVersion %q is upstream's; our hash is computed differently", v)
		}
	}
}

// After an upgrade (the class carries another hash version, e.g. written by
// upstream Karpenter), the class's NodeClaims are re-stamped rather than
// drifted; one already Drifted keeps its old hash and stays drifted; claims
// of other classes and claims already on this version are not touched.
func TestHashVersionChangeRestampsNodeClaims(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &karpv1.NodeClaimList{}, &v1.EC2NodeClassList{})
	c := nodeclass.NewHashController(e.Client)
	old := "v5" // upstream v1.14
	// Upstream's hash is hashstructure's uint64 in decimal; v3 (v1.0) and v5
	// (v1.14) claims are handled alike.
	const upstreamHash = "6502174423421598411"

	nc := newNodeClass("upgraded")
	nc.Annotations = hashAnnotations(upstreamHash, old)
	other := newNodeClass("untouched")
	other.Annotations = hashAnnotations(upstreamHash, old)
	ExpectApplied(ctx, t, e.Client, nc, other)

	plain := nodeClaim("plain", nc.Name)
	plain.Annotations = hashAnnotations(upstreamHash, old)
	plain.Annotations["keep.me/too"] = "yes"
	drifted := nodeClaim("drifted", nc.Name)
	drifted.Annotations = hashAnnotations("1111", old)
	fromV10 := nodeClaim("from-v1-0", nc.Name)
	fromV10.Annotations = hashAnnotations("13376931244536245213", "v3")
	unannotated := nodeClaim("unannotated", nc.Name)
	current := nodeClaim("current", nc.Name)
	current.Annotations = hashAnnotations("2222", v1.EC2NodeClassHashVersion)
	foreign := nodeClaim("foreign", other.Name)
	foreign.Annotations = hashAnnotations(upstreamHash, old)
	ExpectApplied(ctx, t, e.Client, plain, fromV10, drifted, unannotated, current, foreign)
	drifted.StatusConditions().SetTrueWithReason(karpv1.ConditionTypeDrifted, string(aws.NodeClassDrift), "")
	ExpectStatusUpdated(ctx, t, e.Client, drifted)

	ExpectReconciled(ctx, t, c, nc)
	nc = ExpectExists(ctx, t, e.Client, nc)
	hash := nc.Hash()
	expectHash(t, "class", nc.Annotations, hash, v1.EC2NodeClassHashVersion)

	plain = ExpectExists(ctx, t, e.Client, plain)
	expectHash(t, "plain claim", plain.Annotations, hash, v1.EC2NodeClassHashVersion)
	if plain.Annotations["keep.me/too"] != "yes" {
		t.Errorf("other annotations must survive: %v", plain.Annotations)
	}
	expectStaticDrift(t, plain, nc, "")

	fromV10 = ExpectExists(ctx, t, e.Client, fromV10)
	expectHash(t, "claim of upstream v1.0", fromV10.Annotations, hash, v1.EC2NodeClassHashVersion)
	expectStaticDrift(t, fromV10, nc, "")

	drifted = ExpectExists(ctx, t, e.Client, drifted)
	expectHash(t, "drifted claim", drifted.Annotations, "1111", v1.EC2NodeClassHashVersion)
	expectStaticDrift(t, drifted, nc, aws.NodeClassDrift)

	// A claim without annotations (launched by a Karpenter that had none)
	// gets them: later spec changes drift it like any other.
	unannotated = ExpectExists(ctx, t, e.Client, unannotated)
	expectHash(t, "unannotated claim", unannotated.Annotations, hash, v1.EC2NodeClassHashVersion)

	current = ExpectExists(ctx, t, e.Client, current)
	expectHash(t, "current claim", current.Annotations, "2222", v1.EC2NodeClassHashVersion)
	expectStaticDrift(t, current, nc, aws.NodeClassDrift)

	foreign = ExpectExists(ctx, t, e.Client, foreign)
	expectHash(t, "claim of another class", foreign.Annotations, upstreamHash, old)

	// Before its own reconcile the other class and its claim do not drift
	// (same old version, same hash), and after it they still do not.
	other = ExpectExists(ctx, t, e.Client, other)
	expectStaticDrift(t, foreign, other, "")
	ExpectReconciled(ctx, t, c, other)
	other = ExpectExists(ctx, t, e.Client, other)
	foreign = ExpectExists(ctx, t, e.Client, foreign)
	expectHash(t, "claim of the other class, re-stamped", foreign.Annotations, other.Hash(), v1.EC2NodeClassHashVersion)
	expectStaticDrift(t, foreign, other, "")
}

// Registered with a manager, watches stamp a new class and follow its spec.
func TestHashControllerWithManager(t *testing.T) {
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &karpv1.NodeClaimList{}, &v1.EC2NodeClassList{})
	mgr := env.NewManager(t, e.Config, e.Scheme)
	if err := nodeclass.NewHashController(mgr.GetClient()).Register(mgr); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	nc := newNodeClass("watched")
	ExpectApplied(ctx, t, e.Client, nc)
	stamped := func() error {
		cur := ExpectExists(ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
		if got := cur.Annotations[v1.AnnotationEC2NodeClassHash]; got != cur.Hash() || cur.Annotations[v1.AnnotationEC2NodeClassHashVersion] != v1.EC2NodeClassHashVersion {
			return fmt.Errorf("annotations %v, hash %s", cur.Annotations, cur.Hash())
		}
		return nil
	}
	Eventually(t, 30*time.Second, stamped)
	before := ExpectExists(ctx, t, e.Client, nc).Annotations[v1.AnnotationEC2NodeClassHash]
	// The controller writes the class too: retry on conflicts.
	Eventually(t, 30*time.Second, func() error {
		cur := ExpectExists(ctx, t, e.Client, &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
		cur.Spec.DetailedMonitoring = ptr.To(true)
		return e.Client.Update(ctx, cur)
	})
	Eventually(t, 30*time.Second, func() error {
		if err := stamped(); err != nil {
			return err
		}
		if ExpectExists(ctx, t, e.Client, nc).Annotations[v1.AnnotationEC2NodeClassHash] == before {
			return fmt.Errorf("hash still %s", before)
		}
		return nil
	})
}
