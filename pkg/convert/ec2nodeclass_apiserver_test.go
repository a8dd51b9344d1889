package convert_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/convert"
	"github.com/karpenter-go/karpenter/pkg/test/env"
)

// TestEC2NodeClassConvertedObjectsAreValidV1 sends the v1 form of random
// valid v1beta1 classes (every family, Ubuntu included) to a real API server:
// the conversion must never produce an object that the v1 schema and CEL
// rules reject, which would make the stored object unreadable for the
// controller. The spec must read back as converted, plus v1's defaults.
func TestEC2NodeClassConvertedObjectsAreValidV1(t *testing.T) {
	e := env.StartT(t)
	ctx := context.Background()
	g := newGen(3)
	for i := range 200 {
		in := g.V1beta1()
		v1nc, err := convert.EC2NodeClassV1beta1ToV1(in)
		if err != nil {
			t.Fatal(err)
		}
		// A conversion webhook sees stored objects; a create must not carry
		// server-owned metadata.
		v1nc.Name = fmt.Sprintf("converted-%d-%s", i, v1nc.Name)
		v1nc.ResourceVersion, v1nc.UID, v1nc.Finalizers = "", "", nil
		want := v1nc.DeepCopy()
		if err := e.Client.Create(ctx, v1nc); err != nil {
			t.Fatalf("object %d (v1beta1 amiFamily %s): converted v1 object rejected: %v\nv1beta1: %s\nv1: %s",
				i, ptr.Deref(in.Spec.AMIFamily, ""), err, mustJSON(in.Spec), mustJSON(want.Spec))
		}
		got := &awsv1.EC2NodeClass{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(v1nc), got); err != nil {
			t.Fatal(err)
		}
		applyV1MetadataDefaults(&want.Spec)
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Fatalf("object %d: spec read back differs:\n%s", i, diffJSON(want.Spec, got.Spec))
		}
	}

	// The round-trip tests draw from the same generators; they only mean
	// something if those produce objects the API server accepts.
	for i := range 100 {
		nc := g.V1()
		nc.Name = fmt.Sprintf("random-v1-%d-%s", i, nc.Name)
		nc.ResourceVersion, nc.UID, nc.Finalizers = "", "", nil
		if err := e.Client.Create(ctx, nc); err != nil {
			t.Fatalf("random v1 object %d rejected: %v\n%s", i, err, mustJSON(nc.Spec))
		}
	}
	serveV1beta1(t, e)
	for i := range 100 {
		nc := g.V1beta1()
		nc.Name = fmt.Sprintf("random-v1beta1-%d-%s", i, nc.Name)
		nc.ResourceVersion, nc.UID, nc.Finalizers = "", "", nil
		if err := e.Client.Create(ctx, nc); err != nil {
			t.Fatalf("random v1beta1 object %d rejected: %v\n%s", i, err, mustJSON(nc.Spec))
		}
	}
}

// serveV1beta1 turns on the v1beta1 version of the EC2NodeClass CRD, as the
// conversion webhook does, so its schema validates requests. No webhook runs
// here: the objects are only created, never read back through v1.
func serveV1beta1(t *testing.T, e *env.Environment) {
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "ec2nodeclasses.karpenter.k8s.aws"}, crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == "v1beta1" {
			crd.Spec.Versions[i].Served = true
		}
	}
	if err := e.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return e.Client.List(ctx, &awsv1beta1.EC2NodeClassList{}) == nil, nil
	})
	if err != nil {
		t.Fatalf("v1beta1 never became served: %v", err)
	}
}

// applyV1MetadataDefaults fills in what the v1 schema defaults.
func applyV1MetadataDefaults(s *awsv1.EC2NodeClassSpec) {
	if s.MetadataOptions == nil {
		s.MetadataOptions = &awsv1.MetadataOptions{}
	}
	mo := s.MetadataOptions
	if mo.HTTPEndpoint == nil {
		mo.HTTPEndpoint = ptr.To("enabled")
	}
	if mo.HTTPProtocolIPv6 == nil {
		mo.HTTPProtocolIPv6 = ptr.To("disabled")
	}
	if mo.HTTPPutResponseHopLimit == nil {
		mo.HTTPPutResponseHopLimit = ptr.To[int64](1)
	}
	if mo.HTTPTokens == nil {
		mo.HTTPTokens = ptr.To("required")
	}
}
