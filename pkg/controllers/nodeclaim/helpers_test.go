package nodeclaim_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/env"
)

func keyOf(name string) types.NamespacedName { return types.NamespacedName{Name: name} }

func create(ctx context.Context, t *testing.T, e *env.Environment, o client.Object) {
	t.Helper()
	if err := e.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
}
